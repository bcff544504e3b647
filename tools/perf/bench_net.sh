#!/usr/bin/env bash
# bench_net.sh: make bench-net. Two namespaced hosts (tests/net/netns.sh),
# one process per host, on the same link in one run:
#   - raw TCP (tools/perf/tcp_bench): 1 stream and N streams at 64 MiB,
#     8-byte round trip;
#   - gloo's all_reduce through torch.distributed at 8 B, 64 KiB, 64 MiB;
#   - shoal's all_reduce, all_gather, reduce_scatter at the same size and
#     8-byte all_reduce (tools/shoal-perf, one rank per host), over its
#     own TCP and, where built with UCX, over UCX (UCX_TLS=tcp), with
#     and without its peer error handling (SHOAL_UCX_PEER_ERRORS);
# then one table and the TCP targets as numbers. The namespaces and
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
    -P "${STREAMS:-1,2,4}" -d 1 >"$out/tcp" || {
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

# shoal: rank 0 on h0 serves the store. Prints "<op> <time us> <busbw>"
# per op from rank 0's nccl-tests table (out-of-place columns).
shoal_port=29647
shoal_tp=auto
peer_errors=1
shoal_perf() {
    "$netns" exec "$name" "$1" timeout 300 env SHOAL_RANK="$1" SHOAL_SIZE=2 \
        SHOAL_TRANSPORT="$shoal_tp" UCX_TLS=tcp \
        SHOAL_UCX_PEER_ERRORS="$peer_errors" \
        SHOAL_STORE="$server_addr:$shoal_port" SHOAL_SECRET=bench-net \
        "$build/tools/shoal-perf" "${@:2}"
}
shoal_run() { # shoal-perf flags...
    shoal_perf 0 "$@" >"$out/shoal.raw" 2>"$out/shoal0.err" &
    local p=$!
    shoal_perf 1 "$@" >/dev/null 2>"$out/shoal1.err" &&
        wait $p || {
        echo "bench-net: shoal-perf failed" >&2
        tail -n 5 "$out/shoal0.err" "$out/shoal1.err" >&2
        exit 1
    }
    shoal_port=$((shoal_port + 1))
    awk '/^# [a-z]+$/ { op = $2 } /^ *[0-9]/ && NF > 12 { print op, $6, $8 }' \
        "$out/shoal.raw"
}
bytes=$(echo "$size" | sed 's/K$/*1024/; s/M$/*1048576/' | bc)
shoal_run -o allreduce,allgather,reducescatter -b "$bytes" -e "$bytes" \
    -n "${ITERS:-5}" -w 2 -c 0 >"$out/shoal.big"
shoal_run -o allreduce -b 8 -e 8 -n 2000 -w 100 -c 0 >"$out/shoal.small"
: >"$out/ucx.big"
: >"$out/ucx.small"
: >"$out/ucx0.big"
: >"$out/ucx0.small"
if grep -q '^SHOAL_HAVE_UCX_BUILT:INTERNAL=ON' "$build/CMakeCache.txt"; then
    shoal_tp=ucx
    shoal_run -o allreduce,allgather,reducescatter -b "$bytes" -e "$bytes" \
        -n "${ITERS:-5}" -w 2 -c 0 >"$out/ucx.big"
    shoal_run -o allreduce -b 8 -e 8 -n 2000 -w 100 -c 0 >"$out/ucx.small"
    peer_errors=0 # zero copy over TCP, deaths found by deadlines
    shoal_run -o allreduce,allgather,reducescatter -b "$bytes" -e "$bytes" \
        -n "${ITERS:-5}" -w 2 -c 0 >"$out/ucx0.big"
    shoal_run -o allreduce -b 8 -e 8 -n 2000 -w 100 -c 0 >"$out/ucx0.small"
fi

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
    for tp in shoal ucx ucx0; do
        who=shoal
        [ $tp = ucx ] && who="shoal-ucx"
        [ $tp = ucx0 ] && who="shoal-ucx-nopeer"
        while read -r op us bw; do
            case $op in
                allreduce) op=all_reduce ;;
                allgather) op=all_gather ;;
                reducescatter) op=reduce_scatter ;;
            esac
            printf '%-34s %9.3f ms %10.3f\n' "$who $op $label" \
                "$(echo "$us / 1000" | bc -l)" "$bw"
        done <"$out/$tp.big"
        if read -r _ us _ <"$out/$tp.small"; then
            printf '%-34s %9.1f us\n' "$who all_reduce 8 B" "$us"
        fi
    done
} | tee "$out/table"

# The TCP targets as numbers: what shoal's rows have to reach.
awk -v ns="$target_streams" -v big="gloo all_reduce $label" -v lab="$label" \
    -v mine="shoal all_reduce $label" '
    # Seconds in a row: the field before its unit.
    function secs(   i) {
        for (i = 2; i <= NF; i++) {
            if ($i == "ms") return $(i - 1) / 1e3
            if ($i == "us") return $(i - 1) / 1e6
        }
        return -1
    }
    function verdict(ok) { return ok ? "MET    " : "NOT MET" }
    $0 ~ "^tcp " ns " streams? [0-9]" { nbw = $NF }
    $0 ~ "^tcp " ns " streams? each way" { dbw = $NF }
    /^tcp round trip 8 B/ { rtt = secs() }
    index($0, big) == 1 { gbw = $NF }
    index($0, mine) == 1 { sbw = $NF }
    /^shoal all_reduce 8 B/ { slat = secs() }
    index($0, "shoal-ucx all_reduce " lab) == 1 { ubw = $NF }
    /^shoal-ucx all_reduce 8 B/ { ulat = secs() }
    index($0, "shoal-ucx-nopeer all_reduce " lab) == 1 { u0bw = $NF }
    END {
        print "# targets (busbw in GB/s):"
        if (nbw != "" && sbw != "")
            printf "# %s all_reduce busbw >= 0.9 x tcp %s streams: shoal %.3f, tcp %.3f: %.2fx\n", verdict(sbw >= 0.9 * nbw), ns, sbw, nbw, sbw / nbw
        if (dbw != "" && sbw != "")
            printf "#         (both directions loaded, as in all_reduce: tcp %s streams each way %.3f: shoal %.2fx)\n", ns, dbw, sbw / dbw
        if (gbw != "" && sbw != "")
            printf "# %s all_reduce busbw >= 2 x gloo: shoal %.3f, gloo %.3f: %.2fx\n", verdict(sbw >= 2 * gbw), sbw, gbw, sbw / gbw
        if (rtt > 0 && slat > 0)
            printf "# %s 8-byte all_reduce <= 2 x tcp round trip: shoal %.1f us, round trip %.1f us: %.2fx\n", verdict(slat <= 2 * rtt), slat * 1e6, rtt * 1e6, slat / rtt
        if (ubw != "" && sbw != "")
            printf "# %s UCX all_reduce busbw within 10%% of shoal TCP: ucx %.3f, tcp %.3f: %.2fx\n", verdict(ubw >= 0.9 * sbw), ubw, sbw, ubw / sbw
        if (u0bw != "" && sbw != "")
            printf "# %s   the same without peer error handling: ucx %.3f, tcp %.3f: %.2fx\n", verdict(u0bw >= 0.9 * sbw), u0bw, sbw, u0bw / sbw
        if (ulat > 0 && slat > 0)
            printf "# %s UCX 8-byte all_reduce <= 2 x shoal TCP: ucx %.1f us, tcp %.1f us: %.2fx\n", verdict(ulat <= 2 * slat), ulat * 1e6, slat * 1e6, ulat / slat
    }' "$out/table"
