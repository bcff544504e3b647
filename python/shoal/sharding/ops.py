"""Operations on ShardedTensors that infer the output's spec and insert
the collectives a mismatch needs (through reshard):

- x @ w (x of 1 or more dimensions, w of 2): the contracted dimension must
  be split alike in both; one replicated there is sliced to match (no
  communication), otherwise w follows x. Then each rank multiplies its
  pieces: sharded contraction gives partial sums over its axes, which stay
  partial until a consumer needs the value (reshard, full(), an op that
  cannot take partials). Output dimensions keep x's and w's axes; an axis
  both would use is gathered from w.
- x + y, x - y (same shapes): y is laid out as x; partial sums add as
  partial sums (a replicated operand becomes partial on rank 0 of those
  axes: no communication).
- x * y: as +, except that both operands partial is reduced first (a
  product of sums is not a sum of products); one partial operand stays
  partial.
- x.sum(dim): a sharded dimension summed locally leaves partial sums over
  its axes.
A partial "avg", "max" or "min" operand is reduced before any of these.
Backward (autograd.py's convention): an operand of x @ w or x * y that is
replicated over axes along which the other operand's pieces differ gets
its gradient all-reduced over those axes, so data parallelism (x split
by batch, w replicated) needs no all_reduce of w's .grad by hand."""

from .. import _C
from . import autograd
from .reshard import reshard
from .spec import P
from .tensor import ShardedTensor


def _dims(x):
    return [x.spec.dim_axes(d) for d in range(len(x.shape))]


def _only_sum_partials(x):
    if x.spec.partial and x.spec.partial_op != "sum":
        from .collectives import all_reduce
        return all_reduce(x)
    return x


def _spec(x, dims, partial):
    return x.spec.with_dims(dims, partial=frozenset(partial),
                            partial_op="sum")


def _axes_of(dims):
    return {a for axes in dims for a in axes}


def _reduce_over(t, axes):
    """t with its partial values over `axes` reduced."""
    axes = t.spec.partial & set(axes)
    if not axes:
        return t
    from .collectives import all_reduce
    return all_reduce(t, tuple(axes))


def _replicated_use(t, other):
    """t's piece for a product with `other`: where t is replicated over
    axes along which other's pieces differ (other shards or holds partial
    values over them), t's gradient contributions differ per rank, so
    backward sums them over those axes (autograd.GradAllReduce): the
    weight of data parallelism, the input of a column-parallel layer."""
    mine = _axes_of(_dims(t)) | t.spec.partial
    theirs = _axes_of(_dims(other)) | other.spec.partial
    axes = tuple(a for a in t.mesh.axis_names if a in theirs - mine)
    if not axes:
        return t.local
    return autograd.GradAllReduce.apply(t.local, t.mesh, axes)


def _match_contraction(x, w):
    """x and w with the contracted dimension split alike: slice x where it
    is replicated there (no communication), else lay w out as x."""
    xd, wd = _dims(x), _dims(w)
    kx, kw = xd[-1], wd[0]
    if kx == kw:
        return x, w
    if not kx and not set(kw) & (_axes_of(xd[:-1]) | x.spec.partial):
        return reshard(x, P(*(xd[:-1] + [kw])), partial=x.spec.partial), w
    w = _reduce_over(w, kx)
    n_axes = tuple(a for a in wd[1] if a not in kx)
    return x, reshard(w, P(kx, n_axes), partial=w.spec.partial)


def matmul(x, w):
    if not isinstance(w, ShardedTensor) or w.mesh is not x.mesh:
        raise _C.InvalidArgumentError(
            "matmul: both operands must be ShardedTensors on one mesh")
    if len(w.shape) != 2 or len(x.shape) < 1 or x.shape[-1] != w.shape[0]:
        raise _C.InvalidArgumentError(
            f"matmul: shapes {x.shape} and {w.shape} do not contract")
    x, w = _only_sum_partials(x), _only_sum_partials(w)
    if x.spec.partial and w.spec.partial:
        w = reshard(w, w.spec.spec)  # a product of two sums: reduce one
    x, w = _match_contraction(x, w)
    # A partial operand must not meet the other's pieces along its axes.
    w = _reduce_over(w, _axes_of(_dims(x)))
    x = _reduce_over(x, _axes_of(_dims(w)))
    xd, wd = _dims(x), _dims(w)
    clash = [a for a in wd[1] if a in _axes_of(xd) | x.spec.partial]
    if clash:
        w = reshard(w, P(wd[0], tuple(a for a in wd[1] if a not in clash)),
                    partial=w.spec.partial)
        wd = _dims(w)
    local = _replicated_use(x, w) @ _replicated_use(w, x)
    partial = set(x.spec.partial) | set(w.spec.partial) | set(xd[-1])
    out = _spec(x, xd[:-1] + [wd[1]], partial)
    return ShardedTensor(local, out, tuple(x.shape[:-1]) + (w.shape[1],))


def _aligned(x, y, what):
    if not isinstance(y, ShardedTensor) or y.mesh is not x.mesh:
        raise _C.InvalidArgumentError(
            f"{what}: both operands must be ShardedTensors on one mesh")
    if y.shape != x.shape:
        raise _C.InvalidArgumentError(
            f"{what}: shapes {x.shape} and {y.shape} differ")
    x, y = _only_sum_partials(x), _only_sum_partials(y)
    return x, reshard(y, x.spec.spec, partial=y.spec.partial)


def _as_partial(t, axes):
    """t with sum-partial values over `axes` too (no communication)."""
    if axes <= t.spec.partial:
        return t
    return reshard(t, t.spec.spec, partial=t.spec.partial | axes,
                   partial_op="sum")


def _linear(x, y, fn, what):
    x, y = _aligned(x, y, what)
    partial = x.spec.partial | y.spec.partial
    x, y = _as_partial(x, partial), _as_partial(y, partial)
    return ShardedTensor(fn(x.local, y.local),
                         _spec(x, _dims(x), partial), x.shape)


def add(x, y):
    return _linear(x, y, lambda a, b: a + b, "add")


def sub(x, y):
    return _linear(x, y, lambda a, b: a - b, "sub")


def mul(x, y):
    x, y = _aligned(x, y, "mul")
    if x.spec.partial and y.spec.partial:
        y = reshard(y, y.spec.spec)
    partial = x.spec.partial | y.spec.partial
    local = _replicated_use(x, y) * _replicated_use(y, x)
    return ShardedTensor(local, _spec(x, _dims(x), partial), x.shape)


def sum_dim(x, dim):
    x = _only_sum_partials(x)
    dim = dim % len(x.shape)
    dims = _dims(x)
    partial = set(x.spec.partial) | set(dims[dim])
    out = dims[:dim] + dims[dim + 1:]
    shape = x.shape[:dim] + x.shape[dim + 1:]
    return ShardedTensor(x.local.sum(dim), _spec(x, out, partial), shape)
