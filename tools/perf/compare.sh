#!/bin/sh
# compare.sh: shoal against Open MPI, MPICH, oneCCL, DeepSpeed and gloo on
# this host, measured in the same run.
#
#   tools/perf/compare.sh [BUILD_DIR]              (default ./build)
#   NRANKS=8 tools/perf/compare.sh [BUILD_DIR]     (the 8-rank tail block)
#
# Full mode (the default, 2 ranks): runs shoal-perf under shoalrun, one
# process per collective (allreduce twice: malloc buffers, then shoal_alloc
# buffers), and, when Open MPI's mpicc and mpirun are installed (Debian:
# openmpi-bin libopenmpi-dev), builds tools/perf/mpi/mpi_bench.c into
# BUILD_DIR/perf-compare/ and runs the same operations: MPI_Allreduce
# (float sum), MPI_Reduce, MPI_Allgather, MPI_Reduce_scatter_block,
# MPI_Alltoall, MPI_Gather, MPI_Scatter, MPI_Bcast, point-to-point, and
# one-sided puts (shoal windows, malloc and shoal_alloc memory, against
# MPI_Put + MPI_Win_flush + a zero-byte send into MPI_Win_allocate). Both
# use one method: per iteration a barrier, then every rank times the
# operation alone; per iteration the maximum over ranks; the median over
# iterations. Then, per operation, a side-by-side table:
#
#   size | shoal time | Open MPI time | shoal/OMPI time | shoal busbw |
#   OMPI busbw | busbw shoal/OMPI | memcpy GB/s | shoal busbw / memcpy
#
# (allreduce: two shoal columns of each kind, malloc and shoal_alloc
# buffers), and finally a "targets" block: each target, MET or NOT MET,
# with the numbers. busbw uses nccl-tests' factors (allreduce 2(n-1)/n;
# allgather, reducescatter, alltoall, gather, scatter (n-1)/n with size =
# the total of every rank's block; reduce, broadcast, sendrecv, put 1); times
# are out-of-place (broadcast: in place, shoal's form). memcpy = the
# baseline of the same shoal-perf run: every rank copying `size` bytes
# between private buffers at once.
#
# MPICH (Debian: mpich libmpich-dev) runs the same mpi_bench.c, built with
# mpicc.mpich and started with mpirun.mpich, when both are installed; its
# times and shoal's ratio to them are two more columns of every table
# (N/A, with the reason in the header, when it is not installed).
#
# Intel oneCCL (CPU build) runs tools/perf/oneccl/oneccl_bench.cpp, built
# here with g++ against ONECCL_ROOT (default BUILD_DIR/peers-env, the
# virtual environment that tools/perf/oneccl/install.sh fills from PyPI:
# include/oneapi/ccl.hpp, lib/libccl.so), the same method, sizes, data and
# checks, its ranks started by the program itself over oneCCL's own
# key-value store (ofi transport, libfabric's shm provider, no worker
# threads): allreduce, reduce, allgather, reducescatter, alltoall, scatter,
# broadcast and point-to-point (ccl::send and ccl::recv); its times and
# shoal/oneCCL ratios are two more columns of every table. oneCCL has no
# gather and no one-sided windows: those tables say so. When it is
# not installed (or ONECCL_ROOT=none), fails to build or fails a short
# probe, every table's header line says "oneCCL N/A: <why>".
#
# DeepSpeed's CPU shared-memory all-reduce (deepspeed.comm.
# inference_all_reduce, in place, float32 sum) runs
# tools/perf/deepspeed/ds_allreduce.py with the Python of DEEPSPEED_PYTHON
# (default BUILD_DIR/peers-env/bin/python; install.sh --deepspeed) and
# adds a DeepSpeed column to the allreduce table; when it cannot run
# (DEEPSPEED_PYTHON=none, or deepspeed not importable) the script prints
# "# DeepSpeed N/A: <why>".
#
# gloo (torch.distributed's default CPU backend) runs the same script with
# -p gloo (torch.distributed.all_reduce, in place, ranks not bound) with
# the Python of GLOO_PYTHON (default BUILD_DIR/pyenv/bin/python, which
# make python-env fills) and adds a gloo column to the allreduce table
# ("# gloo N/A: <why>" when it cannot run).
#
# Tail mode (NRANKS=8, or MODE=tail): 8-byte allreduce only, TAIL_ITERS
# (2000) iterations, median, p90 and maximum iteration time for shoal,
# Open MPI, MPICH, oneCCL and DeepSpeed, and the targets at that rank
# count (shoal median <= 0.5x Open MPI's; no iteration slower than 20x
# shoal's median).
#
# Contention mode (LOAD=N): N busy processes (a shell loop each) run
# beside the ranks of every library for the whole run, started and stopped
# by the script; LOAD=cpus runs one per CPU. The tables then compare the
# libraries on a busy machine (add MODE=tail for the tail block's p90 and
# maximum). The load matrix is LOAD=0, 1 and 2 on 2 ranks: idle, one rank
# sharing its CPU while the other has its own, and both sharing.
#
# Pinned mode (PIN=1): rank r of every MPI library and of shoal runs on
# CPU r alone (taskset; mpirun --bind-to core), as launchers bind ranks,
# and LOAD's busy processes go to the CPUs LOAD_CPUS lists (default 0, 1,
# ...: the first shares rank 0's CPU, the root of the rooted operations).
# oneCCL, DeepSpeed and gloo stay unbound. The pinned load matrix is PIN=1
# with LOAD=1 (LOAD_CPUS=0, then 1) and LOAD=2.
#
# Cache-cold mode (COLD=1): shoal-perf --cold and mpi_bench -C (Open MPI
# and MPICH) rotate every iteration's buffers through regions of twice the
# last-level cache (COLD_CACHE bytes: getconf's LEVEL3_CACHE_SIZE, else
# 32M; a VM may report its host's whole cache, of which it gets a share),
# so no operation finds its data in cache, as an application that touches
# other memory between collectives; oneCCL, DeepSpeed and gloo have no
# such mode and are left out (N/A). Run it beside the default (warm) run.
#
# Environment: NRANKS (2), MODE (full, or tail when NRANKS=8), LOAD (0),
# PIN (0), LOAD_CPUS, COLD (0), MINBYTES
# (8) and STEPFACTOR (2) for allreduce, allgather, reducescatter and put
# (the operations with targets), OTHER_MINBYTES (16) and OTHER_STEPFACTOR (4)
# for the others (both series hit 64 KiB and 64 MiB), MAXBYTES (64M),
# ITERS (100: iterations per size, at most), ITER_BYTES (1G: big sizes
# run only as many iterations as fit ITER_BYTES), MIN_ITERS (10), WARMUP
# (5), TAIL_ITERS (2000), TAIL_WARMUP (200), TIMEOUT (600 s per shoal-perf,
# oneccl_bench or ds_allreduce run), ONECCL_ROOT, DEEPSPEED_PYTHON;
# OPS (every operation: "allreduce reduce allgather reducescatter alltoall
# gather scatter broadcast sendrecv put"; a subset runs and prints only
# those tables, and judges no targets), GLOO_PYTHON (BUILD_DIR/pyenv/bin/
# python);
# BENCH_BIN (a folder holding mpi_bench, mpich_bench and oneccl_bench built
# on another machine, for one without compilers: copied instead of built;
# the MPI launchers and oneCCL's libraries must still be found there);
# SHOAL_SHM_HEAP_BYTES and the library's other
# settings pass through. Raw outputs stay in BUILD_DIR/perf-compare/
# (COMPARE_OUT: another folder, for two runs at once on one build).
# Absolute times on a shared machine are noise; the ratios within one run
# are the figure.
set -eu

