"""Windows: one-sided put, signal and mapped peer memory (torchcomms'
``comm.new_window``), on CPUs.

A window lets a rank write into a tensor its peers registered, without
the peer taking part::

    win = comm.new_window()
    buf = shoal.zeros(count * world, dtype=torch.float32, comm=comm)
    win.tensor_register(buf)                     # collective
    win.put(x, dst_rank=right, target_offset_nelems=rank * count)
    win.signal(right)
    win.wait_signal(left)                        # left's put is in buf now
    win.tensor_deregister()                      # collective

Ordering (stronger than torchcomms', which orders through streams): every
put a rank issued to a target before signalling it is complete and visible
in the target's buffer when the target's matching ``wait_signal`` returns,
whether or not the put's Work was waited. The n-th ``wait_signal(p)``
returns after p's n-th ``signal`` to this rank.

Memory: over shared memory a tensor from ``shoal.empty``/``shoal.zeros`` is
mapped by every peer: a put is one memcpy by the origin, and
``map_remote_tensor(rank)`` gives a tensor over the peer's buffer itself
(access type UNIFIED). Any other tensor is written by a single copy
through the kernel and cannot be mapped (SEPARATE). To a peer on another
host (TCP) a put and a signal are messages that the target's progress
thread applies, with no call on the target's side; nothing is mapped. In
a job spanning hosts, peers on this host are still reached through the
host's shared memory (shoal.empty memory is allocated there).

shoal keeps the registered memory alive while it is registered, also with
``owning=False`` (which only means ``get_tensor()`` returns None): peers
may write into it at any time until ``tensor_deregister``. Tensors from
``map_remote_tensor`` must not be used after ``tensor_deregister``; shoal
empties the ones it made (their size becomes 0), and slices or views of
them kept elsewhere are cut off from the peer: each view has a mapping of
its own, replaced by private zeroed pages at deregistration (or when the
window is closed or the communicator finalized), with a RuntimeWarning.
"""

import enum
import warnings
import weakref

from . import _C, _arrays, _dtypes, _env
from ._work import Work

InvalidArgumentError = _C.InvalidArgumentError


class WinAccessType(enum.IntEnum):
    """How this rank reaches a peer's registered memory."""

    WIN_ACCESS_TYPE_UNIFIED = 0  # mapped: map_remote_tensor works
    WIN_ACCESS_TYPE_SEPARATE = 1  # copies or messages only


class WindowAttr:
    """Attributes of a peer's window (torchcomms' TorchCommWindowAttr)."""

    __slots__ = ("access_type",)

    def __init__(self, access_type):
        self.access_type = access_type

    def __repr__(self):
        return f"<shoal.WindowAttr {self.access_type.name}>"


