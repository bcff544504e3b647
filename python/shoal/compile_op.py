"""compile_op: custom collectives from boxes of global tensors.

Every rank lists the boxes of the global tensor it holds (inputs) and the
boxes it wants (outputs), as ``{'offset': [...], 'shape': [...]}`` dicts,
TensorRegions or DTensors; shoal plans the transfers once (in C, on every
rank, from everyone's specs) and the returned CustomOp runs them as often
as needed::

    op = shoal.compile_op(group, shape=[8, 16], dtype=torch.float32,
                          inputs=[{'offset': [r * 2, 0], 'shape': [2, 16]}],
                          outputs=[{'offset': [0, 0], 'shape': [8, 16]}])
    op([local_in], [local_out]).wait()

Several tensors in one op (all of a layer's parameters, say): regions that
carry a ``tensor_id`` are boxes of that tensor, each tensor with its own
dimensions, all of the op's one dtype. The op then takes one local tensor
per tensor_id, in the order the ids first appear among the rank's inputs
(likewise for its outputs), each holding that whole tensor::

    op = shoal.compile_op(group, dtype=torch.float32, inputs=[
            {'offset': [r * 2, 0], 'shape': [2, 16], 'tensor_id': 'weight'},
            {'offset': [r * 4], 'shape': [4], 'tensor_id': 'bias'}],
        outputs=[{'offset': [0, 0], 'shape': [8, 16], 'tensor_id': 'weight'},
                 {'offset': [0], 'shape': [16], 'tensor_id': 'bias'}])
    op([weight, bias], [weight, bias]).wait()   # gathered in place

``shape`` is then left out (each tensor reaches as far as its furthest
region on any rank) or a dict {tensor_id: shape}. A rank's regions either
all carry a tensor_id or none do.

Overlapping inputs: with ``reduction=None`` an element takes the value of
the last input covering it, where inputs are ordered by rank, then by their
position in the rank's list: the highest rank wins, and within it the last
listed input. With a reduction ('sum', 'prod', 'min', 'max', 'avg' or
'mean') every covering input is combined, in that order, so results are
bitwise identical on every rank; 'avg' divides by the number of inputs
covering each element.

Errors in the specs (disagreeing shapes or dtypes, boxes outside the
shape, output elements nobody provides, malformed arguments on any rank)
raise the same InvalidArgumentError on every rank, and the group stays
usable; so do tensors that do not match the compiled specs.
"""

from . import _C, _arrays, _regions
from ._groups import find_process_group, native_comm
from ._dtypes import name_of as _dtype_name
from ._regions import TensorRegion

InvalidArgumentError = _C.InvalidArgumentError

_REDUCTIONS = {None: -1, "sum": _C.OPS["sum"], "prod": _C.OPS["prod"],
               "min": _C.OPS["min"], "max": _C.OPS["max"],
               "avg": _C.OPS["avg"], "mean": _C.OPS["avg"]}

def _shoal_comm(group):
    if isinstance(group, str):
        found = find_process_group(group)
        if found is None:
            raise InvalidArgumentError(
                f"compile_op: no live shoal group is named {group!r}")
        group = found
    c = native_comm(group)
    if c is None:
        raise InvalidArgumentError(
            "compile_op: group must be a shoal communicator, a torch "
            "ProcessGroup of backend 'shoal', or a group's name; got "
            f"{type(group).__name__} (a gloo or nccl group cannot run "
            "shoal's plans)")
    return c


# ---- specs ---------------------------------------------------------------------

_SpecError = _regions.SpecError


def _complaint(e):
    """The text every rank raises for this rank's exception: our own
    messages as they are, anything else prefixed with its type."""
    if isinstance(e, (_SpecError, InvalidArgumentError)):
        return str(e)
    return f"{type(e).__name__}: {e}"


def _is_dtensor(x):
    t = _arrays._torch()
    if t is None:
        return False
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:
        return False
    return isinstance(x, DTensor)


_ints = _regions.ints


def _dict_box(spec, what, ndim):
    offset, shape, _ = _regions.fields(spec, what)
    if len(offset) != ndim or len(shape) != ndim:
        raise _SpecError(
            f"{what} has offset {offset} and shape {shape}, but the global "
            f"shape has {ndim} dimension{'s' if ndim != 1 else ''}")
    return offset, shape


