"""Queues: tensors and Python objects between ranks, FIFO per sender
(moodist's ``Queue``), on CPUs.

A queue lives on one rank, its location, or on several (multicast)::

    q = shoal.Queue(comm, location=1)          # unnamed: every rank calls
    if comm.get_rank() == 0:
        q.put_tensor(torch.randn(4, 4))        # returns once it is sent
        q.put_object({"step": 3})
    if comm.get_rank() == 1:
        x = q.get_tensor()                     # a tensor over the item
        meta = q.get_object(timeout=5.0)

Every rank may put into a queue. A put never waits for the location to
call anything: the location's progress thread takes the item in, and the
put returns once the item is on its way (its memory may then be reused).
With one location every rank may also take items (a remote get asks the
location); with several (``location=[1, 2]``) each put reaches every
listed rank, and each of them takes from its own copy.

Items keep their order per sender; items of different senders
interleave. A queue holds at most SHOAL_QUEUE_CAPACITY items (65536) and
each sender has SHOAL_QUEUE_RING_BYTES (1 MiB) in flight to each
location; a put that finds no room waits (``block=False`` or a timeout:
``shoal.Full``).

Unnamed queues are created by every rank of the group together, in the
same order. A named queue (``name="jobs"``) is opened by any rank on its
own: the same name and locations reach the same queue from any rank, and
a named queue can travel through another queue (it pickles as its group's
name, location, streaming flag and name). Named queues need the group's
queue channel open: creating any unnamed queue opens it, and so do
``comm.open_queue_channel()`` (collective) and SHOAL_QUEUES=1 (at the
communicator's creation).

Transactions: the puts of a ``with q.transaction() as tx:`` block become
visible together when it exits, and none of them does if it raises.

A get that meets the other kind of item (``get_tensor`` finding an object,
``get_object`` a tensor) raises TypeError; the item is taken all the same,
and the exception carries it as ``.item``, so nothing is lost silently.
"""

import math
import pickle
import queue as _stdqueue
import sys
import threading
import weakref

from . import _C, _arrays, _dtypes, _env
from ._work import Work

InvalidArgumentError = _C.InvalidArgumentError
ShoalError = _C.ShoalError

_TENSOR, _OBJECT, _MORE = _C.QUEUE_TENSOR, _C.QUEUE_OBJECT, _C.QUEUE_MORE
_UINT8 = _C.DTYPES["uint8"]


class Empty(_stdqueue.Empty):
    """A get found the queue empty (block=False), or its timeout passed.
    A subclass of queue.Empty, so code written for queue.Queue catches it.
    """


class Full(_stdqueue.Full):
    """A put found no room (block=False), or its timeout passed first;
    nothing was sent. A subclass of queue.Full."""


# ---- the group ------------------------------------------------------------


def _comm_of(group):
    """The shoal.Comm of a shoal.Comm, or of a process group of backend
    "shoal" (itself, or the CPU backend torch wraps), or None."""
    from . import _groups
    from .comm import Comm

    for g in (group, _groups._cpu_backend(group)):
        if isinstance(g, Comm):
            return g
        comm = getattr(g, "comm", None)
        if isinstance(comm, Comm):
            return comm
    return None


def _default_group():
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.group.WORLD
    raise InvalidArgumentError(
        "Queue: group=None means torch.distributed's default group, which "
        "is not initialized; pass a shoal.Comm, a process group of backend "
        "'shoal' or a group's name")


def _resolve(group):
    """(shoal.Comm, the name that finds the group again) of `group`."""
    from ._groups import find_process_group

    name = None
    if isinstance(group, str):
        name, group = group, find_process_group(group)
        if group is None:
            raise InvalidArgumentError(
                f"Queue: no live shoal group is named {name!r}")
    elif group is None:
        group = _default_group()
    comm = _comm_of(group)
    if comm is None:
        raise InvalidArgumentError(
            f"Queue: group must be a shoal.Comm, a process group of backend "
            f"'shoal' or a group's name, not {type(group).__name__} (a gloo "
            f"or nccl group has no shoal queues)")
    return comm, name if name is not None else comm.get_name()


