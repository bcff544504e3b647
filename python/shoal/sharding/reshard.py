"""reshard: any spec to any spec on the same mesh, with the fewest and
cheapest collectives the rules allow, in this order:

1. partial axes the target does not keep: reduce_scatter where the target
   shards a dimension with that axis next (the dimension's current axes
   followed by it begin the target's), else all_reduce;
2. an axis that moves from one dimension to another: all_to_all, when it
   is the last axis of the dimension it leaves and the dimension it joins
   then begins as in the target;
3. axes the target drops (or keeps in another order or place): all_gather,
   last axis first, until every dimension's axes begin the target's;
4. axes the target adds: a local slice of this rank's piece;
5. partial axes the target adds: local (sum: rank 0 of the axis keeps the
   value, the others zero; avg, max, min: every rank keeps it).
Uneven dimensions follow DTensor's split (layout.py) throughout. Steps 4
and 5 send nothing forward; backward, 4 gathers the pieces' gradients
(autograd.py's convention: a replicated value's gradient is whole)."""

from .. import _C
from . import autograd
from . import collectives as coll
from .layout import chunk
from .spec import P, ShardingSpec
from .tensor import ShardedTensor


def _target(x, spec, partial, partial_op):
    if isinstance(spec, ShardingSpec):
        if spec.mesh is not x.mesh:
            raise _C.InvalidArgumentError(
                "reshard: the target spec is on another mesh")
        return spec
    spec = spec if isinstance(spec, P) else P(*spec)
    return ShardingSpec(x.mesh, spec, partial,
                        partial_op or x.spec.partial_op)


def _begins(cur, want):
    return tuple(want[:len(cur)]) == tuple(cur)


def _reduce_partials(x, t):
    for a in sorted(x.spec.partial - t.partial):
        d = t.dim_of(a)
        if d is not None and _begins(x.spec.dim_axes(d) + (a,),
                                     t.dim_axes(d)):
            x = coll.reduce_scatter(x, d, a)
        else:
            x = coll.all_reduce(x, (a,))
    return x


def _moves(x, t):
    for a in x.mesh.axis_names:
        src, dst = x.spec.dim_of(a), t.dim_of(a)
        if src is None or dst is None or src == dst:
            continue
        if (x.spec.dim_axes(src)[-1] == a
                and _begins(x.spec.dim_axes(dst) + (a,), t.dim_axes(dst))):
            x = coll.all_to_all(x, dst, src, a)
    return x


def _gathers(x, t):
    for d in range(len(x.shape)):
        while not _begins(x.spec.dim_axes(d), t.dim_axes(d)):
            x = coll.all_gather(x, d, x.spec.dim_axes(d)[-1])
    return x


def _slices(x, t):
    mesh = x.mesh
    local = x.local
    dims = [x.spec.dim_axes(d) for d in range(len(x.shape))]
    for d in range(len(x.shape)):
        for a in t.dim_axes(d)[len(dims[d]):]:
            k, i = mesh.size(a), mesh.coords[mesh.axis(a)]
            lengths = [chunk(local.shape[d], k, j)[1] for j in range(k)]
            local = autograd.Slice.apply(local, d, lengths, i, mesh, a)
            dims[d] = dims[d] + (a,)
    return ShardedTensor(local, x.spec.with_dims(dims), x.shape)


def _add_partials(x, t):
    add = t.partial - x.spec.partial
    if not add:
        return x
    local = x.local
    if t.partial_op == "sum":
        keep = all(x.mesh.coords[x.mesh.axis(a)] == 0 for a in add)
        local = autograd.KeepOnRoot.apply(local, keep)
    spec = x.spec.with_dims(x.spec.spec, partial=x.spec.partial | add,
                            partial_op=t.partial_op)
    return ShardedTensor(local, spec, x.shape)


def reshard(x, spec, partial=frozenset(), partial_op=None):
    """x laid out as `spec` (a P, with `partial` axes, or a ShardingSpec).
    Collective over the mesh."""
    t = _target(x, spec, partial, partial_op)
    t.check_rank(len(x.shape))
    if x.spec.partial & t.partial and x.spec.partial_op != t.partial_op:
        raise _C.InvalidArgumentError(
            f"reshard: partial {x.spec.partial_op} values cannot become "
            f"partial {t.partial_op} ones; all_reduce first")
    x = _reduce_partials(x, t)
    x = _moves(x, t)
    x = _gathers(x, t)
    x = _slices(x, t)
    x = _add_partials(x, t)
    assert x.spec == t, (x.spec, t)
    return x
