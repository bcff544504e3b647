"""The late rank's call: a 4-byte all_reduce through torch.distributed
right after another library's barrier, against the same call back to back.

A training step often reaches a shoal collective straight out of some other
synchronisation (a gloo barrier, a data loader's queue), so the ranks come
in skewed and the last one to arrive finds its peers already waiting. What
that last rank pays is what the library adds once everyone is there: the
early ranks' waiting (spinning, or parked and woken) must not make it slow.

Method, per variant, on every rank:

- back to back: ITERS calls in a row, each timed; the figure is the
  median over iterations of the slowest rank's time.
- after a barrier: per iteration a gloo barrier, then the call, timed;
  each rank notes when it left the barrier (CLOCK_MONOTONIC, which all
  processes of one host share). The late rank of an iteration is the one
  that left last; the figures are the median and p90 over iterations of
  that rank's call time, and its ratio to the back-to-back median. The
  CPU time the ranks used over the loop (all their threads) divided by the
  loop's wall time says how much CPU the waiting burnt (1.0: one core's
  worth per rank, busy all the time).

Variants: torch.distributed's all_reduce on a group of backend "shoal" and
on gloo's; shoal's own API (Comm.all_reduce) on a communicator of the
same ranks; and torch's t.add_(0), which does not communicate at all: what
any code pays for running first after the barrier's wait (caches, a vCPU
woken from idle) shows there, apart from what waiting peers cost.

--loads 0,1 (the default) makes one run per count of busy processes
beside the ranks. Target (shoal): the late rank's call at most 1.5x the
back-to-back call, idle and with one busy process.

    python tools/perf/bench_late.py [--ranks 2] [--iters 2000] [--loads 0,1]
"""

import argparse
import os
import statistics
import sys
import time

from bench_launch import busy_processes, run_main, run_ranks


def launch(args):
    rc = 0
    for load in [int(x) for x in args.loads.split(",")]:
        env = dict(os.environ, OMP_NUM_THREADS="1", BENCH_LATE_LOAD=str(load))
        with busy_processes(load):
            rc = rc or run_ranks(__file__, args.ranks,
                                 ["--worker", "--iters", str(args.iters)], env)
    return rc


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


class Rank:
    def __init__(self, port):
        import torch
        import torch.distributed as dist

        import shoal  # registers backend "shoal"

        torch.set_num_threads(1)
        self.torch, self.dist = torch, dist
        self.comm = shoal.new_comm("shoal", "cpu", name="bench_late")
        self.rank, self.size = self.comm.get_rank(), self.comm.get_size()
        store = dist.TCPStore("127.0.0.1", port, self.size, self.rank == 0)
        dist.init_process_group("gloo", store=store, rank=self.rank,
                                world_size=self.size)
        self.gloo = dist.group.WORLD
        x = torch.zeros(1, dtype=torch.float32)
        shoal_group, total = dist.new_group(backend="shoal"), shoal.ReduceOp.SUM
        self.variants = {
            "dist shoal": lambda: dist.all_reduce(x, group=shoal_group),
            "dist gloo": lambda: dist.all_reduce(x, group=self.gloo),
            "shoal API": lambda: self.comm.all_reduce(x, total),
            "torch add_": lambda: x.add_(0),
        }

    def gather(self, values):
        """Every rank's list of floats, on every rank (through gloo)."""
        t = self.torch.tensor(values, dtype=self.torch.float64)
        out = [self.torch.empty_like(t) for _ in range(self.size)]
        self.dist.all_gather(out, t, group=self.gloo)
        return [o.tolist() for o in out]

    def back_to_back(self, call, iters):
        times = []
        for _ in range(iters):
            t0 = time.perf_counter_ns()
            call()
            times.append((time.perf_counter_ns() - t0) / 1e3)
        every = self.gather(times)
        return statistics.median(max(r[i] for r in every)
                                 for i in range(iters))

    def after_barrier(self, call, iters):
        barrier = self.dist.barrier
        exits, times = [], []
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _ in range(iters):
            barrier(group=self.gloo)
            t0 = time.monotonic_ns()
            call()
            times.append((time.monotonic_ns() - t0) / 1e3)
            exits.append(float(t0))
        cpu = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
        ex, tm = self.gather(exits), self.gather(times)
        late, early, skew = [], [], []
        for i in range(iters):
            order = sorted(range(self.size), key=lambda r: ex[r][i])
            late.append(tm[order[-1]][i])
            early.append(tm[order[0]][i])
            skew.append((ex[order[-1]][i] - ex[order[0]][i]) / 1e3)
        cpus = self.gather([cpu])
        return late, early, skew, [c[0] for c in cpus]

    def run(self, iters):
        rows = []
        for name, call in self.variants.items():
            self.back_to_back(call, max(100, iters // 10))  # warm-up
            b2b = self.back_to_back(call, iters)
            late, early, skew, cpus = self.after_barrier(call, iters)
            rows.append((name, b2b, late, early, skew, cpus))
        return rows


def worker(args):
    r = Rank(args.port)
    rows = r.run(args.iters)
    if r.rank != 0:
        return 0
    load = os.environ.get("BENCH_LATE_LOAD", "0")
    print(f"# {r.size} ranks, {load} busy process(es) beside them; one "
          f"float32 element, {args.iters} iterations; times in us")
    print(f"{'variant':10} {'back-to-back':>12} {'late med':>9} "
          f"{'late p90':>9} {'late/b2b':>9} {'early med':>9} "
          f"{'skew med':>9} {'cpu/rank':>9}")
    for name, b2b, late, early, skew, cpus in rows:
        lm = statistics.median(late)
        print(f"{name:10} {b2b:12.2f} {lm:9.2f} {pct(late, 0.9):9.2f} "
              f"{lm / b2b:9.2f} {statistics.median(early):9.2f} "
              f"{statistics.median(skew):9.2f} "
              f"{statistics.mean(cpus):9.2f}")
    ratio = {name: statistics.median(late) / b2b
             for name, b2b, late, *_ in rows}
    print(f"# target: the late rank's call through torch.distributed "
          f"\"shoal\" <= 1.5x back to back: "
          f"{'MET' if ratio['dist shoal'] <= 1.5 else 'NOT MET'} "
          f"({ratio['dist shoal']:.2f}x; torch add_ alone "
          f"{ratio['torch add_']:.2f}x)")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--loads", default="0,1",
                   help="busy processes beside the ranks, one run each")
    return run_main(p, worker, launch)


if __name__ == "__main__":
    sys.exit(main())
