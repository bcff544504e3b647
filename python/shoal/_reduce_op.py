"""Reduction operations, as torchcomms spells them."""

import enum

from . import _C


class RedOpType(enum.IntEnum):
    """torchcomms' operation codes (the value of ``ReduceOp.type``)."""

    SUM = 0
    PRODUCT = 1
    MIN = 2
    MAX = 3
    BAND = 4
    BOR = 5
    BXOR = 6
    PREMUL_SUM = 7
    AVG = 8


# libshoal's shoal_op_kind for each type.
_KIND = {
    RedOpType.SUM: _C.OPS["sum"],
    RedOpType.PRODUCT: _C.OPS["prod"],
    RedOpType.MIN: _C.OPS["min"],
    RedOpType.MAX: _C.OPS["max"],
    RedOpType.BAND: _C.OPS["band"],
    RedOpType.BOR: _C.OPS["bor"],
    RedOpType.BXOR: _C.OPS["bxor"],
    RedOpType.AVG: _C.OPS["avg"],
    RedOpType.PREMUL_SUM: _C.OPS["premul_sum"],
}


class ReduceOp:
    """An immutable reduction: ``ReduceOp.SUM`` ... ``ReduceOp.AVG``, or
    ``ReduceOp.PREMUL_SUM(factor)`` (multiply each input by factor, then
    sum; floating types only)."""

    __slots__ = ("_type", "_factor", "_c_args")

    def __init__(self, type, factor=None):
        type = RedOpType(type)
        object.__setattr__(self, "_type", type)
        object.__setattr__(self, "_factor", factor)
        object.__setattr__(self, "_c_args",
                           (_KIND[type], float(factor or 0.0)))

    def __setattr__(self, name, value):
        raise AttributeError("ReduceOp is immutable")

    @property
    def type(self):
        return self._type

    @property
    def factor(self):
        return self._factor

    @staticmethod
    def PREMUL_SUM(factor):
        # A one-element tensor is read once, here (as gloo moves it to CPU).
        return ReduceOp(RedOpType.PREMUL_SUM, float(factor))

    def kind_and_scalar(self):
        """(shoal_op_kind, scalar) for the extension."""
        return self._c_args

    def __eq__(self, other):
        return (isinstance(other, ReduceOp) and self._type == other._type
                and self._factor == other._factor)

    def __hash__(self):
        return hash((self._type, self._factor))

    def __repr__(self):
        if self._type is RedOpType.PREMUL_SUM:
            return f"ReduceOp.PREMUL_SUM({self._factor})"
        return f"ReduceOp.{self._type.name}"

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


for _t in RedOpType:
    if _t is not RedOpType.PREMUL_SUM:
        type.__setattr__(ReduceOp, _t.name, ReduceOp(_t))
del _t


def as_reduce_op(op):
    """A ReduceOp from a ReduceOp, a RedOpType, or a name ("sum")."""
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, RedOpType):
        if op is RedOpType.PREMUL_SUM:
            raise _C.InvalidArgumentError(
                "PREMUL_SUM needs a factor: use ReduceOp.PREMUL_SUM(factor)")
        return ReduceOp(op)
    if isinstance(op, str):
        name = op.upper()
        if name in RedOpType.__members__ and name != "PREMUL_SUM":
            return ReduceOp(RedOpType[name])
    raise _C.InvalidArgumentError(
        f"{op!r} is not a reduce operation: use shoal.ReduceOp.SUM, ...")
