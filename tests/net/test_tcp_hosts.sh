#!/usr/bin/env bash
# Ranks on separate hosts: 3 network namespaces on a bridge, 1 or 2 ranks
# per host, the store served by rank 0 in host 0. Runs shoal_mptest cases
# across the hosts (a sample; SHOAL_NET_FULL=1: every case with the full
# matrix), then the failures: a host's link cut in the middle of a loop of
# all-reduces, a host's rank killed, and strangers at a rank's port
# (garbage, a wrong secret, a silent connection) while the job starts.
# Exit 77 = skipped (no namespaces here).
set -u
here=$(cd "$(dirname "$0")" && pwd)
netns=$here/netns.sh
build=${SHOAL_BUILD_DIR:-$here/../../build}
mptest=$build/tests/shoal_mptest
knock=$build/tests/shoal_knock
name=shoal-th$$
me=test_tcp_hosts
tmp=$(mktemp -d)

[ -x "$mptest" ] && [ -x "$knock" ] ||
    { echo "test_tcp_hosts: SKIP: build first ($mptest)" >&2; exit 77; }
trap '"$netns" down "$name"; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
"$netns" up "$name" 3 || exit $?

# shellcheck source=tests/net/hosts_lib.sh
. "$here/hosts_lib.sh"

# --- The collectives across hosts -----------------------------------------
cases="coll_all_reduce coll_reduce coll_all_gather coll_reduce_scatter_v
       coll_all_to_all_v coll_gather coll_scatter"
[ "$full" = 1 ] && cases="$cases coll_all_gather_v coll_reduce_scatter
       coll_all_to_all coll_nan coll_inflight coll_reuse"
for c in $cases; do
    run_job "0 1" "" "$c" $matrix
done
for c in p2p p2p_tags bcast barrier split; do
    run_job "0 1 2" "" "$c"
done
# Two ranks on one host and one on each of the others.
run_job "0 0 1 2" "" coll_all_reduce $matrix
run_job "0 0 1 2" "" coll_reduce_scatter_v $matrix
run_job "0 1 1 2" "SHOAL_SOCKETS_PER_PEER=3" coll_all_gather $matrix
# Two ranks on each host: all-reduce is host-aware (shared memory within a
# host, the leaders over TCP); blocking, in flight, and forced flat.
run_job "0 0 1 1" "" coll_all_reduce $matrix
run_job "0 0 1 1" "" coll_inflight $matrix
run_job "0 0 1 1" "SHOAL_ALGO=allreduce:ring" coll_all_reduce $matrix
run_job "0 0 1 1" "SHOAL_ALGO=allreduce:hier" coll_all_reduce $matrix
# float16/bfloat16 bit for bit as over shared memory, across hosts alone
# and with two ranks on a host (where all-reduce leaves the host-aware
# algorithm for these types).
run_job "0 1 2" "" coll_half
run_job "0 0 1 1" "" coll_half
run_job "0 0 1 1" "SHOAL_ALGO=allreduce:hier" coll_half
# Every algorithm forced per call, the host-aware ones included (which
# refuse a float16 all-reduce when named).
run_job "0 0 1 1" "" forced_algo
run_job "0 1 0 1 1" "" bcast
run_job "0 1 0 1 1" "SHOAL_ALGO=broadcast:hier" bcast
echo "test_tcp_hosts: collectives across 2 and 3 hosts ok"

# --- Windows across hosts -----------------------------------------------------
# Puts and signals as messages applied by the target's progress; peers
# on other hosts are SEPARATE (window_map checks that nothing is mapped).
# Same-host peers of a job across hosts go through their host's shared
# memory (mapped: "pairs"), the others over TCP.
run_job "0 1 2" "" window_ring plain
run_job "0 0 1 1" "SHOAL_TCP_CHUNK_BYTES=4096" window_ring heap-quick
run_job "0 0 1 1" "" window_ring plain-quick
run_job "0 1" "" window_map separate
run_job "0 0 1 1" "" window_map pairs
run_job "0 1 2" "" window_errors
echo "test_tcp_hosts: windows across 2 and 3 hosts ok"

