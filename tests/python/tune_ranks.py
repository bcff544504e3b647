"""Rank programs of test_tune.py.

``python tune_ranks.py CASE [ARG...]`` runs case_CASE on this rank (ranks,
store and secret from the environment, as harness.spawn sets them) and
prints "ok" when it passed; an assertion ends the rank with a traceback.
"""

import os
import sys
import time

import torch

import shoal
from shoal import tune


def new_comm(name="tune"):
    return shoal.new_comm("shoal", "cpu", name=name,
                          abort_process_on_timeout_or_error=False)


def rank_size():
    return int(os.environ["SHOAL_RANK"]), int(os.environ["SHOAL_SIZE"])


def init_torch(backend, port):
    import torch.distributed as dist
    rank, size = rank_size()
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=size)
    return dist


def spin(seconds):
    """Takes `seconds` without using a core (ranks may outnumber cores,
    and a busy loop would then cost more than `seconds`)."""
    if seconds > 0:
        time.sleep(seconds)


def group_for(kind, port):
    """The group a case runs on: "comm" a shoal.Comm, "gloo" / "shoal" a
    torch default group of that backend."""
    if kind == "comm":
        return new_comm()
    dist = init_torch(kind, port)
    return dist.group.WORLD


def finish(group):
    if isinstance(group, shoal.Comm):
        group.finalize()
    else:
        import torch.distributed as dist
        dist.destroy_process_group()


# ---- lockstep ----------------------------------------------------------------


def case_lockstep(kind, port="0"):
    """Every call counts at its slowest rank: rank 1 alone takes 20 ms, and
    every rank measures at least that, the same number everywhere; select
    then prefers a candidate taking 12 ms on every rank to one taking
    20 ms on rank 1 alone (an average over ranks would prefer the other:
    10 ms on 2 ranks, 6.7 ms on 3). The margins (2 ms below, 8 ms above)
    cover ranks waking late from their sleeps on a busy machine."""
    g = group_for(kind, port)
    rank, size = rank_size()
    t = torch.ones(8)

    def uneven():
        g_all_reduce(g, t)
        spin(0.020 if rank == 1 else 0.0)

    def even():
        g_all_reduce(g, t)
        spin(0.012)

    secs = tune.benchmark(uneven, group=g, warmup=2, reps=9, timeout=30)
    assert secs >= 0.020, secs
    same = tune.benchmark(lambda: None, group=g, warmup=0, reps=3)
    seen = exchange(g, [secs, same])
    assert all(s == seen[0] for s in seen), seen
    win = tune.select({"uneven": uneven, "even": even}, group=g, warmup=2,
                      reps=9)
    assert win == "even", win
    # A list returns the callable itself.
    assert tune.select([uneven, even], group=g, warmup=2, reps=9) is even
    finish(g)
    print("ok")


def g_all_reduce(g, t):
    if isinstance(g, shoal.Comm):
        g.all_reduce(t, shoal.ReduceOp.SUM)
    else:
        import torch.distributed as dist
        dist.all_reduce(t, group=g)


def exchange(g, values):
    """Every rank's values (all_gather), for comparing across ranks."""
    _, size = rank_size()
    mine = torch.tensor(values, dtype=torch.float64)
    out = torch.zeros(size * len(values), dtype=torch.float64)
    if isinstance(g, shoal.Comm):
        g.all_gather_single(out, mine)
    else:
        import torch.distributed as dist
        dist.all_gather_into_tensor(out, mine, group=g)
    return [tuple(out[i * len(values):(i + 1) * len(values)].tolist())
            for i in range(size)]


# ---- the cache and keys ------------------------------------------------------


