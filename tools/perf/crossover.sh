#!/bin/sh
# crossover.sh: every shared-memory algorithm of a collective, forced with
# SHOAL_ALGO, side by side over the sizes, to see where the built-in
# table (src/coll/select.c) should switch between them.
#
#   tools/perf/crossover.sh [BUILD_DIR]     (default ./build)
#
# Per rank count in RANKS ("2"), runs shoal-perf under shoalrun for each
# (collective, algorithm) pair from MINBYTES (1K) to MAXBYTES (4M), factor
# 2, ITERS (30) iterations, private buffers, and prints per collective a
# table: size, then each algorithm's median and p90 (us). A forced
# algorithm runs as named (no hand-over to another for private memory, as
# the built-in choice may). Raw shoal-perf rows stay in OUT_DIR (BUILD_DIR/
# perf-crossover).
set -eu
BUILD=${1:-./build}
OUT_DIR=${OUT_DIR:-$BUILD/perf-crossover}
RANKS=${RANKS:-2}
MINBYTES=${MINBYTES:-1K}
MAXBYTES=${MAXBYTES:-4M}
ITERS=${ITERS:-30}
mkdir -p "$OUT_DIR"

# One forced run: the size, median and p90 columns of shoal-perf's rows.
run() { # ranks op collective algorithm
    SHOAL_ALGO="$3:$4" timeout 120 "$BUILD/tools/shoalrun" -n "$1" \
        "$BUILD/tools/shoal-perf" -o "$2" -b "$MINBYTES" -e "$MAXBYTES" \
        -f 2 -n "$ITERS" --iter_bytes 256M -w 3 --min_iters 5 2>&1 \
        | awk '/^#/ || (NF <= 5 && $1 ~ /^[0-9]/) { next }
            NF > 5 { print $1, $6, $16; next } { print }'
}

# The table of one collective: a column pair per algorithm.
table() { # ranks op collective algorithms...
    n=$1 op=$2 coll=$3
    shift 3
    for a in "$@"; do
        run "$n" "$op" "$coll" "$a" >"$OUT_DIR/$op.$a.$n.txt"
    done
    echo "# $op, $n ranks: median/p90 (us) per algorithm: $*"
    (cd "$OUT_DIR" && for a in "$@"; do printf '%s\n' "$op.$a.$n.txt"; done) \
        | (cd "$OUT_DIR" && xargs paste -d' ') \
        | awk -v k=$# '{
            printf "%10s", $1
            for (i = 0; i < k; i++) {
                printf " %9s/%-9s", $(3 * i + 2), $(3 * i + 3)
            }
            printf "\n"
        }'
}

for n in $RANKS; do
    table "$n" allreduce all_reduce oneshot twoshot direct
    table "$n" reduce reduce oneshot direct
    table "$n" allgather all_gather staged direct
    table "$n" reducescatter reduce_scatter staged direct
    table "$n" alltoall all_to_all staged direct
    table "$n" gather gather staged direct
    table "$n" scatter scatter staged direct
    table "$n" broadcast broadcast outbox direct
done
