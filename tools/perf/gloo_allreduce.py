"""gloo's all_reduce through torch.distributed, one rank per process, for
make bench-net (tools/perf/bench_net.sh), where each rank runs on its own
namespaced host.

    python gloo_allreduce.py --rank R --world-size N --master ADDR:PORT \
        [--sizes 8,64K,64M] [--ifname eth0]

Per size (bytes of float32 data, sum): warm-up calls, then iterations of
barrier + timed all_reduce; an iteration's time is the slowest rank's, the
figure is the median over iterations. Rank 0 prints one row per size:
name, median time, busbw in GB/s (nccl-tests' factor 2(n-1)/n), in the
columns tcp_bench uses.
"""

import argparse
import os
import statistics
import time


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)


def size_str(b):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def iterations(nbytes):
    # Enough for a stable median, few enough that 64 MiB stays short.
    if nbytes <= 64 << 10:
        return 200, 20
    return 5, 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world-size", type=int, required=True)
    ap.add_argument("--master", required=True, help="ADDR:PORT of rank 0")
    ap.add_argument("--sizes", default="8,64K,64M")
    ap.add_argument("--ifname", default="eth0")
    args = ap.parse_args()

    # Inside a namespace the hostname resolves to an address outside it:
    # gloo must use the namespace's own interface.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", args.ifname)
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)  # 2 shared cores: no intra-op thread pool
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://{args.master}",
        rank=args.rank,
        world_size=args.world_size,
    )
    n = args.world_size
    for nbytes in (parse_size(s) for s in args.sizes.split(",")):
        iters, warmup = iterations(nbytes)
        t = torch.ones(max(nbytes // 4, 1), dtype=torch.float32)
        for _ in range(warmup):
            dist.all_reduce(t)
        times = torch.zeros(iters, dtype=torch.float64)
        for i in range(iters):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            times[i] = time.perf_counter() - t0
        dist.all_reduce(times, op=dist.ReduceOp.MAX)  # slowest rank per iteration
        med = statistics.median(times.tolist())
        busbw = t.numel() * 4 / med * 2 * (n - 1) / n / 1e9
        if args.rank == 0:
            name = f"gloo all_reduce {size_str(t.numel() * 4)}"
            unit = f"{med * 1e3:9.3f} ms" if med >= 1e-3 else f"{med * 1e6:9.1f} us"
            print(f"{name:<34} {unit} {busbw:10.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