class _Box:
    """One entry of inputs/outputs: its global box, whether this rank takes
    part through it, and the local tensor shape the op expects for it."""

    def __init__(self, offset, shape, active=True, local_shape=None):
        self.offset = offset
        self.shape = shape
        self.active = active
        self.local_shape = tuple(shape if local_shape is None
                                 else local_shape)


def _dtensor_box(dt, what, role, reduction):
    from torch.distributed.tensor import Partial, Replicate, Shard
    from torch.distributed.tensor._utils import (
        compute_local_shape_and_global_offset)

    mesh, placements = dt.device_mesh, tuple(dt.placements)
    coord = mesh.get_coordinate()
    if coord is None:
        raise _SpecError(f"{what}: this rank is not in the DTensor's mesh")
    active = True
    for dim, p in enumerate(placements):
        if type(p) is Partial:
            if role == "outputs":
                raise _SpecError(
                    f"{what} is Partial on mesh dimension {dim}: outputs "
                    "must be Shard or Replicate (the op combines partial "
                    "inputs into them)")
            op = str(getattr(p, "reduce_op", "sum")).lower()
            op = "avg" if op == "mean" else op
            if reduction is None:
                raise _SpecError(
                    f"{what} is Partial({op}) on mesh dimension {dim}: pass "
                    f"reduction={op!r} to combine the partial values")
            if _REDUCTIONS[reduction] != _REDUCTIONS.get(op):
                raise _SpecError(
                    f"{what} is Partial({op}) on mesh dimension {dim}, but "
                    f"the reduction is {reduction!r}")
        elif type(p) is Replicate:
            # One copy per replica group is enough, and needed with a
            # reduction: the others would be counted again.
            if role == "inputs" and coord[dim] != 0:
                active = False
        elif type(p) is not Shard:
            raise _SpecError(
                f"{what} has placement {p!r} on mesh dimension {dim}: "
                "compile_op supports Shard, Replicate and Partial")
    local_shape, offset = compute_local_shape_and_global_offset(
        dt.shape, mesh, placements)
    return _Box(list(offset), list(local_shape), active, local_shape)


def _parse(entries, what, ndim, reduction):
    if entries is None:
        return []
    if isinstance(entries, (dict, TensorRegion)) or _is_dtensor(entries):
        raise _SpecError(f"{what} must be a list of boxes, not a single "
                         f"{type(entries).__name__}")
    boxes = []
    for i, e in enumerate(entries):
        name = f"{what}[{i}]"
        if _is_dtensor(e):
            boxes.append(_dtensor_box(e, name, what, reduction))
        else:
            offset, shape = _dict_box(e, name, ndim)
            boxes.append(_Box(offset, shape))
    return boxes


def _checked_dtype(dtype):
    """The name of a dtype shoal moves."""
    if dtype is None:
        raise _SpecError("dtype is missing (pass dtype=, or DTensors as "
                         "inputs or outputs)")
    name = _dtype_name(dtype)
    if name not in _C.DTYPES:
        raise _SpecError(f"dtype {dtype} is not one shoal moves (it moves "
                         f"{', '.join(_C.DTYPES)})")
    return name


def _global_shape_and_dtype(shape, dtype, entries):
    dts = [e for e in entries if _is_dtensor(e)]
    if shape is None and dts:
        shape = list(dts[0].shape)
    if dtype is None and dts:
        dtype = dts[0].dtype
    if shape is None:
        raise _SpecError("shape is missing (pass shape=, or DTensors as "
                         "inputs or outputs)")
    name = _checked_dtype(dtype)
    shape = _ints(shape, "shape")
    for i, d in enumerate(dts):
        if list(d.shape) != shape or _dtype_name(d.dtype) != name:
            raise _SpecError(
                f"a DTensor has global shape {list(d.shape)} and dtype "
                f"{_dtype_name(d.dtype)}, the op {shape} and {name}")
    return shape, name


def compile_op(group, shape=None, dtype=None, inputs=None, outputs=None,
               reduction=None):
    """Compiles a custom collective over `group` (collective: every rank of
    the group calls it, in the same order as its other collectives).

    group: a shoal.Comm, a torch ProcessGroup of backend "shoal", or the
    name of one (see find_process_group). shape, dtype: the global tensor's
    (taken from the DTensors when omitted). inputs / outputs: lists of
    {'offset', 'shape'} dicts (optionally 'device', which must be the CPU),
    TensorRegions or DTensors (meta DTensors too), or None.
    reduction: None, 'sum', 'prod', 'min', 'max', 'avg' or 'mean'.

    Regions with a 'tensor_id' (a str; an int means its str) make an op
    over several tensors: see the module's text. shape is then None or a
    dict {tensor_id: shape}; a rank with no regions and no shape takes no
    part. Returns a CustomOp."""
    c = _shoal_comm(group)
    try:
        reduction, red = _checked_reduction(reduction)
        several = _regions.several_tensors(inputs, outputs, shape)
    except Exception as e:  # noqa: BLE001: every rank must hear of it
        _fail_together(c, _complaint(e))
    compile_form = _compile_several if several else _compile_one
    return compile_form(c, shape, dtype, inputs, outputs, red, reduction)


