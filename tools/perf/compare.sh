#!/bin/sh
# compare.sh: shoal against Open MPI on this host, measured in the same run.
#
#   tools/perf/compare.sh [BUILD_DIR]        (default ./build)
#
# Runs shoal-perf (sendrecv, then broadcast) on 2 ranks under shoalrun.
# When Open MPI's mpicc and mpirun are installed (Debian: openmpi-bin
# libopenmpi-dev), it also builds tools/perf/mpi/mpi_bench.c into
# BUILD_DIR/perf-compare/ and runs it on 2 ranks; mpi_bench times the same
# operations with the same method (per iteration: barrier, time the
# operation on every rank, keep the maximum over ranks; report the median
# over iterations). Then it prints one side-by-side table per operation:
#
#   size | shoal time | Open MPI time | shoal/OMPI (time ratio, < 1: shoal
#   faster) | shoal GB/s | memcpy GB/s (baseline of the shoal-perf run) |
#   shoal / memcpy
#
# Sizes and iterations come from the environment: MINBYTES (8), MAXBYTES
# (64M), STEPFACTOR (2), ITERS (20), WARMUP (5), NRANKS (2). Raw outputs
# stay in BUILD_DIR/perf-compare/. Absolute times on a shared machine are
# noise; the ratios within one run are the figure.
set -eu

BUILD=${1:-./build}
SRC=$(cd "$(dirname "$0")" && pwd)
MINBYTES=${MINBYTES:-8}
MAXBYTES=${MAXBYTES:-64M}
STEPFACTOR=${STEPFACTOR:-2}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-5}
NRANKS=${NRANKS:-2}

SHOALRUN=$BUILD/tools/shoalrun
PERF=$BUILD/tools/shoal-perf
for f in "$SHOALRUN" "$PERF"; do
    if [ ! -x "$f" ]; then
        echo "compare.sh: $f not found; build first (ninja -C $BUILD)" >&2
        exit 2
    fi
done
OUT=$BUILD/perf-compare
mkdir -p "$OUT"
ARGS="-b $MINBYTES -e $MAXBYTES -f $STEPFACTOR -n $ITERS -w $WARMUP"

echo "# compare.sh: shoal vs Open MPI, $NRANKS ranks on $(hostname)," \
    "$(nproc) cpus, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"

# --- shoal ---------------------------------------------------------------
for op in sendrecv broadcast; do
    if ! "$SHOALRUN" -n "$NRANKS" "$PERF" -o $op $ARGS \
        >"$OUT/shoal_$op.txt" 2>&1; then
        echo "compare.sh: shoal-perf -o $op failed:" >&2
        tail -n 20 "$OUT/shoal_$op.txt" >&2
        exit 1
    fi
done

# Extracts "size value..." columns from one table of a shoal-perf output.
# $1 file, $2 table title (the exact '# title' line), $3 awk fields to print.
table() {
    awk -v title="# $2" '
        $0 == title { on = 1; next }
        on && /^# Out of bounds|^# (sendrecv|broadcast|barrier)($| )/ {
            on = 0
        }
        on && !/^#/ { print '"$3"' }
    ' "$1"
}
table "$OUT/shoal_sendrecv.txt" "memcpy baseline (all ranks copying at once)" \
    '$1, $5' >"$OUT/memcpy_sendrecv.tsv"
table "$OUT/shoal_broadcast.txt" \
    "memcpy baseline (all ranks copying at once)" '$1, $5' \
    >"$OUT/memcpy_broadcast.tsv"
# Exchange: out-of-place time, busbw. Broadcast: in-place (shoal's form).
table "$OUT/shoal_sendrecv.txt" "sendrecv" '$1, $6, $8' \
    >"$OUT/shoal_exchange.tsv"
table "$OUT/shoal_sendrecv.txt" "sendrecv half round trip (ranks 0 <-> 1)" \
    '$1, $4' >"$OUT/shoal_pingpong.tsv"
table "$OUT/shoal_broadcast.txt" "broadcast" '$1, $10, $12' \
    >"$OUT/shoal_bcast.tsv"

