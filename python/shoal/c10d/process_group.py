"""ProcessGroupShoal: torch.distributed's process group over a shoal.Comm.

torch (2.x) lets a Python class derived from dist.ProcessGroup be a whole
process group: torch.distributed's Python functions call its methods by
name, and C++ callers (DDP's reducer, functional collectives) reach the
ones torch's pybind trampoline forwards (allreduce, allgather, broadcast,
barrier, reduce_scatter, the *_coalesced forms, all_to_all_single, send,
recv). Each method here maps one torch call onto the torchcomms-style
shoal.Comm, issued without blocking (contiguous tensors are used in place)
and wrapped in a Work that torch waits on.

Subgroups: torch makes them as it makes the default group, calling the
creator of the backend each asks for (dist.new_group(backend="gloo") under
a shoal default group is a gloo group). A group of backend "shoal" is a
communicator of its members only, which meet through the group's store.
The class has no new_group method on purpose: torch would hand every
new_group() to it without saying which backend was asked for.
"""

import datetime
import os

import torch
import torch.distributed as dist

from .. import _C, _bootstrap, _env, _groups
from ..comm import Comm
from .._reduce_op import ReduceOp
from . import forms, monitored, sparse
from .profiled import profiled
from .work import Completer, Work, done

BACKEND = "shoal"

# torch's operation codes -> shoal's (PREMUL_SUM carries a factor).
# Keyed by the enum's value: hashing and comparing torch's enum objects
# cost more than the rest of a small all_reduce.
_OPS = {int(getattr(dist.ReduceOp.RedOpType, name)): getattr(ReduceOp, name)
        for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR",
                     "BXOR")}


_REDUCE_OP = dist.ReduceOp
_RED_OP_TYPE = dist.ReduceOp.RedOpType
_SUM_TYPE = dist.ReduceOp.RedOpType.SUM
_ALLREDUCE_OPTIONS = dist.AllreduceOptions


def _reduce_op(op):
    """shoal's ReduceOp for torch's (a dist.ReduceOp or its RedOpType).
    Exact type checks and the enum's value: the cheapest reads of torch's
    objects, on every small all_reduce's way. SUM, the usual one, first:
    a dist.ReduceOp compares itself with the enum in C++ (0.15 us), where
    reading the enum out and its value costs 0.5."""
    if type(op) is _REDUCE_OP and op == _SUM_TYPE:
        return ReduceOp.SUM
    kind = op.op if type(op) is _REDUCE_OP else op
    shoal_op = _OPS.get(kind.value) if type(kind) is _RED_OP_TYPE else None
    if shoal_op is None:  # a float, or a 1-element tensor read once here
        return ReduceOp.PREMUL_SUM(op.factor)
    return shoal_op


def _timeout(opts):
    """An option's timeout as shoal wants it (None: the default; torch's
    unset one is negative)."""
    t = getattr(opts, "timeout", None)
    return t if type(t) is datetime.timedelta and t > _NO_TIME else None


_NO_TIME = datetime.timedelta(0)


def _abort_on_error():
    # Gloo raises on a failed collective; so does shoal's process group
    # unless TORCHCOMM_ABORT_ON_ERROR asks for torchcomms' behaviour.
    return _env.env_bool("TORCHCOMM_ABORT_ON_ERROR", False)


def _timeout_ms(timeout):
    """The communicator's default deadline. torch always passes one; when
    it is torch's own default, TORCHCOMM_TIMEOUT_SECONDS or
    SHOAL_TIMEOUT_SECONDS may set it instead."""
    if timeout == dist.default_pg_timeout and (
            os.environ.get("TORCHCOMM_TIMEOUT_SECONDS")
            or os.environ.get("SHOAL_TIMEOUT_SECONDS")):
        timeout = None
    return _env.default_timeout_ms(timeout)


def connect(store, rank, size, timeout, name):
    """A shoal.Comm over `size` ranks, agreed through torch's store."""
    key = _bootstrap.creation_key(store, f"shoal/pg/{name}", size)
    args = _bootstrap.store_rendezvous(store, key, rank, size)
    abort = _abort_on_error()
    c = _C.Comm(timeout_ms=_timeout_ms(timeout), name=name,
                abort_on_error=abort, **args)
    return Comm(c, name=name, abort_process_on_timeout_or_error=abort)


def create_process_group(opts, backend_options=None):
    """torch's creator for backend "shoal" (Backend.register_backend with
    extended_api): opts is a _DistributedBackendOptions."""
    name = ("world" if not opts.global_ranks_in_group
            else f"group {opts.group_id}")
    comm = connect(opts.store, opts.group_rank, opts.group_size,
                   opts.timeout, name)
    return ProcessGroupShoal(comm, opts.store)


