"""Rank programs of test_sharding.py.

``python sharding_ranks.py CASE [ARG...]`` runs case_CASE on this rank
(ranks, store and secret from the environment, as harness.spawn sets them)
and prints "ok" when it passed; an assertion ends the rank with a
traceback.
"""

import itertools
import math
import sys

import torch

import shoal
from shoal import sharding as sh
from shoal.sharding import P

DTYPES = (torch.float32, torch.bfloat16, torch.int64)


def new_comm():
    return shoal.new_comm("shoal", "cpu", name="sharding",
                          abort_process_on_timeout_or_error=False)


def mesh_for(c, kind):
    n = c.get_size()
    if kind == "1d":
        return sh.DeviceMesh(c, (n,), ("x",))
    return sh.DeviceMesh(c, (2, n // 2), ("a", "b"))


def dense(shape, dtype, seed):
    """The same integers on every rank (exact in bfloat16 when summed over
    a few ranks)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-40, 40, shape, generator=g).to(dtype)


def specs(kind):
    """(P, partial axes) pairs covering replicated, each dimension by each
    axis, two axes on one dimension in both orders, and partial values."""
    if kind == "1d":
        return [(P(), ()), (P("x"), ()), (P(None, "x"), ()),
                (P(), ("x",))]
    return [(P(), ()), (P("a"), ()), (P("b"), ()), (P(None, "a"), ()),
            (P("a", "b"), ()), (P("b", "a"), ()), (P(("a", "b")), ()),
            (P(None, ("b", "a")), ()), (P("b"), ("a",)), (P(), ("a", "b"))]


def partial_input(mesh, t, spec, partial, seed):
    """A ShardedTensor whose partial values over `partial` sum to t: every
    rank draws the same parts, keeps its own, the first absorbing the
    rest."""
    full = sh.ShardingSpec(mesh, spec, frozenset(partial))
    slices = sh.layout.local_slices(full, tuple(t.shape))
    if not partial:
        return sh.ShardedTensor(t[slices].clone(), full, t.shape)
    group = mesh.group_ranks(tuple(a for a in mesh.axis_names
                                   if a in partial))
    parts = [dense(tuple(t.shape), t.dtype, seed + 1000 + i)
             for i in range(len(group))]
    parts[0] = t - sum(parts[1:], torch.zeros_like(t))
    mine = parts[group.index(mesh.rank)]
    return sh.ShardedTensor(mine[slices].clone(), full, t.shape)


def case_transitions(kind):
    """Every spec to every spec, three dtypes, an even and an uneven
    shape, against the dense tensor."""
    c = new_comm()
    mesh = mesh_for(c, kind)
    count = 0
    for shape in ((8, 12), (7, 5)):
        for dtype in DTYPES:
            seed = shape[0] * 100 + DTYPES.index(dtype)
            t = dense(shape, dtype, seed)
            for (sa, pa), (sb, pb) in itertools.product(specs(kind),
                                                        repeat=2):
                x = partial_input(mesh, t, sa, pa, seed)
                y = sh.reshard(x, sb, partial=frozenset(pb))
                want = sh.ShardingSpec(mesh, sb, frozenset(pb))
                assert y.spec == want, (sa, pa, sb, pb, y.spec)
                if not pb:
                    piece = t[sh.layout.local_slices(want, shape)]
                    assert torch.equal(y.local, piece), \
                        (sa, pa, sb, pb, dtype, shape, y.local, piece)
                got = y.full()
                assert torch.equal(got, t), (sa, pa, sb, pb, dtype, shape)
                count += 1
    print(f"{count} transitions")
    c.finalize()
    print("ok")


def case_counts():
    """Each rule of reshard issues exactly the collective it names."""
    c = new_comm()
    mesh = mesh_for(c, "1d")
    t = dense((8, 12), torch.float32, 1)

    def issued(x, spec, partial=frozenset()):
        sh.reset_stats()
        y = sh.reshard(x, spec, partial=partial)
        return dict(sh.stats()), y

    x = sh.shard(t, mesh, P("x"))
    got, y = issued(x, P(None, "x"))
    assert got == {"all_to_all": 1}, got
    assert torch.equal(y.full(), t)
    got, _ = issued(x, P())
    assert got == {"all_gather": 1}, got
    got, _ = issued(sh.shard(t, mesh, P()), P("x"))
    assert got == {}, got
    p = partial_input(mesh, t, P(), ("x",), 5)
    got, y = issued(p, P("x"))
    assert got == {"reduce_scatter": 1}, got
    assert torch.equal(y.full(), t)
    got, _ = issued(p, P())
    assert got == {"all_reduce": 1}, got
    c.finalize()
    print("ok")


def case_reuse():
    """reshard reuses its last output only when nothing else reaches it:
    a result still held and a view of a dropped result keep their values
    across later reshards."""
    c = new_comm()
    mesh = mesh_for(c, "1d")
    t = dense((8, 12), torch.float32, 41)
    x = sh.shard(t, mesh, P("x"))
    piece = t[sh.layout.local_slices(sh.ShardingSpec(mesh, P(None, "x")),
                                     t.shape)]
    y1 = sh.reshard(x, P(None, "x"))
    x2 = sh.shard(t * 2, mesh, P("x"))
    y2 = sh.reshard(x2, P(None, "x"))
    assert torch.equal(y1.local, piece) and torch.equal(y2.local, 2 * piece)
    view = y2.local[:1]
    del y2
    y3 = sh.reshard(sh.shard(t * 3, mesh, P("x")), P(None, "x"))
    assert torch.equal(view, 2 * piece[:1]), view
    assert torch.equal(y3.local, 3 * piece)
    del y3, view
    y4 = sh.reshard(sh.shard(t * 4, mesh, P("x")), P(None, "x"))
    assert torch.equal(y4.local, 4 * piece) and torch.equal(y1.local, piece)
    c.finalize()
    print("ok")


def case_explicit():
    """The explicit ops on a 2x(n/2) mesh: all_reduce of partials, pmean,
    all_gather, reduce_scatter, all_to_all; psum over a replicated axis
    adds the copies; reducing over a sharding axis is refused."""
    c = new_comm()
    mesh = mesh_for(c, "2d")
    t = dense((6, 9), torch.float32, 3)
    x = partial_input(mesh, t, P("b"), ("a",), 9)
    y = sh.all_reduce(x)
    assert y.spec == sh.ShardingSpec(mesh, P("b")), y.spec
    assert torch.equal(y.full(), t)
    r = sh.shard(t, mesh, P())
    assert torch.equal(sh.all_reduce(r, "a").local, 2 * t)
    assert torch.equal(sh.pmean(r, "b").local, t)
    g = sh.all_gather(sh.shard(t, mesh, P(("a", "b"))), 0, "b")
    assert g.spec == sh.ShardingSpec(mesh, P("a")), g.spec
    assert torch.equal(g.local, t[sh.layout.local_slices(g.spec, t.shape)])
    rs = sh.reduce_scatter(x, 1, "a")
    assert rs.spec == sh.ShardingSpec(mesh, P("b", "a")), rs.spec
    assert torch.equal(rs.full(), t)
    a2a = sh.all_to_all(sh.shard(t, mesh, P("a", "b")), 1, 0, "a")
    assert a2a.spec == sh.ShardingSpec(mesh, P(None, ("b", "a"))), a2a.spec
    assert torch.equal(a2a.full(), t)
    for bad in (lambda: sh.all_reduce(sh.shard(t, mesh, P("a")), "a"),
                lambda: sh.all_gather(sh.shard(t, mesh, P(("a", "b"))), 0,
                                      "a"),
                lambda: sh.reduce_scatter(r, 0, "a")):
        try:
            bad()
        except shoal.InvalidArgumentError:
            pass
        else:
            raise AssertionError("a bad explicit op was accepted")
    c.finalize()
    print("ok")


def case_ppermute():
    """Cyclic shifts along each axis of a 2-D mesh (and of a 1-D one);
    a position nobody sends to gets zeros; duplicates refused."""
    c = new_comm()
    for kind in ("1d", "2d"):
        mesh = mesh_for(c, kind)
        for axis in mesh.axis_names:
            k = mesh.size(axis)
            me = sh.axis_index(mesh, axis)
            mine = torch.full((3,), float(mesh.rank))
            x = sh.ShardedTensor(mine, sh.ShardingSpec(mesh, P()), (3,))
            y = sh.ppermute(x, axis, [(i, (i + 1) % k) for i in range(k)])
            coords = list(mesh.coords)
            coords[mesh.axis(axis)] = (me - 1) % k
            assert torch.equal(y.local, torch.full(
                (3,), float(mesh.rank_of(coords)))), (kind, axis, y.local)
            z = sh.ppermute(x, axis, [(0, k - 1)] if k > 1 else [])
            if k > 1 and me == k - 1:
                coords[mesh.axis(axis)] = 0
                assert torch.equal(z.local, torch.full(
                    (3,), float(mesh.rank_of(coords))))
            else:
                assert torch.equal(z.local, torch.zeros(3)), z.local
            for perm in ([(0, 1), (0, 0)], [(0, 1), (1, 1)]):
                try:
                    sh.ppermute(x, axis, perm)
                except shoal.InvalidArgumentError as e:
                    assert "twice" in str(e) or "outside" in str(e), e
                else:
                    raise AssertionError(f"ppermute accepted {perm}")
    c.finalize()
    print("ok")


def case_bad_input():
    """Clear errors on every rank, nothing sent, the mesh still usable."""
    c = new_comm()
    n = c.get_size()
    mesh = mesh_for(c, "2d")
    t = torch.zeros(4, 4)
    cases = [
        (lambda: sh.shard(t, mesh, P("a", "a")), "used twice"),
        (lambda: sh.shard(t, mesh, P("z")), "unknown mesh axis 'z'"),
        (lambda: sh.shard(t, mesh, P("a", None, "b")), "3 entries"),
        (lambda: sh.DeviceMesh(c, (n, 2), ("p", "q")), "holds"),
        (lambda: sh.DeviceMesh(c, (n,), ("p", "q")), "names"),
        (lambda: sh.shard(t, mesh, P("a"), partial={"a"}), "both shards"),
    ]
    for fn, words in cases:
        try:
            fn()
        except shoal.InvalidArgumentError as e:
            assert words in str(e), (words, str(e))
        else:
            raise AssertionError(f"accepted: {words}")
    x = sh.shard(torch.arange(8.0), mesh, P("a"))
    assert torch.equal(x.full(), torch.arange(8.0))
    c.finalize()
    print("ok")


def case_patterns():
    """The spec's three patterns on a 1-D mesh, counting collectives:
    column-parallel none, row-parallel one all_reduce (when the value is
    needed; reduce_scatter when it is needed sharded), data-parallel none;
    element-wise ops and sum keep partial sums partial."""
    c = new_comm()
    n = c.get_size()
    tp = sh.DeviceMesh(c, (n,), ("tp",))
    dp = sh.DeviceMesh(c, (n,), ("dp",))
    # float64: products of partial sums stay exact in any order.
    X, W = dense((8, 12), torch.float64, 11), dense((12, 4 * n),
                                                      torch.float64, 12)
    want = X @ W

    def counted(fn):
        sh.reset_stats()
        out = fn()
        return out, dict(sh.stats())

    y, got = counted(lambda: sh.shard(X, tp, P()) @ sh.shard(W, tp,
                                                              P(None, "tp")))
    assert got == {} and y.spec == sh.ShardingSpec(tp, P(None, "tp")), got
    assert torch.equal(y.full(), want)
    y, got = counted(lambda: sh.shard(X, tp, P(None, "tp"))
                     @ sh.shard(W, tp, P("tp", None)))
    assert got == {} and y.spec.partial == {"tp"}, (got, y.spec)
    z, got = counted(lambda: y.reshard(P()))
    assert got == {"all_reduce": 1} and torch.equal(z.local, want), got
    z, got = counted(lambda: y.reshard(P("tp")))
    assert got == {"reduce_scatter": 1}, got
    assert torch.equal(z.full(), want)
    y, got = counted(lambda: sh.shard(X, dp, P("dp")) @ sh.shard(W, dp, P()))
    assert got == {} and y.spec == sh.ShardingSpec(dp, P("dp")), got
    assert torch.equal(y.full(), want)
    # A replicated x meeting w sharded on the contraction: x is sliced.
    y, got = counted(lambda: sh.shard(X, tp, P()) @ sh.shard(W, tp, P("tp")))
    assert got == {} and y.spec.partial == {"tp"}, got
    assert torch.equal(y.full(), want)
    # Partial sums stay partial through + and *, and sum adds them.
    part = sh.shard(X, tp, P(None, "tp")) @ sh.shard(W, tp, P("tp", None))
    rep = sh.shard(want, tp, P())
    s, got = counted(lambda: (part + rep) * rep)
    assert got == {} and s.spec.partial == {"tp"}, got
    assert torch.equal(s.full(), (want + want) * want)
    col = sh.shard(X, tp, P(None, "tp")).sum(1)
    assert col.spec.partial == {"tp"} and torch.equal(col.full(), X.sum(1))
    c.finalize()
    print("ok")


def case_mlp_grad():
    """A 2-layer tensor-parallel MLP (column- then row-parallel) trained
    with loss.backward(): every rank's weight gradients are its pieces of
    the dense model's, the replicated input's gradient is the dense one
    (all-reduced over tp in backward), and the loss is the dense loss."""
    c = new_comm()
    n = c.get_size()
    mesh = sh.DeviceMesh(c, (n,), ("tp",))
    X = (dense((8, 16), torch.float64, 21) / 10).requires_grad_()
    W1 = (dense((16, 8 * n), torch.float64, 22) / 40).requires_grad_()
    W2 = (dense((8 * n, 16), torch.float64, 23) / 40).requires_grad_()
    ((torch.relu(X @ W1) @ W2) ** 2).sum().backward()
    dense_x_grad = X.grad.clone()
    X.grad = None
    x = sh.shard(X, mesh, P())
    w1 = sh.shard(W1.detach(), mesh, P(None, "tp"))
    w2 = sh.shard(W2.detach(), mesh, P("tp", None))
    w1.local.requires_grad_()
    w2.local.requires_grad_()
    for _ in range(2):  # twice: gradients accumulate alike
        y = (x @ w1).map(torch.relu) @ w2
        loss = (y.full() ** 2).sum()
        loss.backward()
    s1 = sh.layout.local_slices(w1.spec, W1.shape)
    s2 = sh.layout.local_slices(w2.spec, W2.shape)
    torch.testing.assert_close(w1.local.grad, 2 * W1.grad[s1])
    torch.testing.assert_close(w2.local.grad, 2 * W2.grad[s2])
    torch.testing.assert_close(X.grad, 2 * dense_x_grad)
    # Through reshard (all_to_all, then all_gather): a replicated value's
    # gradient is whole and the same on every rank (autograd.py's
    # convention), so a loss computed alike on every rank counts once and
    # all_gather's backward keeps this rank's piece of it.
    t = dense((6, 8), torch.float64, 24)
    a = sh.shard(t, mesh, P("tp"))
    a.local.requires_grad_()
    b = a.reshard(P(None, "tp")).reshard(P())
    (b.local * 3).sum().backward()
    assert torch.equal(a.local.grad, torch.full_like(a.local, 3.0))
    # Replicated -> sharded (a local slice) -> replicated: the whole
    # tensor's gradient comes back whole on every rank.
    T = t.clone().requires_grad_()
    (sh.shard(T, mesh, P(None, "tp")).full() * t).sum().backward()
    assert torch.equal(T.grad, t), T.grad
    c.finalize()
    print("ok")


def case_data_parallel():
    """The spec's data-parallel pattern: x split by batch over "dp", w
    replicated (ShardedTensor.shard as the spec writes it). Forward sends
    nothing; backward all-reduces w's gradient over dp by itself, so
    W.grad is the dense model's gradient, whether each rank takes the
    loss of its own rows (summed over ranks) or of the gathered output
    (counted once)."""
    c = new_comm()
    n = c.get_size()
    mesh = sh.DeviceMesh(c, (n,), ("dp",))
    X = dense((4 * n, 6), torch.float64, 51) / 10
    T = dense((4 * n, 3), torch.float64, 52) / 10
    W = (dense((6, 3), torch.float64, 53) / 10).requires_grad_()
    ((X @ W - T) ** 2).sum().backward()
    want = W.grad.clone()
    rows = sh.layout.local_slices(sh.ShardingSpec(mesh, P("dp")), T.shape)
    for loss_of in (lambda y: ((y.local - T[rows]) ** 2).sum(),
                    lambda y: ((y.full() - T) ** 2).sum()):
        W.grad = None
        x = sh.ShardedTensor.shard(X, mesh, P("dp"))
        w = sh.ShardedTensor.shard(W, mesh, P())
        sh.reset_stats()
        y = x @ w
        assert dict(sh.stats()) == {} and y.spec.dim_axes(0) == ("dp",)
        loss = loss_of(y)
        sh.reset_stats()
        loss.backward()
        got = dict(sh.stats())
        assert got.get("all_reduce") == 1, got
        torch.testing.assert_close(W.grad, want)
    c.finalize()
    print("ok")


def case_shard_names():
    """ShardedTensor.shard (class and instance) and gather_all_axes, as
    the spec names them: replicated -> sharded sends nothing; a
    ShardedTensor reshards; gather_all_axes gathers every sharding axis
    and keeps partial axes partial."""
    c = new_comm()
    mesh = mesh_for(c, "1d")
    t = dense((6, 4), torch.float32, 61)
    sh.reset_stats()
    x = sh.ShardedTensor.shard(t, mesh, P("x"))
    assert dict(sh.stats()) == {}
    y = sh.shard(t, mesh, P("x"))
    assert x.spec == y.spec and torch.equal(x.local, y.local)
    assert x.local.untyped_storage().data_ptr() != \
        t.untyped_storage().data_ptr()
    z = x.shard(mesh, P(None, "x"))
    assert dict(sh.stats()) == {"all_to_all": 1}, sh.stats()
    assert z.spec == sh.ShardingSpec(mesh, P(None, "x"))
    assert torch.equal(z.full(), t)
    sh.reset_stats()
    g = sh.gather_all_axes(z)
    assert dict(sh.stats()) == {"all_gather": 1}, sh.stats()
    assert g.spec == sh.ShardingSpec(mesh, P()) and torch.equal(g.local, t)
    assert torch.equal(x.gather_all_axes().local, t)
    p = partial_input(mesh, t, P(), ("x",), 62)
    assert sh.gather_all_axes(p).spec.partial == {"x"}
    other = sh.DeviceMesh(c, (c.get_size(),), ("y",))
    try:
        x.shard(other, P())
    except shoal.InvalidArgumentError as e:
        assert "lies on" in str(e), e
    else:
        raise AssertionError("shard onto another mesh was accepted")
    c.finalize()
    print("ok")


def case_op_costs(path):
    """Every communication operation reports its communication_cost: the
    collectives it would issue (none issued), each priced as
    estimate_cost prices it, the same kinds running it issues."""
    c = new_comm()
    n = c.get_size()
    mesh = mesh_for(c, "1d")
    t = dense((8 * n, 6), torch.float32, 71)
    es = t.element_size()
    x = sh.shard(t, mesh, P("x"))
    part = partial_input(mesh, t, P(), ("x",), 72)
    cases = [
        (sh.all_reduce, (part,), [("all_reduce", t.numel() * es)]),
        (sh.pmean, (sh.shard(t, mesh, P()), "x"),
         [("all_reduce", t.numel() * es)]),
        (sh.all_gather, (x, 0, "x"), [("all_gather", t.numel() * es)]),
        (sh.gather_all_axes, (x,), [("all_gather", t.numel() * es)]),
        (sh.reduce_scatter, (part, 0, "x"),
         [("reduce_scatter", t.numel() * es)]),
        (sh.all_to_all, (x, 1, 0, "x"),
         [("all_to_all", x.local.numel() * es)]),
        (sh.ppermute, (x, "x", [(i, (i + 1) % n) for i in range(n)]),
         [("ppermute", x.local.numel() * es)]),
        (sh.reshard, (x, P(None, "x")),
         [("all_to_all", x.local.numel() * es)]),
        (sh.reshard, (part, P("x")), [("reduce_scatter", t.numel() * es)]),
        (sh.shard, (t, mesh, P("x")), []),
    ]
    for op, args, want in cases:
        sh.reset_stats()
        est = op.communication_cost(*args, path=path)
        assert dict(sh.stats()) == {}, (op, sh.stats())
        got = [(kind, nbytes) for kind, nbytes, _, _ in est.parts]
        assert got == want, (op, got, want)
        priced = sum(sh.estimate_cost(kind, b, mesh, "x", path=path)
                     for kind, b in want)
        assert abs(est - priced) <= 1e-12 + 1e-9 * priced, (op, est, priced)
        assert (est > 0) == bool(want), (op, est)
        op(*args)
        assert sorted(sh.stats().elements()) == sorted(k for k, _ in want), \
            (op, sh.stats())
    assert sh.AllGatherOp.estimate_cost(1 << 20, mesh, "x", path=path) == \
        sh.estimate_cost("all_gather", 1 << 20, mesh, "x", path=path)
    assert sh.axis_index.communication_cost(mesh, "x") == 0
    try:
        sh.ReshardOp.estimate_cost(1 << 20, mesh, "x")
    except shoal.InvalidArgumentError as e:
        assert "communication_cost" in str(e), e
    else:
        raise AssertionError("ReshardOp.estimate_cost priced one collective")
    c.finalize()
    print("ok")


def _table_row(mesh, op, nbytes, est, got):
    if mesh.rank == 0:
        print(f"{op:<15} {nbytes:>9} est {est * 1e6:9.1f} us  measured "
              f"{got * 1e6:9.1f} us  {est / got:5.2f}  {est.source}")


def case_builtin_cost(path):
    """With nothing measured (an empty tuning path), estimate_cost works:
    built-in constants, marked calibrated=False, positive and growing
    with the size for every collective; where bandwidth dominates (1 and
    8 MiB) within 10x of a measurement of the collective (the table is on
    rank 0; a memcpy and a cache-line round trip are not the collectives,
    and calls through Python cost more than either at small sizes:
    tools/perf/sharding_cost_accuracy.py measures how far)."""
    from shoal.sharding import calibration as cal
    c = new_comm()
    mesh = sh.DeviceMesh(c, (c.get_size(),), ("x",))
    comm = mesh.comm_for(("x",))
    for op in sh.cost.OPS:
        last = 0.0
        for nbytes in (64 << 10, 1 << 20, 8 << 20):
            est = sh.estimate_cost(op, nbytes, mesh, "x", path=path)
            assert isinstance(est, sh.CostEstimate), est
            assert not est.calibrated and est.source == "built-in", est
            assert est > last, (op, nbytes, est, last)
            last = est
            if nbytes >= 1 << 20 and op != "ppermute":
                got = cal.measure(comm, op, nbytes, reps=5)
                _table_row(mesh, op, nbytes, est, got)
                assert 1 / 10 < est / got < 10, (op, nbytes, est, got)
    c.finalize()
    print("ok")


def case_cost(path):
    """The cost model fitted per size range to shoal-tune's sweep (run by
    the test beforehand: all_gather and all_reduce, 64 KiB to 16 MiB):
    measured constants, in ranges that cover every size. How many ranges
    the fit finds is this machine's (its caches, and the noise of 2 ms
    per size: one range in about a third of the runs here), so the split
    itself is checked on a synthetic sweep (test_sharding.py's
    test_fit_gives_each_cache_level_its_beta). Then calibrate() every
    collective: estimates calibrated, from its measurements, growing with
    the size, against fresh ones from 64 KiB to 4 MiB (the table on rank
    0) within 10x. The 25% target is a benchmark figure
    (tools/perf/sharding_cost_accuracy.py): on this 2-core machine shared
    with other work, one call measures 1x-3x apart between runs, so a
    test can only catch a model that is wrong by an order of magnitude.
    choose() names a strategy with its times."""
    from shoal.sharding import calibration as cal
    c = new_comm()
    mesh = sh.DeviceMesh(c, (c.get_size(),), ("x",))
    comm = mesh.comm_for(("x",))
    sizes = [64 << 10, 256 << 10, 1 << 20, 4 << 20]
    for op in ("all_gather", "all_reduce"):
        algo = sh.cost.algorithm(comm, op, 1 << 20)
        ranges, source = sh.cost.model(comm, op, algo, path)
        assert source == "measured" and ranges, (op, source, ranges)
        assert ranges[0].lo == 0 and ranges[-1].hi == math.inf, ranges
        assert all(a.hi == b.lo for a, b in zip(ranges, ranges[1:])), ranges
        assert all(min(r.alpha, r.beta, r.gamma) >= 0 for r in ranges), ranges
    sh.calibrate(mesh, path=path, sizes=sizes, reps=5)
    worst = 1.0
    for op in sh.cost.OPS:
        last = 0.0
        for nbytes in sizes:
            est = sh.estimate_cost(op, nbytes, mesh, "x", path=path)
            assert est.calibrated and est.source == "measured", est
            assert est >= last, (op, nbytes, est, last)
            last = est
            got = cal.measure(comm, op, nbytes, reps=5)
            _table_row(mesh, op, nbytes, est, got)
            worst = max(worst, est / got, got / est)
    assert worst < 10, worst
    best, times = sh.choose(64, 1024, 1024, mesh, "x", path=path)
    assert best in times and set(times) == {"data", "column", "row"}, times
    c.finalize()
    print("ok")


def case_dtensor(port):
    """ShardedTensor -> DTensor -> ShardedTensor on a 2-D mesh over
    torch.distributed of backend "shoal": the same pieces, the full tensor
    equal through DTensor's own full_tensor(); Partial both ways; a spec
    DTensor cannot express refused."""
    import torch.distributed as dist
    rank, n = c_rank_size()
    dist.init_process_group("shoal", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=n)
    mesh = sh.DeviceMesh(dist.group.WORLD, (2, n // 2), ("a", "b"))
    tmesh = sh.torch_mesh(mesh)
    t = dense((7, 6), torch.float32, 31)
    for spec, partial in ((P("a", "b"), ()), (P(("a", "b")), ()),
                          (P(None, "a"), ()), (P("b"), ("a",))):
        x = partial_input(mesh, t, spec, partial, 32)
        dt = x.to_dtensor(tmesh)
        assert torch.equal(dt.to_local(), x.local)
        assert torch.equal(dt.full_tensor(), t), (spec, partial)
        y = sh.from_dtensor(dt, mesh)
        assert y.spec == x.spec and torch.equal(y.local, x.local)
        assert torch.equal(y.full(), t)
    try:
        sh.shard(t, mesh, P(("b", "a"))).to_dtensor(tmesh)
    except shoal.InvalidArgumentError as e:
        assert "mesh order" in str(e), e
    else:
        raise AssertionError("a spec DTensor splits otherwise was accepted")
    dist.destroy_process_group()
    print("ok")


def c_rank_size():
    import os
    return int(os.environ["SHOAL_RANK"]), int(os.environ["SHOAL_SIZE"])


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]](*sys.argv[2:])