BUILD=${1:-./build}
SRC=$(cd "$(dirname "$0")" && pwd)
NRANKS=${NRANKS:-2}
if [ "$NRANKS" = 8 ]; then
    MODE=${MODE:-tail}
else
    MODE=${MODE:-full}
fi
MINBYTES=${MINBYTES:-8}
MAXBYTES=${MAXBYTES:-64M}
STEPFACTOR=${STEPFACTOR:-2}
OTHER_MINBYTES=${OTHER_MINBYTES:-16}
OTHER_STEPFACTOR=${OTHER_STEPFACTOR:-4}
ITERS=${ITERS:-100}
ITER_BYTES=${ITER_BYTES:-1G}
MIN_ITERS=${MIN_ITERS:-10}
WARMUP=${WARMUP:-5}
TAIL_ITERS=${TAIL_ITERS:-2000}
TAIL_WARMUP=${TAIL_WARMUP:-200}
TIMEOUT=${TIMEOUT:-600}
ALL_OPS="allreduce reduce allgather reducescatter alltoall gather scatter"
ALL_OPS="$ALL_OPS broadcast sendrecv put"
OPS=${OPS:-$ALL_OPS}

# wants OP: whether this run measures OP (OPS; pingpong comes with
# sendrecv, putpingpong with put).
wants() {
    case $1 in
        pingpong) set -- sendrecv ;;
        putpingpong) set -- put ;;
    esac
    case " $OPS " in
        *" $1 "*) return 0 ;;
    esac
    return 1
}

SHOALRUN=$BUILD/tools/shoalrun
PERF=$BUILD/tools/shoal-perf
for f in "$SHOALRUN" "$PERF"; do
    if [ ! -x "$f" ]; then
        echo "compare.sh: $f not found; build first (ninja -C $BUILD)" >&2
        exit 2
    fi
done
OUT=${COMPARE_OUT:-$BUILD/perf-compare}
mkdir -p "$OUT"
rm -f "$OUT"/*.tsv "$OUT"/*.txt "$OUT"/*.status
T_START=$(date +%s)

# Bytes of a size with an optional K/M/G suffix.
bytes_of() {
    awk -v s="$1" 'BEGIN {
        u = 1; c = substr(s, length(s))
        if (c == "K" || c == "k") u = 1024
        if (c == "M" || c == "m") u = 1048576
        if (c == "G" || c == "g") u = 1073741824
        if (u > 1) s = substr(s, 1, length(s) - 1)
        printf "%.0f\n", s * u
    }'
}

echo "# compare.sh: shoal vs Open MPI, MPICH, oneCCL, DeepSpeed and gloo," \
    "$NRANKS ranks on $(hostname)," \
    "$(nproc) cpus, $(date -u '+%Y-%m-%d %H:%M UTC'), mode $MODE"
echo "# load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
# Warnings that make the numbers below suspect.
if [ "$NRANKS" -gt "$(nproc)" ]; then
    echo "# WARNING: $NRANKS ranks on $(nproc) cpus: oversubscribed, the" \
        "times measure the scheduler more than either library"
fi
# Runnable tasks besides the sampling one, averaged over ten samples.
others=$(for _ in 1 2 3 4 5 6 7 8 9 10; do
    cut -d' ' -f4 /proc/loadavg
    sleep 0.1
done | awk -F/ '{ s += $1 - 1 } END { printf "%.1f\n", s / NR }')
if awk -v o="$others" 'BEGIN { exit !(o >= 1) }'; then
    echo "# WARNING: the machine is busy ($others other runnable tasks on" \
        "average): expect noise, run again when it is idle"
fi

# --- contention (LOAD=N) ---------------------------------------------------
# N busy processes beside the ranks, for the whole run: the machine of a
# job whose data loaders, other jobs or compute threads want its cores
# (one fewer than the ranks: asymmetric, some ranks share a CPU and some
# do not). Started here, stopped on any exit.
LOAD_PIDS=""
stop_load() {
    for p in $LOAD_PIDS; do
        kill "$p" 2>/dev/null || true
    done
}
LOAD=${LOAD:-0}
case $LOAD in
    cpus) LOAD=$(nproc) ;;
    *[!0-9]* | "")
        echo "compare.sh: LOAD must be a number of busy processes or" \
            "'cpus' (one per CPU), not '$LOAD'" >&2
        exit 2
        ;;
esac
PIN=${PIN:-0}
LOAD_CPUS=${LOAD_CPUS:-$(seq -s ' ' 0 $((LOAD > 0 ? LOAD - 1 : 0)))}
# busy_cpu I: the CPU of busy process I under PIN=1 (the I-th of
# LOAD_CPUS, from 0, wrapping around), else nothing.
busy_cpu() {
    [ "$PIN" = 1 ] || return 0
    echo "$LOAD_CPUS" | awk -v i="$1" '{ print $(i % NF + 1) }'
}
if [ "$LOAD" -gt 0 ]; then
    trap stop_load EXIT INT TERM
    i=0
    while [ "$i" -lt "$LOAD" ]; do
        cpu=$(busy_cpu "$i")
        # shellcheck disable=SC2086
        ${cpu:+taskset -c $cpu} sh -c 'while :; do :; done' &
        LOAD_PIDS="$LOAD_PIDS $!"
        i=$((i + 1))
    done
    where=""
    [ "$PIN" = 1 ] && where=", pinned to CPUs $LOAD_CPUS"
    echo "# LOAD=$LOAD: $LOAD busy processes run beside the ranks of every" \
        "library ($(nproc) CPUs$where)"
fi
# PIN=1: shoal's ranks start through a wrapper that binds rank r to CPU r.
PIN_SHOAL=""
if [ "$PIN" = 1 ]; then
    PIN_SHOAL="$OUT/pin_rank.sh"
    printf '#!/bin/sh\nexec taskset -c "$SHOAL_RANK" "$@"\n' >"$PIN_SHOAL"
    chmod +x "$PIN_SHOAL"
    echo "# PIN=1: rank r of shoal, Open MPI and MPICH runs on CPU r alone"
fi

# --- cache-cold (COLD=1) ----------------------------------------------------
COLD_SHOAL="" COLD_MPI=""
if [ "${COLD:-0}" = 1 ]; then
    COLD_CACHE=${COLD_CACHE:-$(getconf LEVEL3_CACHE_SIZE 2>/dev/null || true)}
    case ${COLD_CACHE:-0} in
        0 | "") COLD_CACHE=32M ;;
    esac
    COLD_SHOAL="--cold --cache $COLD_CACHE"
    COLD_MPI="-C $COLD_CACHE"
    echo "# COLD=1: cache-cold, every iteration's buffers past twice" \
        "$COLD_CACHE bytes of cache (shoal, Open MPI, MPICH)"
fi

# --- Open MPI setup -------------------------------------------------------
MPI_NOTE=""
MPIRUN=""
: >"$OUT/mpi.txt"
# bench_ready NAME COMPILER: $OUT/NAME copied from BENCH_BIN or built from
# mpi_bench.c with COMPILER; false when neither can be done.
bench_ready() {
    if [ -n "${BENCH_BIN:-}" ] && [ -x "$BENCH_BIN/$1" ]; then
        cp "$BENCH_BIN/$1" "$OUT/$1"
    elif command -v "$2" >/dev/null 2>&1; then
        "$2" -O2 -std=c11 -o "$OUT/$1" "$SRC/mpi/mpi_bench.c"
    else
        return 1
    fi
}
if command -v mpirun >/dev/null 2>&1 && bench_ready mpi_bench mpicc; then
    MPIRUN="mpirun -np $NRANKS --oversubscribe --bind-to none"
    if [ "$PIN" = 1 ]; then
        MPIRUN="mpirun -np $NRANKS --map-by core --bind-to core"
    fi
    if [ "$(id -u)" = 0 ]; then
        MPIRUN="$MPIRUN --allow-run-as-root"
    fi
    # A short probe with a 1 MiB message: Open MPI's vader BTL copies large
    # messages with CMA (process_vm_readv), which some containers forbid.
    if timeout 120 $MPIRUN "$OUT/mpi_bench" -o sendrecv -b 1M -e 1M -n 2 -w 1 \
        >"$OUT/mpi_probe.txt" 2>&1 \
        && ! grep -qi 'cma\|process_vm\|single.copy' "$OUT/mpi_probe.txt"; then
        MPI_NOTE="Open MPI: vader BTL, default single-copy mechanism (CMA)"
    else
        export OMPI_MCA_btl_vader_single_copy_mechanism=none
        MPI_NOTE="Open MPI: CMA single copy failed in this container"
        MPI_NOTE="$MPI_NOTE (see $OUT/mpi_probe.txt); measured with"
        MPI_NOTE="$MPI_NOTE OMPI_MCA_btl_vader_single_copy_mechanism=none"
    fi
    grep '^# mpi_bench' "$OUT/mpi_probe.txt" >"$OUT/mpi.txt" || true
else
    MPI_NOTE="Open MPI not installed (no mpicc/mpirun): Open MPI columns N/A"
fi

# --- MPICH setup ------------------------------------------------------------
MPICH_NOTE=""
MPICHRUN=""
: >"$OUT/mpich.txt"
if command -v mpirun.mpich >/dev/null 2>&1 \
    && bench_ready mpich_bench mpicc.mpich; then
    MPICHRUN="mpirun.mpich -np $NRANKS"
    if [ "$PIN" = 1 ]; then
        MPICHRUN="$MPICHRUN -bind-to core"
    fi
    MPICH_NOTE="MPICH: $(mpichversion 2>/dev/null | head -n 1 \
        | sed 's/^MPICH Version:[[:space:]]*/version /')"
