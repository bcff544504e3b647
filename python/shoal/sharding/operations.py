"""The communication operations as objects (the spec's
CollectiveOperation and its subclasses): calling one runs it, and each
reports what it would cost.

    sh.all_gather(x, 0, "tp")                     # runs it
    sh.all_gather.communication_cost(x, 0, "tp")  # seconds, nothing sent
    sh.AllGatherOp.estimate_cost(nbytes, mesh, ("tp",))

communication_cost(x, *args) takes the operation's own arguments and
prices every collective the operation would issue on x (dryrun.py: it runs
on a meta tensor, so shapes, uneven pieces and padding count as they
would, and nothing is sent): a CostEstimate whose `parts` list them,
calibrated=False when the built-in constants priced any. The first use
of an axis combination makes its sub-communicator, which every rank of the
mesh must do together, as for running the operation. estimate_cost(nbytes,
mesh, axes) prices the operation's collective for a buffer (cost.py)."""

import functools

from .. import _C
from . import collectives, cost, dryrun, tensor
from .reshard import reshard as _reshard


class CollectiveOperation:
    """An operation that moves data over a mesh. `collective` names the
    collective estimate_cost prices (None: several, or none)."""

    collective = None

    def __init__(self, fn):
        self._fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __repr__(self):
        return f"<{type(self).__name__} {self.__name__}>"

    def communication_cost(self, x, *args, path=None, **kwargs):
        """Seconds this operation would take on x with these arguments
        (a CostEstimate; constants from beside the tuning file at `path`,
        default the one communicators read)."""
        with dryrun.recording() as records:
            self._fn(dryrun.meta_of(x), *args, **kwargs)
        return cost.price(records, path)

    @classmethod
    def estimate_cost(cls, nbytes, mesh, axes, path=None):
        """Seconds of this operation's collective on a buffer of `nbytes`
        (as cost.estimate_cost counts them) over `axes` of `mesh`."""
        if cls.collective is None:
            raise _C.InvalidArgumentError(
                f"{cls.__name__}.estimate_cost: the operation runs no single "
                "collective; ask communication_cost(x, ...) of it")
        return cost.estimate_cost(cls.collective, nbytes, mesh, axes, path)


class AllReduceOp(CollectiveOperation):
    collective = "all_reduce"


class PMeanOp(CollectiveOperation):
    collective = "all_reduce"


class AllGatherOp(CollectiveOperation):
    collective = "all_gather"


class GatherAllAxesOp(CollectiveOperation):
    """One all_gather per sharding axis; estimate_cost prices one."""
    collective = "all_gather"


class ReduceScatterOp(CollectiveOperation):
    collective = "reduce_scatter"


class AllToAllOp(CollectiveOperation):
    collective = "all_to_all"


class PPermuteOp(CollectiveOperation):
    collective = "ppermute"


class ShardOp(CollectiveOperation):
    """Introduces sharding: free from a whole tensor; from a
    ShardedTensor, what its reshard costs."""


class ReshardOp(CollectiveOperation):
    """Any spec to any spec: the collectives reshard's rules pick."""


class AxisIndexOp(CollectiveOperation):
    """This rank's index along an axis: metadata, no communication."""

    def communication_cost(self, mesh, axis, path=None):
        mesh.axis(axis)
        return cost.CostEstimate(0.0, True, "no communication")


all_reduce = AllReduceOp(collectives.all_reduce)
pmean = PMeanOp(collectives.pmean)
all_gather = AllGatherOp(collectives.all_gather)
gather_all_axes = GatherAllAxesOp(collectives.gather_all_axes)
reduce_scatter = ReduceScatterOp(collectives.reduce_scatter)
all_to_all = AllToAllOp(collectives.all_to_all)
ppermute = PPermuteOp(collectives.ppermute)
shard = ShardOp(tensor.shard)
reshard = ReshardOp(_reshard)
axis_index = AxisIndexOp(collectives.axis_index)
