"""Comm: the torchcomms-style communicator over a shoal._C.Comm.

Every operation takes ``(..., async_op=False, hints=None, timeout=None)``
and returns a Work. Arguments are checked here, on the calling rank and
before anything is sent, so a bad call raises InvalidArgumentError with a
message naming what differs and leaves the communicator usable. What one
rank cannot check alone (other ranks passing different sizes) the library
finds at the collective's first synchronisation: MismatchError on every
rank.

Contiguous CPU arrays are used in place. Strided arrays and tensor lists
go through contiguous temporaries, copied in before and out after.

Threads: a Comm may be used from several threads, but operations are
matched across ranks in the order each rank issues them, so threads that
share a Comm must agree on that order themselves (one issuing thread, or a
lock that orders calls the same way on every rank); otherwise two
all_reduces of one shape may pair up crosswise and silently mix results.
Independent threads should use communicators of their own.
"""

import datetime
import os

from . import _C, _arrays, _env, _groups, _hints
from ._batch import BatchSendRecv
from ._options import CommOptions
from ._reduce_op import as_reduce_op
from ._work import Work

InvalidArgumentError = _C.InvalidArgumentError

# What a blocking call that took the short way returns: a Work already
# complete (wait() returns True at once), shared because it holds nothing.
_DONE = Work()


class _Stage:
    """Buffers of one call, and the copies to make when it completes."""

    __slots__ = ("op", "after")

    def __init__(self, op):
        self.op = op
        self.after = []

    def read(self, x, what):
        """A Buffer the operation reads from x."""
        x = _arrays.normalize(x, f"{self.op}: {what}")
        return _arrays.buffer(_arrays.contiguous(x))

    def write(self, x, what):
        """A Buffer the operation writes (and may read); strided x gets a
        contiguous copy whose result is copied back."""
        x = _arrays.normalize(x, f"{self.op}: {what}")
        c = _arrays.contiguous(x)
        if c is not x:
            self.after.append(lambda: _arrays.copy_into(x, c))
        return _arrays.buffer(c, True)

    def meta(self, items, what):
        """Normalized arrays of a list and a Buffer describing each."""
        arrays = [_arrays.normalize(x, f"{self.op}: {what}[{i}]")
                  for i, x in enumerate(items)]
        return arrays, [_arrays.buffer(x) for x in arrays]

    def packed(self, like, arrays, total):
        """A temporary holding `arrays` back to back (for inputs)."""
        tmp = _arrays.empty(like, total)
        _arrays.pack(arrays, tmp)
        return _arrays.buffer(tmp)

    def unpacked(self, like, arrays, total):
        """A temporary whose pieces are copied into `arrays` after."""
        tmp = _arrays.empty(like, total)
        self.after.append(lambda: _arrays.unpack(tmp, arrays))
        return _arrays.buffer(tmp, True)

    def finish(self):
        after = self.after
        if not after:
            return None
        if len(after) == 1:
            return after[0]
        return lambda: [f() for f in after]


def _desc(b):
    return _arrays.describe(b)


class _RecvWork(Work):
    """A receive's Work: source() says whose message it got."""

    __slots__ = ("_recv",)

    def __init__(self, c_work=None, after=None):
        super().__init__(c_work, after)
        self._recv = c_work  # kept after wait(), which drops _c

    def source(self):
        """The rank whose message this receive got: its src, or the sender
        when src was None. Raises RuntimeError while the receive is still
        in flight, and the receive's own error if it failed."""
        self.is_completed()  # finishes it if done, copying staged results
        return self._recv.source()


