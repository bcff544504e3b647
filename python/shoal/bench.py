"""python -m shoal.bench: shoal against gloo, measured in one job.

Starts its own ranks (2 by default) with the bundled shoalrun and runs the
same collectives four ways: through torch.distributed over gloo, through
torch.distributed over backend "shoal" (n/a when it is not registered),
through the shoal API on ordinary tensors, and through the shoal API on
shoal.empty tensors (the zero-copy path). Beside the large sizes it
measures the memcpy baseline: every rank copying the same number of bytes
at once (torch copy_), which is what bounds collectives on a machine whose
memory bandwidth is shared by all ranks.

Method (that of the C tool shoal-perf): per iteration a barrier, then every
rank times the operation alone; per iteration the maximum over ranks; the
median over iterations. Absolute times on a shared machine are noise; the
ratios within one run are the figure. Then a "targets" block, MET or NOT
MET with the numbers, for the Python front end's targets.

    python -m shoal.bench             # 2 ranks, 4 B .. 64 MiB
    python -m shoal.bench --quick     # small sizes, few iterations
    python -m shoal.bench --ranks 4
    python -m shoal.bench --ddp       # and a DDP training step
    python -m shoal.bench --queue     # and shoal.Queue (--queue-only: alone)
    python -m shoal.bench --load 1    # beside one busy process per N
    python -m shoal.bench --plot bench.png   # and the tables as a PNG

Every run also has an "arrival skew" table: a 4-byte all_reduce whose
iterations each start with a gloo barrier (as after compute or another
library's barrier, ranks arrive at slightly different times), so the early
rank's way of waiting decides the time; and a "late rank" table: the
last rank's own call after that barrier against the same call back to
back, and the CPU each iteration costs beyond the barrier's.
"""

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
import warnings

from . import _plot

KiB, MiB = 1 << 10, 1 << 20

# (collective, sizes in bytes) per mode. all_gather: size = the gathered
# output; reduce_scatter: size = the input (nccl-tests' convention).
FULL = [("all_reduce", [4, 64 * KiB, MiB, 64 * MiB]),
        ("all_gather", [64 * MiB]), ("reduce_scatter", [64 * MiB])]
QUICK = [("all_reduce", [4, 64 * KiB, MiB]), ("all_gather", [MiB]),
         ("reduce_scatter", [MiB])]
VARIANTS = ["gloo", "dist:shoal", "shoal", "shoal.empty"]
MEMCPY_FROM = 64 * KiB  # smaller copies take nanoseconds: not shown


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m shoal.bench", description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--quick", action="store_true",
                   help="sizes up to 1 MiB, few iterations (a smoke test)")
    p.add_argument("--iters", type=int, default=None,
                   help="iterations per size, at most (default 200; 20 "
                        "with --quick); large sizes run fewer")
    p.add_argument("--warmup", type=int, default=None)
    p.add_argument("--ddp", action="store_true",
                   help="also time a DDP training step: gloo, backend "
                        "'shoal', and with shoal.ddp's shared buckets")
    p.add_argument("--queue", action="store_true",
                   help="also measure shoal.Queue: a 4-byte put/get ping-"
                        "pong, 1 MiB tensors' throughput and small objects "
                        "per second, against torch.distributed send/recv")
    p.add_argument("--queue-only", action="store_true",
                   help="measure shoal.Queue alone (no collective tables)")
    p.add_argument("--load", type=int, default=0, metavar="N",
                   help="run N busy processes (a shell loop each) beside "
                        "the ranks, started and stopped by the benchmark")
    p.add_argument("--timeout", type=float, default=900,
                   help="seconds before the job is stopped")
    p.add_argument("--plot", metavar="FILE.png",
                   help="also draw the size tables: per collective, time "
                        "and busbw against size (needs matplotlib; the same "
                        "plot as tools/perf/plot_tables.py)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.iters is None:
        args.iters = 20 if args.quick else 200
    if args.warmup is None:
        args.warmup = 2 if args.quick else 5
    if args.worker:
        return _worker(args)
    return _launch(args)


# ---- the launcher ----------------------------------------------------------


def _launch(args):
    try:
        import torch  # noqa: F401
    except ImportError:
        print("shoal.bench needs torch (it compares with torch.distributed)",
              file=sys.stderr)
        return 2
    from .run import tool_path

    cmd = [tool_path("shoalrun"), "-n", str(args.ranks), sys.executable,
           "-m", "shoal.bench", "--worker", "--port", str(_free_port()),
           "--iters", str(args.iters), "--warmup", str(args.warmup)]
    if args.quick:
        cmd.append("--quick")
    if args.ddp:
        cmd.append("--ddp")
    if args.queue:
        cmd.append("--queue")
    if args.queue_only:
        cmd.append("--queue-only")
    if args.plot:
        cmd += ["--plot", os.path.abspath(args.plot)]
    env = dict(os.environ)
    # One thread per rank: torch's own thread pool would fight the ranks
    # for the cores (torchrun sets the same).
    env.setdefault("OMP_NUM_THREADS", "1")
    env["SHOAL_BENCH_LOAD"] = str(args.load)
    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"])
            for _ in range(args.load)]
    env["SHOAL_BENCH_BUSY_PIDS"] = ",".join(str(b.pid) for b in busy)
    try:
        return subprocess.run(cmd, env=env, timeout=args.timeout).returncode
    except subprocess.TimeoutExpired:
        print(f"shoal.bench: stopped after {args.timeout:.0f} s",
              file=sys.stderr)
        return 124
    finally:
        for b in busy:
            b.kill()
            b.wait()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- one rank --------------------------------------------------------------


