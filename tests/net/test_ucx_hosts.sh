#!/usr/bin/env bash
# The UCX transport across hosts: 3 network namespaces on a bridge,
# SHOAL_TRANSPORT=ucx with UCX_TLS=tcp (UCX's own TCP transport, as on a
# cluster without RDMA), 1 or 2 ranks per host. Runs a sample of the
# cases (SHOAL_NET_FULL=1: more, with the full matrix), then the
# failures: a host's link cut in the middle of a loop of all-reduces and
# a host's rank killed. Exit 77 = skipped (no namespaces here, or shoal
# built without UCX).
set -u
here=$(cd "$(dirname "$0")" && pwd)
netns=$here/netns.sh
build=${SHOAL_BUILD_DIR:-$here/../../build}
mptest=$build/tests/shoal_mptest
name=shoal-tu$$
me=test_ucx_hosts
tmp=$(mktemp -d)

[ -x "$mptest" ] ||
    { echo "$me: SKIP: build first ($mptest)" >&2; exit 77; }
grep -q '^SHOAL_HAVE_UCX_BUILT:INTERNAL=ON' "$build/CMakeCache.txt" ||
    { echo "$me: SKIP: shoal built without UCX" >&2; exit 77; }
trap '"$netns" down "$name"; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
"$netns" up "$name" 3 || exit $?

# shellcheck source=tests/net/hosts_lib.sh
. "$here/hosts_lib.sh"
UCX="SHOAL_TRANSPORT=ucx UCX_TLS=tcp"

# --- Collectives, point to point, windows and queues across hosts -------------
cases="coll_all_reduce coll_all_gather_v coll_all_to_all_v"
[ "$full" = 1 ] && cases="$cases coll_reduce coll_reduce_scatter_v
       coll_gather coll_scatter coll_inflight"
for c in $cases; do
    run_job "0 1" "$UCX" "$c" $matrix
done
for c in p2p_any bcast split plan_random; do
    run_job "0 1 2" "$UCX" "$c"
done
run_job "0 0 1 2" "$UCX" coll_reduce_scatter_v $matrix
run_job "0 1 2" "$UCX" window_ring plain-quick
run_job "0 0 1 1" "$UCX" queue
echo "$me: collectives, windows and queues across 2 and 3 hosts ok"

# --- A link cut in the middle of a loop ----------------------------------------
cut_link_fails_every_rank "$UCX"
echo "$me: a cut link fails every rank within the deadline"

# --- A host's rank killed -----------------------------------------------------
killed_rank_fails_the_others "$UCX"
[ "$killed_after" -le 10 ] || fail "failing took $killed_after s after the kill"
echo "$me: a killed rank fails the others, naming it ($killed_after s)"
echo "$me: ok"