class _Sender:
    """This rank's sending side of a communicator's queues: one lock, so
    that a transaction's puts reach the rings with no other put of this
    rank between them, and what is left of a transaction cut short."""

    __slots__ = ("lock", "torn", "__weakref__")

    def __init__(self):
        self.lock = threading.Lock()
        self.torn = None  # why later puts must not be sent, or None


_senders = weakref.WeakKeyDictionary()  # shoal.Comm -> _Sender
_senders_lock = threading.Lock()


def _sender_of(comm):
    with _senders_lock:
        s = _senders.get(comm)
        if s is None:
            s = _senders[comm] = _Sender()
        return s


def open_queue_channel(group=None):
    """Opens the queue channel of `group` (shoal.Comm, process group of
    backend "shoal", group name, or None: torch.distributed's default
    group). Collective, and a no-op when it is open already. Named queues
    need it; creating any unnamed queue opens it, and SHOAL_QUEUES=1 opens
    it when the communicator is created."""
    comm, _ = _resolve(group)
    _C.queue_channel_open(comm._c)


# ---- arguments ------------------------------------------------------------


def _locations(location, size):
    """(list of ranks, whether multicast) of a location argument."""
    if isinstance(location, bool):
        raise InvalidArgumentError(
            f"Queue: location must be a rank or a list of ranks, not "
            f"{location!r}")
    if isinstance(location, int):
        ranks, multicast = [location], False
    elif isinstance(location, (list, tuple, range)):
        ranks, multicast = list(location), True
        if not ranks:
            raise InvalidArgumentError(
                "Queue: location is an empty list; name at least one rank")
    else:
        raise InvalidArgumentError(
            f"Queue: location must be a rank or a list (or range) of ranks, "
            f"not {type(location).__name__}")
    for r in ranks:
        if isinstance(r, bool) or not isinstance(r, int) \
                or not 0 <= r < size:
            raise InvalidArgumentError(
                f"Queue: location {r!r} is not a rank of the group "
                f"(0..{size - 1})")
    if len(set(ranks)) != len(ranks):
        raise InvalidArgumentError(f"Queue: location {ranks} repeats a rank")
    return ranks, multicast


def _timeout_ms(block, timeout, what):
    """The library's timeout_ms: -1 without limit, 0 not waiting."""
    if not block:
        return 0
    seconds = _env.seconds(timeout, f"{what}: timeout")
    if seconds is None:
        return -1
    return min(math.ceil(seconds * 1000), 1 << 62)


def _no_transaction(op, transaction):
    if transaction:
        raise InvalidArgumentError(
            f"{op}: transaction={transaction!r} is not supported; group "
            f"puts with `with q.transaction() as tx: tx.{op}(...)` instead")


_torch_mod = None
_codes = {}  # torch dtype -> shoal dtype code


def _torch():
    global _torch_mod
    if _torch_mod is None:
        import torch

        _torch_mod = torch
    return _torch_mod


def _code_of(dtype, op):
    code = _codes.get(dtype)
    if code is None:
        code = _C.DTYPES.get(_dtypes.name_of(dtype))
        if code is None:
            raise InvalidArgumentError(
                f"{op}: {dtype} tensors cannot go through a queue; it "
                f"carries {', '.join(_C.DTYPES)} (convert with .to(), or "
                f"send it with put_object)")
        _codes[dtype] = code
    return code


# One put, ready for the extension: (kind, data, shoal dtype, shape), the
# data a Buffer or bytes, referenced until sent. A tuple: the puts of small
# items spend much of their time in Python.


def _tensor_item(tensor, op):
    tensor = _as_tensor(tensor, op)
    code = _code_of(tensor.dtype, op)
    shape = tensor.shape  # a torch.Size: a tuple
    if len(shape) > _C.QUEUE_MAX_DIMS:
        raise InvalidArgumentError(
            f"{op}: the tensor has {len(shape)} dimensions; a queue carries "
            f"at most {_C.QUEUE_MAX_DIMS} (reshape it)")
    b = _arrays.direct(tensor)  # the common case: no checks, no copy
    if b is None:
        b = _arrays.buffer(
            _arrays.contiguous(_arrays.normalize(tensor, f"{op}: tensor")))
    return _TENSOR, b, code, shape