else
    MPICH_NOTE="MPICH not installed (Debian: mpich libmpich-dev, for"
    MPICH_NOTE="$MPICH_NOTE mpicc.mpich and mpirun.mpich): MPICH columns N/A"
fi

# failure_word RC: how a peer's run ended, for its note (timeout's 124:
# it ran past TIMEOUT seconds and was stopped).
failure_word() {
    if [ "$1" -eq 124 ]; then
        echo "TIMED OUT (over ${TIMEOUT} s)"
    else
        echo "FAILED"
    fi
}

# run_mpich ARGS...: as run_mpi, with MPICH, into $OUT/mpich.txt.
run_mpich() {
    [ -n "$MPICHRUN" ] || return 0
    rc=0
    # shellcheck disable=SC2086
    timeout "$TIMEOUT" $MPICHRUN "$OUT/mpich_bench" $COLD_MPI "$@" \
        >"$OUT/mpich_last.txt" 2>&1 || rc=$?
    if [ $rc -ne 0 ]; then
        echo "compare.sh: MPICH mpi_bench $* failed (exit $rc):" >&2
        tail -n 8 "$OUT/mpich_last.txt" >&2 || true
        MPICH_NOTE="$MPICH_NOTE; mpi_bench $* $(failure_word $rc)"
    fi
    grep -v '^#' "$OUT/mpich_last.txt" >>"$OUT/mpich.txt" || true
}

# why_failed FILE: the first error line of a failed peer's output (its
# last line if none), 140 characters at most.
why_failed() {
    { grep -v '^#\|CCL_WARN' "$1" | grep -i -m 1 'error\|exception\|signal' \
        || grep -v '^#' "$1" | tail -n 1; } | sed 's/^.*|CCL_ERROR| *//' \
        | cut -c 1-140
}

# --- oneCCL setup ------------------------------------------------------------
# ONECCL_NA: why oneCCL cannot run (empty when it can).
ONECCL_ROOT=${ONECCL_ROOT:-$BUILD/peers-env}
ONECCL_NA=""
ONECCL_NOTE=""
: >"$OUT/oneccl.txt"
if [ "$ONECCL_ROOT" = none ]; then
    ONECCL_NA="switched off (ONECCL_ROOT=none)"
elif [ -x "${BENCH_BIN:-}/oneccl_bench" ]; then
    cp "$BENCH_BIN/oneccl_bench" "$OUT/oneccl_bench"
elif [ ! -f "$ONECCL_ROOT/include/oneapi/ccl.hpp" ] \
    || [ ! -e "$ONECCL_ROOT/lib/libccl.so" ]; then
    ONECCL_NA="not installed (no include/oneapi/ccl.hpp and lib/libccl.so"
    ONECCL_NA="$ONECCL_NA under ONECCL_ROOT=$ONECCL_ROOT;"
    ONECCL_NA="$ONECCL_NA tools/perf/oneccl/install.sh installs it)"
elif ! command -v g++ >/dev/null 2>&1; then
    ONECCL_NA="no g++ to build tools/perf/oneccl/oneccl_bench.cpp"
else
    lib=$(cd "$ONECCL_ROOT/lib" && pwd)
    # RPATH, not RUNPATH: libccl.so.1 finds its libccl.so.2 through it.
    if ! g++ -O2 -std=c++17 -I"$ONECCL_ROOT/include" \
        -o "$OUT/oneccl_bench" "$SRC/oneccl/oneccl_bench.cpp" -L"$lib" \
        -Wl,--disable-new-dtags,-rpath,"$lib" -lccl \
        >"$OUT/oneccl_build.txt" 2>&1; then
        ONECCL_NA="oneccl_bench.cpp failed to build: $(grep -m 1 \
            'error' "$OUT/oneccl_build.txt" | cut -c 1-120)"
        ONECCL_NA="$ONECCL_NA (see $OUT/oneccl_build.txt)"
    fi
fi
if [ -z "$ONECCL_NA" ]; then
    if ! timeout 120 "$OUT/oneccl_bench" -N "$NRANKS" -o allreduce \
        -b 8 -e 8 -n 2 -w 1 >"$OUT/oneccl_probe.txt" 2>&1; then
        ONECCL_NA="a 2-iteration probe failed:"
        ONECCL_NA="$ONECCL_NA $(why_failed "$OUT/oneccl_probe.txt")"
        ONECCL_NA="$ONECCL_NA (see $OUT/oneccl_probe.txt)"
    else
        ONECCL_NOTE=$(grep -m 1 '^# oneccl_bench' "$OUT/oneccl_probe.txt" \
            | sed 's/^# oneccl_bench: [0-9]* ranks, //')
        ONECCL_NOTE="oneCCL: ${ONECCL_NOTE:-version unknown}"
    fi
