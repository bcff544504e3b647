"""DDP's gradient buckets in shared memory: a DistributedDataParallel comm
hook.

shoal all-reduces fastest when the buffers lie in the communicator's shared
heap: peers then read and write them in place instead of through the
kernel (process_vm_readv) or staging memory. DDP allocates its gradient
buckets itself, out of reach of an allocator, so the hook moves each
bucket's memory into the shared heap the first time it sees the bucket
(shoal.share_memory_: the bucket's storage gets new memory in place, so
DDP's views of it, and ``param.grad`` with gradient_as_bucket_view=True,
follow). From then on gradients are written straight into shared memory
and every all-reduce takes the zero-copy path, with no copy added to what
DDP does anyway. Buckets DDP rebuilds (it reorders them after the first
iteration) are moved when first seen; freed buckets free their memory.

Where torch cannot move a storage (UntypedStorage._swap_data_ptr_ is
missing), the hook falls back to all-reducing each bucket from DDP's
buffer into a persistent shoal.empty twin, whose averaged contents DDP
then copies into the gradients (the copy it makes anyway): no extra copy,
but only half of the traffic is zero-copy.

Use it with a DDP model over process group "shoal" (the communicator is
the group's own), or over any other group (gloo) with a shoal.Comm over the
same ranks::

    model = DDP(model)                              # backend "shoal"
    shoal.ddp.register_shared_buckets(model)

    model = DDP(model, process_group=gloo_group)
    shoal.ddp.register_shared_buckets(model, comm=shoal_comm)

The all-reduce does not block the backward pass: a thread per hook state
completes the futures, in issue order. Dense gradients only.
"""

import queue
import threading

import torch

from . import _C, _env
from .memory import _resolve_comm, empty, is_shared, share_memory_
from ._reduce_op import ReduceOp

__all__ = ["SharedBuckets", "register_shared_buckets",
           "shared_allreduce_hook"]


def _can_move_storage():
    return hasattr(torch.UntypedStorage, "_swap_data_ptr_")


class SharedBuckets:
    """The hook's state: a shoal communicator, and the twins of buckets
    when buckets cannot be moved into shared memory.

    comm: a shoal.Comm or a process group of backend "shoal", over the
    same ranks (same order) as the DDP model's process group.
    op: the reduction; ReduceOp.AVG (DDP's mean of gradients) by default.
    move_buckets: move DDP's buckets into shared memory (default: where
    torch can); False all-reduces into twins instead.
    """

    def __init__(self, comm, op=ReduceOp.AVG, move_buckets=None):
        self._c = _resolve_comm(comm)
        self._kind, self._scalar = op.kind_and_scalar()
        self.move_buckets = _can_move_storage() if move_buckets is None \
            else bool(move_buckets)
        self._twins = {}  # bucket index -> shared-memory twin (fallback)
        self._pending = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()

    @property
    def rank(self):
        return self._c.rank

    @property
    def size(self):
        return self._c.size

    def prepare(self, index, grad):
        """The shared-memory tensor the bucket `index` is reduced into:
        `grad` itself once moved there, else the bucket's twin."""
        if self.move_buckets:
            if not is_shared(grad, self._c):
                share_memory_(grad, self._c)
            return grad
        twin = self._twins.get(index)
        if twin is None or twin.numel() != grad.numel() \
                or twin.dtype != grad.dtype:
            twin = self._twins[index] = empty(
                grad.numel(), dtype=grad.dtype, comm=self._c)
        return twin

    def all_reduce(self, grad, out):
        """Starts reducing `grad` (every rank's) into `out` (may be grad);
        returns a torch Future that yields `out` once done."""
        if grad.layout != torch.strided or not grad.is_contiguous():
            raise _C.InvalidArgumentError(
                "shoal.ddp: buckets of dense, contiguous gradients only")
        work = self._c.all_reduce(_C.Buffer(grad), _C.Buffer(out, True),
                                  self._kind, self._scalar,
                                  _env.op_timeout_ms(None))
        fut = torch.futures.Future()
        self._complete_later(work, fut, out)
        return fut

    def _complete_later(self, work, fut, result):
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="shoal-ddp-hook", daemon=True)
                self._thread.start()
        self._pending.put((work, fut, result))

    def _run(self):
        # Collectives complete in issue order: waiting for them in that
        # order never delays one that could complete sooner.
        while True:
            work, fut, result = self._pending.get()
            try:
                work.wait()  # releases the GIL
            except BaseException as e:
                fut.set_exception(e)
            else:
                fut.set_result(result)
            del work, fut, result


def shared_allreduce_hook(state, bucket):
    """DDP comm hook: averages the bucket over the ranks of `state` (a
    SharedBuckets), in shared memory."""
    grad = bucket.buffer()
    return state.all_reduce(grad, state.prepare(bucket.index(), grad))


def register_shared_buckets(model, comm=None, op=ReduceOp.AVG,
                            move_buckets=None):
    """Registers shared_allreduce_hook on DDP `model`; returns its state.

    comm: a shoal.Comm over the model's ranks; default: the model's own
    process group, which must then be of backend "shoal". See
    SharedBuckets for op and move_buckets.
    """
    group = getattr(model, "process_group", None)
    state = SharedBuckets(comm if comm is not None else group, op,
                          move_buckets)
    if group is not None and (group.size() != state.size
                              or group.rank() != state.rank):
        raise _C.InvalidArgumentError(
            f"shoal.ddp: the shoal communicator (rank {state.rank} of "
            f"{state.size}) and DDP's process group (rank {group.rank()} of "
            f"{group.size()}) must span the same ranks in the same order")
    model.register_comm_hook(state, shared_allreduce_hook)
    return state