def _checked_reduction(reduction):
    """(reduction's name, its code for the plan)."""
    if reduction is not None and not isinstance(reduction, str):
        raise _SpecError(f"reduction must be None or a string, not "
                         f"{reduction!r}")
    if reduction is not None:
        reduction = reduction.lower()
    if reduction not in _REDUCTIONS:
        raise _SpecError(
            f"unknown reduction {reduction!r} (use None, 'sum', 'prod', "
            "'min', 'max', 'avg' or 'mean')")
    return reduction, _REDUCTIONS[reduction]


def _fail_together(c, complaint):
    """Takes part in the compile with this rank's complaint: every rank
    raises the same InvalidArgumentError."""
    _C.Plan(c, [], _C.DTYPES["float32"], -1, [], [], complaint)
    raise AssertionError("a plan was compiled despite a complaint")


def _compile_one(c, shape, dtype, inputs, outputs, red, reduction):
    """compile_op over the one tensor of `shape`."""
    error, ndim_shape, dtype_name, ins, outs = None, [], "float32", [], []
    try:
        entries = list(inputs or []) + list(outputs or [])
        ndim_shape, dtype_name = _global_shape_and_dtype(shape, dtype,
                                                         entries)
        ins = _parse(inputs, "inputs", len(ndim_shape), reduction)
        outs = _parse(outputs, "outputs", len(ndim_shape), reduction)
    except Exception as e:  # noqa: BLE001: every rank must hear of it
        error = _complaint(e)
        ndim_shape, ins, outs = [], [], []
    plan = _C.Plan(c, ndim_shape, _C.DTYPES[dtype_name], red,
                   [(b.offset, b.shape) for b in ins if b.active],
                   [(b.offset, b.shape) for b in outs], error)
    return CustomOp(plan, ndim_shape, dtype_name, reduction, ins, outs)


def _compile_several(c, shape, dtype, inputs, outputs, red, reduction):
    """compile_op over tensors named by the regions' tensor_ids."""
    error, tensors, ins, outs, dtype_name = None, [], [], [], "float32"
    try:
        dtype_name = _checked_dtype(dtype)
        tensors, ins, outs = _regions.several_tensors_spec(inputs, outputs,
                                                           shape)
    except Exception as e:  # noqa: BLE001: every rank must hear of it
        error, tensors, ins, outs = _complaint(e), [], [], []
    plan = _C.Plan(c, [], _C.DTYPES[dtype_name], red, ins, outs, error,
                   tensors=tensors)
    return CustomOp(plan, None, dtype_name, reduction, None, None)


class Future:
    """One run of a CustomOp. wait() blocks until the outputs are written
    (raising the run's error); a Future dropped without wait() (the
    statement form ``op(ins, outs)``) waits when it is destroyed, so the
    tensors stay valid until the run is over. If that run failed, its
    outputs are undefined and the error is not lost: it goes to
    sys.unraisablehook, and the next call on the op or on its communicator
    raises it."""

    __slots__ = ("_op", "_run", "_done", "_error")

    def __init__(self, op, run):
        self._op = op
        self._run = run
        self._done = False
        self._error = None

    def _in_flight(self):
        return self._op._current == self._run

    def wait(self):
        if not self._done:
            self._done = True
            if self._in_flight():
                self._op._current = None
                try:
                    self._op._plan.wait()
                except BaseException as e:
                    self._error = e
        if self._error is not None:
            raise self._error
        return None

    def done(self):
        """True once the run is over (then wait() returns at once, or
        raises the run's error)."""
        if self._done or not self._in_flight():
            return True
        try:
            if not self._op._plan.test():
                return False
        except BaseException as e:
            self._error = e
        self._done = True
        self._op._current = None
        return True

    def __del__(self):
        if not self._done:
            try:
                self.wait()
            except Exception as e:  # noqa: BLE001: nobody else will see it
                self._op._report_dropped(e, self)

    def __repr__(self):
        return f"<shoal.Future {'done' if self._done else 'pending'}>"