fi

# oneccl_na OP: why oneCCL has no numbers for OP (empty when it has).
oneccl_na() {
    if [ -n "$ONECCL_NA" ]; then
        echo "$ONECCL_NA"
        return
    fi
    case $1 in
        gather) echo "oneCCL has no gather" ;;
        put | putpingpong) echo "oneCCL has no one-sided windows" ;;
        pingpong) cat "$OUT/oneccl_sendrecv.status" 2>/dev/null || true ;;
        *) cat "$OUT/oneccl_$1.status" 2>/dev/null || true ;;
    esac
}

# run_oneccl OP ARGS...: oneccl_bench -o OP on NRANKS ranks, its rows
# appended to $OUT/oneccl.txt; a failure is written to
# $OUT/oneccl_OP.status (the table's header line says it) and the script
# goes on.
run_oneccl() {
    [ -z "$ONECCL_NA" ] || return 0
    op=$1
    shift
    rc=0
    timeout "$TIMEOUT" "$OUT/oneccl_bench" -N "$NRANKS" -o "$op" "$@" \
        >"$OUT/oneccl_last.txt" 2>&1 || rc=$?
    grep '^[a-z]* [0-9]' "$OUT/oneccl_last.txt" >>"$OUT/oneccl.txt" || true
    if [ $rc -ne 0 ]; then
        case $op in
            bcast) op=broadcast ;;
            *sendrecv) op=sendrecv ;;
        esac
        echo "oneccl_bench -o $op failed (exit $rc:" \
            "$(why_failed "$OUT/oneccl_last.txt"))" >"$OUT/oneccl_$op.status"
        echo "compare.sh: oneccl_bench -o $op $* failed (exit $rc):" >&2
        tail -n 8 "$OUT/oneccl_last.txt" >&2 || true
    fi
}

# --- DeepSpeed and gloo setup --------------------------------------------
# Both run tools/perf/deepspeed/ds_allreduce.py (-p deepspeed, -p gloo),
# each with its own Python. DS_NA, GLOO_NA: why each cannot run (empty
# when it can); DS_NOTE, GLOO_NOTE: what it reported about itself.
DEEPSPEED_PYTHON=${DEEPSPEED_PYTHON:-$BUILD/peers-env/bin/python}
GLOO_PYTHON=${GLOO_PYTHON:-$BUILD/pyenv/bin/python}
DS_NA="" DS_NOTE="" GLOO_NA="" GLOO_NOTE=""
: >"$OUT/deepspeed.txt"
: >"$OUT/gloo.txt"
if [ "$DEEPSPEED_PYTHON" = none ]; then
    DS_NA="switched off (DEEPSPEED_PYTHON=none)"
elif [ ! -x "$DEEPSPEED_PYTHON" ]; then
    DS_NA="no Python at DEEPSPEED_PYTHON=$DEEPSPEED_PYTHON"
    DS_NA="$DS_NA (tools/perf/oneccl/install.sh --deepspeed installs it)"
elif ! "$DEEPSPEED_PYTHON" -c 'import torch, deepspeed' \
    >"$OUT/deepspeed_import.txt" 2>&1; then
    DS_NA="torch or deepspeed not importable by $DEEPSPEED_PYTHON"
    DS_NA="$DS_NA (tools/perf/oneccl/install.sh --deepspeed installs them)"
fi
if [ "$GLOO_PYTHON" = none ]; then
    GLOO_NA="switched off (GLOO_PYTHON=none)"
elif [ ! -x "$GLOO_PYTHON" ]; then
    GLOO_NA="no Python at GLOO_PYTHON=$GLOO_PYTHON (make python-env makes"
    GLOO_NA="$GLOO_NA it)"
elif ! "$GLOO_PYTHON" -c 'import torch.distributed as d, numpy
assert d.is_gloo_available()' >"$OUT/gloo_import.txt" 2>&1; then
    GLOO_NA="torch with gloo, or numpy, not importable by $GLOO_PYTHON"
fi

if [ -n "$COLD_SHOAL" ]; then
    no_cold="not measured cache-cold (its benchmark has no such mode)"
    ONECCL_NA=${ONECCL_NA:-$no_cold}
    DS_NA=${DS_NA:-$no_cold}
    GLOO_NA=${GLOO_NA:-$no_cold}
fi

# run_torch_peer KEY PEER PYTHON ARGS...: ds_allreduce.py -p PEER on
# NRANKS ranks, its rows appended to $OUT/PEER.txt; KEY_NOTE gets its
# report, and a failure sets KEY_NA (KEY: DS or GLOO).
run_torch_peer() {
    key=$1 peer=$2 py=$3
    shift 3
    eval "na=\$${key}_NA"
    [ -z "$na" ] || return 0
    rc=0
    timeout "$TIMEOUT" "$py" "$SRC/deepspeed/ds_allreduce.py" -p "$peer" \
        -N "$NRANKS" "$@" >"$OUT/${peer}_last.txt" 2>&1 || rc=$?
    grep '^allreduce ' "$OUT/${peer}_last.txt" >>"$OUT/$peer.txt" || true
    note=$(grep -m 1 '^# ds_allreduce' "$OUT/${peer}_last.txt" \
        | sed 's/^# ds_allreduce: [0-9]* ranks, //')
    eval "${key}_NOTE=\$note"
    if [ $rc -ne 0 ]; then
        na="ds_allreduce.py -p $peer failed (exit $rc:"
        na="$na $(why_failed "$OUT/${peer}_last.txt");"
        eval "${key}_NA=\"\$na see \$OUT/${peer}_last.txt)\""
        echo "compare.sh: ds_allreduce.py -p $peer $* failed (exit $rc):" >&2
        tail -n 8 "$OUT/${peer}_last.txt" >&2 || true
    fi
}

run_deepspeed() {
    run_torch_peer DS deepspeed "$DEEPSPEED_PYTHON" "$@"
}

run_gloo() {
    run_torch_peer GLOO gloo "$GLOO_PYTHON" "$@"
}

# run_mpi ARGS...: mpi_bench on NRANKS ranks, its rows appended to
# $OUT/mpi.txt. A failure is noted and the script goes on.
run_mpi() {
    [ -n "$MPIRUN" ] || return 0
    rc=0
    # shellcheck disable=SC2086
    timeout "$TIMEOUT" $MPIRUN "$OUT/mpi_bench" $COLD_MPI "$@" \
        >"$OUT/mpi_last.txt" 2>&1 || rc=$?
    grep -v '^#' "$OUT/mpi_last.txt" >>"$OUT/mpi.txt" || true
    if [ $rc -ne 0 ]; then
        echo "compare.sh: mpi_bench $* failed (exit $rc):" >&2
        tail -n 8 "$OUT/mpi_last.txt" >&2
        MPI_NOTE="$MPI_NOTE; mpi_bench $* $(failure_word $rc)"
    fi
}

