"""Training steps with real compute: how much of a step the communication
costs, on gloo and on shoal, side by side in one run per rank count.

Models: an MLP (4 layers of 2048 x 2048, 16.8 M float32 parameters, batch
64) and a small transformer (2 encoder layers, d_model 512, 8 heads,
feed-forward 2048, 6.3 M parameters, batch 8 x 64 tokens). Per model:

  compute only     DDP with no_sync(): the same forward, backward and
                   optimizer step without any communication
  DDP no comm      DDP with a comm hook that communicates nothing: DDP's
                   own bucketing (gradients copied into buckets and back)
                   with no backend, which every DDP variant pays
  DDP gloo         torch DDP over gloo
  DDP shoal        torch DDP over backend "shoal"
  DDP shoal+shared DDP over "shoal" with shoal.ddp.register_shared_buckets
  FSDP2 no comm    fully_shard over torch's fake backend, which moves no
                   data (its outputs are left as they were): FSDP2's own
                   work (parameters unsharded into fresh memory, copies in
                   and out), which every FSDP2 variant pays
  FSDP2 gloo       torch's fully_shard over gloo
  FSDP2 shoal      torch's fully_shard over backend "shoal"

overhead = step - compute only: the communication the step waits for.
Targets (the issue's): shoal's DDP and FSDP2 overhead <= 0.25x gloo's.
A line under each table splits the DDP overheads into DDP's own
bucketing (the no-comm variant) and what each backend adds beyond it;
another does the same for FSDP2.

Intra-op threads fill the cores (cores / ranks each, at least 1), as a
training job would. Method: per step a barrier (shoal), then every rank
times the step; the slowest rank's time per step; the median over steps.
The variants are measured in rounds, interleaved (every variant once per
round, --steps steps each), so that a machine whose speed drifts touches
them all alike; rounds repeat until, for every variant, the medians of the
last three rounds lie within --spread (10%) of each other, or --rounds (8)
are done. A variant's time is the median of its rounds' medians; "spread"
is (max - min) / median over its last three rounds, and a run that ended
without every spread under the target says so.

    python tools/perf/bench_train.py [--ranks 2,4] [--steps 10]
        [--models mlp,transformer] [--load N] [--rounds 8] [--spread 0.1]
        [--bucket-view]

--load N runs N busy processes (a shell loop each) beside the ranks.
--bucket-view builds every DDP variant with gradient_as_bucket_view=True
(gradients live in DDP's buckets: no copy into them and back), the setting
PyTorch recommends for speed; the backends are compared alike.
"""

import argparse
import contextlib
import os
import statistics
import sys
import time

from bench_launch import busy_processes, run_main, run_ranks


def launch(args):
    rc = 0
    with busy_processes(args.load):
        for n in [int(x) for x in args.ranks.split(",")]:
            threads = max(1, (os.cpu_count() or 1) // n)
            env = dict(os.environ, OMP_NUM_THREADS=str(threads),
                       BENCH_TRAIN_LOAD=str(args.load))
            argv = ["--worker", "--steps", str(args.steps),
                    "--models", args.models, "--rounds", str(args.rounds),
                    "--spread", str(args.spread)]
            argv += ["--bucket-view"] if args.bucket_view else []
            rc = rc or run_ranks(__file__, n, argv, env, timeout=3600)
    return rc


class Rank:
    def __init__(self, port, bucket_view=False):
        import torch
        import torch.distributed as dist

        import shoal
        import shoal.ddp  # noqa: F401

        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
        self.torch, self.dist, self.shoal = torch, dist, shoal
        self.bucket_view = bucket_view
        self.comm = shoal.new_comm("shoal", "cpu", name="bench")
        self.rank, self.size = self.comm.get_rank(), self.comm.get_size()
        store = dist.TCPStore("127.0.0.1", port, self.size, self.rank == 0)
        dist.init_process_group("gloo", store=store, rank=self.rank,
                                world_size=self.size)
        self.gloo = dist.group.WORLD
        self.shoal_group = dist.new_group(backend="shoal")
        self._fake = None

    def fake_group(self):
        """A group of torch's fake backend (no communication), made at
        first use (every rank calls it at the same point)."""
        if self._fake is None:
            # Importing it registers the backend "fake".
            import torch.testing._internal.distributed.fake_pg  # noqa: F401
            self._fake = self.dist.new_group(backend="fake")
        return self._fake

    def measure(self, step, steps, warmup=3):
        """Median over steps of the slowest rank's step time (seconds)."""
        torch = self.torch
        times = []
        for i in range(warmup + steps):
            self.comm.barrier()
            t0 = time.perf_counter()
            step()
            if i >= warmup:
                times.append(time.perf_counter() - t0)
        mine = torch.tensor(times, dtype=torch.float64)
        every = torch.empty(self.size * steps, dtype=torch.float64)
        self.comm.all_gather_single(every, mine)
        return statistics.median(
            every.view(self.size, steps).max(dim=0).values.tolist())


def make_model(torch, name):
    """(model, inputs, target) with the same weights on every rank and
    rank-dependent data."""
    torch.manual_seed(0)
    if name == "mlp":
        layers = []
        for _ in range(4):
            layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers[:-1])
        shape_in, shape_out = (64, 2048), (64, 2048)
    else:
        layer = torch.nn.TransformerEncoderLayer(
            512, 8, dim_feedforward=2048, batch_first=True, dropout=0.0)
        model = torch.nn.TransformerEncoder(layer, 2,
                                            enable_nested_tensor=False)
        shape_in, shape_out = (8, 64, 512), (8, 64, 512)
    return model, shape_in, shape_out