class Comm:
    """A communicator (made by shoal.new_comm or Comm.split)."""

    def __init__(self, c, *, name, device="cpu", backend="shoal",
                 hints=None, abort_process_on_timeout_or_error=False):
        self._c = c
        self._name = name
        self._device = device
        self._backend = backend
        self._hints = (hints if isinstance(hints, _hints.CommHints)
                       else _hints.CommHints(hints))
        self._abort = abort_process_on_timeout_or_error
        self._registered = {}  # register_memory: address -> _C.MemReg
        self._rank = c.rank
        self._size = c.size
        _groups.register(self, name)
        if os.environ.get("SHOAL_QUEUES") == "1":
            # Every rank makes its Comm at the same point of the creation,
            # so the channel opens collectively here.
            _C.queue_channel_open(c)

    # ---- identity and life --------------------------------------------------

    def get_rank(self):
        return self._rank

    def get_size(self):
        return self._size

    def get_name(self):
        return self._name

    def get_device(self):
        return self._device

    def get_backend(self):
        return self._backend

    def get_hints(self):
        return dict(self._hints.raw)

    def _ms(self, timeout, hints, op):
        """The timeout in ms (0: the default) of a call of method `op`
        for the extension, with the hints' deadline and algorithm applied
        (shoal._hints). Evaluate it last before the call: it names the
        algorithm of this thread's next operation."""
        if timeout is None and hints is None and self._hints.empty:
            return 0  # the common call: nothing to work out
        return _hints.call_timeout_ms(self._hints, hints, timeout, op)

    def get_options(self):
        """The options this communicator was made with (torchcomms'
        CommOptions: abort_process_on_timeout_or_error, timeout, store,
        name, hints)."""
        return CommOptions(
            abort_process_on_timeout_or_error=self._abort,
            timeout=datetime.timedelta(seconds=self.get_timeout()),
            name=self.get_name(), hints=self.get_hints())

    def algorithms(self, collective):
        """The algorithms `collective` ("all_reduce", "all_gather", ...)
        can run on this communicator: the names the hint shoal::algorithm
        takes."""
        return self._c.algorithms(collective)

    # ---- memory registration (torchcomms' commRegister) -----------------

    def register_memory(self, tensor):
        """Registers `tensor`'s memory for the zero-copy use of repeated
        operations (local). A torch tensor's whole storage moves into this
        communicator's shared heap first (shoal.share_memory_: in place,
        every view follows), where collectives and windows read and write
        it without a copy: on shared memory that is what registering buys.
        Memory that cannot move (numpy arrays) is locked in RAM for peers'
        single copies through the kernel instead; over TCP nothing is
        prepared. Returns what it got: "shared", "pinned" or "plain"."""
        from . import memory

        x = _arrays.normalize(tensor, "register_memory: tensor")
        if _arrays.is_torch(x):
            memory.share_memory_(x, self)
            x = _arrays.storage_bytes(x)
        key = _arrays.buffer(x).ptr
        if key in self._registered:
            raise InvalidArgumentError(
                "register_memory: this memory is registered already")
        reg = self._c.register_memory(_arrays.buffer(x, True))
        self._registered[key] = reg
        return reg.kind

    def deregister_memory(self, tensor):
        """Releases register_memory's registration of `tensor` (its memory
        stays where it is: a tensor moved into the shared heap stays
        there)."""
        x = _arrays.normalize(tensor, "deregister_memory: tensor")
        if _arrays.is_torch(x):
            x = _arrays.storage_bytes(x)
        reg = self._registered.pop(_arrays.buffer(x).ptr, None)
        if reg is None:
            raise InvalidArgumentError(
                "deregister_memory: this memory is not registered "
                "(register_memory(tensor) first)")
        reg.deregister()

    def new_window(self, tensor=None):
        """A Window for one-sided put and signal (shoal.window); with a
        tensor, registers it at once (collective)."""
        from .window import Window

        return Window(self, tensor)

    def open_queue_channel(self):
        """Collective: opens this communicator's queue channel, which
        named shoal.Queues need (a no-op when open). Creating any unnamed
        queue opens it too, and SHOAL_QUEUES=1 opens it at creation."""
        _C.queue_channel_open(self._c)

    def batch_op_create(self):
        """A BatchSendRecv: add send()s and recv()s, then issue() them
        together (any order, no deadlock)."""
        return BatchSendRecv(self)

    def get_timeout(self):
        """The default deadline of operations, in seconds."""
        return self._c.timeout_ms / 1000.0

    def set_timeout(self, timeout):
        """Sets the default deadline (timedelta or seconds) of later
        operations."""
        ms = _env.op_timeout_ms(timeout)
        if ms <= 0:
            raise InvalidArgumentError("set_timeout: timeout must be > 0")
        self._c.set_timeout(ms)

    def abort(self, reason=None):
        """Aborts the communicator on every rank: operations in flight and
        later ones raise AbortedError naming this rank and `reason`. It
        must still be finalized."""
        self._c.abort(None if reason is None else str(reason))

    # ---- surviving a lost rank (ULFM's revoke, shrink, agree) ------------

    def revoke(self, reason=None):
        """Revokes the communicator on every rank it reaches: operations in
        flight and later ones raise RevokedError naming this rank and
        `reason`. Not collective; does not block. The communicator stays
        usable for shrink() and agree() (then finalize it)."""
        self._c.revoke(None if reason is None else str(reason))

    def shrink(self, name=None):
        """Collective over the live ranks: they agree, through the store,
        on who is still alive and form a new communicator of them, in the
        same order. Works on a communicator that a death aborted or a
        revoke failed; a rank that dies meanwhile is left out too. Needs
        the store (served by the launcher, or by a rank still alive)."""
        c = self._c.shrink()
        return Comm(c, name=name or c.name, device=self._device,
                    backend=self._backend, hints=self._hints.raw,
                    abort_process_on_timeout_or_error=self._abort)

    def agree(self, flag=True):
        """A fault-tolerant AND over the live ranks: returns (the AND of the
        flags of the ranks that joined, the agreed list of ranks that did
        not: dead, or gone). Collective over the live ranks."""
        return self._c.agree(bool(flag))

    def failed_ranks(self):
        """The ranks this rank knows to have died (not those that finalized
        their communicator). Does not wait for peers."""
        return self._c.failed_ranks()

    def get_async_error(self):
        """The exception that failed the communicator (PeerError,
        CommTimeoutError, AbortedError, RevokedError, ...), or None while
        it is fine. Never blocks; safe from any thread (a watchdog's)."""
        return self._c.async_error()

    def stats(self):
        """Who arrives last at this communicator's collectives, as this
        rank saw it while it waited: per rank, {"collectives": accounted,
        "last": arrived last, "late": counts of lateness after the first
        arrival (< 1 us, 10 us, 100 us, 1 ms, 10 ms, 100 ms, 1 s, more),
        "late_ns_total", "late_ns_max"}. Over shared memory only (else
        raises ShoalError). Read from what the ranks already publish: no
        extra messages."""
        return self._c.stats()

    def dump_flight_record(self, dir=None):
        """Writes this communicator's flight record (its last operations)
        into `dir` (None: SHOAL_FR_DUMP_DIR) in torch's flight-recorder
        format; see shoal.dump_flight_record."""
        self._c.dump_flight_record(dir)

    def finalize(self):
        """Waits for this rank's pending operations, then releases the
        communicator. Local; later operations raise."""
        self._c.finalize()

    def split(self, ranks, name=None, hints=None, timeout=None):
        """Collective over this communicator: the listed ranks form a new
        one, ranked in list order. Ranks outside every group pass [] and
        get None; a non-empty list must contain the caller."""
        ranks = [int(r) for r in ranks]
        for r in ranks:
            self._check_rank("split", r, "rank")
        if ranks and self._rank not in ranks:
            raise InvalidArgumentError(
                f"split: rank {self._rank} is not in {ranks} (ranks outside "
                "every new group pass [])")
        if len(set(ranks)) != len(ranks):
            raise InvalidArgumentError(f"split: {ranks} repeats a rank")
        c = self._c.split(ranks)
        if c is None:
            return None
        return Comm(c, name=name or c.name, device=self._device,
                    backend=self._backend,
                    hints=self._hints.raw if hints is None else hints,
                    abort_process_on_timeout_or_error=self._abort)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.finalize()

    def __repr__(self):
        return (f"<shoal.Comm {self._name!r} rank {self._rank} of "
                f"{self._size}>")

    # ---- checks ---------------------------------------------------------

    def _check_rank(self, op, r, what):
        if isinstance(r, bool) or not isinstance(r, int) \
                or not 0 <= r < self._size:
            raise InvalidArgumentError(
                f"{op}: {what} {r!r} is outside 0..{self._size - 1}")

    def _check_list(self, op, items, what):
        if not isinstance(items, (list, tuple)) or len(items) != self._size:
            n = len(items) if isinstance(items, (list, tuple)) else None
            raise InvalidArgumentError(
                f"{op}: {what} must be a list of one tensor per rank "
                f"({self._size}), got "
                + (f"{n}" if n is not None else type(items).__name__))

    @staticmethod
    def _check_dtype(op, b, what, ref, ref_what):
        if b.dtype != ref.dtype:
            raise InvalidArgumentError(
                f"{op}: {what} is {_desc(b)} but {ref_what} is "
                f"{_desc(ref)}: dtypes differ")

    @staticmethod
    def _check_count(op, b, what, expect, why):
        if b.count != expect:
            raise InvalidArgumentError(
                f"{op}: {what} has {b.count} elements ({_desc(b)}), "
                f"expected {expect} ({why})")

    def _check_like(self, op, bufs, what, ref, ref_what):
        for i, b in enumerate(bufs):
            self._check_dtype(op, b, f"{what}[{i}]", ref, ref_what)
            self._check_count(op, b, f"{what}[{i}]", ref.count,
                              f"as many as {ref_what}")

    @staticmethod
    def _run(stage, c_work, async_op, work_type=Work):
        work = work_type(c_work,
                         stage.finish() if stage is not None else None)
        if not async_op:
            work.wait()
        return work

    # ---- point-to-point -------------------------------------------------

    def send(self, tensor, dst, async_op=False, hints=None, timeout=None,
             tag=0):
        """Sends tensor to rank dst (matched in order by dst's recv)."""
        self._check_rank("send", dst, "dst")
        b = _Stage("send").read(tensor, "tensor")
        return self._run(None, self._c.send(b, dst, tag,
                                            self._ms(timeout, hints, "send")),
                         async_op)

    def recv(self, tensor, src, async_op=False, hints=None, timeout=None,
             tag=0):
        """Receives into tensor from rank src (same size and dtype).

        src=None receives the first message with `tag` from any rank
        (messages from one sender still arrive in send order); the Work's
        source() then names the sender. A receive posted earlier, named or
        not, is matched first. On a communicator of one rank src=None
        raises InvalidArgumentError: nobody could send."""
        if src is not None:
            self._check_rank("recv", src, "src")
        s = _Stage("recv")
        b = s.write(tensor, "tensor")
        peer = _C.ANY_SOURCE if src is None else src
        return self._run(s, self._c.recv(b, peer, tag,
                                         self._ms(timeout, hints, "recv")),
                         async_op, _RecvWork)

    # ---- collectives in place -------------------------------------------

    def barrier(self, async_op=False, hints=None, timeout=None):
        if not async_op:
            self._c.barrier_now(self._ms(timeout, hints, "barrier"))
            return _DONE
        return self._run(
            None, self._c.barrier(self._ms(timeout, hints, "barrier")),
            async_op)

    def broadcast(self, tensor, root, async_op=False, hints=None,
                  timeout=None):
        """Every rank's tensor becomes root's."""
        self._check_rank("broadcast", root, "root")
        b = None if async_op else _arrays.direct(tensor, True)
        if b is not None:
            self._c.broadcast_now(b, root,
                                  self._ms(timeout, hints, "broadcast"))
            return _DONE
        s = _Stage("broadcast")
        b = s.write(tensor, "tensor")
        return self._run(s, self._c.broadcast(
            b, root, self._ms(timeout, hints, "broadcast")), async_op)

    def all_reduce(self, tensor, op, async_op=False, hints=None,
                   timeout=None):
        """Every rank's tensor becomes the reduction of all of them."""
        kind, scalar = as_reduce_op(op).kind_and_scalar()
        b = None if async_op else _arrays.direct(tensor, True)
        if b is not None:
            self._c.all_reduce_now(b, b, kind, scalar,
                                   self._ms(timeout, hints, "all_reduce"))
            return _DONE
        s = _Stage("all_reduce")
        b = s.write(tensor, "tensor")
        return self._run(s, self._c.all_reduce(
            b, b, kind, scalar, self._ms(timeout, hints, "all_reduce")),
            async_op)

    @staticmethod
    def _direct_pair(async_op, input, output, out_times, in_times):
        """Buffers over input and output for a blocking call's short way
        (both contiguous CPU tensors of one dtype, output numel x in_times
        == input numel x out_times, apart in memory), else (None, None):
        the full way then handles the rest and gives the errors."""
        if async_op:
            return None, None
        ib = _arrays.direct(input)
        ob = _arrays.direct(output, True) if ib is not None else None
        if (ob is None or input.dtype != output.dtype
                or output.numel() * in_times != input.numel() * out_times):
            return None, None
        a, b = input.data_ptr(), output.data_ptr()
        size = input.element_size()
        if a < b + output.numel() * size and b < a + input.numel() * size:
            return None, None  # in place, or overlapping: the full way
        return ib, ob

    def reduce(self, tensor, root, op, async_op=False, hints=None,
               timeout=None):
        """Root's tensor becomes the reduction; others' are unchanged."""
        self._check_rank("reduce", root, "root")
        kind, scalar = as_reduce_op(op).kind_and_scalar()
        s = _Stage("reduce")
        if self._rank == root:
            b = s.write(tensor, "tensor")
            out = b
        else:
            b, out = s.read(tensor, "tensor"), None
        return self._run(s, self._c.reduce(b, out, kind, scalar, root,
                                           self._ms(timeout, hints, "reduce")),
                         async_op)

    # ---- gathers and scatters -------------------------------------------

    def all_gather(self, tensor_list, tensor, async_op=False, hints=None,
                   timeout=None):
        """tensor_list[r] receives rank r's tensor."""
        s = _Stage("all_gather")
        ib = s.read(tensor, "tensor")
        self._check_list("all_gather", tensor_list, "tensor_list")
        outs, obs = s.meta(tensor_list, "tensor_list")
        self._check_like("all_gather", obs, "tensor_list", ib, "tensor")
        tmp = s.unpacked(ib.obj, outs, ib.count * self._size)
        return self._run(s, self._c.all_gather(
            ib, tmp, self._ms(timeout, hints, "all_gather")), async_op)

    def all_gather_single(self, output, input, async_op=False, hints=None,
                          timeout=None):
        """output holds every rank's input, in rank order."""
        ib, ob = self._direct_pair(async_op, input, output, self._size, 1)
        if ob is not None:
            self._c.all_gather_now(
                ib, ob, self._ms(timeout, hints, "all_gather_single"))
            return _DONE
        s = _Stage("all_gather_single")
        ib, ob = s.read(input, "input"), s.write(output, "output")
        return self._run(s, self._c.all_gather(
            ib, ob, self._ms(timeout, hints, "all_gather_single"),
            "all_gather_single"), async_op)

    def reduce_scatter(self, output, input_list, op, async_op=False,
                       hints=None, timeout=None):
        """output on rank r becomes the reduction of every rank's
        input_list[r]."""
        kind, scalar = as_reduce_op(op).kind_and_scalar()
        s = _Stage("reduce_scatter")
        ob = s.write(output, "output")
        self._check_list("reduce_scatter", input_list, "input_list")
        ins, ibs = s.meta(input_list, "input_list")
        self._check_like("reduce_scatter", ibs, "input_list", ob, "output")
        tmp = s.packed(ob.obj, ins, ob.count * self._size)
        return self._run(s, self._c.reduce_scatter(
            tmp, ob, kind, scalar, self._ms(timeout, hints, "reduce_scatter")),
            async_op)

    def reduce_scatter_single(self, output, input, op, async_op=False,
                              hints=None, timeout=None):
        """output on rank r becomes the reduction of block r of every
        rank's input."""
        kind, scalar = as_reduce_op(op).kind_and_scalar()
        ib, ob = self._direct_pair(async_op, input, output, 1, self._size)
        if ob is not None:
            self._c.reduce_scatter_now(
                ib, ob, kind, scalar,
                self._ms(timeout, hints, "reduce_scatter_single"))
            return _DONE
        s = _Stage("reduce_scatter_single")
        ib, ob = s.read(input, "input"), s.write(output, "output")
        return self._run(s, self._c.reduce_scatter(
            ib, ob, kind, scalar,
            self._ms(timeout, hints, "reduce_scatter_single"),
            "reduce_scatter_single"), async_op)

    def gather(self, output_tensor_list, input_tensor, root, async_op=False,
               hints=None, timeout=None):
        """On root, output_tensor_list[r] receives rank r's input_tensor;
        the list is not used elsewhere."""
        self._check_rank("gather", root, "root")
        s = _Stage("gather")
        ib = s.read(input_tensor, "input_tensor")
        tmp = None
        if self._rank == root:
            self._check_list("gather", output_tensor_list,
                             "output_tensor_list")
            outs, obs = s.meta(output_tensor_list, "output_tensor_list")
            self._check_like("gather", obs, "output_tensor_list", ib,
                             "input_tensor")
            tmp = s.unpacked(ib.obj, outs, ib.count * self._size)
        return self._run(s, self._c.gather(ib, tmp, root,
                                           self._ms(timeout, hints, "gather")),
                         async_op)

    def scatter(self, output_tensor, input_tensor_list, root, async_op=False,
                hints=None, timeout=None):
        """Rank r's output_tensor receives root's input_tensor_list[r]; the
        list is not used elsewhere."""
        self._check_rank("scatter", root, "root")
        s = _Stage("scatter")
        ob = s.write(output_tensor, "output_tensor")
        tmp = None
        if self._rank == root:
            self._check_list("scatter", input_tensor_list,
                             "input_tensor_list")
            ins, ibs = s.meta(input_tensor_list, "input_tensor_list")
            self._check_like("scatter", ibs, "input_tensor_list", ob,
                             "output_tensor")
            tmp = s.packed(ob.obj, ins, ob.count * self._size)
        return self._run(s, self._c.scatter(
            tmp, ob, root, self._ms(timeout, hints, "scatter")), async_op)

    # ---- all-to-all -----------------------------------------------------

    def all_to_all(self, output_tensor_list, input_tensor_list,
                   async_op=False, hints=None, timeout=None):
        """output_tensor_list[p] receives rank p's input_tensor_list[r]
        (r being this rank); sizes may differ per pair."""
        s = _Stage("all_to_all")
        self._check_list("all_to_all", input_tensor_list,
                         "input_tensor_list")
        self._check_list("all_to_all", output_tensor_list,
                         "output_tensor_list")
        ins, ibs = s.meta(input_tensor_list, "input_tensor_list")
        outs, obs = s.meta(output_tensor_list, "output_tensor_list")
        for i, b in enumerate(ibs[1:] + obs):
            what = (f"input_tensor_list[{i + 1}]" if i + 1 < len(ibs)
                    else f"output_tensor_list[{i + 1 - len(ibs)}]")
            self._check_dtype("all_to_all", b, what, ibs[0],
                              "input_tensor_list[0]")
        scounts = [b.count for b in ibs]
        rcounts = [b.count for b in obs]
        tin = s.packed(ins[0], ins, sum(scounts))
        tout = s.unpacked(ins[0], outs, sum(rcounts))
        return self._run(s, self._c.all_to_all_v(
            tin, scounts, tout, rcounts,
            self._ms(timeout, hints, "all_to_all")), async_op)

    def all_to_all_single(self, output, input, async_op=False, hints=None,
                          timeout=None):
        """Block p of input goes to rank p; block r of output comes from
        rank r (equal blocks)."""
        s = _Stage("all_to_all_single")
        ib, ob = s.read(input, "input"), s.write(output, "output")
        return self._run(s, self._c.all_to_all(
            ib, ob, self._ms(timeout, hints, "all_to_all_single"),
            "all_to_all_single"), async_op)

    def all_to_all_v_single(self, output, input, output_split_sizes,
                            input_split_sizes, async_op=False, hints=None,
                            timeout=None):
        """As all_to_all_single with per-rank split sizes along the first
        dimension; empty (or None) split lists mean equal splits."""
        op = "all_to_all_v_single"
        s = _Stage(op)
        ib, ob = s.read(input, "input"), s.write(output, "output")
        irow, orow = _row(ib), _row(ob)
        if ib.ndim and ob.ndim and irow != orow:
            raise InvalidArgumentError(
                f"{op}: input is {_desc(ib)} and output is {_desc(ob)}: "
                "their dimensions after the first differ")
        scounts = self._splits(op, input_split_sizes, "input_split_sizes",
                               ib) 
        rcounts = self._splits(op, output_split_sizes, "output_split_sizes",
                               ob)
        return self._run(s, self._c.all_to_all_v(
            ib, [n * irow for n in scounts], ob, [n * orow for n in rcounts],
            self._ms(timeout, hints, op), op), async_op)

    def _splits(self, op, sizes, what, b):
        """Rows per rank along b's first dimension."""
        rows = b.shape[0] if b.ndim else b.count
        if not sizes:
            if rows % self._size:
                raise InvalidArgumentError(
                    f"{op}: {what} is empty, so {_desc(b)} is split evenly, "
                    f"but {rows} rows do not divide over {self._size} ranks")
            return [rows // self._size] * self._size
        sizes = [int(n) for n in sizes]
        if len(sizes) != self._size or min(sizes) < 0:
            raise InvalidArgumentError(
                f"{op}: {what} {sizes} must have one entry >= 0 per rank "
                f"({self._size})")
        if sum(sizes) != rows:
            raise InvalidArgumentError(
                f"{op}: {what} {sizes} sum to {sum(sizes)} but the tensor "
                f"({_desc(b)}) has {rows} rows")
        return sizes


def _row(b):
    """Elements per index of the first dimension."""
    n = 1
    for extent in b.shape[1:]:
        n *= extent
    return n
