"""ShardedTensor <-> torch DTensor: the same piece on every rank, the spec
as placements on the equivalent torch DeviceMesh (one placement per mesh
axis: Shard(d) where the axis shards dimension d, Partial where it holds
partial values, Replicate otherwise). A dimension sharded by several axes
maps to Shard(d) on each, which DTensor applies in mesh-axis order: the
axes must be listed in that order in the spec (P(("a", "b")) on a mesh
("a", "b"), not ("b", "a"))."""

from .. import _C
from .spec import P, ShardingSpec
from .tensor import ShardedTensor

_TORCH_OPS = {"sum": "sum", "avg": "avg", "max": "max", "min": "min"}


def torch_mesh(mesh):
    """A torch DeviceMesh over the same ranks, shape and axis names
    (needs torch.distributed initialized over the same ranks)."""
    from torch.distributed.device_mesh import init_device_mesh
    return init_device_mesh("cpu", mesh.shape, mesh_dim_names=mesh.axis_names)


def _placements(spec):
    from torch.distributed.tensor import Partial, Replicate, Shard
    mesh = spec.mesh
    out = []
    for a in mesh.axis_names:
        d = spec.dim_of(a)
        if d is not None:
            axes = spec.dim_axes(d)
            if list(axes) != [x for x in mesh.axis_names if x in axes]:
                raise _C.InvalidArgumentError(
                    f"to_dtensor: dimension {d} is sharded by {axes}, not in "
                    f"the mesh's axis order {mesh.axis_names}; DTensor "
                    "splits in mesh order (reshard first)")
            out.append(Shard(d))
        elif a in spec.partial:
            out.append(Partial(_TORCH_OPS[spec.partial_op]))
        else:
            out.append(Replicate())
    return out


def to_dtensor(x, device_mesh=None):
    """x as a DTensor on `device_mesh` (default: torch_mesh(x.mesh))."""
    from torch.distributed.tensor import DTensor
    device_mesh = device_mesh or torch_mesh(x.mesh)
    if tuple(device_mesh.shape) != x.mesh.shape:
        raise _C.InvalidArgumentError(
            f"to_dtensor: torch mesh {tuple(device_mesh.shape)} is not the "
            f"shape of {x.mesh!r}")
    return DTensor.from_local(x.local, device_mesh, _placements(x.spec),
                              run_check=False, shape=x.shape,
                              stride=_contiguous_stride(x.shape))


def _contiguous_stride(shape):
    stride, acc = [], 1
    for s in reversed(shape):
        stride.append(acc)
        acc *= s
    return tuple(reversed(stride))


def from_dtensor(dt, mesh):
    """The ShardedTensor of DTensor `dt` on shoal mesh `mesh` (same shape
    and axis order as dt's mesh)."""
    from torch.distributed.tensor import Partial, Replicate, Shard
    if tuple(dt.device_mesh.shape) != mesh.shape:
        raise _C.InvalidArgumentError(
            f"from_dtensor: the DTensor's mesh {tuple(dt.device_mesh.shape)}"
            f" is not the shape of {mesh!r}")
    dims = [()] * dt.dim()
    partial, op = set(), "sum"
    for a, p in zip(mesh.axis_names, dt.placements):
        if isinstance(p, Shard):
            dims[p.dim] = dims[p.dim] + (a,)
        elif isinstance(p, Partial):
            partial.add(a)
            op = {"sum": "sum", "avg": "avg", "max": "max",
                  "min": "min"}.get(str(p.reduce_op), None)
            if op is None:
                raise _C.InvalidArgumentError(
                    f"from_dtensor: Partial({p.reduce_op!r}) has no shoal "
                    "partial op (sum, avg, max, min)")
        elif not isinstance(p, Replicate):
            raise _C.InvalidArgumentError(
                f"from_dtensor: placement {p!r} is not Shard, Replicate or "
                "Partial")
    spec = ShardingSpec(mesh, P(*dims), frozenset(partial), op)
    return ShardedTensor(dt.to_local(), spec, tuple(dt.shape))
