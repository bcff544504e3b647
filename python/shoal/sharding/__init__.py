"""Sharded tensors on a device mesh, for SPMD programs on CPUs: every rank
runs the same program; a tensor carries a sharding spec (JAX's
PartitionSpec semantics) over a named mesh, and collectives move it
between specs.

    mesh = shoal.sharding.DeviceMesh(comm, (2, 2), ("dp", "tp"))
    x = shoal.sharding.shard(t, mesh, P("dp", "tp"))
    y = shoal.sharding.reshard(x, P(None, ("dp", "tp")))
    y.full()  # the whole tensor on every rank

Operations on ShardedTensors (x @ w, + - *, sum, map) infer the output's
spec and insert the collectives a mismatch needs (ops.py); a contraction
over a sharded dimension leaves partial sums until a consumer needs them.
The collectives are differentiable (autograd.py says the conventions: a
replicated weight's gradient is complete after backward, all-reduced over
the axes that split the batch). Each communication operation is an object
(operations.py) that runs when called and reports its
communication_cost(...) without running; estimate_cost prices one
collective (cost.py), from constants measured here (built in, refined by
shoal-tune's sweep or calibrate(mesh)).
"""

from .calibration import calibrate
from .collectives import reset_stats, stats
from .cost import CostEstimate, choose, estimate_cost
from .dtensor import from_dtensor, to_dtensor, torch_mesh
from .mesh import DeviceMesh
from .operations import (AllGatherOp, AllReduceOp, AllToAllOp, AxisIndexOp,
                         CollectiveOperation, GatherAllAxesOp, PMeanOp,
                         PPermuteOp, ReduceScatterOp, ReshardOp, ShardOp,
                         all_gather, all_reduce, all_to_all, axis_index,
                         gather_all_axes, pmean, ppermute, reduce_scatter,
                         reshard, shard)
from .ops import add, matmul, mul, sub, sum_dim
from .spec import P, ShardingSpec
from .tensor import ShardedTensor

__all__ = ["DeviceMesh", "P", "ShardingSpec", "ShardedTensor", "shard",
           "reshard", "all_reduce", "pmean", "all_gather", "gather_all_axes",
           "reduce_scatter", "all_to_all", "ppermute", "axis_index", "stats",
           "reset_stats", "matmul", "add", "sub", "mul", "sum_dim",
           "estimate_cost", "CostEstimate", "calibrate", "choose",
           "to_dtensor", "from_dtensor", "torch_mesh",
           "CollectiveOperation", "AllReduceOp", "PMeanOp", "AllGatherOp",
           "GatherAllAxesOp", "ReduceScatterOp", "AllToAllOp", "PPermuteOp",
           "ShardOp", "ReshardOp", "AxisIndexOp"]
