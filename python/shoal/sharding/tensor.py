"""ShardedTensor: this rank's piece of a global tensor, with its spec."""

from .. import _C
from .layout import local_shape, local_slices
from .spec import P, ShardingSpec


def as_spec(mesh, spec, partial=frozenset(), partial_op="sum"):
    if isinstance(spec, ShardingSpec):
        return spec
    return ShardingSpec(mesh, spec if isinstance(spec, P) else P(*spec),
                        partial, partial_op)


class ShardedTensor:
    """`local` is this rank's piece of a tensor of `global_shape` laid out
    by `spec` (layout.py says which piece)."""

    def __init__(self, local, spec, global_shape):
        self.local = local
        self.spec = spec
        self.shape = tuple(int(s) for s in global_shape)
        spec.check_rank(len(self.shape))
        want = local_shape(spec, self.shape)
        if tuple(local.shape) != want:
            raise _C.InvalidArgumentError(
                f"ShardedTensor: this rank's piece of {self.shape} under "
                f"{spec!r} has shape {want}, not {tuple(local.shape)}")

    @property
    def mesh(self):
        return self.spec.mesh

    @property
    def dtype(self):
        return self.local.dtype

    def __repr__(self):
        return (f"ShardedTensor(shape={self.shape}, local="
                f"{tuple(self.local.shape)}, {self.spec!r})")

    def full(self):
        """The whole tensor on every rank (collective)."""
        from .reshard import reshard
        return reshard(self, P()).local

    def to_dtensor(self, device_mesh=None):
        """This tensor as a torch DTensor (dtensor.py)."""
        from .dtensor import to_dtensor
        return to_dtensor(self, device_mesh)

    @staticmethod
    def from_dtensor(dt, mesh):
        from .dtensor import from_dtensor
        return from_dtensor(dt, mesh)

    def reshard(self, spec, partial=frozenset(), partial_op=None):
        from .reshard import reshard
        return reshard(self, spec, partial, partial_op)

    def shard(self, mesh, spec, partial=frozenset(), partial_op="sum"):
        """This tensor laid out as `spec` on `mesh` (its own): shard()
        below. ShardedTensor.shard(t, mesh, spec) takes a torch tensor
        too, as the spec's x.shard(mesh, P(...))."""
        return shard(self, mesh, spec, partial, partial_op)

    def gather_all_axes(self):
        """This tensor replicated (collectives.gather_all_axes)."""
        from .collectives import gather_all_axes
        return gather_all_axes(self)

    def __matmul__(self, other):
        from .ops import matmul
        return matmul(self, other)

    def __add__(self, other):
        from .ops import add
        return add(self, other)

    def __sub__(self, other):
        from .ops import sub
        return sub(self, other)

    def __mul__(self, other):
        from .ops import mul
        return mul(self, other)

    def map(self, fn):
        """fn applied to this rank's piece, for element-wise functions
        (relu, scaling): the spec stays; partial values are reduced first
        (fn of a sum is not the sum of fn)."""
        x = self
        if x.spec.partial:
            from .collectives import all_reduce
            x = all_reduce(x)
        return ShardedTensor(fn(x.local), x.spec, x.shape)

    def sum(self, dim):
        """Sum over `dim`: partial sums over its axes if it is sharded."""
        from .ops import sum_dim
        return sum_dim(self, dim)


def shard(t, mesh, spec, partial=frozenset(), partial_op="sum"):
    """`t` laid out as `spec` (P or ShardingSpec) on `mesh`: the spec's
    entry point. A torch tensor every rank holds whole is cut by a local
    slice (no communication forward; a gradient reaching it is gathered
    whole in backward); with `partial` axes, the value is split as the
    partial op allows (sum: rank 0 of each such axis keeps it, the others
    hold zeros). A ShardedTensor (of `mesh`) is resharded: a local slice
    where it is replicated over the axes it gains, collectives otherwise.
    The piece never shares memory with `t`."""
    from .reshard import reshard
    if isinstance(t, ShardedTensor):
        if t.mesh is not mesh:
            raise _C.InvalidArgumentError(
                f"shard: the tensor lies on {t.mesh!r}, not {mesh!r}; "
                "a ShardedTensor moves between specs of its own mesh")
        return reshard(t, spec, partial, partial_op)
    spec = as_spec(mesh, spec, partial, partial_op)
    spec.check_rank(t.dim())
    whole = ShardedTensor(t, ShardingSpec(mesh, P()), tuple(t.shape))
    out = reshard(whole, spec)
    if out.local.untyped_storage().data_ptr() == \
            t.untyped_storage().data_ptr():
        out = ShardedTensor(out.local.clone(), out.spec, out.shape)
    return out
