#!/bin/sh
# stability.sh [BUILD_DIR] [RUNS]: compare.sh RUNS times back to back (5),
# to 64 KiB unless MAXBYTES says otherwise, then the stability target over
# the runs (stability.py): every row's shoal median within 1.5x of that
# row's median over the runs, and no cell above 2x Open MPI's time in its
# own run; Open MPI's rows get the same spread beside, which shows how much
# of it is the host's. compare.sh's other settings pass through. Raw
# outputs stay in BUILD_DIR/perf-stability/runN (and runN.log).
set -eu

BUILD=${1:-./build}
RUNS=${2:-5}
SRC=$(cd "$(dirname "$0")" && pwd)
OUT=$BUILD/perf-stability

rm -rf "$OUT"
mkdir -p "$OUT"
dirs=""
i=1
while [ "$i" -le "$RUNS" ]; do
    echo "stability.sh: compare.sh, run $i of $RUNS" >&2
    if ! MAXBYTES=${MAXBYTES:-64K} COMPARE_OUT="$OUT/run$i" \
        "$SRC/compare.sh" "$BUILD" >"$OUT/run$i.log" 2>&1; then
        echo "stability.sh: run $i failed; see $OUT/run$i.log" >&2
        exit 1
    fi
    dirs="$dirs $OUT/run$i"
    i=$((i + 1))
done
# shellcheck disable=SC2086
exec python3 "$SRC/stability.py" $dirs
