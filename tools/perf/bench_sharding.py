"""Benchmark of shoal.sharding, in one run per rank count (2 and 4):

1. A 2-layer tensor-parallel MLP (hidden 4096, batch 64, float32, no
   bias), forward + backward per step: shoal.sharding (column- then
   row-parallel weights, one all_reduce forward) against torch's tensor
   parallelism (DTensor, ColwiseParallel / RowwiseParallel) over gloo and
   over backend "shoal". Target: shoal.sharding >= 3x faster than DTensor
   on gloo.
2. reshard Shard(0) -> Shard(1) of a 4096 x 4096 float32 tensor against
   shoal.compile_op moving the same blocks, with a same-size copy as the
   memory baseline. Target: reshard within 1.2x of compile_op.
Results are checked against each other before timing.

Method: per iteration a barrier, then every rank times the step; the
slowest rank's time per iteration; the median over iterations. One intra-
op thread per rank (the ranks share the cores).

    python tools/perf/bench_sharding.py [--iters N] [--ranks 2,4]
"""

import argparse
import os
import statistics
import sys
import time

from bench_launch import run_main, run_ranks

HIDDEN, BATCH, SIDE = 4096, 64, 4096


def launch(args):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    rc = 0
    for n in [int(x) for x in args.ranks.split(",")]:
        rc = rc or run_ranks(__file__, n,
                             ["--worker", "--iters", str(args.iters)], env)
    return rc


class Rank:
    def __init__(self, port):
        import torch
        import torch.distributed as dist

        import shoal
        import shoal.sharding  # noqa: F401 (imports torch: not by shoal)

        torch.set_num_threads(1)
        self.torch, self.dist, self.shoal = torch, dist, shoal
        self.comm = shoal.new_comm("shoal", "cpu", name="bench")
        self.rank, self.size = self.comm.get_rank(), self.comm.get_size()
        store = dist.TCPStore("127.0.0.1", port, self.size, self.rank == 0)
        dist.init_process_group("gloo", store=store, rank=self.rank,
                                world_size=self.size)
        self.shoal_group = dist.new_group(backend="shoal")

    def measure(self, fn, iters, warmup=2):
        torch = self.torch
        times = []
        for i in range(warmup + iters):
            self.comm.barrier()
            t0 = time.perf_counter()
            fn()
            if i >= warmup:
                times.append(time.perf_counter() - t0)
        mine = torch.tensor(times, dtype=torch.float64)
        every = torch.empty(self.size * iters, dtype=torch.float64)
        self.comm.all_gather_single(every, mine)
        return statistics.median(
            every.view(self.size, iters).max(dim=0).values.tolist())

    def row(self, what, seconds, note=""):
        if self.rank == 0:
            print(f"  {what:<40} {seconds * 1e3:10.2f} ms  {note}",
                  flush=True)


def mlp_shoal(r):
    """The step on shoal.sharding, and its weights' pieces."""
    torch, sh = r.torch, r.shoal.sharding
    P = sh.P
    mesh = sh.DeviceMesh(r.comm, (r.size,), ("tp",))
    g = torch.Generator().manual_seed(0)
    w1_full = torch.randn(HIDDEN, HIDDEN, generator=g) / 64
    w2_full = torch.randn(HIDDEN, HIDDEN, generator=g) / 64
    x = sh.shard(torch.randn(BATCH, HIDDEN, generator=g), mesh, P())
    w1 = sh.shard(w1_full, mesh, P(None, "tp"))
    w2 = sh.shard(w2_full, mesh, P("tp", None))
    w1.local.requires_grad_()
    w2.local.requires_grad_()

    def step():
        w1.local.grad = w2.local.grad = None
        y = (x @ w1).map(torch.relu) @ w2
        loss = (y.full() ** 2).sum()
        loss.backward()
        return loss

    def compute():
        """The same rank's multiplies with no communication at all."""
        w1.local.grad = w2.local.grad = None
        y = torch.relu(x.local @ w1.local) @ w2.local
        (y ** 2).sum().backward()
    return step, compute, (w1_full, w2_full, x.local)


def mlp_dtensor(r, group, weights):
    torch = r.torch
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.tensor.parallel import (ColwiseParallel,
                                                   RowwiseParallel,
                                                   parallelize_module)
    w1_full, w2_full, x = weights
    model = torch.nn.Sequential(torch.nn.Linear(HIDDEN, HIDDEN, bias=False),
                                torch.nn.ReLU(),
                                torch.nn.Linear(HIDDEN, HIDDEN, bias=False))
    with torch.no_grad():
        model[0].weight.copy_(w1_full.t())
        model[2].weight.copy_(w2_full.t())
    mesh = DeviceMesh.from_group(group, "cpu")
    parallelize_module(model, mesh, {"0": ColwiseParallel(),
                                     "2": RowwiseParallel()})

    def step():
        model.zero_grad(set_to_none=True)
        loss = (model(x) ** 2).sum()
        loss.backward()
        return loss
    return step