def _as_tensor(x, op):
    torch = _torch()
    if isinstance(x, torch.Tensor):
        return x
    # numpy arrays are welcome: their tensor shares their memory.
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray):
        return torch.from_numpy(x)
    raise InvalidArgumentError(
        f"{op}: expected a torch.Tensor, got {type(x).__name__} (send "
        f"other objects with put_object)")


def _object_item(obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _OBJECT, data, _UINT8, (len(data),)


_from_dlpack = None  # torch.utils.dlpack.from_dlpack, once torch is in


def _tensor_of(item):
    """A tensor over the item's bytes (no copy; it keeps the item alive).
    Through DLPack: torch.frombuffer and a view cost three times as much.
    """
    global _from_dlpack
    if _from_dlpack is None:
        _from_dlpack = _torch().utils.dlpack.from_dlpack
    return _from_dlpack(item.dlpack())


def _object_of(item):
    return pickle.loads(memoryview(item))


def _kind_name(kind):
    return "a tensor" if kind == _TENSOR else "an object"


def _wrong_kind(op, item):
    """The TypeError of a get that took the other kind of item, carrying
    that item (decoded) as .item."""
    want = _TENSOR if op == "get_tensor" else _OBJECT
    try:
        value = _tensor_of(item) if item.kind == _TENSOR \
            else _object_of(item)
        cause = None
    except Exception as e:  # noqa: BLE001: hand over the bytes instead
        value, cause = bytes(memoryview(item)), e
    e = TypeError(
        f"{op}: the queue's next item (from rank {item.sender}) is "
        f"{_kind_name(item.kind)}, not {_kind_name(want)}; it was taken "
        f"from the queue and is this exception's .item"
        + ("" if cause is None else
           f" (as bytes: decoding it failed: {cause})"))
    e.item = value
    return e


class Queue:
    """A queue of tensors and objects between the ranks of `group`.

    ``Queue(group, location, streaming=False, name=None)``: group is a
    shoal.Comm, a torch.distributed process group of backend "shoal", a
    group's name, or None (torch.distributed's default group); location
    is the rank the queue lives on, or a list (or range) of ranks for a
    multicast queue. Without a name every rank of the group creates it
    together (collective, in the same order everywhere); with one, this
    rank opens it alone (the group's queue channel must be open, see
    ``open_queue_channel``), and the same name and locations reach the same
    queue from every rank (other locations for a name this rank opened
    raise). ``streaming=True`` is refused: puts always arrive whole.
    """

    def __init__(self, group, location, streaming=False, name=None):
        comm, group_name = _resolve(group)
        ranks, self._multicast = _locations(location, comm.get_size())
        if name is not None and (not isinstance(name, str) or not name):
            raise InvalidArgumentError(
                f"Queue: name must be a non-empty str, not {name!r}")
        self._comm, self._group_name = comm, group_name
        self._location = ranks if self._multicast else ranks[0]
        self._streaming, self._name = bool(streaming), name
        # A list of one rank is still a multicast queue: only it takes
        # (the library sees one location, where every rank could).
        self._takes = not self._multicast or comm.get_rank() in ranks
        self._sender = _sender_of(comm)
        if name is None:
            self._c = _C.queue_create(comm._c, ranks, self._streaming)
        else:
            self._c = _C.queue_open(comm._c, name, ranks, self._streaming)

    # ---- what it is ---------------------------------------------------------

    @property
    def id(self):
        """The queue's id: equal on every rank for the same queue."""
        return self._c.id

    @property
    def location(self):
        """The rank the queue lives on, or the list of its ranks."""
        return self._location

    @property
    def name(self):
        return self._name

    @property
    def streaming(self):
        return self._streaming

    @property
    def comm(self):
        """The shoal.Comm the queue lives on."""
        return self._comm

    def __reduce__(self):
        if self._name is None:
            raise TypeError(
                "an unnamed shoal.Queue cannot be pickled: it exists only "
                "as the handles its ranks created together; give it a name "
                "(Queue(group, location, name=...)) to send it to another "
                "rank or process")
        location = list(self._location) if self._multicast \
            else self._location
        return (_reopen, (self._group_name, location, self._streaming,
                          self._name))

    def __repr__(self):
        what = f"named {self._name!r}" if self._name else "unnamed"
        return (f"<shoal.Queue {what} at {self._location} on "
                f"{self._group_name!r}>")

    # ---- puts ---------------------------------------------------------------

    def put_tensor(self, tensor, *, transaction=0, block=True, timeout=None):
        """Puts a CPU tensor (a non-contiguous one is copied first) and
        returns a Work: the tensor must not change until it completes. A
        large tensor that a location on this host reads from the tensor's
        memory itself completes when that location has read it, so several
        puts can be in flight; any other put is complete at once (its
        bytes went into the location's ring). A dropped Work waits. Waits
        for room without limit, or up to `timeout` (seconds or timedelta);
        with block=False or when the timeout passes it raises shoal.Full
        and sends nothing."""
        if transaction:
            _no_transaction("put_tensor", transaction)
        item = _tensor_item(tensor, "put_tensor")
        work = self._send(item, -1 if block and timeout is None
                          else _timeout_ms(block, timeout, "put_tensor"),
                          start=True)
        return Work(work)

    def put_object(self, obj, *, transaction=0, block=True, timeout=None):
        """Puts a Python object (pickled with the highest protocol): fire
        and forget. Waits for room as put_tensor does (shoal.Full)."""
        if transaction:
            _no_transaction("put_object", transaction)
        self._send(_object_item(obj), -1 if block and timeout is None
                   else _timeout_ms(block, timeout, "put_object"))

    def transaction(self):
        """A context manager whose puts (``tx.put_tensor``,
        ``tx.put_object``) become visible together when the block exits,
        in order; if the block raises they are dropped, unsent. Tensors
        are kept by reference until then, as moodist does: do not change
        them inside the block."""
        return Transaction(self)

    def _send(self, item, ms, start=False):
        """Sends one item (flags 0); with `start` returns the _C Work of
        the put (shoal_queue_iput)."""
        sender = self._sender
        with sender.lock:
            if sender.torn is not None:
                raise ShoalError(sender.torn)
            sent = _C.queue_put(self._c, *item, 0, ms, start)
        if sent is False:
            raise Full(f"{self!r} has no room for the item (block=False, "
                       f"or the timeout passed); nothing was sent")
        return sent

    def _check_torn(self):
        if self._sender.torn is not None:
            raise ShoalError(self._sender.torn)

    def _commit(self, items):
        """Sends a transaction's items: all but the last flagged MORE, each
        waiting for room without limit, so that a full ring does not cut
        the transaction in two (its location would join the first part to
        this rank's next put). Only a failure, or a shoal.deadline running
        out, can; later puts then raise."""
        sender = self._sender
        with sender.lock:
            self._check_torn()
            last = len(items) - 1
            for i, item in enumerate(items):
                try:
                    sent = _C.queue_put(self._c, *item,
                                        _MORE if i < last else 0, -1)
                    if not sent:
                        raise Full(f"{self!r} had no room for put {i + 1} "
                                   f"of a transaction of {len(items)} "
                                   f"before this thread's shoal.deadline")
                except BaseException as e:
                    if i > 0:
                        sender.torn = (
                            f"a transaction on {self!r} was cut short after "
                            f"{i} of its {len(items)} puts ({type(e).__name__}"
                            f": {e}); its location holds them back, and "
                            f"the next put of this rank would complete it: "
                            f"no more puts from this rank on this "
                            f"communicator")
                    raise

    # ---- gets ---------------------------------------------------------------

    def _take(self, op, block, timeout):
        if not self._takes:
            raise InvalidArgumentError(
                f"{op}: rank {self._comm.get_rank()} is not a location of "
                f"this multicast queue ({self._location}): only its "
                f"locations take from it, each from its own copy")
        item = _C.queue_get(self._c, -1 if block and timeout is None
                            else _timeout_ms(block, timeout, op))
        if item is None:
            raise Empty(f"{op}: {self!r} is empty" + (
                "" if not block or timeout is None else
                f" (waited {_env.seconds(timeout):g} s)"))
        return item

    def get_tensor(self, block=True, timeout=None, return_size=False):
        """Takes the next item, a tensor: a CPU tensor over the item's
        memory (no copy; it is the taker's to keep and change). Waits
        without limit, or up to `timeout` (seconds or timedelta); with
        block=False or when the timeout passes, raises shoal.Empty (a
        queue.Empty). A remote get (from a rank that is not the location)
        asks the location. With return_size: (tensor, the queue's size
        after the get).

        If the next item is an object (put_object), it is taken all the
        same and TypeError is raised with that object as its ``.item``
        attribute: the item is not lost, and the stream is not corrupted.
        """
        item = self._take("get_tensor", block, timeout)
        if item.kind != _TENSOR:
            raise _wrong_kind("get_tensor", item)
        t = _tensor_of(item)
        if return_size:
            return t, self.qsize()
        return t

    def get_object(self, block=True, timeout=None):
        """Takes the next item, an object, and unpickles it. Waits as
        get_tensor does (shoal.Empty). If the next item is a tensor it is
        taken all the same and TypeError is raised with the tensor as its
        ``.item`` attribute."""
        item = self._take("get_object", block, timeout)
        if item.kind != _OBJECT:
            raise _wrong_kind("get_object", item)
        return _object_of(item)

    # ---- size ---------------------------------------------------------------

    def qsize(self):
        """The number of items in the queue now (on every rank: a round
        trip to the location from elsewhere)."""
        return _C.queue_size(self._c)

    def empty(self):
        return self.qsize() == 0

    def wait(self, timeout=None):
        """Waits until the queue holds an item, without taking it: True,
        or False when `timeout` (seconds or timedelta; None: no limit)
        passed first."""
        return _C.queue_wait(self._c, _timeout_ms(True, timeout, "wait"))


def _reopen(group_name, location, streaming, name):
    """A pickled named queue, opened again on this rank."""
    return Queue(group_name, location, streaming, name)


class _TransactionWork(Work):
    """The Work of a put inside a transaction: complete once the block
    exits (its puts sent, or dropped when the block raised)."""

    __slots__ = ("_tx",)

    def __init__(self, tx):
        super().__init__()
        self._tx = tx

    def wait(self, timeout=None):
        state = self._tx._state
        if state == "open":
            raise InvalidArgumentError(
                "a put inside q.transaction() is sent when the `with` block "
                "exits; wait for its Work after the block")
        if state == "dropped":
            raise ShoalError("the put was dropped: its transaction's block "
                             "raised")
        return True

    def is_completed(self):
        return self._tx._state != "open"

    def __repr__(self):
        return f"<shoal.Work of a transaction, {self._tx._state}>"


class Transaction:
    """The puts of one ``with q.transaction() as tx:`` block: sent
    together, in order, when it exits cleanly; dropped if it raises."""

    def __init__(self, queue):
        self._q = queue
        self._items = []
        self._state = "new"

    def __enter__(self):
        if self._state != "new":
            raise InvalidArgumentError("a transaction is used once")
        self._state = "open"
        return self

    def __exit__(self, exc_type, exc, tb):
        items, self._items = self._items, []
        if exc_type is not None:
            self._state = "dropped"
            return False
        try:
            if items:
                self._q._commit(items)
        except BaseException:
            self._state = "dropped"
            raise
        self._state = "sent"
        return False

    def _check_open(self, op):
        if self._state != "open":
            raise InvalidArgumentError(
                f"{op}: the transaction is not open (use it inside its "
                f"`with` block)")

    def put_tensor(self, tensor, *, transaction=0):
        """Adds a tensor to the transaction (kept by reference until the
        block exits: do not change it before). Returns a Work complete
        once the block has exited."""
        _no_transaction("put_tensor", transaction)
        self._check_open("put_tensor")
        self._items.append(_tensor_item(tensor, "put_tensor"))
        return _TransactionWork(self)

    def put_object(self, obj, *, transaction=0):
        """Adds an object to the transaction (pickled now)."""
        _no_transaction("put_object", transaction)
        self._check_open("put_object")
        self._items.append(_object_item(obj))


__all__ = ["Empty", "Full", "Queue", "Transaction", "open_queue_channel"]