def case_cache():
    """A winner is measured once per key: the same shapes again reuse it,
    other shapes measure again; an explicit key; keys differing between
    ranks are refused on every rank."""
    c = new_comm()
    rank, _ = rank_size()
    calls = {"a": 0, "b": 0}

    def a(x):
        calls["a"] += 1
        c.all_reduce(x, shoal.ReduceOp.SUM)

    def b(x):
        calls["b"] += 1
        spin(0.002)
        c.all_reduce(x, shoal.ReduceOp.SUM)

    x = torch.ones(16)
    assert tune.select({"a": a, "b": b}, x, group=c, warmup=1, reps=3) == "a"
    assert calls == {"a": 4, "b": 4}, calls
    assert tune.select({"a": a, "b": b}, torch.zeros(16), group=c) == "a"
    assert calls == {"a": 4, "b": 4}, calls
    tune.select({"a": a, "b": b}, torch.ones(32), group=c, warmup=0, reps=2)
    assert calls == {"a": 6, "b": 6}, calls
    tune.select({"a": a, "b": b}, x, group=c, key="k", warmup=0, reps=1)
    assert calls == {"a": 7, "b": 7}, calls
    try:
        tune.select({"a": a, "b": b}, x, group=c, key=f"rank{rank}")
    except shoal.MismatchError as e:
        assert "different keys" in str(e), e
    else:
        raise AssertionError("keys differing between ranks were accepted")
    c.finalize()
    print("ok")


# ---- the order of candidates -------------------------------------------------


def case_order():
    """Candidates of known costs (2 and 6 ms) while the first 20 candidate
    calls of the select take 12 ms more each (a slow start): the faster
    wins whichever is listed first. The cost depends on the count of
    calls, not the clock, so the slow start is the same in every run."""
    c = new_comm()
    calls = [0]

    def costing(seconds):
        def candidate():
            calls[0] += 1
            spin(seconds + (0.012 if calls[0] <= 20 else 0.0))
        return candidate

    for names in (("fast", "slow"), ("slow", "fast")):
        fns = {"fast": costing(0.002), "slow": costing(0.006)}
        calls[0] = 0
        tune.clear_cache()
        win = tune.select({n: fns[n] for n in names}, group=c, warmup=5,
                          reps=20)
        assert win == "fast", (names, win)
        assert calls[0] == 50, calls
    c.finalize()
    print("ok")


# ---- failures ----------------------------------------------------------------


def case_raises_after_collective(kind, port="0"):
    """A candidate raising on rank 1 after its collective completed: it is
    excluded on every rank and select goes on; benchmark raises
    CandidateError naming rank 1 on every rank; the group still works."""
    g = group_for(kind, port)
    rank, _ = rank_size()
    t = torch.ones(4)

    def bad():
        g_all_reduce(g, t)
        if rank == 1:
            raise ValueError("bad input on rank 1")

    def good():
        g_all_reduce(g, t)
        spin(0.001)

    assert tune.select({"bad": bad, "good": good}, group=g, warmup=2,
                       reps=4, timeout=20) == "good"
    try:
        tune.benchmark(bad, group=g, warmup=0, reps=3, timeout=20)
    except tune.CandidateError as e:
        assert e.ranks == (1,) and "rank 1" in str(e), (e, e.ranks)
        if rank == 1:
            assert isinstance(e.__cause__, ValueError), e.__cause__
    else:
        raise AssertionError("benchmark(bad) did not raise")
    try:
        tune.select([bad], group=g, warmup=0, reps=1, timeout=20)
    except tune.CandidateError as e:
        assert "every candidate failed" in str(e), e
    else:
        raise AssertionError("select with no working candidate returned")
    x = torch.ones(4)
    g_all_reduce(g, x)
    assert x[0].item() == rank_size()[1]
    finish(g)
    print("ok")


def case_hangs(mode, where="tuned"):
    """mode "hang": rank 1 hangs inside the candidate (a sleep past the
    deadline); mode "raise_blocked": rank 1 raises before the candidate's
    collective, where the others are blocked. The collective runs on the
    communicator tuned on (where "tuned") or on another one, whose own
    timeout is 30 s (where "other"). Either way every rank raises a shoal
    error within the deadline (plus slack), naming the cause; the
    communicators are aborted."""
    c = new_comm()
    other = new_comm("other") if where == "other" else c
    # The ranks meet on `done` before leaving: a rank that left would end
    # the others' waits (its peer departed) whatever their deadline.
    done = new_comm("done")
    rank, _ = rank_size()
    t = torch.ones(4)
    timeout = 1.5

    def candidate():
        if rank == 1 and mode == "hang":
            time.sleep(3 * timeout)
        if rank == 1 and mode == "raise_blocked":
            raise ValueError("rank 1 gives up before its collective")
        other.all_reduce(t, shoal.ReduceOp.SUM)

    t0 = time.monotonic()
    try:
        tune.benchmark(candidate, group=c, warmup=1, reps=2, timeout=timeout)
    except shoal.ShoalError as e:
        took = time.monotonic() - t0
        print(f"raised after {took:.2f} s: {type(e).__name__}: {e} "
              f"(cause: {e.__cause__})")
        limit = 3 * timeout + 3 if rank == 1 and mode == "hang" else \
            2 * timeout + 3
        assert took < limit, (took, limit)
        if rank != 1 or mode == "raise_blocked":
            # Rank 0's call ends by the deadline at about the time rank
            # 1's exchange does: the exchange completes (CandidateError
            # naming both ranks) or fails on both.
            assert (1 in getattr(e, "ranks", ()) or "rank 1" in str(e)
                    or "aborted" in str(e)), e
    else:
        raise AssertionError("benchmark returned")
    done.barrier(timeout=60)
    for comm in {c, other, done}:
        try:
            comm.finalize()
        except shoal.ShoalError:
            pass
    print("ok")