def part_mlp(r, iters):
    if r.rank == 0:
        print(f"# {r.size} ranks: tensor-parallel MLP, hidden {HIDDEN}, "
              f"batch {BATCH}, float32, forward + backward; median of "
              f"{iters} steps", flush=True)
    step, compute, weights = mlp_shoal(r)
    by_gloo = mlp_dtensor(r, r.dist.group.WORLD, weights)
    by_shoal = mlp_dtensor(r, r.shoal_group, weights)
    losses = [float(f()) for f in (step, by_gloo, by_shoal)]
    assert max(losses) - min(losses) <= 1e-3 * abs(losses[0]), losses
    t_compute = r.measure(compute, iters)
    t_sh = r.measure(step, iters)
    t_gloo = r.measure(by_gloo, iters)
    t_dsh = r.measure(by_shoal, iters)
    r.row("compute alone (no communication)", t_compute)
    r.row("shoal.sharding", t_sh)
    r.row("DTensor tensor parallel, gloo", t_gloo)
    r.row("DTensor tensor parallel, backend shoal", t_dsh)
    if r.rank == 0:
        ratio = t_gloo / t_sh
        print(f"# target: shoal.sharding >= 3x faster than DTensor on gloo:"
              f" {'MET' if ratio >= 3 else 'NOT MET'} ({ratio:.2f}x; "
              f"DTensor on shoal {t_dsh / t_sh:.2f}x); beyond compute: "
              f"shoal.sharding +{(t_sh - t_compute) * 1e3:.1f} ms, DTensor "
              f"gloo +{(t_gloo - t_compute) * 1e3:.1f} ms "
              f"({(t_gloo - t_compute) / max(t_sh - t_compute, 1e-9):.1f}x)",
              flush=True)


def part_reshard(r, iters):
    torch, sh = r.torch, r.shoal.sharding
    from torch.distributed.tensor import DeviceMesh, DTensor, Shard
    P = sh.P
    mesh = sh.DeviceMesh(r.comm, (r.size,), ("x",))
    full = torch.arange(SIDE * SIDE, dtype=torch.float32).reshape(SIDE, SIDE)
    src = sh.shard(full, mesh, P("x"))
    want = sh.layout.local_slices(sh.ShardingSpec(mesh, P(None, "x")),
                                  full.shape)
    got = sh.reshard(src, P(None, "x"))
    assert torch.equal(got.local, full[want])
    tmesh = DeviceMesh("cpu", torch.arange(r.size))
    rows = DTensor.from_local(src.local, tmesh, [Shard(0)], run_check=False,
                              shape=full.shape, stride=full.stride())
    meta = DTensor.from_local(torch.empty(got.local.shape, device="meta"),
                              tmesh, [Shard(1)], run_check=False,
                              shape=full.shape, stride=full.stride())
    op = r.shoal.compile_op(r.comm, inputs=[rows], outputs=[meta])
    out = torch.empty(got.local.shape)
    op([src.local], [out]).wait()
    assert torch.equal(out, got.local)
    copy_dst = torch.empty_like(src.local)
    if r.rank == 0:
        print(f"# {r.size} ranks: Shard(0) -> Shard(1) of {SIDE} x {SIDE} "
              f"float32; median of {iters}", flush=True)
    t_copy = r.measure(lambda: copy_dst.copy_(src.local), iters)
    t_re = r.measure(lambda: sh.reshard(src, P(None, "x")), iters)
    t_op = r.measure(lambda: op([src.local], [out]).wait(), iters)
    r.row(f"memcpy {src.local.numel() * 4 >> 20} MiB", t_copy)
    r.row("shoal.sharding.reshard", t_re)
    r.row("shoal.compile_op", t_op)
    if r.rank == 0:
        ratio = t_re / t_op
        print(f"# target: reshard within 1.2x of compile_op: "
              f"{'MET' if ratio <= 1.2 else 'NOT MET'} ({ratio:.2f}x)",
              flush=True)


def worker(args):
    import warnings
    warnings.filterwarnings("ignore")
    r = Rank(args.port)
    part_mlp(r, args.iters)
    part_reshard(r, args.iters)
    r.comm.barrier()
    r.dist.destroy_process_group()
    r.comm.finalize()
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--ranks", default="2,4")
    return run_main(p, worker, launch)


if __name__ == "__main__":
    sys.exit(main())