def variants(r, name):
    """(label, step function) pairs for model `name`."""
    torch, dist = r.torch, r.dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    gen = torch.Generator().manual_seed(100 + r.rank)

    def data(shape_in, shape_out):
        return (torch.randn(*shape_in, generator=gen),
                torch.randn(*shape_out, generator=gen))

    def trainer(model, x, y, sync=contextlib.nullcontext):
        opt = torch.optim.SGD(model.parameters(), lr=1e-4)

        def step():
            opt.zero_grad(set_to_none=True)
            with sync():
                torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        return step

    def ddp(group, shared=False, no_sync=False, no_comm=False):
        model, si, so = make_model(torch, name)
        wrapped = DDP(model, process_group=group,
                      gradient_as_bucket_view=r.bucket_view)
        if shared:
            r.shoal.ddp.register_shared_buckets(wrapped)
        if no_comm:
            wrapped.register_comm_hook(None, _no_comm_hook)
        x, y = data(si, so)
        return trainer(wrapped, x, y, wrapped.no_sync if no_sync
                       else contextlib.nullcontext)

    def fsdp(group):
        from torch.distributed.device_mesh import DeviceMesh
        from torch.distributed.fsdp import fully_shard
        model, si, so = make_model(torch, name)
        mesh = DeviceMesh.from_group(group, "cpu")
        for sub in list(model.children())[0] if name != "mlp" \
                else model.children():
            if any(p.requires_grad for p in sub.parameters()):
                fully_shard(sub, mesh=mesh)
        fully_shard(model, mesh=mesh)
        x, y = data(si, so)
        return trainer(model, x, y)

    yield "compute only (no_sync)", lambda: ddp(r.gloo, no_sync=True)
    yield "DDP no comm (no-op hook)", lambda: ddp(r.gloo, no_comm=True)
    yield "DDP gloo", lambda: ddp(r.gloo)
    yield "DDP shoal", lambda: ddp(r.shoal_group)
    yield "DDP shoal + shared buckets", \
        lambda: ddp(r.shoal_group, shared=True)
    yield "FSDP2 no comm (fake group)", lambda: fsdp(r.fake_group())
    yield "FSDP2 gloo", lambda: fsdp(r.gloo)
    yield "FSDP2 shoal", lambda: fsdp(r.shoal_group)


def _no_comm_hook(state, bucket):
    """A DDP comm hook that hands the bucket back as it is."""
    import torch
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def split_overhead(t, kind, own_label, what):
    """The line that splits the overheads of `kind` (DDP, FSDP2): what
    its no-comm variant `own_label` pays over compute only (`what`), and
    each backend beyond it."""
    c, own = t.get("compute only (no_sync)"), t.get(own_label)
    g = t.get(f"{kind} gloo")
    if None in (c, own, g) or g <= own:
        return
    parts = []
    for label in (f"{kind} gloo", f"{kind} shoal",
                  f"{kind} shoal + shared buckets"):
        v = t.get(label)
        if v is not None:
            parts.append(f"{label[len(kind) + 1:]} {(v - own) * 1e3:.2f} ms "
                         f"({(v - own) / (g - own):.3f}x gloo's)")
    print(f"# {what} {(own - c) * 1e3:.2f} ms of every {kind} overhead; "
          f"beyond it: {', '.join(parts)}")


def spread(medians):
    """(max - min) / median of the last three rounds' medians."""
    last = medians[-3:]
    return (max(last) - min(last)) / statistics.median(last)


def measure_rounds(r, built, steps, max_rounds, target):
    """Per variant the medians of its rounds; every rank decides alike
    (every rank holds the same numbers)."""
    medians = {label: [] for label, _ in built}
    for done in range(1, max_rounds + 1):
        for label, step in built:
            medians[label].append(r.measure(step, steps))
            r.comm.barrier()
        if done >= 3 and all(spread(m) < target for m in medians.values()):
            break
    return medians


