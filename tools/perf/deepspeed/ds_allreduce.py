#!/usr/bin/env python3
"""ds_allreduce: DeepSpeed's CPU shared-memory all-reduce, a peer of
tools/perf/compare.sh; with -p gloo, torch.distributed's gloo all_reduce
measured the same way (the backend PyTorch users get on CPUs by default).

deepspeed.comm.inference_all_reduce on float32 tensors (sum) with
DeepSpeed's CPU accelerator: its deepspeed_shm_comm op (built by DeepSpeed
at first use, with ninja, into ~/.cache/torch_extensions) reduces through a
shared-memory segment of all local ranks; torch.distributed (gloo) carries
the setup, the barriers and the statistics. The method is mpi_bench's
(tools/perf/mpi/mpi_bench.c): per iteration a barrier, then every rank
times the operation alone; the per-iteration maximum over ranks, and the
median, min, p90 and max over iterations. inference_all_reduce works in
place (its only form): the input is copied into the tensor before the
barrier, untimed. Sizes: `size` bytes per rank (size / 4 floats), MIN,
MIN x FACTOR, ... up to MAX; data: mpi_bench's float tiles (small integers,
so sums are exact), every rank counting wrong elements of the result.

The script starts its ranks itself (-N, default 2): each gets RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR (127.0.0.1), MASTER_PORT and
LOCAL_SIZE = WORLD_SIZE. LOCAL_SIZE is required: DeepSpeed 0.19.8's
shm_interface.cpp sets its shared memory up only when LOCAL_SIZE equals the
world size, yet inference_all_reduce_ enters the shared-memory kernel
either way, so without LOCAL_SIZE (torchrun sets LOCAL_WORLD_SIZE, not
LOCAL_SIZE) every rank dies of SIGSEGV in symmetric_naive_all_reduce on
its null buffers. OMP_NUM_THREADS (the kernel's OpenMP threads) defaults
to cpus / ranks, at least 1, and each rank is bound to its own cpus/ranks
cpus (DS_BIND=0: not bound), as DeepSpeed's launcher with
--bind_cores_to_rank does (on this 2-cpu host binding cut the medians from
50-1500 us to 40-60 us below 64 KiB). The kernel waits for its peers by spinning on
the shared flags without yielding (shm.cpp, wait_buffer_state_until_2): a
rank that waits for a peer with no cpu keeps its own until the scheduler
preempts it, so on a busy machine (or with more ranks than cpus) an
iteration can take a time slice, milliseconds.

With -p gloo: torch.distributed.all_reduce (gloo, in place, float32 sum)
instead, DeepSpeed not imported, the ranks not bound to cpus (as torchrun
starts them) unless DS_BIND=1.

Output (rank 0), one line per size, after '#' comment lines:
"allreduce bytes median_us min_us p90_us max_us wrong".

    ds_allreduce.py [-p deepspeed|gloo] [-N NRANKS] [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS]
                    [-w WARMUP] [-B ITER_BYTES] [-m MIN_ITERS]
"""

import argparse
import os
import socket
import subprocess
import sys
import time

PATTERN_TILE = 4099
OP_ALLREDUCE = 1 << 3  # mpi_bench's op number, the seed of its data


def parse_size(s):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    if s and s[-1].lower() in units:
        return int(float(s[:-1]) * units[s[-1].lower()])
    return int(float(s))