class ProcessGroupShoal(dist.ProcessGroup):
    """A torch.distributed process group whose operations run in shoal."""

    def __init__(self, comm, store=None):
        super().__init__(comm.get_rank(), comm.get_size())
        self._comm = comm
        self._store = store
        self._completer = Completer(comm)
        self._group_name = self._group_desc = comm.get_name()
        _groups.register(self, comm.get_name())

    @property
    def comm(self):
        """The shoal.Comm underneath (its torchcomms-style API)."""
        return self._comm

    def getBackendName(self):
        return BACKEND

    # torch looks for a group's per-device backend (monitored_barrier,
    # _set_pg_timeout, splitting); this group is its own CPU backend, and
    # says which of a backend's optional abilities it lacks (splitting
    # goes through new_group; coalescing is done by torch's generic path).
    supports_splitting = False
    supports_coalescing = False
    supports_time_estimate = False
    supports_tensor_alloc = False
    supports_shrinking = False

    def _get_backend(self, device):
        device = torch.device(device)
        if device.type != "cpu":
            raise RuntimeError(self._no_backend_for(device))
        return self

    def _no_backend_for(self, device):
        config = dist.distributed_c10d._world.pg_backend_config.get(self, "")
        named = dict(part.split(":", 1) for part in config.split(",")
                     if ":" in part).get(device.type)
        text = (f"process group {self._group_name!r} (backend shoal) has no "
                f"backend for device {device}: shoal runs on CPUs")
        if named is None:
            return text
        # torch keeps a Python process group whole: the first device's
        # backend of a string like "cpu:shoal,cuda:nccl" is the group.
        return (f"{text}; its backend string {config!r} names {named!r} for "
                f"{device.type}, but torch takes a Python process group as "
                f"the whole group, so only its CPU part was made. Use a group "
                f"of its own for {device.type} tensors: "
                f"dist.new_group(backend={named!r})")

    def _set_default_timeout(self, timeout):
        """The deadline of later operations (torch's _set_pg_timeout)."""
        self._comm.set_timeout(timeout)

    # torch keeps a group's name and description in its C++ backends, which
    # a Python group has none of: the trampoline asks these instead.
    def getGroupName(self):
        return self._group_name

    def setGroupName(self, name):
        self._group_name = name
        _groups.register(self, name)

    def getGroupDesc(self):
        return self._group_desc

    def setGroupDesc(self, desc):
        self._group_desc = desc

    def __repr__(self):
        return (f"<ProcessGroupShoal rank {self.rank()} of {self.size()}, "
                f"{self._comm.get_name()!r}>")

    def _work(self, opts, works, result):
        """The Work of an operation just issued. torch waits at once for
        a synchronous call (asyncOp False): do it here, more cheaply (the
        in-place collectives were issued blocking then, and their works
        are done)."""
        if opts is not None and not opts.asyncOp:
            for w in works:
                w.wait()
            return done(result)
        return Work(works, result, self._completer)

    # ---- life ---------------------------------------------------------------

    def shutdown(self):
        """Waits for pending work, then releases the communicator."""
        self._completer.close()
        self._comm.finalize()

    def abort(self):
        """Aborts the group on every rank without blocking; safe from any
        thread (a watchdog's). Pending work ends with AbortedError; later
        calls raise; shutdown() still releases it."""
        self._comm.abort("the process group was aborted")

    def errored(self):
        """The exception that failed the group (a peer's death, a
        time-out, an abort), or None while it is fine: torch's and
        torchft's meaning. Never blocks."""
        return self._comm.get_async_error()

    # ---- collectives in place -----------------------------------------------

    def allreduce(self, tensors, opts=None, timeout=None, op=None):
        if type(opts) is not _ALLREDUCE_OPTIONS and \
                not hasattr(opts, "asyncOp"):
            # Short forms: allreduce([t] or t, op=SUM, timeout=None).
            tensors = forms.tensor_list(tensors)
            opts = forms.options(dist.AllreduceOptions, None, timeout,
                                 reduceOp=opts if op is None else op)
        op, t = _reduce_op(opts.reduceOp), _timeout(opts)
        if len(tensors) == 1 and tensors[0].layout == torch.strided:
            if not opts.asyncOp:  # the common call, the short way
                self._comm.all_reduce(tensors[0], op, False, timeout=t)
                return done(tensors)
        elif any(x.layout != torch.strided for x in tensors):
            return self._allreduce_sparse(tensors, op, t)
        works = [self._comm.all_reduce(x, op, opts.asyncOp, timeout=t)
                 for x in tensors]
        return self._work(opts, works, tensors)

    def _allreduce_sparse(self, tensors, op, t):
        # Runs to completion here: the sum's size is known only at the end.
        for x in tensors:
            sparse.check(x, op)
        for x in tensors:
            sparse.all_reduce_sum(self._comm, x, timeout=t)
        return done(tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        # One operation per tensor, each in place: shoal queues them.
        return self.allreduce(tensors,
                              opts or dist.AllreduceCoalescedOptions())

    def broadcast(self, tensors, opts=None, timeout=None, root=None):
        # Short form: broadcast(t, root, timeout=None).
        tensors = forms.tensor_list(tensors)
        if not forms.is_options(opts):
            opts = forms.options(dist.BroadcastOptions, None, timeout,
                                 rootRank=opts if root is None else root)
        root, t = opts.rootRank, _timeout(opts)
        works = [self._comm.broadcast(x, root, opts.asyncOp, timeout=t)
                 for x in tensors]
        return self._work(opts, works, tensors)

    def reduce(self, tensors, opts=None, op=None, timeout=None, root=None):
        # Short form: reduce(t, root, op=SUM, timeout=None).
        tensors = forms.tensor_list(tensors)
        if not forms.is_options(opts):
            opts = forms.options(dist.ReduceOptions, None, timeout,
                                 rootRank=opts if root is None else root,
                                 reduceOp=op)
        op, root, t = _reduce_op(opts.reduceOp), opts.rootRank, _timeout(opts)
        works = [self._comm.reduce(x, root, op, True, timeout=t)
                 for x in tensors]
        return self._work(opts, works, tensors)

    def barrier(self, opts=None, timeout=None):
        # Short form: barrier(timeout=None).
        if not forms.is_options(opts):
            opts = forms.options(dist.BarrierOptions, None,
                                 forms.timeout_in(opts) or timeout)
        sync = not opts.asyncOp
        works = [self._comm.barrier(not sync, timeout=_timeout(opts))]
        return self._work(opts, works, [])

    def monitored_barrier(self, timeout=None, wait_all_ranks=False):
        """A barrier that names the ranks which did not reach it in time
        (gloo's semantics; it meets through the store, so it also works
        when the communicator is stuck)."""
        monitored.barrier(self, timeout, wait_all_ranks)

    # ---- gathers ------------------------------------------------------------

    def allgather(self, output_tensors, input_tensors, opts=None,
                  timeout=None):
        if isinstance(input_tensors, torch.Tensor):
            # Short form: allgather([outputs], t, timeout=None).
            output_tensors, input_tensors = [output_tensors], [input_tensors]
            opts = forms.options(forms.AllgatherOptions, None,
                                 forms.timeout_in(opts) or timeout)
        t = _timeout(opts)
        works = [self._comm.all_gather(outs, x, True, timeout=t)
                 for outs, x in zip(output_tensors, input_tensors)]
        return self._work(opts, works, output_tensors)

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        """output_lists[r][i] receives input i of rank r (torch's layout for
        all_gather_coalesced: the outer list is over ranks, unlike
        allgather's, whose outer list is over inputs)."""
        n = self.size()
        if len(output_lists) != n or any(
                len(outs) != len(input_list) for outs in output_lists):
            raise _C.InvalidArgumentError(
                f"allgather_coalesced: output_tensor_lists must hold "
                f"{n} lists (one per rank) of {len(input_list)} tensors "
                f"(one per input); got {len(output_lists)} lists of "
                f"{[len(o) for o in output_lists]}")
        t = _timeout(opts)
        works = [self._comm.all_gather([outs[i] for outs in output_lists], x,
                                       True, timeout=t)
                 for i, x in enumerate(input_list)]
        return self._work(opts, works, output_lists)

    def all_gather_single(self, output, input, opts=None):
        return self.all_gather_single_coalesced([output], [input], opts)

    _allgather_base = all_gather_single

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        t = _timeout(opts)
        if opts is not None and not opts.asyncOp and len(outputs) == 1:
            # torch waits at once: the blocking call's short way.
            self._comm.all_gather_single(outputs[0], inputs[0], False,
                                         timeout=t)
            return done(outputs)
        works = [self._comm.all_gather_single(o, x, True, timeout=t)
                 for o, x in zip(outputs, inputs)]
        return self._work(opts, works, outputs)

    allgather_into_tensor_coalesced = all_gather_single_coalesced

    def gather(self, output_tensors, input_tensors, opts=None, timeout=None,
               root=None):
        if isinstance(input_tensors, torch.Tensor):
            # Short form: gather([outputs], t, root, timeout=None).
            output_tensors, input_tensors = [output_tensors], [input_tensors]
        if not forms.is_options(opts):
            opts = forms.options(dist.GatherOptions, None, timeout,
                                 rootRank=opts if root is None else root)
        root, t = opts.rootRank, _timeout(opts)
        outs = output_tensors[0] if self.rank() == root else None
        works = [self._comm.gather(outs, input_tensors[0], root, True,
                                   timeout=t)]
        return self._work(opts, works, output_tensors)

    # ---- scatters -----------------------------------------------------------

    def scatter(self, output_tensors, input_tensors, opts=None, timeout=None,
                root=None):
        if isinstance(output_tensors, torch.Tensor):
            # Short form: scatter(t, [inputs], root, timeout=None).
            output_tensors, input_tensors = [output_tensors], [input_tensors]
        if not forms.is_options(opts):
            opts = forms.options(dist.ScatterOptions, None, timeout,
                                 rootRank=opts if root is None else root)
        root, t = opts.rootRank, _timeout(opts)
        ins = input_tensors[0] if self.rank() == root else None
        works = [self._comm.scatter(output_tensors[0], ins, root, True,
                                    timeout=t)]
        return self._work(opts, works, output_tensors)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None,
                       timeout=None, op=None):
        if isinstance(output_tensors, torch.Tensor):
            # Short form: reduce_scatter(t, [inputs], op=SUM, timeout=None).
            output_tensors, input_tensors = [output_tensors], [input_tensors]
        if not forms.is_options(opts):
            opts = forms.options(dist.ReduceScatterOptions, None, timeout,
                                 reduceOp=opts if op is None else op)
        op, t = _reduce_op(opts.reduceOp), _timeout(opts)
        works = [self._comm.reduce_scatter(o, ins, op, True, timeout=t)
                 for o, ins in zip(output_tensors, input_tensors)]
        return self._work(opts, works, output_tensors)

    def reduce_scatter_single(self, output, input, opts=None):
        return self.reduce_scatter_single_coalesced([output], [input], opts)

    _reduce_scatter_base = reduce_scatter_single

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        opts = opts or dist.ReduceScatterOptions()
        op, t = _reduce_op(opts.reduceOp), _timeout(opts)
        if not opts.asyncOp and len(outputs) == 1:
            self._comm.reduce_scatter_single(outputs[0], inputs[0], op, False,
                                             timeout=t)
            return done(outputs)
        works = [self._comm.reduce_scatter_single(o, x, op, True, timeout=t)
                 for o, x in zip(outputs, inputs)]
        return self._work(opts, works, outputs)

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    # ---- all-to-all ---------------------------------------------------------

    def all_to_all_single(self, output, input, output_split_sizes,
                          input_split_sizes, opts=None):
        t = _timeout(opts)
        if (not output_split_sizes and not input_split_sizes
                and input.dim() and input.shape[0] % self.size() == 0):
            w = self._comm.all_to_all_single(output, input, True, timeout=t)
        else:
            # Split sizes count rows of the first dimension; empty lists
            # mean equal splits.
            w = self._comm.all_to_all_v_single(
                output, input, list(output_split_sizes),
                list(input_split_sizes), True, timeout=t)
        return self._work(opts, [w], [output])

    alltoall_base = all_to_all_single

    def alltoall(self, output_tensors, input_tensors, opts=None):
        works = [self._comm.all_to_all(output_tensors, input_tensors, True,
                                       timeout=_timeout(opts))]
        return self._work(opts, works, output_tensors)

    # ---- point-to-point -----------------------------------------------------

    def send(self, tensors, dst, tag=0):
        return Work([self._comm.send(x, dst, True, tag=tag)
                     for x in tensors], tensors, self._completer, False)

    def recv(self, tensors, src, tag=0):
        return Work([self._comm.recv(x, src, True, tag=tag)
                     for x in tensors], tensors, self._completer, False)

    def recv_anysource(self, tensors, tag=0):
        """Receives from whichever rank sends with `tag` first; the Work's
        _source_rank() names it (torch's recv returns it)."""
        if len(tensors) != 1:
            raise _C.InvalidArgumentError(
                f"recv_anysource: expected one tensor, got {len(tensors)}")
        w = self._comm.recv(tensors[0], None, True, tag=tag)
        return Work([w], tensors, self._completer, False, source=w)


profiled(ProcessGroupShoal)
