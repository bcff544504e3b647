#!/usr/bin/env bash
# bench_net.sh: make bench-net. Two namespaced hosts (tests/net/netns.sh),
# one process per host, on the same link in one run:
#   - raw TCP (tools/perf/tcp_bench): 1 stream and N streams at 64 MiB,
#     8-byte round trip;
#   - gloo's all_reduce through torch.distributed at 8 B, 64 KiB, 64 MiB;
#   - shoal's all_reduce, all_gather, reduce_scatter over TCP: n/a until
#     the TCP transport (issue 5) exists;
# then one table and issue 5's targets as numbers. The namespaces and
# everything in them are removed on any exit.
#
#   tools/perf/bench_net.sh BUILD_DIR PYTHON
#
# Environment: SIZE (64M; a number with K or M), ITERS (5), STREAMS (1,2,4), TARGET_STREAMS (2:
# the row the busbw target compares with, shoal's default sockets per
# peer), NETNS_SUBNET (see netns.sh). Exit 77 where namespaces are not
# permitted.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd) || exit 1
python=${2:-$build/pyenv/bin/python}
netns=$root/tests/net/netns.sh
name=shoal-bn$$
tcp_port=7447
gloo_port=29547
size=${SIZE:-64M}
target_streams=${TARGET_STREAMS:-2}

trap '"$netns" down "$name"' EXIT
trap 'exit 1' INT TERM HUP
"$netns" up "$name" 2 || exit $?
server_addr=$("$netns" addr "$name" 0)
out=$(mktemp -d)
trap '"$netns" down "$name"; rm -rf "$out"' EXIT

echo "bench-net: hosts $name-h0 ($server_addr) and $name-h1 on a bridge"

# Raw TCP: the server stays up until `down` kills it with its namespace.
"$netns" exec "$name" 0 "$build/tools/tcp_bench" server -p $tcp_port \
    >/dev/null &
"$netns" exec "$name" 1 timeout 300 "$build/tools/tcp_bench" client \
    "$server_addr" -p $tcp_port -s "$size" -n "${ITERS:-5}" \
    -P "${STREAMS:-1,2,4}" >"$out/tcp" || {
    echo "bench-net: tcp_bench failed" >&2
    exit 1
}

# gloo: rank 0 on h0 (it also hosts the store), rank 1 on h1.
gloo() {
    "$netns" exec "$name" "$1" timeout 300 env PYTHONWARNINGS=ignore \
        OMP_NUM_THREADS=1 "$python" "$root/tools/perf/gloo_allreduce.py" \
        --rank "$1" --world-size 2 --master "$server_addr:$gloo_port" \
        --sizes "8,64K,$size"
}
gloo_failed() {
    echo "bench-net: gloo failed" >&2
    tail -n 5 "$out/gloo0.err" "$out/gloo1.err" >&2
    exit 1 # the trap kills the other rank with its namespace
}
gloo 0 >"$out/gloo" 2>"$out/gloo0.err" &
gloo0=$!
gloo 1 >/dev/null 2>"$out/gloo1.err" || gloo_failed
wait $gloo0 || gloo_failed

na="n/a (TCP transport not built yet)"
case $size in
    *K) label="${size%K} KiB" ;;
    *M) label="${size%M} MiB" ;;
    *) label="$size B" ;;
esac
{
    grep '^#' "$out/tcp"
    printf '%-34s %12s %10s\n' "what (2 hosts, 1 rank each)" time \
        "GB/s (collectives: busbw)"
    grep -v '^#' "$out/tcp" | tail -n +2
    cat "$out/gloo"
    for op in all_reduce all_gather reduce_scatter; do
        printf '%-34s %s\n' "shoal $op $label" "$na"
    done
    printf '%-34s %s\n' "shoal all_reduce 8 B" "$na"
} | tee "$out/table"

# Issue 5's targets as numbers: what shoal's rows will have to reach.
awk -v ns="$target_streams" -v big="gloo all_reduce $label" '
    # Seconds in a row: the field before its unit.
    function secs(   i) {
        for (i = 2; i <= NF; i++) {
            if ($i == "ms") return $(i - 1) / 1e3
            if ($i == "us") return $(i - 1) / 1e6
        }
        return -1
    }
    $0 ~ "^tcp " ns " streams? " { nbw = $NF }
    /^tcp round trip 8 B/ { rtt = secs() }
    index($0, big) == 1 { gbw = $NF }
    END {
        print "targets (issue 5), shoal rows to come:"
        if (nbw != "")
            printf "  all_reduce busbw >= 0.9 x tcp %s streams = %.3f GB/s\n", ns, 0.9 * nbw
        if (gbw != "")
            printf "  all_reduce busbw >= 2 x gloo = %.3f GB/s\n", 2 * gbw
        if (rtt > 0)
            printf "  8-byte all_reduce <= 2 x tcp round trip = %.1f us\n", 2 * rtt * 1e6
    }' "$out/table"
