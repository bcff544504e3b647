#!/usr/bin/env bash
# The namespace harness itself: 3 hosts reach each other, a cut link makes
# its host unreachable while the others still talk, a restored link works
# again, and `down` leaves no namespace and no process behind (a process
# is left running in a host on purpose). About 2 s; exit 77 = skipped.
set -u
here=$(cd "$(dirname "$0")" && pwd)
netns=$here/netns.sh
name=shoal-lt$$

# Whatever happens below, the namespaces go.
trap '"$netns" down "$name"' EXIT
trap 'exit 1' INT TERM HUP

command -v ping >/dev/null 2>&1 ||
    { echo "test_link: SKIP: ping not found (scripts/install-deps.sh --net)" >&2; exit 77; }
"$netns" up "$name" 3 || exit $?

fail() {
    echo "test_link: FAIL: $*" >&2
    exit 1
}
# reach FROM TO: one echo, 1 s to answer. A few tries, as the first packet
# after a (re)connect waits for ARP.
reach() {
    local i
    for i in 1 2 3; do
        "$netns" exec "$name" "$1" ping -n -q -c 1 -W 1 \
            "$("$netns" addr "$name" "$2")" >/dev/null 2>&1 && return 0
    done
    return 1
}

for a in 0 1 2; do
    for b in 0 1 2; do
        [ $a = $b ] || reach $a $b || fail "h$a cannot reach h$b"
    done
done

"$netns" link "$name" 2 down || fail "link h2 down"
"$netns" exec "$name" 0 ping -n -q -c 1 -W 1 "$("$netns" addr "$name" 2)" \
    >/dev/null 2>&1 && fail "h0 still reaches h2 with h2's link down"
reach 0 1 || fail "h0 cannot reach h1 while h2 is cut"
"$netns" link "$name" 2 up || fail "link h2 up"
reach 0 2 || fail "h0 cannot reach h2 after its link came back"
reach 2 1 || fail "h2 cannot reach h1 after its link came back"

# down kills what runs inside and removes every namespace of the name.
"$netns" exec "$name" 1 sleep 60 &
sleeper=$!
sleep 0.2
"$netns" down "$name" || fail "down"
wait $sleeper 2>/dev/null
kill -0 $sleeper 2>/dev/null && fail "a process survived down"
left=$(ip netns list | awk '{print $1}' | grep -E "^$name-" || true)
[ -z "$left" ] || fail "namespaces left after down: $left"
"$netns" down "$name" || fail "a second down is not a no-op"
echo "test_link: ok (3 hosts, ping, cut, restore, teardown)"