class CustomOp:
    """A compiled custom collective: op(input_tensors, output_tensors)
    starts a run and returns a Future. Collective: every rank runs its ops
    in the same order. Tensors may have any strides and must have the op's
    dtype. With one tensor, each has its box's shape (a DTensor's local
    shape); with several (tensor_ids), there is one per tensor_id, in the
    order of ``tensor_ids``, each with its whole tensor's shape."""

    def __init__(self, plan, shape, dtype, reduction, ins, outs):
        self._plan = plan
        self.shape = None if shape is None else tuple(shape)
        self.dtype = dtype
        self.reduction = reduction
        self._ins = ins  # None: one local tensor per tensor_id
        self._outs = outs
        # (input ids, output ids): the tensor_ids of the tensors a run
        # takes, with several tensors (else None).
        self.tensor_ids = None if ins is not None else tuple(
            tuple(name for name, _ in side) for side in plan.local_tensors)
        self._current = None  # number of the run in flight
        self._runs = 0

    def _report_dropped(self, error, future):
        """A run whose Future was dropped failed: to sys.unraisablehook,
        and raised by the next call on this op or its communicator."""
        self._plan.comm._note_dropped(error, future)

    @property
    def bytes(self):
        """(sent, received): bytes this rank moves per run."""
        return self._plan.bytes

    def describe(self):
        """This rank's part of the plan, as text (SHOAL_DEBUG=TRACE logs
        it at compile time)."""
        return self._plan.format()

    def _buffer(self, t, what, i, label, want):
        t = _arrays.normalize(t, f"{what}[{i}]")
        buf = _arrays.buffer(t, writable=(what == "output"))
        if tuple(buf.shape) != want:
            raise _SpecError(f"{what}[{i}]{label} has shape "
                             f"{tuple(buf.shape)}, the op expects {want}")
        if buf.dtype != self.dtype:
            raise _SpecError(f"{what}[{i}]{label} is {buf.dtype}, the op "
                             f"moves {self.dtype}")
        return buf

    def _check(self, tensors, boxes, what):
        if tensors is None:
            tensors = []
        if boxes is None:
            return self._check_per_tensor_id(tensors, what)
        if len(tensors) != len(boxes):
            raise _SpecError(f"{len(tensors)} {what} tensors given, the op "
                             f"was compiled with {len(boxes)}")
        bufs = []
        for i, (t, b) in enumerate(zip(tensors, boxes)):
            buf = self._buffer(t, what, i, "", b.local_shape)
            if what == "input" and not b.active:
                continue  # a replica another rank sends for
            bufs.append(buf)
        return bufs

    def _check_per_tensor_id(self, tensors, what):
        side = self._plan.local_tensors[what == "output"]
        if len(tensors) != len(side):
            ids = ", ".join(repr(name) for name, _ in side) or "none"
            raise _SpecError(
                f"{len(tensors)} {what} tensors given, the op was compiled "
                f"with {len(side)}: one per tensor_id of this rank's "
                f"{what}s, in the order they first appear ({ids})")
        return [self._buffer(t, what, i, f" (tensor_id {name!r}, all of it)",
                             shape)
                for i, (t, (name, shape)) in enumerate(zip(tensors, side))]

    def __call__(self, input_tensors, output_tensors):
        if self._current is not None:
            # The previous run's Future is still out: finish that run first
            # (its error, if any, is raised here).
            self._current = None
            self._plan.wait()
        error, ins, outs = None, [], []
        try:
            ins = self._check(input_tensors, self._ins, "input")
            outs = self._check(output_tensors, self._outs, "output")
        except Exception as e:  # noqa: BLE001: every rank must hear of it
            error, ins, outs = _complaint(e), [], []
        self._plan.start(ins, outs, error)
        self._runs += 1
        self._current = self._runs
        return Future(self, self._runs)

    def __repr__(self):
        red = self.reduction or "none"
        if self.tensor_ids is not None:
            ins, outs = (list(ids) for ids in self.tensor_ids)
            return (f"<shoal.CustomOp tensors {ins} -> {outs} {self.dtype}, "
                    f"reduction {red}>")
        return (f"<shoal.CustomOp shape {list(self.shape)} {self.dtype}, "
                f"reduction {red}, {len(self._ins)} inputs, "
                f"{len(self._outs)} outputs>")
