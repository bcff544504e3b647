"""The explicit collectives on ShardedTensors: each runs on the
sub-communicator of the axes it names and returns a ShardedTensor with the
spec the operation implies. `stats()` counts what was issued.
operations.py wraps each as an operation object (communication_cost)."""

import collections

from .. import _C
from .._reduce_op import ReduceOp
from . import autograd, moves
from .layout import chunk, dim_piece, is_even, local_slices
from .tensor import ShardedTensor


def stats():
    """Collectives issued so far by kind ("all_reduce", "all_gather",
    "reduce_scatter", "all_to_all", "ppermute"), in forward and backward
    passes alike."""
    return collections.Counter(moves.issued)


def reset_stats():
    moves.issued.clear()


def reduce_op_of(name):
    return {"sum": ReduceOp.SUM, "avg": ReduceOp.AVG, "max": ReduceOp.MAX,
            "min": ReduceOp.MIN}[name]


def _axes(mesh, axes):
    """Axes as a tuple in the mesh's order."""
    axes = (axes,) if isinstance(axes, str) else tuple(axes)
    for a in axes:
        mesh.axis(a)
    return tuple(a for a in mesh.axis_names if a in axes)


def _no_sharding_axis(x, what, axes):
    for a in axes:
        d = x.spec.dim_of(a)
        if d is not None:
            raise _C.InvalidArgumentError(
                f"{what}: axis {a!r} shards dimension {d}; reducing over it "
                "would combine different pieces (all_gather or reshard "
                "first)")


def all_reduce(x, axes=None, op=None):
    """Reduces over `axes` (default: every axis x holds partial values
    over). Partial axes become replicated; over an axis x is replicated on,
    the copies are combined (JAX's psum). op: the partial op by default."""
    mesh = x.mesh
    axes = _axes(mesh, sorted(x.spec.partial) if axes is None else axes)
    if not axes:
        return x
    _no_sharding_axis(x, "all_reduce", axes)
    op = op or (x.spec.partial_op if x.spec.partial & set(axes) else "sum")
    local = autograd.AllReduce.apply(x.local, mesh.comm_for(axes),
                                     reduce_op_of(op), op)
    spec = x.spec.with_dims(x.spec.spec, partial=x.spec.partial - set(axes))
    return ShardedTensor(local, spec, x.shape)


def pmean(x, axis):
    """The mean over `axis` (all_reduce with op "avg")."""
    return all_reduce(x, (axis,), "avg")


def _minor_axis(x, dim, axis, what):
    axes = x.spec.dim_axes(dim)
    if not axes or axes[-1] != axis:
        raise _C.InvalidArgumentError(
            f"{what}: axis {axis!r} is not the last axis sharding dimension "
            f"{dim} (its axes: {axes}); gather the later ones first or use "
            "reshard")
    return axes


def _parent_lengths(x, dim, axes, k):
    """Lengths along `dim` of the k pieces the last of `axes` splits this
    rank's block of the others into."""
    spec = x.spec.with_dims([a if d != dim else axes[:-1]
                             for d, a in enumerate(_dims(x))])
    _, parent = dim_piece(spec, x.shape, dim, x.mesh.coords)
    return [chunk(parent, k, j)[1] for j in range(k)]


def _dims(x):
    return [x.spec.dim_axes(d) for d in range(len(x.shape))]


def all_gather(x, dim, axis):
    """Gathers dimension `dim` over `axis`, which must be the last axis
    sharding it; uneven pieces are padded for the exchange."""
    axes = _minor_axis(x, dim, axis, "all_gather")
    lengths = _parent_lengths(x, dim, axes, x.mesh.size(axis))
    local = autograd.AllGather.apply(x.local, dim, lengths,
                                     x.mesh.comm_for((axis,)))
    dims = _dims(x)
    dims[dim] = axes[:-1]
    return ShardedTensor(local, x.spec.with_dims(dims), x.shape)


