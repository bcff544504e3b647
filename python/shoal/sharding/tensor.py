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


def shard(t, mesh, spec, partial=frozenset(), partial_op="sum"):
    """A tensor every rank holds whole, cut to `spec` (P or ShardingSpec)
    by a local slice: no communication. With `partial` axes, the value is
    split as the partial op allows (sum: rank 0 of each such axis keeps it,
    the others hold zeros)."""
    spec = as_spec(mesh, spec, partial, partial_op)
    spec.check_rank(t.dim())
    local = t[local_slices(spec, tuple(t.shape))].clone()
    if spec.partial and spec.partial_op == "sum":
        if any(mesh.coords[mesh.axis(a)] != 0 for a in spec.partial):
            local.zero_()
    return ShardedTensor(local, spec, tuple(t.shape))