# --- shoal ---------------------------------------------------------------
# run_shoal NAME ARGS...: shoal-perf on NRANKS ranks into $OUT/shoal_NAME.txt;
# $OUT/shoal_NAME.status says ok or failed (exit status). Never stops the
# script.
run_shoal() {
    name=$1
    shift
    rc=0
    # shellcheck disable=SC2086
    "$SHOALRUN" -n "$NRANKS" --timeout "$TIMEOUT" $PIN_SHOAL "$PERF" \
        $COLD_SHOAL "$@" >"$OUT/shoal_$name.txt" 2>&1 || rc=$?
    if [ $rc -ne 0 ]; then
        echo "failed (exit $rc)" >"$OUT/shoal_$name.status"
        echo "compare.sh: shoal-perf $* failed (exit $rc):" >&2
        grep -v '^#' "$OUT/shoal_$name.txt" | grep -v '^ *[0-9]' \
            | tail -n 8 >&2 || true
    else
        echo ok >"$OUT/shoal_$name.status"
    fi
}

# Extracts "size fields..." rows of one table of a shoal-perf output.
# $1 file, $2 table title (the exact '# title' line), $3 awk fields.
table() {
    awk -v title="# $2" '
        $0 == title { on = 1; next }
        on && (/^# Out of bounds/ || /^# [a-z]+$/ || /^# [a-z]+ half/) {
            on = 0
        }
        on && !/^#/ { print '"$3"' }
    ' "$1"
}

# One operation at a time, shoal then Open MPI, so that both see the same
# load on a shared machine.
COMMON="-e $MAXBYTES -w $WARMUP -n $ITERS --iter_bytes $ITER_BYTES"
COMMON="$COMMON --min_iters $MIN_ITERS"
M="-e $MAXBYTES -w $WARMUP -n $ITERS -B $ITER_BYTES -m $MIN_ITERS"
COLLS="allreduce reduce allgather reducescatter alltoall gather scatter"
if [ "$MODE" = tail ]; then
    run_shoal allreduce -o allreduce -b 8 -e 8 -n "$TAIL_ITERS" \
        -w "$TAIL_WARMUP"
    run_mpi -o allreduce -b 8 -e 8 -n "$TAIL_ITERS" -w "$TAIL_WARMUP"
    run_mpich -o allreduce -b 8 -e 8 -n "$TAIL_ITERS" -w "$TAIL_WARMUP"
    run_oneccl allreduce -b 8 -e 8 -n "$TAIL_ITERS" -w "$TAIL_WARMUP"
    run_deepspeed -b 8 -e 8 -n "$TAIL_ITERS" -w "$TAIL_WARMUP"
    run_gloo -b 8 -e 8 -n "$TAIL_ITERS" -w "$TAIL_WARMUP"
else
    for op in $COLLS broadcast sendrecv put; do
        wants $op || continue
        case $op in
            allreduce | allgather | reducescatter | put)
                b=$MINBYTES f=$STEPFACTOR ;;
            *) b=$OTHER_MINBYTES f=$OTHER_STEPFACTOR ;;
        esac
        # shellcheck disable=SC2086
        run_shoal $op -o $op -b "$b" -f "$f" $COMMON
        if [ $op = allreduce ] || [ $op = put ]; then
            # shellcheck disable=SC2086
            run_shoal ${op}_shm -o $op -a shoal -b "$b" -f "$f" $COMMON
        fi
        case $op in
            broadcast) mop=bcast ;;
            sendrecv) mop=pingpong,sendrecv ;;
            put) mop=put,putpingpong ;;
            *) mop=$op ;;
        esac
        # shellcheck disable=SC2086
        run_mpi -o $mop -b "$b" -f "$f" $M
        # shellcheck disable=SC2086
        run_mpich -o $mop -b "$b" -f "$f" $M
        # oneCCL: no gather, no windows.
        # shellcheck disable=SC2086
        case $op in
            gather | put) ;;
            broadcast) run_oneccl bcast -b "$b" -f "$f" $M ;;
            sendrecv) run_oneccl pingpong,sendrecv -b "$b" -f "$f" $M ;;
            *) run_oneccl $op -b "$b" -f "$f" $M ;;
        esac
        if [ "$op" = allreduce ]; then
            # shellcheck disable=SC2086
            run_deepspeed -b "$b" -f "$f" $M
            # shellcheck disable=SC2086
            run_gloo -b "$b" -f "$f" $M
        fi
    done
fi