def bench_model(r, name, steps, max_rounds=8, target=0.1):
    built, failed = [], {}
    for label, build in variants(r, name):
        try:
            step = build()
            r.measure(step, 1, warmup=2)
            built.append((label, step))
        except Exception as e:  # a variant that cannot run: say why
            failed[label] = f"{type(e).__name__}: {e}"[:100]
        r.comm.barrier()
    medians = measure_rounds(r, built, steps, max_rounds, target)
    if r.rank != 0:
        return
    rounds = max((len(m) for m in medians.values()), default=0)
    params = sum(p.numel() for p in make_model(r.torch, name)[0]
                 .parameters())
    print(f"#\n# {name}: {params / 1e6:.1f} M parameters, {r.size} ranks, "
          f"{r.torch.get_num_threads()} intra-op threads each, "
          f"{os.environ.get('BENCH_TRAIN_LOAD', '0')} busy processes "
          f"beside; {'gradient_as_bucket_view, ' if r.bucket_view else ''}"
          f"median of {steps} steps (slowest rank) per round, "
          f"median of {rounds} interleaved rounds")
    print(f"#{'':>30} {'step ms':>9} {'/gloo':>7} {'overhead ms':>12} "
          f"{'/gloo':>7} {'spread':>7}")
    rows = [(label, statistics.median(medians[label]), None)
            for label, _ in built]
    rows += [(label, None, why) for label, why in failed.items()]
    t = {label: v for label, v, _ in rows}
    c = t.get("compute only (no_sync)")
    for label, v, why in rows:
        if v is None:
            print(f"  {label:<30} {'n/a':>9}  ({why})")
            continue
        base = t.get("FSDP2 gloo" if label.startswith("FSDP2")
                     else "DDP gloo")
        ratio = f"{v / base:7.3f}" if base else f"{'':>7}"
        over = ""
        if c is not None and label != "compute only (no_sync)":
            o = v - c
            ob = base - c if base is not None else None
            over = f" {o * 1e3:12.2f}" + (f" {o / ob:7.3f}" if ob and ob > 0
                                          else "")
        if not over:
            over = f" {'':>12} {'':>7}"
        elif len(over) < 21:
            over += f" {'':>7}"
        print(f"  {label:<30} {v * 1e3:9.2f} {ratio}{over} "
              f"{spread(medians[label]):7.1%}")
    split_overhead(t, "DDP", "DDP no comm (no-op hook)",
                   "DDP's own bucketing (no-op hook)")
    split_overhead(t, "FSDP2", "FSDP2 no comm (fake group)",
                   "FSDP2's own work (fake group)")
    wide = [label for label, m in medians.items() if spread(m) >= target]
    if wide:
        print(f"# spread NOT under {target:.0%} after {rounds} rounds: "
              f"{', '.join(wide)} (a busy or drifting machine: the ratios "
              f"below are uncertain by about as much)")
    else:
        print(f"# spread under {target:.0%} for every variant after "
              f"{rounds} rounds")
    for kind in ("DDP", "FSDP2"):
        s, g = t.get(f"{kind} shoal"), t.get(f"{kind} gloo")
        if None in (s, g, c) or g <= c:
            print(f"# N/A      {kind} overhead <= 0.25x gloo's")
            continue
        q = (s - c) / (g - c)
        print(f"# {'MET    ' if q <= 0.25 else 'NOT MET'}  {kind} shoal "
              f"overhead <= 0.25x gloo's: {q:.3f}x ({(s - c) * 1e3:.2f} vs "
              f"{(g - c) * 1e3:.2f} ms)")
    sys.stdout.flush()


def worker(args):
    import warnings
    warnings.filterwarnings("ignore")
    r = Rank(args.port, args.bucket_view)
    for name in args.models.split(","):
        bench_model(r, name, args.steps, args.rounds, args.spread)
    r.comm.barrier()
    r.dist.destroy_process_group()
    r.comm.finalize()
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", default="2,4")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--models", default="mlp,transformer")
    p.add_argument("--load", type=int, default=0)
    p.add_argument("--rounds", type=int, default=8,
                   help="interleaved rounds at most (at least 3)")
    p.add_argument("--spread", type=float, default=0.1,
                   help="stop once every variant's last three rounds lie "
                   "within this fraction of their median")
    p.add_argument("--bucket-view", action="store_true",
                   help="DDP with gradient_as_bucket_view=True (every "
                   "variant)")
    return run_main(p, worker, launch)


if __name__ == "__main__":
    sys.exit(main())
