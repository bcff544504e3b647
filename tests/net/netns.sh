#!/usr/bin/env bash
# netns.sh: several "hosts" on one machine, as Linux network namespaces, for
# tests and benchmarks of shoal across separate network stacks.
#
#   netns.sh up    NAME NHOSTS       hosts NAME-h0 .. NAME-h<N-1> on a bridge
#   netns.sh exec  NAME HOST cmd...  run cmd inside host HOST (0, 1, ... or h1)
#   netns.sh addr  NAME HOST         print HOST's address (e.g. 10.77.0.2)
#   netns.sh link  NAME HOST down|up cut or restore HOST's link
#   netns.sh delay NAME HOST 5ms|off add or remove netem delay on HOST's link
#   netns.sh down  NAME              remove everything NAME made (idempotent)
#
# Layout: a namespace NAME-br holds bridge br0; each host namespace NAME-hI
# has loopback up and eth0, one end of a veth pair whose other end (hI) is a
# port of br0. Host I has address $NETNS_SUBNET.(I+1)/24 (NETNS_SUBNET
# defaults to 10.77.0). Everything is made inside namespaces we create (the
# veth pairs are created inside NAME-br), so the machine's own interfaces,
# addresses and routes are never touched, and the subnet cannot clash with
# them; it only has to be a valid private /24.
#
# Callers clean up with a trap set before `up`:
#
#   trap 'tests/net/netns.sh down t1' EXIT
#   tests/net/netns.sh up t1 3 || exit $?
#
# `down` works on whatever part exists (after a failed `up` too), kills the
# processes left inside the namespaces first, and succeeds when nothing is
# there. `up` removes its partial work itself when it fails.
#
# Exit status: 0 ok; 77 skip (not root, namespaces not permitted, iproute2
# missing, netem not in this kernel), with the reason on stderr; 2 usage;
# 1 other failures.
set -u

SUBNET=${NETNS_SUBNET:-10.77.0}
SKIP=77

die() {
    echo "netns.sh: $*" >&2
    exit 1
}
skip() {
    echo "netns.sh: SKIP: $*" >&2
    exit $SKIP
}
usage() {
    sed -n '4,9p' "$0" | sed 's/^# *//' >&2
    exit 2
}

# The namespaces that belong to NAME: NAME-br and NAME-h<digits>.
namespaces() {
    ip netns list 2>/dev/null | awk '{print $1}' |
        grep -E "^$1-(br|h[0-9]+)\$" || true
}

# HOST as 0, 1, ... or h0, h1, ...: prints the index.
host_index() {
    case "$1" in
        h[0-9]*) echo "${1#h}" ;;
        [0-9]*) echo "$1" ;;
        *) die "bad host '$1' (want 0, 1, ... or h0, h1, ...)" ;;
    esac
}

host_ns() {
    local ns
    ns="$1-h$(host_index "$2")" || exit
    ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$ns" ||
        die "no host $2 in '$1' (is it up?)"
    echo "$ns"
}

need_tools() {
    command -v ip >/dev/null 2>&1 ||
        skip "'ip' not found: install iproute2 (scripts/install-deps.sh --net)"
    command -v tc >/dev/null 2>&1 ||
        skip "'tc' not found: install iproute2 (scripts/install-deps.sh --net)"
}

# Root and a working `ip netns add`: containers often lack CAP_SYS_ADMIN or
# a writable /run/netns. Probing with a throwaway namespace tells for sure.
need_netns() {
    need_tools
    [ "$(id -u)" = 0 ] || skip "network namespaces need root (uid $(id -u))"
    local probe="shoal-probe-$$"
    ip netns add "$probe" 2>/dev/null ||
        skip "'ip netns add' is not permitted here (a container without CAP_SYS_ADMIN?)"
    # A kernel without bridge or veth support is a skip too, not a failure.
    local ok=1
    ip -n "$probe" link add b0 type bridge 2>/dev/null &&
        ip -n "$probe" link add v0 type veth peer name v1 2>/dev/null || ok=0
    ip netns del "$probe" 2>/dev/null
    [ $ok = 1 ] || skip "this kernel cannot make bridges or veth pairs"
}