def reduce_scatter(x, dim, axis):
    """Reduces the partial values over `axis` and leaves each rank its
    piece of dimension `dim` (`axis` becomes its last sharding axis)."""
    if axis not in x.spec.partial:
        raise _C.InvalidArgumentError(
            f"reduce_scatter: the tensor holds no partial values over axis "
            f"{axis!r} (partial: {sorted(x.spec.partial)})")
    k = x.mesh.size(axis)
    lengths = [chunk(x.local.shape[dim], k, j)[1] for j in range(k)]
    op = x.spec.partial_op
    local = autograd.ReduceScatter.apply(x.local, dim, lengths,
                                         x.mesh.comm_for((axis,)),
                                         reduce_op_of(op), op)
    dims = _dims(x)
    dims[dim] = dims[dim] + (axis,)
    spec = x.spec.with_dims(dims, partial=x.spec.partial - {axis})
    return ShardedTensor(local, spec, x.shape)


def all_to_all(x, split_dim, concat_dim, axis):
    """Moves `axis` from sharding `concat_dim` (its last axis) to sharding
    `split_dim` (appended as its last axis): each rank sends piece j of its
    block, split along split_dim, to rank j and concatenates what it
    receives along concat_dim."""
    if split_dim == concat_dim:
        raise _C.InvalidArgumentError(
            "all_to_all: split_dim and concat_dim are the same dimension")
    axes = _minor_axis(x, concat_dim, axis, "all_to_all")
    k = x.mesh.size(axis)
    incoming = _parent_lengths(x, concat_dim, axes, k)
    length = x.local.shape[split_dim]
    split_lengths = [chunk(length, k, j)[1] for j in range(k)]
    dims = _dims(x)
    dims[concat_dim] = axes[:-1]
    dims[split_dim] = dims[split_dim] + (axis,)
    spec = x.spec.with_dims(dims)
    plan = None
    if min(split_lengths) > 0 and min(incoming) > 0 and x.local.numel():
        have = local_slices(x.spec, x.shape)
        key = ("a2a", axis, x.spec.norm(), spec.norm(), x.shape,
               str(x.local.dtype))
        plan = (x.shape, have, local_slices(spec, x.shape),
                x.mesh.plans, key)
    local = autograd.AllToAll.apply(x.local, split_dim, concat_dim,
                                    split_lengths, incoming,
                                    x.mesh.comm_for((axis,)), plan)
    return ShardedTensor(local, spec, x.shape)


def _check_perm(perm, k):
    pairs = [(int(s), int(d)) for s, d in perm]
    for s, d in pairs:
        if not (0 <= s < k and 0 <= d < k):
            raise _C.InvalidArgumentError(
                f"ppermute: pair ({s}, {d}) is outside 0..{k - 1}")
    srcs, dsts = [s for s, _ in pairs], [d for _, d in pairs]
    for what, seq in (("source", srcs), ("destination", dsts)):
        dup = sorted({v for v in seq if seq.count(v) > 1})
        if dup:
            raise _C.InvalidArgumentError(
                f"ppermute: {what} {dup[0]} appears twice in {pairs}")
    return pairs


def ppermute(x, axis, perm):
    """JAX's ppermute: along `axis` (within every group of the other axes)
    the piece of index s goes to index d for each (s, d) in `perm`; an
    index that receives nothing gets zeros."""
    mesh = x.mesh
    k = mesh.size(axis)
    pairs = _check_perm(perm, k)
    for d in range(len(x.shape)):
        if axis in x.spec.dim_axes(d) and not is_even(x.spec, x.shape, d):
            raise _C.InvalidArgumentError(
                f"ppermute: axis {axis!r} splits dimension {d} "
                f"({x.shape[d]}) unevenly; the pieces it would swap differ "
                "in shape")
    me = mesh.coords[mesh.axis(axis)]
    out = autograd.PPermute.apply(x.local, pairs, me,
                                  mesh.comm_for((axis,)))
    return ShardedTensor(out, x.spec, x.shape)


def axis_index(mesh, axis):
    """This rank's index along `axis`."""
    return mesh.coords[mesh.axis(axis)]


def gather_all_axes(x):
    """x replicated: every dimension's axes gathered (all_gather, last
    axis first); axes over which x holds partial values stay partial
    (all_reduce or full() reduces them)."""
    from .reshard import reshard
    return reshard(x, (), partial=x.spec.partial,
                   partial_op=x.spec.partial_op)
