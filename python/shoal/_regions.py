"""compile_op's regions: the entries of inputs/outputs as dicts or
TensorRegions, and the several-tensors form they make when they carry a
``tensor_id``.

One tensor (no region carries a tensor_id): every region is a box of the
one global tensor of ``shape``, and the op takes one local tensor per box.

Several tensors (every region of the rank carries one): regions of one
tensor_id are boxes of that tensor, and only boxes of one tensor meet. The
op takes one local tensor per tensor_id, in the order the ids first appear
among the rank's inputs (likewise for the outputs), each holding that
whole tensor. ``shape`` is then None (each tensor reaches as far as its
furthest region on any rank) or a dict {tensor_id: shape}.
"""

from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union


class SpecError(Exception):
    """This rank's own complaint about its arguments: sent to every rank."""


@dataclass
class TensorRegion:
    """A region of a tensor for compile_op's inputs and outputs (moodist's
    spelling): its offset and shape in the global tensor, its device (shoal
    moves CPU tensors), and the tensor it belongs to (``tensor_id``, a str,
    or an int meaning its str; None: the op's one tensor of ``shape``)."""

    offset: Sequence[int]
    shape: Sequence[int]
    device: Any = "cpu"
    tensor_id: Optional[Union[str, int]] = None


def ints(values, what):
    try:
        return [int(v) for v in values]
    except (TypeError, ValueError):
        raise SpecError(f"{what} must be a list of integers, not "
                        f"{values!r}") from None


def _check_device(device, what):
    if device is None:
        return
    name = getattr(device, "type", None) or str(device).split(":")[0]
    if name != "cpu":
        raise SpecError(f"{what} is on device {str(device)!r}; shoal moves "
                        "CPU tensors (device 'cpu')")


def tensor_id_of(value, what):
    """A tensor_id as the op names it: a non-empty str (an int is its
    str, as in moodist), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise SpecError(f"{what}['tensor_id'] must be a str or an int, not "
                        f"{value!r}")
    if value == "":
        raise SpecError(f"{what}['tensor_id'] is empty; name the tensor")
    return str(value)


def fields(entry, what):
    """(offset, shape, tensor_id or None) of a dict or TensorRegion."""
    if isinstance(entry, TensorRegion):
        entry = {"offset": entry.offset, "shape": entry.shape,
                 "device": entry.device, "tensor_id": entry.tensor_id}
    if not isinstance(entry, dict) or "offset" not in entry or \
            "shape" not in entry:
        raise SpecError(f"{what} must be a dict with 'offset' and 'shape' "
                        f"(or a TensorRegion, or a DTensor), not {entry!r}")
    _check_device(entry.get("device"), what)
    offset = ints(entry["offset"], f"{what}['offset']")
    shape = ints(entry["shape"], f"{what}['shape']")
    return offset, shape, tensor_id_of(entry.get("tensor_id"), what)


def _listed(entries, what):
    if entries is None:
        return []
    if isinstance(entries, (dict, TensorRegion)):
        raise SpecError(f"{what} must be a list of regions, not a single "
                        f"{type(entries).__name__}")
    return list(entries)


def _carries_id(entry):
    if isinstance(entry, TensorRegion):
        return entry.tensor_id is not None
    return isinstance(entry, dict) and entry.get("tensor_id") is not None


def several_tensors(inputs, outputs, shape):
    """Whether this rank uses the several-tensors form: its regions carry
    tensor_ids, or shape is a dict, or it has no regions and no shape (a
    rank taking no part names no tensor). Refuses a mix of both forms."""
    named, unnamed = None, None
    for what, entries in (("inputs", inputs), ("outputs", outputs)):
        for i, e in enumerate(_listed(entries, what)):
            if _carries_id(e):
                named = named or f"{what}[{i}]"
            else:
                unnamed = unnamed or f"{what}[{i}]"
    if named and unnamed:
        raise SpecError(
            f"{named} has a tensor_id and {unnamed} has none: give every "
            "region of a rank a tensor_id (a DTensor cannot have one), or "
            "none")
    if named:
        return True
    if isinstance(shape, dict):
        if unnamed:
            raise SpecError(
                "shape is a dict of tensor_ids but the regions have no "
                "tensor_id: give shape as a list, or tensor_ids to regions")
        return True
    return unnamed is None and shape is None


def _tensor_table(inputs, outputs):
    """tensor_id -> (index, ndim, first region), in the order of first
    appearance (inputs, then outputs), and the rank's boxes as (index,
    offset, shape) per direction."""
    table, boxes = {}, ([], [])
    for side, (what, entries) in enumerate((("inputs", inputs),
                                            ("outputs", outputs))):
        for i, e in enumerate(_listed(entries, what)):
            name = f"{what}[{i}]"
            offset, shape, tid = fields(e, name)
            if len(offset) != len(shape):
                raise SpecError(f"{name} has offset {offset} and shape "
                                f"{shape} of different lengths")
            k, ndim, first = table.setdefault(
                tid, (len(table), len(offset), name))
            if ndim != len(offset):
                raise SpecError(
                    f"tensor_id {tid!r}: {first} has {ndim} dimensions, "
                    f"{name} {len(offset)}")
            boxes[side].append((k, offset, shape))
    return table, boxes


def several_tensors_spec(inputs, outputs, shape):
    """The several-tensors spec for _C.Plan: tensors as (name, ndim, shape
    or None) and the input and output boxes as (tensor index, offset,
    shape)."""
    if shape is not None and not isinstance(shape, dict):
        raise SpecError(
            "with tensor_ids, shape must be None (each tensor reaches as "
            "far as its regions) or a dict {tensor_id: shape}, not "
            f"{shape!r}")
    table, (ins, outs) = _tensor_table(inputs, outputs)
    given = {}
    for key, value in (shape or {}).items():
        tid = tensor_id_of(key, "shape")
        given[tid] = ints(value, f"shape[{key!r}]")
        if tid in table and len(given[tid]) != table[tid][1]:
            raise SpecError(
                f"shape[{key!r}] has {len(given[tid])} dimensions, the "
                f"regions of tensor_id {tid!r} {table[tid][1]}")
        if tid not in table:  # named for its shape only
            table[tid] = (len(table), len(given[tid]), "shape")
    tensors = [None] * len(table)
    for tid, (k, ndim, _) in table.items():
        tensors[k] = (tid, ndim, given.get(tid))
    return tensors, ins, outs