# Kills every process inside namespace $1: TERM, then KILL after ~2 s.
kill_ns_pids() {
    local ns=$1 sig pids i
    for sig in TERM KILL; do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] || return 0
        # shellcheck disable=SC2086 # one pid per word
        kill -s $sig $pids 2>/dev/null
        for i in $(seq 20); do
            [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] || return 0
            sleep 0.1
        done
    done
    [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] ||
        echo "netns.sh: processes survive in $ns" >&2
}

cmd_down() {
    local name=$1 ns rc=0
    for ns in $(namespaces "$name"); do
        kill_ns_pids "$ns"
        # Deleting NAME-br takes the veth pairs (and the bridge) with it.
        ip netns del "$ns" || rc=1
    done
    return $rc
}

cmd_up() {
    local name=$1 n=$2 i ns br="$1-br"
    case "$n" in '' | *[!0-9]*) usage ;; esac
    [ "$n" -ge 1 ] && [ "$n" -le 250 ] || die "NHOSTS must be 1..250"
    # Interface names are per namespace, but namespace names are global and
    # show up in messages; keep them short and shell-safe.
    case "$name" in *[!A-Za-z0-9_.-]* | '') die "bad name '$name'" ;; esac
    need_netns
    [ -z "$(namespaces "$name")" ] ||
        die "'$name' is already up (netns.sh down $name)"
    # From here on, any failure undoes the partial work.
    trap 'cmd_down "$name"; exit 1' ERR
    set -E
    ip netns add "$br"
    ip -n "$br" link set lo up
    # STP stays off (the default), so ports forward at once.
    ip -n "$br" link add br0 type bridge
    ip -n "$br" link set br0 up
    for i in $(seq 0 $((n - 1))); do
        ns="$name-h$i"
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        ip -n "$br" link add "h$i" type veth peer name eth0 netns "$ns"
        ip -n "$br" link set "h$i" master br0 up
        ip -n "$ns" addr add "$SUBNET.$((i + 1))/24" dev eth0
        ip -n "$ns" link set eth0 up
    done
    trap - ERR
    set +E
}

cmd_link() {
    local br="$1-br" ns idx
    ns=$(host_ns "$1" "$2") || exit
    idx=$(host_index "$2")
    case "$3" in
        # The switch side goes down, as if the cable were pulled at the
        # switch: the host keeps its address and route but loses carrier,
        # and packets to and from it are dropped.
        down | up) ip -n "$br" link set "h$idx" "$3" ;;
        *) usage ;;
    esac
}

cmd_delay() {
    local ns out
    ns=$(host_ns "$1" "$2") || exit
    if [ "$3" = off ]; then
        # No qdisc to delete is fine: off is idempotent.
        ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null
        return 0
    fi
    if ! out=$(ip netns exec "$ns" tc qdisc replace dev eth0 root netem \
        delay "$3" 2>&1); then
        case "$out" in
            *unknown*) skip "tc netem is not available in this kernel ($out)" ;;
            *) die "tc qdisc netem delay $3: $out" ;;
        esac
    fi
}

[ $# -ge 2 ] || usage
cmd=$1 name=$2
shift 2
case "$cmd" in
    up)
        [ $# -eq 1 ] || usage
        cmd_up "$name" "$1"
        ;;
    down)
        [ $# -eq 0 ] || usage
        # Nothing of NAME exists: done, even without root or iproute2.
        command -v ip >/dev/null 2>&1 || exit 0
        cmd_down "$name"
        ;;
    exec)
        [ $# -ge 2 ] || usage
        ns=$(host_ns "$name" "$1") || exit
        shift
        exec ip netns exec "$ns" "$@"
        ;;
    addr)
        [ $# -eq 1 ] || usage
        host_ns "$name" "$1" >/dev/null || exit
        echo "$SUBNET.$(($(host_index "$1") + 1))"
        ;;
    link)
        [ $# -eq 2 ] || usage
        cmd_link "$name" "$1" "$2"
        ;;
    delay)
        [ $# -eq 2 ] || usage
        cmd_delay "$name" "$1" "$2"
        ;;
    *) usage ;;
esac
