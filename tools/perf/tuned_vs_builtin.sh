#!/bin/sh
# tuned_vs_builtin.sh: the built-in algorithm table against the one
# shoal-tune measures on this machine, in one run.
#
#   tools/perf/tuned_vs_builtin.sh [BUILD_DIR]        (default ./build)
#
# Runs shoal-tune (timed) into BUILD_DIR/perf-tuned/tuning, then shoal-perf
# RUNS times with each table, alternating (SHOAL_TUNING_FILE=/dev/null: the
# built-in table; then the tuned file), over OPS from 8 B to MAXBYTES,
# and prints per operation and size: the built-in and tuned times
# (out-of-place, median over the runs of shoal-perf's medians), their
# ratio, and whether the tuned file chose another algorithm there ("*").
# The tuned table should never be slower (a ratio above 1 only within
# noise, which the rows with the same choice show) and faster where the
# built-in choice is wrong.
#
# Environment: NRANKS (2), RUNS (2), OPS (allreduce,reduce,allgather,
# reducescatter,alltoall,gather,scatter), MAXBYTES (64M), ITERS (20),
# TUNE_ARGS (extra shoal-tune options).
set -eu

BUILD=${1:-./build}
NRANKS=${NRANKS:-2}
RUNS=${RUNS:-2}
OPS=${OPS:-allreduce,reduce,allgather,reducescatter,alltoall,gather,scatter}
MAXBYTES=${MAXBYTES:-64M}
ITERS=${ITERS:-20}
OUT=$BUILD/perf-tuned
mkdir -p "$OUT"
RUN="$BUILD/tools/shoalrun -n $NRANKS"

colls=$(echo "$OPS" | sed 's/allreduce/all_reduce/; s/allgather/all_gather/;
    s/reducescatter/reduce_scatter/; s/alltoall/all_to_all/')
start=$(date +%s.%N)
# shellcheck disable=SC2086
$RUN "$BUILD/tools/shoal-tune" --no-progress -c "$colls" --max "$MAXBYTES" \
    -o "$OUT/tuning" ${TUNE_ARGS:-} >"$OUT/tune.txt"
end=$(date +%s.%N)
echo "# shoal-tune on $NRANKS ranks: $(echo "$end - $start" | bc) s wall"
tail -n 2 "$OUT/tune.txt"

perf() { # $1: tuning file, $2: output
    SHOAL_TUNING_FILE=$1 $RUN "$BUILD/tools/shoal-perf" -o "$OPS" -b 8 \
        -e "$MAXBYTES" -f 2 -n "$ITERS" --iter_bytes 1G --min_iters 5 \
        -c 0 >"$2"
}
i=1
while [ "$i" -le "$RUNS" ]; do
    perf /dev/null "$OUT/builtin.$i.txt"
    perf "$OUT/tuning" "$OUT/tuned.$i.txt"
    i=$((i + 1))
done

python3 - "$OUT" "$RUNS" <<'PY'
import statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
names = {"all_reduce": "allreduce", "all_gather": "allgather",
         "reduce_scatter": "reducescatter", "all_to_all": "alltoall"}

def tables(path):
    """{(op, bytes): out-of-place time us} from one shoal-perf output."""
    got, op = {}, None
    for line in open(path):
        if line.startswith("# ") and len(line.split()) == 2:
            op = line.split()[1]
        f = line.split()
        if op and len(f) > 6 and f[0].isdigit() and not line.startswith("#"):
            try:
                got[(op, int(f[0]))] = float(f[5])
            except ValueError:
                pass
    return got

def median_of(kind):
    runs_t = [tables(f"{out}/{kind}.{i}.txt") for i in range(1, runs + 1)]
    keys = set().union(*runs_t)
    return {k: statistics.median(t[k] for t in runs_t if k in t) for k in keys}

builtin, tuned = median_of("builtin"), median_of("tuned")
differs = {}
for line in open(f"{out}/tune.txt"):
    f = line.split()
    if len(f) == 8 and not line.startswith("#"):
        differs[(names.get(f[0], f[0]), int(f[1]))] = (f[2], f[7])
print(f"{'op':<15}{'bytes':>10}{'built-in us':>13}{'tuned us':>11}"
      f"{'tuned/bi':>10}  choice (built-in -> tuned)")
worse = []
for key in sorted(builtin, key=lambda k: (k[0], k[1])):
    if key not in tuned:
        continue
    b, t = builtin[key], tuned[key]
    d, c = differs.get(key, ("?", "?"))
    mark = f"{d} -> {c} *" if d != c else d
    print(f"{key[0]:<15}{key[1]:>10}{b:>13.2f}{t:>11.2f}{t / b:>10.2f}  {mark}")
    if d != c and t > 1.1 * b:
        worse.append(key)
print("# rows where the tuned choice differs and is >10% slower:",
      ", ".join(f"{o} {n}" for o, n in worse) or "none")
PY
