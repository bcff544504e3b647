"""configure() time of torchft's process groups: shoal's against gloo's.

torchft calls configure() at every quorum change (a fresh store prefix,
the group torn down and made again); the time it takes is time the
survivors of a failure wait before their next step. Each of `--ranks`
processes configures `--rounds` times under fresh prefixes of one torch
TCPStore, with an all_reduce after each (so a group is known to work),
for torchft's gloo wrapper and for shoal.torchft.ProcessGroupShoal.
Prints, per column, the median and p90 over rounds of the slowest rank's
configure() and of the all_reduce that follows.

    build/pyenv/bin/python tools/perf/torchft/configure_time.py --ranks 4
"""

import argparse
import multiprocessing as mp
import statistics
import time
from datetime import timedelta


def _rank(kind, rank, size, port, rounds, out):
    import torch
    import torch.distributed as dist
    if kind == "gloo":
        from torchft.process_group import ProcessGroupGloo as Group
    else:
        from shoal.torchft import ProcessGroupShoal as Group
    store = dist.TCPStore("localhost", port, size, rank == 0,
                          timeout=timedelta(seconds=60))
    pg = Group(timeout=timedelta(seconds=30))
    times = []
    for i in range(rounds):
        store.add(f"go/{kind}/{i}", 1)  # start each round together
        store.wait([f"go/{kind}/{i}"])
        while int(store.get(f"go/{kind}/{i}")) < size:
            time.sleep(0.001)
        t0 = time.perf_counter()
        pg.configure(f"localhost:{port}/{kind}/{i}", "0", rank, size)
        t1 = time.perf_counter()
        t = torch.ones(4)
        pg.allreduce([t], dist.AllreduceOptions()).wait()
        t2 = time.perf_counter()
        assert t.tolist() == [size] * 4, t
        times.append((t1 - t0, t2 - t1))
    pg.shutdown()
    out.put((rank, times))
    store.add(f"done/{kind}", 1)  # rank 0 serves the store: wait for all
    while rank == 0 and int(store.get(f"done/{kind}")) < size:
        time.sleep(0.01)


def _column(kind, size, rounds, port):
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_rank,
                         args=(kind, r, size, port, rounds, out))
             for r in range(size)]
    for p in procs:
        p.start()
    per_rank = dict(out.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
    slowest = [max(per_rank[r][i][0] for r in per_rank) for i in range(rounds)]
    first_op = [max(per_rank[r][i][1] for r in per_rank)
                for i in range(rounds)]
    return slowest, first_op


def _p90(xs):
    return sorted(xs)[min(len(xs) - 1, int(0.9 * len(xs)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--port", type=int, default=29611)
    a = ap.parse_args()
    print(f"configure() on {a.ranks} ranks, {a.rounds} rounds "
          "(slowest rank per round, ms)")
    print(f"{'group':16} {'configure p50':>14} {'p90':>8} "
          f"{'1st all_reduce p50':>19} {'p90':>8}")
    for i, kind in enumerate(("gloo", "shoal")):
        conf, op = _column(kind, a.ranks, a.rounds, a.port + i)
        print(f"torchft-{kind:8} {statistics.median(conf) * 1e3:14.1f} "
              f"{_p90(conf) * 1e3:8.1f} {statistics.median(op) * 1e3:19.1f} "
              f"{_p90(op) * 1e3:8.1f}")


if __name__ == "__main__":
    main()