class _Rank:
    """This rank's communicators and the measuring loop."""

    def __init__(self, args):
        import torch
        import torch.distributed as dist

        import shoal

        self.torch, self.dist, self.shoal = torch, dist, shoal
        torch.set_num_threads(1)
        self.comm = shoal.new_comm("shoal", "cpu", name="bench")
        self.rank, self.size = self.comm.get_rank(), self.comm.get_size()
        store = dist.TCPStore("127.0.0.1", args.port, self.size,
                              self.rank == 0)
        dist.init_process_group("gloo", store=store, rank=self.rank,
                                world_size=self.size)
        self.gloo = dist.group.WORLD
        self.spg, self.spg_why = self._shoal_group()
        self.args = args

    def _shoal_group(self):
        dist = self.dist
        if "shoal" not in [b.lower() for b in dist.Backend.backend_list]:
            return None, "backend 'shoal' is not registered"
        try:
            return dist.new_group(backend="shoal"), None
        except Exception as e:  # report it, measure the rest
            return None, f"new_group(backend='shoal') failed: {e}"

    def iters_for(self, nbytes):
        """Fewer iterations for large sizes: about 1 GiB per size (quick:
        64 MiB), at least 10 (quick: 3)."""
        budget, least = (64 * MiB, 3) if self.args.quick else (1 << 30, 10)
        return max(least, min(self.args.iters, budget // max(nbytes, 1)))

    def measure(self, fn, nbytes, reps=1, start=None, p90=False):
        """Median over iterations of the slowest rank's time of fn(), in
        seconds (per call when fn makes `reps` calls); each iteration
        starts with start() (default: a shoal barrier). With p90: (median,
        p90, iterations)."""
        torch = self.torch
        iters = self.iters_for(nbytes)
        times = []
        start = start or self.comm.barrier
        for i in range(self.args.warmup + iters):
            start()
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            if i >= self.args.warmup:
                times.append(dt / reps)
        mine = torch.tensor(times, dtype=torch.float64)
        every = torch.empty(self.size * iters, dtype=torch.float64)
        self.comm.all_gather_single(every, mine)
        worst = every.view(self.size, iters).max(dim=0).values
        if p90:
            q = statistics.quantiles(worst.tolist(), n=10)[-1]
            return statistics.median(worst.tolist()), q, iters
        return statistics.median(worst.tolist()), iters


def _dist_fn(dist, name, old):
    """torch 2.13 renamed the *_into_tensor / *_tensor collectives."""
    return getattr(dist, name, None) or getattr(dist, old)


class _Op:
    """One collective at one size, its four variants and their checks."""

    def __init__(self, r, kind, nbytes):
        self.r, self.kind, self.nbytes = r, kind, nbytes
        n = r.size
        count = max(1, nbytes // 4)
        if kind != "all_reduce":
            count = max(n, count // n * n)  # whole blocks per rank
        self.count = count
        self.block = count // n

    def buffers(self, shared, group=None):
        """(input, output) float32 tensors; shoal.empty ones when shared
        (on the communicator of `group`, else the API's)."""
        torch, shoal = self.r.torch, self.r.shoal
        c = self.r.comm if group is None else group

        def make(k):
            if shared:
                return shoal.zeros(k, dtype=torch.float32, comm=c)
            return torch.zeros(k, dtype=torch.float32)
        if self.kind == "all_reduce":
            t = make(self.count)
            return t, t
        if self.kind == "all_gather":
            return make(self.block), make(self.count)
        return make(self.count), make(self.block)  # reduce_scatter

    def call(self, variant, inp, out):
        """A function running the collective once through `variant`."""
        r, dist, shoal = self.r, self.r.dist, self.r.shoal
        SUM = shoal.ReduceOp.SUM
        if variant in ("gloo", "dist:shoal"):
            g = r.gloo if variant == "gloo" else r.spg
            if self.kind == "all_reduce":
                return lambda: dist.all_reduce(inp, group=g)
            if self.kind == "all_gather":
                f = _dist_fn(dist, "all_gather_single",
                             "all_gather_into_tensor")
                return lambda: f(out, inp, group=g)
            f = _dist_fn(dist, "reduce_scatter_single",
                         "reduce_scatter_tensor")
            return lambda: f(out, inp, group=g)
        c = r.comm
        if self.kind == "all_reduce":
            return lambda: c.all_reduce(inp, SUM)
        if self.kind == "all_gather":
            return lambda: c.all_gather_single(out, inp)
        return lambda: c.reduce_scatter_single(out, inp, SUM)

    def check(self, fn, inp, out):
        """Runs fn once on rank-dependent data; True if the result is
        right. Leaves the buffers zeroed."""
        n, rank = self.r.size, self.r.rank
        inp.fill_(rank + 1)
        fn()
        if self.kind == "all_gather":
            want = self.r.torch.arange(1, n + 1, dtype=out.dtype)
            ok = bool((out.view(n, -1) == want.view(n, 1)).all())
        else:
            ok = bool((out == n * (n + 1) / 2).all())
        inp.zero_()
        out.zero_()
        return ok

    def run(self, variant):
        """(seconds, iterations, right) or None when n/a."""
        r = self.r
        if variant == "dist:shoal" and r.spg is None:
            return None
        inp, out = self.buffers(variant == "shoal.empty")
        fn = self.call(variant, inp, out)
        ok = self.check(fn, inp, out)
        t, iters = r.measure(fn, self.nbytes)
        return t, iters, ok

    def memcpy(self):
        """Every rank copying `nbytes` at once (None below MEMCPY_FROM)."""
        if self.nbytes < MEMCPY_FROM:
            return None
        torch = self.r.torch
        src = torch.zeros(self.nbytes // 4, dtype=torch.float32)
        dst = torch.empty_like(src)
        return self.r.measure(lambda: dst.copy_(src), self.nbytes)[0]


# ---- report ----------------------------------------------------------------


def _busbw(kind, nbytes, seconds, n):
    """nccl-tests' bus bandwidth in GB/s."""
    if not seconds:
        return None
    factor = 2 * (n - 1) / n if kind == "all_reduce" else (n - 1) / n
    return nbytes * factor / seconds / 1e9


def _f(v, width, digits=2):
    return f"{'n/a':>{width}}" if v is None else f"{v:>{width}.{digits}f}"


def _size_name(nbytes):
    for unit, div in (("MiB", MiB), ("KiB", KiB)):
        if nbytes >= div and nbytes % div == 0:
            return f"{nbytes // div} {unit}"
    return f"{nbytes} B"


def _print_table(kind, n, rows):
    """rows: [(nbytes, iters, {variant: seconds|None}, memcpy|None, bad)]"""
    title = {"all_reduce": "all_reduce float32 sum",
             "all_gather": "all_gather float32 (size: the gathered output)",
             "reduce_scatter":
                 "reduce_scatter float32 sum (size: the input)"}[kind]
    print(f"#\n# {title}, {n} ranks")
    heads = ["gloo", "dist:shoal", "shoal", "shoal.empty"]
    print("#" + f"{'size':>11} {'iters':>6} "
          + " ".join(f"{h:>11}" for h in heads) + f" {'memcpy':>9} |"
          + " ".join(f"{h:>11}" for h in heads[1:]))
    print("#" + f"{'(B)':>11} {'':>6} "
          + " ".join(f"{'(us)':>11}" for _ in heads) + f" {'(us)':>9} |"
          + " ".join(f"{'/gloo':>11}" for _ in heads[1:]))
    for nbytes, iters, t, mc, bad in rows:
        g = t.get("gloo")
        line = f"{nbytes:>12} {iters:>6} " + " ".join(
            _f(None if t.get(h) is None else t[h] * 1e6, 11) for h in heads)
        line += " " + (f"{'-':>9}" if mc is None else _f(mc * 1e6, 9)) + " |"
        line += " ".join(_f(t[h] / g if t.get(h) and g else None, 11, 3)
                         for h in heads[1:])
        print(line)
        for b in bad:
            print(f"# ^ {b} delivered a wrong result")
    big = [row for row in rows if row[0] >= MEMCPY_FROM]
    if not big:
        return
    print("#" + f"{'':>11} {'busbw':>6} "
          + " ".join(f"{h:>11}" for h in heads) + f" {'memcpy':>9} |"
          + " ".join(f"{h:>11}" for h in heads[1:])
          + f" {'shoal.empty':>11}")
    print("#" + f"{'':>11} {'GB/s':>6} " + " ".join(
        f"{'':>11}" for _ in heads) + f" {'GB/s':>9} |"
          + " ".join(f"{'x gloo':>11}" for _ in heads[1:])
          + f" {'/memcpy':>11}")
    for nbytes, iters, t, mc, bad in big:
        bw = {h: _busbw(kind, nbytes, t.get(h), n) for h in heads}
        line = f"{nbytes:>12} {'':>6} " + " ".join(
            _f(bw[h], 11) for h in heads)
        mbw = nbytes / mc / 1e9 if mc else None
        line += " " + _f(mbw, 9) + " |" + " ".join(
            _f(bw[h] / bw["gloo"] if bw[h] and bw["gloo"] else None, 11)
            for h in heads[1:])
        line += " " + _f(bw["shoal.empty"] / mbw
                         if bw["shoal.empty"] and mbw else None, 11, 3)
        print(line)


def _verdict(label, value, op, limit, detail):
    if value is None:
        state = "N/A    "
    elif (op == "<=" and value <= limit) or (op == ">=" and value >= limit):
        state = "MET    "
    else:
        state = "NOT MET"
    print(f"# {state}  {label:<58} {detail}")


def _targets(results, n, spg_why):
    """The Python front end's targets, from {(kind, nbytes): {variant: s}}."""
    def t(kind, nbytes, v):
        return results.get((kind, nbytes), {}).get(v)

    def ratio(a, b):
        return a / b if a and b else None

    print(f"#\n# targets ({n} ranks; the issue's are for 2)")
    if spg_why:
        print(f"# torch.distributed 'shoal': n/a ({spg_why})")
    s4 = t("all_reduce", 4, "shoal")
    _verdict("4 B all_reduce, shoal API: median <= 10 us",
             None if s4 is None else s4 * 1e6, "<=", 10,
             "n/a" if s4 is None else f"{s4 * 1e6:.2f} us")
    for nbytes, limit in ((4, 0.2), (64 * KiB, 0.05)):
        d, g = t("all_reduce", nbytes, "dist:shoal"), \
            t("all_reduce", nbytes, "gloo")
        r = ratio(d, g)
        _verdict(f"{_size_name(nbytes)} all_reduce, torch.distributed shoal "
                 f"<= {limit}x gloo", r, "<=", limit,
                 "n/a" if r is None else
                 f"{r:.3f}x ({d * 1e6:.1f} vs {g * 1e6:.1f} us)")
    big = 64 * MiB
    g = t("all_reduce", big, "gloo")
    for label, v, limit in (
            ("torch.distributed shoal, ordinary tensors", "dist:shoal", 3),
            ("shoal API, ordinary tensors", "shoal", 3),
            ("shoal API, shoal.empty tensors", "shoal.empty", 5)):
        x = t("all_reduce", big, v)
        r = ratio(g, x)  # bandwidth ratio = inverse time ratio
        _verdict(f"64 MiB all_reduce, {label}: >= {limit}x gloo busbw", r,
                 ">=", limit, "n/a" if r is None else
                 f"{r:.2f}x ({x * 1e3:.2f} vs {g * 1e3:.2f} ms)")


def _ddp_table(r):
    """Median step time of one DDP model (about 34 MB of gradients) over
    gloo, over backend "shoal", and with shoal.ddp's shared buckets."""
    import shoal.ddp

    from torch.nn.parallel import DistributedDataParallel as DDP

    torch = r.torch

    steps = 5 if r.args.quick else 20
    gen = torch.Generator().manual_seed(r.rank)
    x, y = torch.randn(8, 1024, generator=gen), torch.randn(8, 1024,
                                                             generator=gen)
    variants = [("compute only (no_sync)", r.gloo, "no_sync"),
                ("gloo", r.gloo, None),
                ("gloo + shared buckets", r.gloo, r.comm),
                ("dist:shoal", r.spg, None),
                ("dist:shoal + shared buckets", r.spg, True)]
    rows = []
    for name, group, hook in variants:
        if group is None:
            rows.append((name, None))
            continue
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(1024, 2048), torch.nn.ReLU(),
            torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
            torch.nn.Linear(2048, 1024))
        ddp = DDP(model, process_group=group)
        sync = contextlib.nullcontext
        if hook == "no_sync":
            sync, hook = ddp.no_sync, None
        if hook is not None:
            shoal.ddp.register_shared_buckets(
                ddp, comm=None if hook is True else hook)
        opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)

        def step():
            opt.zero_grad()
            with sync():
                torch.nn.functional.mse_loss(ddp(x), y).backward()
            opt.step()
        for _ in range(3):  # DDP rebuilds its buckets after the first
            step()
        t, _ = _measure_steps(r, step, steps)
        rows.append((name, t))
        ddp = model = opt = None  # free before the next variant
    if r.rank == 0:
        c, g = rows[0][1], rows[1][1]
        print(f"#\n# DDP training step ({r.size} ranks; a 3-layer MLP, 8.4 M "
              "float32 parameters, batch 8; median of the slowest rank);")
        print("# overhead = step - compute only: the communication the "
              "step waits for")
        print(f"#{'':>28} {'step (ms)':>10} {'/gloo':>8} {'overhead':>9} "
              f"{'/gloo':>8}")
        for name, t in rows:
            if t is None:
                print(f"  {name:<28} {'n/a':>10}")
                continue
            over = f" {(t - c) * 1e3:>9.2f} {(t - c) / (g - c):>8.3f}" \
                if t is not c and g > c else ""
            print(f"  {name:<28} {t * 1e3:>10.2f} {t / g:>8.3f}{over}")
        sys.stdout.flush()


def _window_table(r):
    """Windows through the Python API: ranks 0 and 1 bounce a 4-byte put
    (put + signal, then wait_signal) BATCH times per sample; round trip =
    sample / BATCH. Windows of shoal.zeros memory (mapped: the put is a
    store into the peer's buffer) and of an ordinary tensor."""
    torch, shoal = r.torch, r.shoal
    batch = 100
    rows = []
    for label, make in (("shoal.zeros", lambda: shoal.zeros(
            4, dtype=torch.float32, comm=r.comm)),
                        ("torch.zeros", lambda: torch.zeros(4))):
        buf = make()
        win = r.comm.new_window(buf)
        x = torch.ones(1)
        peer = 1 - r.rank if r.rank < 2 else None

        def bounce():
            for _ in range(batch):
                if r.rank == 0:
                    win.put(x, peer, 0)
                    win.signal(peer)
                    win.wait_signal(peer)
                elif r.rank == 1:
                    win.wait_signal(peer)
                    win.put(x, peer, 0)
                    win.signal(peer)
        t, _ = _measure_steps(r, bounce, None, reps=batch)
        rows.append((label, t))
        win.tensor_deregister()
    if r.rank == 0:
        print("#\n# window: 4-byte put + signal, wait_signal, ranks 0 <-> 1"
              f" ({batch} round trips per sample; median of the slowest "
              "rank)")
        print(f"#{'':>14} {'round trip':>11} {'half':>8}")
        print(f"#{'window of':>14} {'(us)':>11} {'(us)':>8}")
        for label, t in rows:
            print(f"  {label:<13} {t * 1e6:>11.2f} {t * 5e5:>8.2f}")
        sys.stdout.flush()
    return dict(rows)


def _ping_pong(r, one_way, iters):
    """Ranks 0 and 1 bounce a message `iters` times, one_way(to) sending
    to rank `to` and one_way(None) receiving from the other; rank 0 times
    each round trip. Returns the sorted round trips (rank 0), else []."""
    times = []
    r.comm.barrier()
    for _ in range(iters):
        if r.rank == 0:
            t0 = time.perf_counter()
            one_way(1)
            one_way(None)
            times.append(time.perf_counter() - t0)
        elif r.rank == 1:
            one_way(None)
            one_way(0)
    r.comm.barrier()
    return sorted(times)


def _queue_ping_pongs(r, inbox, iters):
    """{variant: sorted round trips (rank 0)} of a 4-byte tensor through
    shoal.Queue, torch.distributed send/recv (gloo, "shoal") and the shoal
    API's send/recv."""
    torch, dist = r.torch, r.dist
    x = torch.ones(1)
    peer = 1 - r.rank if r.rank < 2 else None

    def queue(to):
        if to is None:
            inbox[r.rank].get_tensor()
        else:
            inbox[to].put_tensor(x)

    def dist_over(group):
        def one_way(to):
            if to is None:
                dist.recv(x, peer, group=group)
            else:
                dist.send(x, to, group=group)
        return one_way

    def api(to):
        if to is None:
            r.comm.recv(x, peer)
        else:
            r.comm.send(x, to)

    variants = [("queue", queue), ("gloo", dist_over(r.gloo)),
                ("dist:shoal", dist_over(r.spg) if r.spg else None),
                ("shoal send/recv", api)]
    got = {}
    for name, one_way in variants:
        if one_way is None:
            got[name] = None
            continue
        _ping_pong(r, one_way, max(3, iters // 10))  # warm up
        got[name] = _ping_pong(r, one_way, iters)
    return got


def _queue_streams(r, inbox, count):
    """{variant: seconds} for `count` 1 MiB float32 tensors from rank 0 to
    rank 1 (median over iterations of the slower rank: until the last one
    is taken), and one rank's torch copy_ of as many bytes."""
    torch, dist = r.torch, r.dist
    src = torch.rand(MiB // 4)
    dst = torch.empty_like(src)

    def only(rank, fn):
        return lambda: fn() if r.rank == rank else None

    def queue():
        if r.rank == 0:
            # Each put's Work completes when rank 1 has read the tensor:
            # kept, the puts overlap those reads (src is not changed).
            works = [inbox[1].put_tensor(src) for _ in range(count)]
            for w in works:
                w.wait()
        elif r.rank == 1:
            for _ in range(count):
                inbox[1].get_tensor()

    def dist_over(group):
        def fn():
            if r.rank == 0:
                for _ in range(count):
                    dist.send(src, 1, group=group)
            elif r.rank == 1:
                for _ in range(count):
                    dist.recv(dst, 0, group=group)
        return fn

    def memcpy():
        for _ in range(count):
            dst.copy_(src)

    got = {}
    for name, fn in (("queue", queue), ("gloo", dist_over(r.gloo)),
                     ("dist:shoal", dist_over(r.spg) if r.spg else None),
                     ("memcpy", only(0, memcpy))):
        got[name] = None if fn is None else _few(r, fn)
    return got


def _few(r, fn):
    """r.measure of fn over a few iterations (after one more, unmeasured):
    for functions that each run many operations."""
    fn()
    return _measure_steps(r, fn, 3 if r.args.quick else 10)[0]


def _queue_rates(r, inbox, count):
    """{what: items per second} from rank 0 to rank 1 through one queue:
    small objects, and 4-byte tensors."""
    x = r.torch.ones(1)
    item = {"step": 1, "loss": 0.5}

    def objects():
        if r.rank == 0:
            for _ in range(count):
                inbox[1].put_object(item)
        elif r.rank == 1:
            for _ in range(count):
                inbox[1].get_object()

    def tensors():
        if r.rank == 0:
            for _ in range(count):
                inbox[1].put_tensor(x)
        elif r.rank == 1:
            for _ in range(count):
                inbox[1].get_tensor()

    return {name: count / _few(r, fn)
            for name, fn in (("objects", objects), ("4 B tensors", tensors))}


def _queue_table(r):
    """shoal.Queue through the Python API, ranks 0 and 1 (a queue on each):
    (a) a 4-byte tensor's put -> get round trip against send/recv, (b) 1
    MiB tensors' throughput against send/recv and a memcpy, (c) small
    items per second through one queue."""
    shoal = r.shoal
    if r.size < 2:
        return {}
    inbox = [shoal.Queue(r.comm, k) for k in range(2)]  # collective
    iters = 200 if r.args.quick else 2000
    count = 4 if r.args.quick else 16
    items = 500 if r.args.quick else 5000
    rtt = _queue_ping_pongs(r, inbox, iters)
    streams = _queue_streams(r, inbox, count)
    rates = _queue_rates(r, inbox, items)
    if r.rank != 0:
        return {}
    print(f"#\n# shoal.Queue, ranks 0 <-> 1 ({r.size} ranks): (a) 4 B "
          f"tensor round trip, rank 0 puts into a queue on rank 1, which "
          f"gets\n# and puts back into one on rank 0 ({iters} round trips, "
          f"rank 0's clock); the same through send/recv")
    print(f"#{'':>18} {'median us':>10} {'p90 us':>10} {'/queue':>8}")
    q = statistics.median(rtt["queue"])
    for name, times in rtt.items():
        if not times:
            print(f"  {name:<17} {'n/a':>10}")
            continue
        med = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        print(f"  {name:<17} {med * 1e6:>10.1f} {p90 * 1e6:>10.1f} "
              f"{med / q:>8.2f}")
    print(f"#\n# (b) {count} tensors of 1 MiB from rank 0 to rank 1, until "
          f"the last is taken (median of the slower rank); memcpy: rank 0 "
          f"copies\n# as many bytes (torch copy_)")
    print(f"#{'':>18} {'GB/s':>10} {'/memcpy':>10}")
    mc = streams["memcpy"]
    for name, t in streams.items():
        if t is None:
            print(f"  {name:<17} {'n/a':>10}")
            continue
        print(f"  {name:<17} {count * MiB / t / 1e9:>10.2f} "
              f"{mc / t:>10.3f}")
    print(f"#\n# (c) {items} items put by rank 0 into a queue on rank 1, "
          f"taken there (median of the slower rank)")
    print(f"#{'':>18} {'items/s':>10} {'us/item':>10}")
    for name, rate in rates.items():
        print(f"  {name:<17} {rate:>10.0f} {1e6 / rate:>10.2f}")
    sys.stdout.flush()
    return {"rtt": q, "streams": streams, "rates": rates}


def _four_byte_calls(r):
    """A 4-byte all_reduce through gloo, the shoal API and (where the
    group was made) torch.distributed 'shoal', by variant name."""
    x = r.torch.ones(1)
    fns = {"gloo": lambda: r.dist.all_reduce(x, group=r.gloo),
           "shoal": lambda: r.comm.all_reduce(x, r.shoal.ReduceOp.SUM)}
    if r.spg is not None:
        fns["dist:shoal"] = lambda: r.dist.all_reduce(x, group=r.spg)
    return fns


def _skew_table(r):
    """A 4-byte all_reduce, each iteration started by a gloo barrier:
    through gloo, torch.distributed 'shoal' and the shoal API, beside the
    barrier's own skew (the early rank's time is at least the gap to the
    last rank's arrival). Returns {variant: (median s, p90 s)}."""
    dist = r.dist
    fns = _four_byte_calls(r)
    got = {}
    saved = r.args.iters
    r.args.iters = max(saved, 1000)
    try:
        got["(skew)"] = _barrier_skew(r)
        for v in ("gloo", "dist:shoal", "shoal"):
            if v in fns:
                med, q, _ = r.measure(fns[v], 4, p90=True,
                                      start=lambda: dist.barrier(r.gloo))
                got[v] = (med, q)
    finally:
        r.args.iters = saved
    if r.rank == 0:
        print("#\n# arrival skew: 4 B all_reduce, each iteration started by "
              "a gloo barrier (1000+ iterations); (skew): how far apart\n"
              "# the ranks leave gloo's barrier (the last minus the first), "
              "which the early rank of any library waits out")
        print(f"#{'':>12} {'median us':>10} {'p90 us':>10} {'/gloo':>8}")
        g = got["gloo"][0]
        for v in ("(skew)", "gloo", "dist:shoal", "shoal"):
            if v not in got:
                continue
            med, q = got[v]
            print(f"  {v:<11} {med * 1e6:>10.1f} {q * 1e6:>10.1f} "
                  f"{med / g:>8.3f}")
        sys.stdout.flush()
    return got


def _late_rank_table(r):
    """The late rank's own time after a gloo barrier: per iteration the
    rank that left the barrier last (the other has waited already), its
    4-byte all_reduce against the same call back to back, and the CPU
    time the iteration costs each rank beyond the barrier alone (what
    waiting burns: spinning counts, sleeping does not). The "(local)" row
    is a 4-byte add_ with no communication: what any first call pays on
    the late rank after gloo's barrier, whatever library it calls. Returns
    {variant: (late median s, late p90 s, back to back s, cpu s)}."""
    fns = _four_byte_calls(r)
    x = r.torch.ones(1)
    fns["(local)"] = lambda: x.add_(0)
    iters = max(r.args.iters, 1000)
    base_cpu = _after_barrier(r, lambda: None, iters)[1]
    got = {}
    for v in ("gloo", "dist:shoal", "shoal", "(local)"):
        if v not in fns:
            continue
        late, cpu = _after_barrier(r, fns[v], iters)
        got[v] = (statistics.median(late),
                  statistics.quantiles(late, n=10)[-1],
                  _back_to_back(r, fns[v], iters), max(0.0, cpu - base_cpu))
    if r.rank == 0:
        print("#\n# the late rank after a gloo barrier: its own 4 B "
              "all_reduce (the rank that left the barrier last), the same\n"
              "# call back to back (mean of the slowest rank), and CPU per "
              "iteration beyond the barrier's (the busier rank)")
        print(f"#{'':>12} {'late med':>10} {'late p90':>10} "
              f"{'b2b us':>10} {'late/b2b':>9} {'cpu us':>8}")
        for v, (med, q, b2b, cpu) in got.items():
            print(f"  {v:<11} {med * 1e6:>10.1f} {q * 1e6:>10.1f} "
                  f"{b2b * 1e6:>10.2f} {med / b2b:>9.2f} {cpu * 1e6:>8.1f}")
        sys.stdout.flush()
    return got


def _after_barrier(r, fn, iters):
    """(the late rank's time of fn() per iteration, the busier rank's CPU
    seconds per iteration), each iteration started by a gloo barrier."""
    torch = r.torch
    left, took = [], []
    cpu0 = time.process_time()
    for _ in range(iters):
        r.dist.barrier(r.gloo)
        t0 = time.perf_counter()
        fn()
        left.append(t0)
        took.append(time.perf_counter() - t0)
    cpu = (time.process_time() - cpu0) / iters
    mine = torch.tensor(left + took + [cpu], dtype=torch.float64)
    every = torch.empty(r.size * mine.numel(), dtype=torch.float64)
    r.comm.all_gather_single(every, mine)
    every = every.view(r.size, -1)
    last = every[:, :iters].argmax(dim=0)
    late = every[:, iters:2 * iters].gather(0, last.view(1, -1))
    return late.view(-1).tolist(), every[:, -1].max().item()


def _back_to_back(r, fn, iters):
    """Mean time per call of fn() over `iters` calls in a row (the slower
    rank)."""
    for _ in range(10):
        fn()
    r.comm.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    mine = r.torch.tensor([(time.perf_counter() - t0) / iters],
                          dtype=r.torch.float64)
    every = r.torch.empty(r.size, dtype=r.torch.float64)
    r.comm.all_gather_single(every, mine)
    return every.max().item()


def _barrier_skew(r):
    """(median, p90) over iterations of the time between the first and the
    last rank leaving a gloo barrier: one host's ranks share the clock
    time.perf_counter reads (CLOCK_MONOTONIC)."""
    torch = r.torch
    iters = max(r.args.iters, 1000)
    left = []
    for _ in range(iters):
        r.dist.barrier(r.gloo)
        left.append(time.perf_counter())
    every = torch.empty(r.size * iters, dtype=torch.float64)
    r.comm.all_gather_single(every, torch.tensor(left, dtype=torch.float64))
    every = every.view(r.size, iters)
    gap = (every.max(dim=0).values - every.min(dim=0).values).tolist()
    return statistics.median(gap), statistics.quantiles(gap, n=10)[-1]


def _tune_table(r):
    """shoal.tune.select's own cost: two candidates (one all_reduce, the
    same data in 4 pieces) at 8 B, 64 KiB and 1 MiB, warmup 5, reps 20, on
    the shoal communicator and on the gloo group. Overhead per candidate =
    (select's wall time - the time rank 0 spent inside the candidates) /
    candidates; target <= 5 ms for sizes up to 1 MiB."""
    torch, tune = r.torch, r.shoal.tune
    rows = []
    for label, group in (("shoal", r.comm), ("gloo", r.gloo)):
        for nbytes in (8, 64 * 1024, MiB):
            x = torch.ones(nbytes // 4)
            inside = [0.0]

            def timed(fn):
                def call():
                    t0 = time.perf_counter()
                    fn()
                    inside[0] += time.perf_counter() - t0
                return call

            if group is r.comm:
                def one(t=x):
                    r.comm.all_reduce(t, r.shoal.ReduceOp.SUM)
            else:
                def one(t=x):
                    r.dist.all_reduce(t, group=group)

            def pieces(t=x):
                for p in t.chunk(4):
                    one(p)
            tune.clear_cache()
            r.comm.barrier()
            t0 = time.perf_counter()
            tune.select({"one": timed(one), "pieces": timed(pieces)},
                        group=group, key=(label, nbytes))
            wall = time.perf_counter() - t0
            rows.append((label, nbytes, wall, inside[0],
                         (wall - inside[0]) / 2))
    if r.rank == 0:
        print("#\n# shoal.tune.select: 2 candidates, warmup 5, reps 20 "
              "(rank 0's clock)")
        print(f"#{'group':>8} {'size':>9} {'wall ms':>9} {'inside ms':>10} "
              f"{'overhead ms/cand':>17}")
        for label, nbytes, wall, inside, over in rows:
            print(f"  {label:<7} {_size_name(nbytes):>9} {wall * 1e3:>9.2f} "
                  f"{inside * 1e3:>10.2f} {over * 1e3:>17.3f}")
        worst = max(row[4] for row in rows)
        _verdict("tune.select overhead per candidate <= 5 ms (<= 1 MiB)",
                 worst * 1e3, "<=", 5, f"worst {worst * 1e3:.3f} ms")
        sys.stdout.flush()


def _measure_steps(r, step, steps, reps=1):
    saved = r.args.iters, r.args.warmup
    if steps is not None:
        r.args.iters, r.args.warmup = steps, 0
    try:
        return r.measure(step, 1, reps)
    finally:
        r.args.iters, r.args.warmup = saved


def _worker(args):
    warnings.filterwarnings("ignore", category=FutureWarning)
    r = _Rank(args)
    if args.plot and r.rank == 0:
        sys.stdout = _plot.Tee(sys.stdout)  # the tables, kept to draw them
    if r.rank == 0:
        import platform

        print(f"# shoal.bench: {r.size} ranks on {platform.node()} "
              f"({os.cpu_count()} cpus), torch {r.torch.__version__}, shoal "
              f"{r.shoal.__version__}; load average "
              f"{os.getloadavg()[0]:.2f} at start; "
              f"{os.environ.get('SHOAL_BENCH_LOAD', '0')} busy processes "
              "beside the ranks")
        print("# per iteration a barrier, then every rank times the "
              "operation alone; max over ranks; median over iterations")
        print("# gloo, dist:shoal: torch.distributed over gloo / backend "
              "'shoal'; shoal: the shoal API on ordinary tensors;")
        print("# shoal.empty: the shoal API on shoal.empty tensors; memcpy: "
              "every rank copying the same bytes at once (torch copy_)")
        if r.spg is None:
            print(f"# dist:shoal: n/a ({r.spg_why})")
        sys.stdout.flush()
    results, wrong = {}, False
    if args.queue_only:
        _queue_table(r)
        return _finish(r, args, wrong)
    for kind, sizes in (QUICK if args.quick else FULL):
        rows = []
        for nbytes in sizes:
            op = _Op(r, kind, nbytes)
            times, bad, iters = {}, [], 0
            for v in VARIANTS:
                got = op.run(v)
                if got is None:
                    times[v] = None
                    continue
                times[v], iters, ok = got
                if not ok:
                    bad.append(v)
            wrong |= bool(bad)
            results[(kind, nbytes)] = times
            rows.append((op.count * 4, iters, times, op.memcpy(), bad))
        if r.rank == 0:
            _print_table(kind, r.size, rows)
            sys.stdout.flush()
    if args.ddp:
        _ddp_table(r)
    window = _window_table(r) if r.size > 1 else {}
    if args.queue:
        _queue_table(r)
    skew = _skew_table(r)
    late = _late_rank_table(r)
    _tune_table(r)
    if r.rank == 0:
        _targets(results, r.size, r.spg_why)
        d, g = skew.get("dist:shoal"), skew["gloo"]
        _verdict("4 B all_reduce after a gloo barrier, torch.distributed "
                 "shoal <= 0.1x gloo", None if d is None else d[0] / g[0],
                 "<=", 0.1, "n/a" if d is None else
                 f"{d[0] / g[0]:.3f}x ({d[0] * 1e6:.1f} vs "
                 f"{g[0] * 1e6:.1f} us)")
        d = late.get("dist:shoal")
        _verdict("4 B all_reduce after a gloo barrier, torch.distributed "
                 "shoal: the late rank <= 1.5x back to back",
                 None if d is None else d[0] / d[2], "<=", 1.5,
                 "n/a" if d is None else
                 f"{d[0] / d[2]:.2f}x ({d[0] * 1e6:.1f} vs "
                 f"{d[2] * 1e6:.1f} us)")
        f = late["(local)"]
        print(f"#          (a local 4 B add_ on the late rank after the same "
              f"barrier: {f[0] / f[2]:.2f}x its back-to-back time, "
              f"{f[0] * 1e6:.1f} vs {f[2] * 1e6:.1f} us)")
        w = window.get("shoal.zeros")
        _verdict("4 B window put + signal + wait_signal round trip <= 10 us",
                 None if w is None else w * 1e6, "<=", 10,
                 "n/a" if w is None else f"{w * 1e6:.2f} us")
        print(f"# load average {os.getloadavg()[0]:.2f} at the end")
        sys.stdout.flush()
    return _finish(r, args, wrong)


def _cpu_of(pid="self"):
    """The CPU a process last ran on (/proc/PID/stat, field 39), or -1."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[36])
    except (OSError, IndexError, ValueError):
        return -1


def _stragglers(r):
    """Who arrived last at the benchmark's collectives (shoal's arrival
    statistics, rank 0's view), beside the CPUs the ranks and the busy
    processes last ran on."""
    import numpy as np

    cpus = np.zeros(r.size, dtype=np.int64)
    r.comm.all_gather_single(cpus, np.array([_cpu_of()], dtype=np.int64))
    if r.rank != 0:
        return
    try:
        stats = r.comm.stats()
    except r.shoal.ShoalError as e:
        print(f"# stragglers: n/a ({e})")
        return
    busy = [p for p in os.environ.get("SHOAL_BENCH_BUSY_PIDS", "").split(",")
            if p]
    where = ", ".join(f"pid {p} on CPU {_cpu_of(p)}" for p in busy)
    print(f"# stragglers (rank 0's view of the shoal API's collectives; "
          f"busy processes: {where or 'none'}):")
    # The latest on average (a busy CPU holds its rank back by more; with
    # two ranks "last" splits about evenly).
    worst = max(range(r.size), key=lambda k: stats[k]["late_ns_total"])
    for k, s in enumerate(stats):
        n = max(s["collectives"], 1)
        print(f"#   rank {k} (last on CPU {cpus[k]}): arrived last at "
              f"{s['last']} of {s['collectives']} ({100 * s['last'] / n:.0f}%),"
              f" {s['late_ns_total'] / n / 1e3:.1f} us late on average"
              + ("  <- the straggler" if k == worst and s["collectives"]
                 else ""))


def _finish(r, args, wrong):
    """Parts the ranks and draws the plot; the exit status."""
    _stragglers(r)
    r.comm.barrier()
    r.dist.destroy_process_group()
    r.comm.finalize()
    # After the ranks have parted, so that none waits on the drawing.
    if args.plot and r.rank == 0 and _plot.plot_text(sys.stdout.getvalue(),
                                                     args.plot):
        print(f"# plot: {args.plot}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
