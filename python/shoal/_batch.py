"""Batched point-to-point (torchcomms' batch_op_create / BatchSendRecv).

A batch collects sends and receives, then issue() starts them all at once
without blocking and returns one Work for the lot. Because nothing waits
until everything is posted, the order of the operations in a batch never
deadlocks, whatever order the peers list theirs in (an exchange where both
ranks send first, then receive, is fine).
"""

from . import _C


class P2POp:
    """One operation of a batch: type "send" or "recv", tensor, peer."""

    __slots__ = ("type", "tensor", "peer")

    def __init__(self, type, tensor, peer):
        self.type, self.tensor, self.peer = type, tensor, peer

    def __repr__(self):
        return f"P2POp({self.type!r}, peer={self.peer})"


class BatchP2POptions:
    """Options of BatchSendRecv.issue: hints (a dict) and timeout (a
    timedelta or seconds; None: the communicator's default)."""

    def __init__(self, hints=None, timeout=None):
        self.hints = dict(hints or {})
        self.timeout = timeout


class BatchWork:
    """The Work of an issued batch: done when every operation is."""

    __slots__ = ("_works",)

    def __init__(self, works):
        self._works = works

    def wait(self, timeout=None):
        for w in self._works:
            w.wait(timeout)
        return True

    def is_completed(self):
        return all(w.is_completed() for w in self._works)

    def __repr__(self):
        state = "completed" if self.is_completed() else "pending"
        return f"<shoal.BatchWork of {len(self._works)} ops, {state}>"


class BatchSendRecv:
    """Made by Comm.batch_op_create(): send()/recv() add operations, ops
    lists them, issue() starts them."""

    def __init__(self, comm):
        self._comm = comm
        self._issued = False
        self.ops = []

    def send(self, tensor, dst):
        self._check_open()
        self._comm._check_rank("batch send", dst, "dst")
        self.ops.append(P2POp("send", tensor, dst))

    def recv(self, tensor, src):
        self._check_open()
        self._comm._check_rank("batch recv", src, "src")
        self.ops.append(P2POp("recv", tensor, src))

    def _check_open(self):
        if self._issued:
            raise _C.InvalidArgumentError(
                "BatchSendRecv: the batch was issued; add operations to a "
                "new one")

    def issue(self, async_op=False, options=None):
        """Starts every operation; returns a Work (waited for already
        unless async_op). A batch may be issued once."""
        if self._issued:
            raise _C.InvalidArgumentError(
                "BatchSendRecv.issue: this batch was issued already; make "
                "another with batch_op_create()")
        self._issued = True
        timeout = options.timeout if options is not None else None
        works = [getattr(self._comm, op.type)(op.tensor, op.peer, True,
                                              timeout=timeout)
                 for op in self.ops]
        work = BatchWork(works)
        if not async_op:
            work.wait()
        return work