def iters_for(a, size):
    """Timed iterations at `size` (shoal-perf's perf_iters_for)."""
    if a.iter_bytes == 0 or size == 0 or size <= a.iter_bytes // a.iters:
        return a.iters
    n = max(a.iter_bytes // size, a.min_iters)
    return min(n, a.iters)


def warmup_for(a, size):
    """Warm-up iterations at `size` (shoal-perf's perf_warmup_for)."""
    iters = iters_for(a, size)
    if a.warmup == 0 or iters == a.iters:
        return a.warmup
    return (a.warmup * iters + a.iters - 1) // a.iters


def mix32(np, x):
    x = x.astype(np.uint64) & 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & 0xFFFFFFFF
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & 0xFFFFFFFF
    x ^= x >> 16
    return x


def make_ftile(np, op, src, it):
    """mpi_bench's make_ftile: integers in [-1024, 1023]."""
    m = 0xFFFFFFFF
    seed = mix32(np, np.array([(op * 0x9E3779B9 + src) & m]))
    seed = mix32(np, seed ^ ((it * 0x27D4EB2F) & m))[0]
    i = np.arange(PATTERN_TILE, dtype=np.uint64)
    return ((mix32(np, i ^ seed) & 2047).astype(np.int64) - 1024).astype(
        np.float32)


def tiled(np, tile, count):
    reps = (count + PATTERN_TILE - 1) // PATTERN_TILE
    return np.tile(tile, reps)[:count]


def deepspeed_all_reduce(rank, n, bind):
    """Sets DeepSpeed up; returns its in-place all-reduce."""
    import torch
    import deepspeed
    import deepspeed.comm as dist
    from deepspeed.comm import comm as ds_comm

    dist.init_distributed(dist_backend="gloo", verbose=False)
    accel = deepspeed.get_accelerator()
    ds_op = getattr(ds_comm.cdb, "shm_comm_op", None) is not None
    level = getattr(ds_comm.cdb, "shm_vector_kernel_level", 0)
    if rank == 0:
        print(f"# ds_allreduce: {n} ranks, DeepSpeed {deepspeed.__version__}, "
              f"torch {torch.__version__}, accelerator {accel.device_name()}, "
              f"shm op {'loaded' if ds_op else 'MISSING'} (kernel level "
              f"{level}: {'shm' if ds_op and level >= 1 else 'gloo fallback'}"
              f"), LOCAL_SIZE={os.environ.get('LOCAL_SIZE')} "
              f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
              f"ranks bound to cpus: {'yes' if bind else 'no'}")
        print("# op bytes median_us min_us p90_us max_us wrong", flush=True)
    if not ds_op or level < 1:
        # The timings would be gloo's, not DeepSpeed's shared memory.
        raise SystemExit("ds_allreduce: DeepSpeed's shm all-reduce is not "
                         "in use (op missing or no AVX2)")
    return dist.inference_all_reduce


def gloo_all_reduce(rank, n, bind):
    """Sets torch.distributed's gloo up; returns its all_reduce."""
    import torch
    import torch.distributed as tdist

    tdist.init_process_group("gloo", rank=rank, world_size=n)
    if rank == 0:
        print(f"# ds_allreduce: {n} ranks, gloo (torch {torch.__version__}, "
              f"torch.distributed.all_reduce), OMP_NUM_THREADS="
              f"{os.environ.get('OMP_NUM_THREADS')}, ranks bound to cpus: "
              f"{'yes' if bind else 'no'}")
        print("# op bytes median_us min_us p90_us max_us wrong", flush=True)
    return tdist.all_reduce


def bench(a):
    import numpy as np
    import torch
    import torch.distributed as tdist

    bind = os.environ.get("DS_ALLREDUCE_CPUS", "")
    if bind:
        os.sched_setaffinity(0, {int(c) for c in bind.split(",")})
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    setup = gloo_all_reduce if a.peer == "gloo" else deepspeed_all_reduce
    all_reduce = setup(rank, n, bind)
    s = float(a.minbytes)
    while s <= a.maxbytes:
        size = int(s)
        count = size // 4
        iters, warmup = iters_for(a, size), warmup_for(a, size)
        t = torch.empty(count, dtype=torch.float32)
        times = torch.zeros(iters, dtype=torch.float64)
        wrong = 0.0
        for it in range(warmup + iters):
            timed = it >= warmup
            if timed:
                src = tiled(np, make_ftile(np, OP_ALLREDUCE, rank, it), count)
                t.copy_(torch.from_numpy(src))
            tdist.barrier()
            t0 = time.perf_counter()
            all_reduce(t)
            el = time.perf_counter() - t0
            if timed:
                times[it - warmup] = el
                tdist.barrier()  # no check inside a peer's timing
                exp = sum(make_ftile(np, OP_ALLREDUCE, r, it)
                          for r in range(n))
                wrong += float(
                    (t.numpy() != tiled(np, exp.astype(np.float32),
                                        count)).sum())
        tdist.all_reduce(times, op=tdist.ReduceOp.MAX)
        w = torch.tensor([wrong], dtype=torch.float64)
        tdist.all_reduce(w)
        if rank == 0:
            m = sorted(times.tolist())
            k = (9 * iters + 9) // 10 - 1
            med = (m[iters // 2] if iters % 2
                   else 0.5 * (m[iters // 2 - 1] + m[iters // 2]))
            print(f"allreduce {count * 4} {med * 1e6:.4f} {m[0] * 1e6:.4f} "
                  f"{m[k] * 1e6:.4f} {m[-1] * 1e6:.4f} {w.item():.0f}",
                  flush=True)
        s *= a.factor
    tdist.barrier()
    # Left to the interpreter's exit, gloo's threads are sometimes still
    # joinable when their objects go: std::terminate ("terminate called
    # without an active exception"), and the whole column read N/A.
    tdist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(a):
    """Starts the ranks, waits; the first to fail takes the others down."""
    port = str(free_port())
    threads = os.environ.get("OMP_NUM_THREADS") or str(
        max(1, (os.cpu_count() or 1) // a.nranks))
    cpus = sorted(os.sched_getaffinity(0))
    per = len(cpus) // a.nranks
    default = "0" if a.peer == "gloo" else "1"
    bind = os.environ.get("DS_BIND", default) == "1" and per >= 1
    procs = []
    for r in range(a.nranks):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r),
                   WORLD_SIZE=str(a.nranks), LOCAL_SIZE=str(a.nranks),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                   OMP_NUM_THREADS=threads, DS_ALLREDUCE_RANK="1",
                   DS_ALLREDUCE_CPUS=",".join(
                       str(c) for c in cpus[r * per:(r + 1) * per])
                   if bind else "")
        procs.append(subprocess.Popen([sys.executable] + sys.argv, env=env))
    rc = 0
    left = list(procs)
    while left:
        for p in list(left):
            code = p.poll()
            if code is None:
                continue
            left.remove(p)
            if code != 0 and rc == 0:
                r = procs.index(p)
                why = (f"killed by signal {-code}" if code < 0
                       else f"exited with {code}")
                print(f"ds_allreduce: rank {r} {why}", file=sys.stderr)
                rc = 1
                for q in left:
                    q.kill()
        time.sleep(0.05)
    remove_shm_buffers(port)
    return rc


def remove_shm_buffers(port):
    """DeepSpeed's shm all-reduce leaves one buffer per rank in /dev/shm
    (named with the master address and port), about 66 MB each, that it
    never unlinks: every run would add its own."""
    pattern = f"_127.0.0.1_{port}_"
    try:
        names = os.listdir("/dev/shm")
    except OSError:
        return
    for name in names:
        if name.startswith("deepspeed_allreduce_buffer_") and pattern in name:
            try:
                os.unlink(os.path.join("/dev/shm", name))
            except OSError:
                pass


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-p", dest="peer", default="deepspeed",
                   choices=["deepspeed", "gloo"])
    p.add_argument("-N", dest="nranks", type=int, default=2)
    p.add_argument("-o", dest="op", default="allreduce",
                   choices=["allreduce"])
    p.add_argument("-b", dest="minbytes", type=parse_size, default=8)
    p.add_argument("-e", dest="maxbytes", type=parse_size, default=64 << 20)
    p.add_argument("-f", dest="factor", type=float, default=2.0)
    p.add_argument("-n", dest="iters", type=int, default=20)
    p.add_argument("-w", dest="warmup", type=int, default=5)
    p.add_argument("-B", dest="iter_bytes", type=parse_size, default=0)
    p.add_argument("-m", dest="min_iters", type=int, default=5)
    a = p.parse_args()
    if (a.nranks < 2 or a.minbytes < 4 or a.factor <= 1 or a.iters < 1
            or a.warmup < 0 or a.min_iters < 1):
        p.error("bad arguments")
    a.min_iters = min(a.min_iters, a.iters)
    if os.environ.get("DS_ALLREDUCE_RANK") != "1":
        return launch(a)
    bench(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