class Window:
    """A window on a communicator (made by Comm.new_window)."""

    def __init__(self, comm, tensor=None):
        self._comm = comm
        self._c = _C.Window(comm._c)
        self._tensor = None  # the registered tensor, when owning
        self._meta = None  # (dtype, shape, device) of the registered one
        self._remote = weakref.WeakSet()  # tensors of map_remote_tensor
        if tensor is not None:
            self.tensor_register(tensor)

    # ---- registration -----------------------------------------------------

    def tensor_register(self, tensor, owning=True, timeout=None):
        """Collective: every rank registers a contiguous CPU tensor of the
        same byte size and element size. Registering twice raises; a rank
        passing something else makes every rank raise, naming it."""
        x = _arrays.normalize(tensor, "tensor_register: tensor")
        if _arrays.is_torch(x) and not x.is_contiguous():
            raise InvalidArgumentError(
                "tensor_register: the tensor is not contiguous (register "
                "a contiguous one: peers write it as a flat buffer)")
        self._c.register(_arrays.buffer(x, True), _env.op_timeout_ms(timeout))
        self._tensor = tensor if owning else None
        self._meta = (getattr(x, "dtype", None), tuple(x.shape),
                      getattr(x, "device", "cpu"))

    def tensor_deregister(self, timeout=None):
        """Collective: returns once every rank's puts and signals to this
        rank have landed and every rank deregistered. Tensors from
        map_remote_tensor are emptied, and any slice or view of them kept
        elsewhere no longer reaches the peer: it sees private zeroed
        memory (a RuntimeWarning says so)."""
        try:
            self._c.deregister(_env.op_timeout_ms(timeout))
        finally:
            if self._c.nbytes == 0:
                self._forget()
                self._warn_left_views()

    def _warn_left_views(self):
        left = self._c.views_left()
        if left:
            warnings.warn(
                f"tensor_deregister: {left} view(s) of peers' window memory "
                f"(slices or .view()s of map_remote_tensor's tensors) are "
                f"still alive; they now see private zeroed memory, not the "
                f"peer's, and writes through them go nowhere",
                RuntimeWarning, stacklevel=3)

    def _forget(self):
        for t in list(self._remote):
            try:
                t.set_()  # no storage: nothing of the old mapping is left
            except Exception:
                pass
        self._remote = weakref.WeakSet()
        self._tensor = None
        self._meta = None

    def get_size(self):
        """Registered bytes (0 when nothing is registered)."""
        return self._c.nbytes

    def get_tensor(self):
        """The registered tensor (None when not owning or none)."""
        return self._tensor

    @property
    def dtype(self):
        return self._registered("dtype")[0]

    @property
    def shape(self):
        return list(self._registered("shape")[1])

    @property
    def device(self):
        return self._registered("device")[2]

    def _registered(self, what):
        if self._meta is None:
            raise InvalidArgumentError(
                f"{what}: the window has no registered tensor")
        return self._meta

    # ---- one-sided operations ---------------------------------------------

    def put(self, tensor, dst_rank, target_offset_nelems, async_op=False,
            hints=None, timeout=None):
        """Writes tensor into dst_rank's registered buffer at element
        target_offset_nelems (elements of tensor's dtype, whose size must
        be the window's). Out of range raises before anything is written."""
        self._comm._check_rank("put", dst_rank, "dst_rank")
        offset = _index("put", target_offset_nelems, "target_offset_nelems")
        x = _arrays.contiguous(_arrays.normalize(tensor, "put: tensor"))
        return _work(self._c.put(_arrays.buffer(x), dst_rank, offset,
                                 self._comm._ms(timeout, hints, "put"),
                                 not async_op))

    def signal(self, dst_rank=None, async_op=False, hints=None,
               timeout=None, *, peer_rank=None):
        """Raises this rank's signal counter at dst_rank (after every put
        issued to it before)."""
        dst = _one_rank("signal", dst_rank, peer_rank)
        self._comm._check_rank("signal", dst, "dst_rank")
        return _work(self._c.signal(
            dst, self._comm._ms(timeout, hints, "signal"), not async_op))

    def wait_signal(self, peer_rank, async_op=False, hints=None,
                    timeout=None):
        """Waits for peer_rank's next signal to this rank (the n-th call
        for a peer waits for its n-th signal)."""
        self._comm._check_rank("wait_signal", peer_rank, "peer_rank")
        return _work(self._c.wait_signal(
            peer_rank, self._comm._ms(timeout, hints, "wait_signal"),
            not async_op))

    # ---- mapped memory ------------------------------------------------------

    def get_attr(self, peer):
        """The peer's WindowAttr (access_type UNIFIED where its memory is
        mapped here)."""
        self._comm._check_rank("get_attr", peer, "peer")
        return WindowAttr(WinAccessType(self._c.access(peer)))

    def map_remote_tensor(self, rank):
        """A tensor of the registered shape and dtype over rank's registered
        memory (loads and stores go straight to it). Needs the peer on this
        host over shared memory and its tensor from shoal.empty/zeros;
        raises otherwise, saying which."""
        import torch

        self._comm._check_rank("map_remote_tensor", rank, "rank")
        dtype, shape, _ = self._registered("map_remote_tensor")
        if not isinstance(dtype, torch.dtype):
            raise InvalidArgumentError(
                "map_remote_tensor: the registered array is not a torch "
                "tensor")
        code, bits = _dtypes.dl_type(torch, dtype)
        t = torch.from_dlpack(self._c.peer_dlpack(rank, shape, code, bits))
        self._remote.add(t)
        return t

    def __repr__(self):
        return f"<shoal.Window {self.get_size()} bytes on {self._comm!r}>"


def new_window(group, tensor=None):
    """A Window on `group`: a shoal.Comm, or a torch.distributed process
    group of backend "shoal" (its communicator is used)."""
    from .comm import Comm

    comm = group if isinstance(group, Comm) else getattr(group, "comm", None)
    if not isinstance(comm, Comm):
        raise InvalidArgumentError(
            f"new_window: {group!r} is neither a shoal.Comm nor a process "
            "group of backend 'shoal'")
    return Window(comm, tensor)


_DONE = Work()  # what a blocking operation returns: complete already


def _work(c_work):
    """A Work for a started operation, or the completed one when the
    operation ran blocking (the extension returned None)."""
    return _DONE if c_work is None else Work(c_work)


def _one_rank(op, dst_rank, peer_rank):
    if dst_rank is None and peer_rank is None:
        raise InvalidArgumentError(f"{op}: dst_rank is missing")
    if dst_rank is not None and peer_rank is not None \
            and dst_rank != peer_rank:
        raise InvalidArgumentError(
            f"{op}: dst_rank {dst_rank} and peer_rank {peer_rank} differ")
    return dst_rank if dst_rank is not None else peer_rank


def _index(op, value, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(
            f"{op}: {what} must be an int >= 0, got {value!r}")
    return value