def case_missing(kind, port="0"):
    """The last rank never calls benchmark: every other rank raises within
    the deadline naming it (CommTimeoutError; with gloo a rank may instead
    see rank 0, whose store it meets through, leave first: PeerError)."""
    g = group_for(kind, port)
    rank, size = rank_size()
    if rank == size - 1:
        time.sleep(6)
        print("ok")
        os._exit(0)  # its group is broken by the others' failure
    t0 = time.monotonic()
    try:
        tune.benchmark(lambda: None, group=g, warmup=1, reps=2, timeout=1.5)
    except (shoal.CommTimeoutError if kind == "comm" else
            shoal.ShoalError) as e:
        took = time.monotonic() - t0
        assert took < 4.5, took
        assert f"rank {size - 1}" in str(e), e
    else:
        raise AssertionError("benchmark returned without the last rank")
    print("ok")
    sys.stdout.flush()
    os._exit(0)


def case_killed():
    """Rank 1 dies inside the candidate: the others raise a shoal error
    naming rank 1 within the deadline."""
    c = new_comm()
    rank, _ = rank_size()
    t = torch.ones(4)

    def candidate():
        if rank == 1:
            os._exit(9)
        c.all_reduce(t, shoal.ReduceOp.SUM)

    t0 = time.monotonic()
    try:
        tune.benchmark(candidate, group=c, warmup=1, reps=2, timeout=5)
    except shoal.ShoalError as e:
        assert time.monotonic() - t0 < 7, time.monotonic() - t0
        assert "rank 1" in str(e), e
    else:
        raise AssertionError("benchmark returned after rank 1 died")
    c.finalize()
    print("ok")


def case_costs(path):
    """load_costs and load_sweep read what shoal-tune wrote beside a
    tuning file: a fit per algorithm, and every algorithm's time at every
    size it measured (8 B to 64 KiB); save_sweep's measurements replace
    those of their collective, algorithm and counts, and keep others."""
    costs = tune.load_costs(path)
    a = costs[("all_reduce", "oneshot", 2, 1)]
    assert len(a) == 3 and all(v >= 0 for v in a) and sum(a) > 0, a
    assert tune.load_costs(path + ".none") == {}
    sweep = tune.load_sweep(path)
    points = sweep[("all_reduce", "oneshot", 2, 1)]
    assert [b for b, _ in points] == [8 << i for i in range(14)], points
    assert all(s > 0 for _, s in points), points
    assert tune.load_sweep(path + ".none") == {}
    tune.save_sweep([("all_reduce", "oneshot", 2, 1, 16, 1.5),
                     ("all_reduce", "oneshot", 2, 1, 8, 0.5),
                     ("ppermute", "p2p", 2, 1, 64, 2.5)], path)
    merged = tune.load_sweep(path)
    assert merged[("all_reduce", "oneshot", 2, 1)] == [(8, 0.5), (16, 1.5)]
    assert merged[("ppermute", "p2p", 2, 1)] == [(64, 2.5)]
    assert merged[("all_reduce", "direct", 2, 1)] == \
        sweep[("all_reduce", "direct", 2, 1)]
    assert len(merged) == len(sweep) + 1
    print("ok")


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]](*sys.argv[2:])