# Per run: the memcpy baseline (size GB/s) and the op's rows: size, time,
# #wrong out-of-place, #wrong in-place, p90, max (out-of-place; broadcast:
# in-place, shoal's form).
for f in "$OUT"/shoal_*.txt; do
    name=$(basename "$f" .txt)
    name=${name#shoal_}
    op=${name%_shm}
    table "$f" "memcpy baseline (all ranks copying at once)" '$1, $5' \
        >"$OUT/memcpy_$name.tsv"
    case $op in
        broadcast) fields='$1, $10, $13, $9, $19, $20' ;;
        *) fields='$1, $6, $9, $13, $16, $17' ;;
    esac
    table "$f" "$op" "$fields" >"$OUT/shoal_$name.tsv"
    if [ $op = sendrecv ]; then
        table "$f" "sendrecv half round trip (ranks 0 <-> 1)" '$1, $4' \
            >"$OUT/shoal_pingpong.tsv"
        cp "$OUT/memcpy_sendrecv.tsv" "$OUT/memcpy_pingpong.tsv"
    fi
    if [ $op = put ]; then
        v=${name#put}
        table "$f" "put half round trip (ranks 0 <-> 1)" '$1, $4' \
            >"$OUT/shoal_putpingpong$v.tsv"
        cp "$OUT/memcpy_$name.tsv" "$OUT/memcpy_putpingpong.tsv"
        [ "$name" = put ] || cp "$OUT/memcpy_$name.tsv" "$OUT/memcpy_put.tsv"
    fi
done

# The columns of the shoal files: size median wrong wrong_in_place p90 max.
for op in pingpong sendrecv bcast put putpingpong $COLLS; do
    awk -v op=$op '$1 == op { print $2, $3, $7, "N/A", $5, $6 }' \
        "$OUT/mpi.txt" >"$OUT/mpi_$op.tsv"
done
cp "$OUT/mpi_bcast.tsv" "$OUT/mpi_broadcast.tsv"
for op in pingpong sendrecv bcast put putpingpong $COLLS; do
    awk -v op=$op '$1 == op { print $2, $3, $7, "N/A", $5, $6 }' \
        "$OUT/mpich.txt" >"$OUT/mpich_$op.tsv"
done
cp "$OUT/mpich_bcast.tsv" "$OUT/mpich_broadcast.tsv"
for op in pingpong sendrecv bcast $COLLS; do
    awk -v op="$op" '$1 == op { print $2, $3, $7, "N/A", $5, $6 }' \
        "$OUT/oneccl.txt" >"$OUT/oneccl_$op.tsv"
done
cp "$OUT/oneccl_bcast.tsv" "$OUT/oneccl_broadcast.tsv"
awk '$1 == "allreduce" { print $2, $3, $7, "N/A", $5, $6 }' \
    "$OUT/deepspeed.txt" >"$OUT/deepspeed_allreduce.tsv"
awk '$1 == "allreduce" { print $2, $3, $7, "N/A", $5, $6 }' \
    "$OUT/gloo.txt" >"$OUT/gloo_allreduce.tsv"

echo "# $MPI_NOTE"
echo "# $MPICH_NOTE"
if [ -n "$ONECCL_NA" ]; then
    echo "# oneCCL N/A: $ONECCL_NA"
else
    echo "# $ONECCL_NOTE"
fi
if [ -n "$DS_NA" ]; then
    echo "# DeepSpeed N/A: $DS_NA"
else
    echo "# DeepSpeed: ${DS_NOTE:-no output}"
fi
if [ -n "$GLOO_NA" ]; then
    echo "# gloo N/A: $GLOO_NA"
else
    echo "# gloo: ${GLOO_NOTE:-no output}"
fi
grep '^# mpi_bench' "$OUT/mpi.txt" | head -n 1 || true
grep '^#  Rank\|^# nranks\|^# iterations' "$OUT/shoal_allreduce.txt" \
    2>/dev/null || true
echo "# load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)"

# --- side by side ----------------------------------------------------------
# side_by_side TITLE OP FACTOR_KIND [VARIANT LABEL]...: one table of the
# shoal runs shoal_OP[VARIANT].tsv (labels head their columns) against
# the peers' times, mpi_OP.tsv (Open MPI, also its busbw), mpich_OP.tsv,
# oneccl_OP.tsv and, for allreduce, deepspeed_allreduce.tsv and
# gloo_allreduce.tsv, with
# memcpy_OP.tsv. FACTOR_KIND: allreduce (2(n-1)/n), block ((n-1)/n), one
# (1). A peer without numbers for OP is named in the header line with why.
side_by_side() {
    title=$1 op=$2 kind=$3
    shift 3
    files="" labels=""
    while [ $# -ge 2 ]; do
        files="$files $OUT/shoal_$op$1.tsv"
        labels="$labels $2"
        run=$op$1
        [ "$op" = pingpong ] && run=sendrecv
        [ "$op" = putpingpong ] && run=put$1
        status=$(cat "$OUT/shoal_$run.status" 2>/dev/null || echo missing)
        if [ "$status" != ok ]; then
            title="$title; shoal $2: $status"
        fi
        shift 2
    done
    # Peers after Open MPI: name, file, short name of the ratio header.
    peers="MPICH $OUT/mpich_$op.tsv MPICH oneCCL $OUT/oneccl_$op.tsv oneCCL"
    why=$(oneccl_na "$op")
    [ -z "$why" ] || title="$title; oneCCL N/A: $why"
    if [ "$op" = allreduce ]; then
        peers="$peers DeepSpeed $OUT/deepspeed_allreduce.tsv DeepSpd"
        peers="$peers gloo $OUT/gloo_allreduce.tsv gloo"
        [ -z "$DS_NA" ] || title="$title; DeepSpeed N/A: $DS_NA"
        [ -z "$GLOO_NA" ] || title="$title; gloo N/A: $GLOO_NA"
    fi
    echo "#"
    echo "# $title"
    awk -v n="$NRANKS" -v kind="$kind" -v labels="$labels" \
        -v files="$files" -v mpifile="$OUT/mpi_$op.tsv" -v peers="$peers" \
        -v memfile="$OUT/memcpy_$op.tsv" '
        function bw(size, t) { return t > 0 ? size / t / 1e3 * factor : 0 }
        function num(v, w, p) {
            return v == "" ? sprintf("%" w "s", "N/A") \
                           : sprintf("%" w "." p "f", v)
        }
        function ratio(a, b) { return (a != "" && b != "" && b > 0) ? a / b : "" }
        BEGIN {
            factor = kind == "allreduce" ? 2 * (n - 1) / n \
                   : kind == "block" ? (n - 1) / n : 1
            k = split(labels, lab, " ")
            while ((getline line < mpifile) > 0) {
                split(line, f, " "); mpi[f[1]] = f[2]; mpiwrong[f[1]] = f[3]
            }
            np = split(peers, pp, " ") / 3
            for (p = 1; p <= np; p++) {
                pname[p] = pp[3 * p - 2]; pshort[p] = pp[3 * p]
                while ((getline line < pp[3 * p - 1]) > 0) {
                    split(line, f, " "); pt[p, f[1]] = f[2]
                    pwrong[p, f[1]] = f[3]
                }
            }
            while ((getline line < memfile) > 0) {
                split(line, f, " "); mem[f[1]] = f[2]
            }
            split(files, file, " ")
            for (v = 1; v <= k; v++) {
                while ((getline line < file[v]) > 0) {
                    split(line, f, " ")
                    size = f[1]; sizes[size] = 1; t[v, size] = f[2]
                    wrong[v, size] = f[3] + (f[4] == "N/A" ? 0 : f[4])
                }
            }
            h1 = sprintf("#%11s", "size"); h2 = sprintf("#%11s", "(B)")
            for (j = 1; j <= k; j++) {
                h1 = h1 sprintf(" %10s", "shoal")
                h2 = h2 sprintf(" %10s", k > 1 ? lab[j] : "(us)")
            }
            h1 = h1 sprintf(" %10s", "OpenMPI"); h2 = h2 sprintf(" %10s", "(us)")
            for (p = 1; p <= np; p++) {
                h1 = h1 sprintf(" %10s", pname[p]); h2 = h2 sprintf(" %10s", "(us)")
            }
            # Several variants: the label names the shoal column.
            for (j = 1; j <= k; j++) {
                h1 = h1 sprintf(" %10s", k > 1 ? lab[j] : "shoal/")
                h2 = h2 sprintf(" %10s", k > 1 ? "/OMPI" : "OpenMPI")
            }
            for (p = 1; p <= np; p++)
                for (j = 1; j <= k; j++) {
                    h1 = h1 sprintf(" %10s", k > 1 ? lab[j] : "shoal/")
                    h2 = h2 sprintf(" %10s", k > 1 ? "/" pshort[p] : pname[p])
                }
            for (j = 1; j <= k; j++) {
                h1 = h1 sprintf(" %10s", k > 1 ? lab[j] : "shoal")
                h2 = h2 sprintf(" %10s", k > 1 ? "busbw" : "busbw")
            }
            h1 = h1 sprintf(" %10s", "OpenMPI"); h2 = h2 sprintf(" %10s", "busbw")
            for (j = 1; j <= k; j++) {
                h1 = h1 sprintf(" %10s", k > 1 ? lab[j] " bw" : "busbw")
                h2 = h2 sprintf(" %10s", "/OMPI")
            }
            h1 = h1 sprintf(" %10s", "memcpy"); h2 = h2 sprintf(" %10s", "(GB/s)")
            for (j = 1; j <= k; j++) {
                h1 = h1 sprintf(" %10s", k > 1 ? lab[j] " bw" : "busbw")
                h2 = h2 sprintf(" %10s", "/memcpy")
            }
            print h1; print h2
            r = "shoal/OMPI"
            for (p = 1; p <= np; p++) r = r ", shoal/" pname[p]
            print "# times in us, busbw in GB/s; ratios: time " r \
                " (< 1: shoal faster), busbw shoal/OMPI and shoal/memcpy"
            m = 0
            for (s in sizes) order[++m] = s + 0
            for (i = 1; i <= m; i++)
                for (j = i + 1; j <= m; j++)
                    if (order[j] < order[i]) { x = order[i]; order[i] = order[j]; order[j] = x }
            for (i = 1; i <= m; i++) {
                size = order[i]
                mt = (size in mpi) ? mpi[size] : ""
                mb = mt != "" ? bw(size, mt) : ""
                mc = (size in mem) ? mem[size] : ""
                line = sprintf("%12d", size)
                for (j = 1; j <= k; j++) line = line " " num(t[j, size], 10, 2)
                line = line " " num(mt, 10, 2)
                for (p = 1; p <= np; p++) {
                    ct[p] = ((p, size) in pt) ? pt[p, size] : ""
                    line = line " " num(ct[p], 10, 2)
                }
                for (j = 1; j <= k; j++) line = line " " num(ratio(t[j, size], mt), 10, 2)
                for (p = 1; p <= np; p++)
                    for (j = 1; j <= k; j++)
                        line = line " " num(ratio(t[j, size], ct[p]), 10, 2)
                for (j = 1; j <= k; j++)
                    line = line " " num(t[j, size] != "" ? bw(size, t[j, size]) : "", 10, 3)
                line = line " " num(mb, 10, 3)
                for (j = 1; j <= k; j++)
                    line = line " " num(ratio(t[j, size] != "" ? bw(size, t[j, size]) : "", mb), 10, 2)
                line = line " " num(mc, 10, 2)
                for (j = 1; j <= k; j++)
                    line = line " " num(ratio(t[j, size] != "" ? bw(size, t[j, size]) : "", mc), 10, 3)
                print line
                for (j = 1; j <= k; j++)
                    if (wrong[j, size] > 0)
                        printf "# ^ shoal %s delivered %d wrong elements\n", lab[j], wrong[j, size]
                if ((size in mpiwrong) && mpiwrong[size] != 0)
                    printf "# ^ Open MPI delivered %d wrong elements\n", mpiwrong[size]
                for (p = 1; p <= np; p++)
                    if (((p, size) in pwrong) && pwrong[p, size] != 0)
                        printf "# ^ %s delivered %d wrong elements\n", pname[p], pwrong[p, size]
            }
        }'
}

# Value of column $3 (1-based) of the row of size $2 in file $1; empty
# when absent.
val() {
    awk -v s="$2" -v c="$3" '$1 == s { print $c; exit }' "$1" 2>/dev/null \
        || true
}

# verdict LABEL VALUE OP LIMIT DETAIL: prints MET / NOT MET / N/A.
verdict() {
    awk -v label="$1" -v v="$2" -v op="$3" -v lim="$4" -v detail="$5" '
        BEGIN {
            if (v == "") { s = "N/A    " }
            else if ((op == "<=" && v + 0 <= lim + 0) \
                     || (op == ">=" && v + 0 >= lim + 0)) { s = "MET    " }
            else { s = "NOT MET" }
            printf "# %s  %-52s %s\n", s, label, detail
        }'
}

# fmt V: V with 3 significant digits, or N/A for an empty V.
fmt() {
    if [ -n "$1" ]; then
        awk -v v="$1" 'BEGIN { printf "%.3g\n", v }'
    else
        echo N/A
    fi
}

# x R: "Rx", or N/A for an empty R.
x() {
    if [ -n "$1" ]; then echo "$(fmt "$1")x"; else echo N/A; fi
}

# calc EXPR A [B]: EXPR of the variables a and b; empty if one is empty
# or zero (every use divides by them).
calc() {
    awk -v a="$2" -v b="${3-1}" "BEGIN {
        if (a == \"\" || b == \"\" || a + 0 == 0 || b + 0 == 0) exit
        printf \"%.4g\\n\", $1 }"
}

if [ "$MODE" = tail ]; then
    echo "#"
    echo "# 8-byte allreduce (float32 sum) on $NRANKS ranks, $TAIL_ITERS" \
        "iterations after $TAIL_WARMUP warm-up: per-iteration time" \
        "(max over ranks)"
    status=$(cat "$OUT/shoal_allreduce.status" 2>/dev/null || echo missing)
    [ "$status" = ok ] || echo "# shoal: $status"
    s_row=$(awk '$1 == 8 { print $2, $5, $6; exit }' \
        "$OUT/shoal_allreduce.tsv" 2>/dev/null || true)
    m_row=$(awk '$1 == 8 { print $2, $5, $6; exit }' \
        "$OUT/mpi_allreduce.tsv" 2>/dev/null || true)
    c_row=$(awk '$1 == 8 { print $2, $5, $6; exit }' \
        "$OUT/mpich_allreduce.tsv" 2>/dev/null || true)
    o_row=$(awk '$1 == 8 { print $2, $5, $6; exit }' \
        "$OUT/oneccl_allreduce.tsv" 2>/dev/null || true)
    d_row=$(awk '$1 == 8 { print $2, $5, $6; exit }' \
        "$OUT/deepspeed_allreduce.tsv" 2>/dev/null || true)
    g_row=$(awk '$1 == 8 { print $2, $5, $6; exit }' \
        "$OUT/gloo_allreduce.tsv" 2>/dev/null || true)
    printf '#%11s %10s %10s %10s %10s\n' "" "median" "p90" "max" "max/"
    printf '#%11s %10s %10s %10s %10s\n' "" "(us)" "(us)" "(us)" "median"
    for who in shoal OpenMPI MPICH oneCCL DeepSpeed gloo; do
        row=$s_row why=""
        [ $who = OpenMPI ] && row=$m_row
        [ $who = MPICH ] && row=$c_row
        [ $who = oneCCL ] && row=$o_row why=$(oneccl_na allreduce)
        [ $who = DeepSpeed ] && row=$d_row why=$DS_NA
        [ $who = gloo ] && row=$g_row why=$GLOO_NA
        echo "$who $row" | awk -v why="$why" '{
            if (NF < 4) {
                printf "%12s %10s%s\n", $1, "N/A", why == "" ? "" : "  " why
                next
            }
            printf "%12s %10.2f %10.2f %10.2f %10.1f\n", $1, $2, $3, $4,
                ($2 > 0 ? $4 / $2 : 0) }'
    done
    s_med=$(echo "$s_row" | awk '{ print $1 }')
    s_max=$(echo "$s_row" | awk '{ print $3 }')
    m_med=$(echo "$m_row" | awk '{ print $1 }')
    echo "#"
    echo "# targets ($NRANKS ranks, 8-byte float32 sum allreduce)"
    r=$(calc 'a / b' "$s_med" "$m_med")
    verdict "median <= 0.5 x Open MPI" "$r" "<=" 0.5 \
        "shoal $(fmt "$s_med") us, Open MPI $(fmt "$m_med") us: $(x "$r")"
    r=$(calc 'a / b' "$s_max" "$s_med")
    verdict "max iteration <= 20 x median" "$r" "<=" 20 \
        "shoal max $(fmt "$s_max") us, median $(fmt "$s_med") us: $(x "$r")"
    echo "# time: $(($(date +%s) - T_START)) s"
    exit 0
fi

# wants_table TITLE OP ...: side_by_side for an operation this run measured.
wants_table() {
    if wants "$2"; then
        side_by_side "$@"
    fi
}

wants_table "allreduce (float32 sum; malloc and shoal_alloc buffers)" \
    allreduce allreduce "" malloc _shm shm
wants_table "reduce (float32 sum, root 0)" reduce one "" shoal
wants_table "allgather (size = total of all blocks)" allgather block "" shoal
wants_table "reducescatter (float32 sum; size = total of all blocks)" \
    reducescatter block "" shoal
wants_table "alltoall (size = total of all blocks)" alltoall block "" shoal
wants_table "gather (root 0; size = total of all blocks)" gather block \
    "" shoal
wants_table "scatter (root 0; size = total of all blocks)" scatter block \
    "" shoal
wants_table "broadcast from rank 0 (shoal in-place)" broadcast one "" shoal
wants_table "sendrecv exchange (r -> r+1 and r-1 -> r at once)" sendrecv \
    one "" shoal
wants_table "sendrecv half round trip (ranks 0 <-> 1; busbw = size / time)" \
    pingpong one "" shoal
wants_table "window put + signal, r -> r+1 at once (Open MPI: MPI_Put, \
MPI_Win_flush, zero-byte send; malloc and shoal_alloc windows)" put one \
    "" malloc _shm shm
wants_table "window put + signal half round trip (ranks 0 <-> 1; busbw = \
size / time)" putpingpong one "" malloc _shm shm

# shoal's own verdict lines (wrong elements) for the record.
echo "#"
for f in "$OUT"/shoal_*.txt; do
    name=$(basename "$f" .txt)
    printf '# %-22s %-10s ' "$name" "$(cat "$OUT/$name.status")"
    grep '^# Out of bounds' "$f" | head -n 1 | tr '\n' ' '
    echo
done

# --- targets -----------------------------------------------------------------
if [ "$OPS" != "$ALL_OPS" ]; then
    echo "#"
    echo "# targets: not judged (OPS=\"$OPS\" measured only these)"
    echo "# time: $(($(date +%s) - T_START)) s"
    exit 0
fi
# Field 2 of the tsv files is the median time (us).
AR=$OUT/shoal_allreduce.tsv ARS=$OUT/shoal_allreduce_shm.tsv
MAR=$OUT/mpi_allreduce.tsv MEM=$OUT/memcpy_allreduce.tsv
B64M=$(bytes_of 64M)
echo "#"
echo "# targets (2 ranks; float32 sum; busbw in GB/s; times are medians)"
if [ "$NRANKS" != 2 ]; then
    echo "# (defined for 2 ranks; this run has $NRANKS)"
fi
s=$(val "$AR" 8 2) m=$(val "$MAR" 8 2)
r=$(calc 'a / b' "$s" "$m")
verdict "allreduce 8 B: time <= 0.8 x Open MPI" "$r" "<=" 0.8 \
    "shoal $(fmt "$s") us, Open MPI $(fmt "$m") us: $(x "$r")"
verdict "allreduce 8 B: time <= 1 us" "$s" "<=" 1 "shoal $(fmt "$s") us"
s=$(val "$AR" 65536 2) m=$(val "$MAR" 65536 2)
r=$(calc 'a / b' "$s" "$m")
verdict "allreduce 64 KiB: time <= 0.5 x Open MPI" "$r" "<=" 0.5 \
    "shoal $(fmt "$s") us, Open MPI $(fmt "$m") us: $(x "$r")"
F="2 * ($NRANKS - 1) / $NRANKS"
mc=$(val "$MEM" "$B64M" 2)
m=$(val "$MAR" "$B64M" 2)
mb=$(calc "$B64M / a / 1e3 * $F" "$m")
for v in malloc shoal_alloc; do
    if [ $v = malloc ]; then
        f=$AR want_mpi=2.5 want_mem=0.5
    else
        f=$ARS want_mpi=3.5 want_mem=0.8
    fi
    s=$(val "$f" "$B64M" 2)
    sb=$(calc "$B64M / a / 1e3 * $F" "$s")
    r=$(calc 'a / b' "$sb" "$mb")
    verdict "allreduce 64 MiB $v: busbw >= $want_mpi x OMPI" "$r" ">=" \
        $want_mpi "shoal $(fmt "$sb"), Open MPI $(fmt "$mb"): $(x "$r")"
    r=$(calc 'a / b' "$sb" "$mc")
    verdict "allreduce 64 MiB $v: busbw >= $want_mem x memcpy" "$r" ">=" \
        $want_mem "shoal $(fmt "$sb"), memcpy $(fmt "$mc"): $(x "$r")"
done
# Windows: put + signal + wait_signal against MPI_Put + flush + notify.
s=$(val "$OUT/shoal_putpingpong_shm.tsv" 8 2)
m=$(val "$OUT/mpi_putpingpong.tsv" 8 2)
r=$(calc 'a / b' "$s" "$m")
verdict "put 8 B half round trip (shoal_alloc): <= 1 us" "$s" "<=" 1 \
    "shoal $(fmt "$s") us"
verdict "put 8 B half round trip (shoal_alloc): <= 0.5 x OMPI" "$r" "<=" \
    0.5 "shoal $(fmt "$s") us, Open MPI $(fmt "$m") us: $(x "$r")"
mc=$(val "$OUT/memcpy_put.tsv" "$B64M" 2)
for v in shm malloc; do
    if [ $v = shm ]; then
        f=$OUT/shoal_put_shm.tsv want=0.8 label=shoal_alloc
    else
        f=$OUT/shoal_put.tsv want=0.5 label=malloc
    fi
    s=$(val "$f" "$B64M" 2)
    sb=$(calc "$B64M / a / 1e3" "$s")
    r=$(calc 'a / b' "$sb" "$mc")
    verdict "put 64 MiB ($label): GB/s >= $want x memcpy" "$r" ">=" $want \
        "shoal $(fmt "$sb"), memcpy $(fmt "$mc"): $(x "$r")"
done
F="($NRANKS - 1) / $NRANKS"
for op in allgather reducescatter; do
    s=$(val "$OUT/shoal_$op.tsv" "$B64M" 2)
    m=$(val "$OUT/mpi_$op.tsv" "$B64M" 2)
    sb=$(calc "$B64M / a / 1e3 * $F" "$s" 1)
    mb=$(calc "$B64M / a / 1e3 * $F" "$m")
    r=$(calc 'a / b' "$sb" "$mb")
    verdict "$op 64 MiB: busbw >= 2 x Open MPI" "$r" ">=" 2 \
        "shoal $(fmt "$sb"), Open MPI $(fmt "$mb"): $(x "$r")"
done
# oneCCL: shoal's time over oneCCL's at every size both measured, the
# worst of allreduce (malloc buffers) and allgather.
worst=$(for op in allreduce allgather; do
    awk -v op=$op 'NR == FNR { o[$1] = $2; next }
        ($1 in o) && o[$1] > 0 && $2 != "" {
            print $2 / o[$1], op, $1, $2, o[$1] }' \
        "$OUT/oneccl_$op.tsv" "$OUT/shoal_$op.tsv" 2>/dev/null
done | sort -g -r | head -n 1)
r=${worst%% *}
where=$(echo "$worst" | awk 'NF == 5 {
    printf "%s %d B (shoal %.3g us, oneCCL %.3g us)", $2, $3, $4, $5 }')
why=$(oneccl_na allreduce)
[ -n "$why" ] || why=$(oneccl_na allgather)
if [ -n "$worst" ]; then
    detail="worst $(x "$r") at $where"
else
    detail="oneCCL N/A: ${why:-no common sizes}"
fi
verdict "allreduce and allgather at every size: time <= 1.0 x oneCCL" \
    "$r" "<=" 1.0 "$detail"
echo "# time: $(($(date +%s) - T_START)) s"