# --- Queues across hosts ------------------------------------------------------
# Records to a location on another host are messages its progress applies
# (its watch wakes the channel); to one on the same host, stores into its
# mapped rings, with its bell rung by the sender.
run_job "0 1 2" "" queue
run_job "0 0 1 1" "" queue
run_job "0 0 1 1" "SHOAL_QUEUE_RING_BYTES=16K SHOAL_TCP_CHUNK_BYTES=4096" queue
echo "test_tcp_hosts: queues across 2 and 3 hosts ok"

# --- A link cut in the middle of a loop -------------------------------------
cut_link_fails_every_rank ""
echo "test_tcp_hosts: a cut link fails every rank within the deadline"

# --- A host's rank killed --------------------------------------------------
killed_rank_fails_the_others ""
echo "test_tcp_hosts: a killed rank fails the others at once"

# --- A rank killed that shares its host (host-aware all-reduce) ---------------
start_job "0 0 1 1" "SHOAL_TIMEOUT_SECONDS=30" net_loop 30
wait_looping || { wait_job; fail "the loop did not start"; }
kill -9 "${pids[3]}"
for r in 0 1 2; do
    wait "${pids[r]}" || { cat "$tmp"/out.*; fail "rank $r after the kill"; }
    grep -q "SHOAL_EPEER\|SHOAL_EABORTED" "$tmp/out.$r" ||
        { cat "$tmp/out.$r"; fail "rank $r did not name the dead peer"; }
done
wait "${pids[3]}" 2>/dev/null
echo "test_tcp_hosts: a killed rank sharing a host fails the others at once"

# --- Strangers at a rank's port while the job starts -------------------------
port=$(store_port)
store="$("$netns" addr "$name" 0):$port"
common="SHOAL_SIZE=2 SHOAL_STORE=$store SHOAL_SECRET=net-test-secret SHOAL_TEST_NET=1"
rm -f "$tmp"/out.*
# shellcheck disable=SC2086
"$netns" exec "$name" 0 env SHOAL_RANK=0 $common "$mptest" coll_all_reduce \
    sample >"$tmp/out.0" 2>&1 &
pids=($!)
# Rank 1 joins, then waits 3 s before connecting: meanwhile rank 0 listens
# for it, and the strangers knock.
# shellcheck disable=SC2086
"$netns" exec "$name" 1 env SHOAL_RANK=1 SHOAL_TEST_CONNECT_DELAY_MS=3000 \
    $common "$mptest" coll_all_reduce sample >"$tmp/out.1" 2>&1 &
pids[1]=$!
njob=2
# Rank 0's mesh port: the one it listens on besides the store's.
mesh=
for i in $(seq 50); do
    mesh=$("$netns" exec "$name" 0 ss -ltnH 2>/dev/null |
        awk '{print $4}' | sed 's/.*://' | grep -vx "$port" | head -1)
    [ -n "$mesh" ] && break
    sleep 0.1
done
[ -n "$mesh" ] || { kill "${pids[0]}"; fail "rank 0 never listened"; }
at="$("$netns" addr "$name" 0):$mesh"
"$netns" exec "$name" 1 "$knock" "$at" garbage ||
    fail "rank 0 did not hang up on garbage"
"$netns" exec "$name" 1 "$knock" "$at" secret not-the-secret ||
    fail "rank 0 accepted a wrong secret"
"$netns" exec "$name" 2 "$knock" "$at" silent || fail "silent knock"
wait_job || fail "the job after the strangers"
n=$(grep -c "refused a TCP connection" "$tmp/out.0")
[ "$n" -ge 2 ] || { cat "$tmp/out.0"; fail "rank 0 warned $n times, wanted 2+"; }
echo "test_tcp_hosts: strangers refused with a warning, the job went on"

# --- Latency hidden by pipelining (needs netem) --------------------------------
if "$netns" delay "$name" 1 2ms 2>/dev/null; then
    run_job "0 1" "" coll_all_reduce sample
    echo "test_tcp_hosts: ok with 2 ms of delay"
else
    echo "test_tcp_hosts: delay part skipped: no netem in this kernel"
fi
echo "test_tcp_hosts: ok"