# --- Open MPI --------------------------------------------------------------
MPI_NOTE=""
: >"$OUT/mpi.txt"
if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
    mpicc -O2 -std=c11 -o "$OUT/mpi_bench" "$SRC/mpi/mpi_bench.c"
    MPIRUN="mpirun -np $NRANKS --oversubscribe --bind-to none"
    if [ "$(id -u)" = 0 ]; then
        MPIRUN="$MPIRUN --allow-run-as-root"
    fi
    # A short probe with a 1 MiB message: Open MPI's vader BTL copies large
    # messages with CMA (process_vm_readv), which some containers forbid.
    if $MPIRUN "$OUT/mpi_bench" -b 1M -e 1M -n 2 -w 1 \
        >"$OUT/mpi_probe.txt" 2>&1 \
        && ! grep -qi 'cma\|process_vm\|single.copy' "$OUT/mpi_probe.txt"; then
        MPI_NOTE="Open MPI: vader BTL, default single-copy mechanism (CMA)"
    else
        export OMPI_MCA_btl_vader_single_copy_mechanism=none
        MPI_NOTE="Open MPI: CMA single copy failed in this container"
        MPI_NOTE="$MPI_NOTE (see $OUT/mpi_probe.txt); measured with"
        MPI_NOTE="$MPI_NOTE OMPI_MCA_btl_vader_single_copy_mechanism=none"
    fi
    # shellcheck disable=SC2086
    if ! $MPIRUN "$OUT/mpi_bench" $ARGS >"$OUT/mpi.txt" 2>&1; then
        echo "compare.sh: mpi_bench failed:" >&2
        tail -n 20 "$OUT/mpi.txt" >&2
        MPI_NOTE="$MPI_NOTE; mpi_bench FAILED (no Open MPI column)"
        : >"$OUT/mpi.txt"
    fi
else
    MPI_NOTE="Open MPI not installed (no mpicc/mpirun): Open MPI columns N/A"
fi
for op in pingpong sendrecv bcast; do
    awk -v op=$op '$1 == op { print $2, $3, $6 }' "$OUT/mpi.txt" \
        >"$OUT/mpi_$op.tsv"
done
echo "# $MPI_NOTE"
grep '^# mpi_bench' "$OUT/mpi.txt" || true
grep '^#  Rank\|^# nranks' "$OUT/shoal_sendrecv.txt" || true
echo "# load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)"

# --- side by side ----------------------------------------------------------
# $1 title, $2 shoal tsv (size time_us [busbw]), $3 mpi tsv, $4 memcpy tsv.
# Without a busbw column the GB/s is size / time.
side_by_side() {
    echo "#"
    echo "# $1"
    awk -v mpifile="$3" -v memfile="$4" '
        BEGIN {
            while ((getline line < mpifile) > 0) {
                split(line, f, " "); mpi[f[1]] = f[2]; mpiwrong[f[1]] = f[3]
            }
            while ((getline line < memfile) > 0) {
                split(line, f, " "); mem[f[1]] = f[2]
            }
            printf "#%11s %11s %11s %10s %10s %10s %10s\n", "size",
                "shoal", "OpenMPI", "shoal/", "shoal", "memcpy", "shoal/"
            printf "#%11s %11s %11s %10s %10s %10s %10s\n", "(B)",
                "(us)", "(us)", "OpenMPI", "(GB/s)", "(GB/s)", "memcpy"
        }
        {
            size = $1; t = $2 + 0
            gbs = NF >= 3 ? $3 + 0 : (t > 0 ? size / t / 1e3 : 0)
            m = (size in mpi) ? sprintf("%11.2f", mpi[size]) \
                              : sprintf("%11s", "N/A")
            r = (size in mpi && mpi[size] > 0) \
                ? sprintf("%10.2f", t / mpi[size]) : sprintf("%10s", "N/A")
            mc = (size in mem) ? mem[size] + 0 : 0
            rm = mc > 0 ? sprintf("%10.3f", gbs / mc) : sprintf("%10s", "N/A")
            printf "%12d %11.2f %s %s %10.3f %10.2f %s\n", size, t, m, r,
                gbs, mc, rm
            if ((size in mpiwrong) && mpiwrong[size] != 0)
                printf "# ^ Open MPI delivered %d wrong bytes\n", mpiwrong[size]
        }
    ' "$2"
}
side_by_side \
    "sendrecv half round trip (ranks 0 <-> 1 ping-pong; GB/s = size / time)" \
    "$OUT/shoal_pingpong.tsv" "$OUT/mpi_pingpong.tsv" \
    "$OUT/memcpy_sendrecv.tsv"
side_by_side \
    "sendrecv exchange (r -> r+1 and r-1 -> r at once; GB/s = busbw)" \
    "$OUT/shoal_exchange.tsv" "$OUT/mpi_sendrecv.tsv" \
    "$OUT/memcpy_sendrecv.tsv"
side_by_side "broadcast from rank 0 (shoal in-place; GB/s = busbw)" \
    "$OUT/shoal_bcast.tsv" "$OUT/mpi_bcast.tsv" "$OUT/memcpy_broadcast.tsv"

# shoal's own verdict lines (wrong elements) for the record.
echo "#"
for op in sendrecv broadcast; do
    printf '# shoal %-9s ' "$op"
    grep '^# Out of bounds' "$OUT/shoal_$op.txt" | tr '\n' ' '
    echo
done
