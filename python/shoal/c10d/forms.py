"""torch.distributed's two call forms of a process group's methods.

Besides the form torch's own functions use (tensor lists and an Options
object), torch's ProcessGroup takes short forms: ``pg.allreduce(t, op)``,
``pg.broadcast(t, root)``, ``pg.barrier(timeout=...)``, gather and scatter
with single tensors, and so on (the overloads of its pybind methods).
gloo's process group accepts every one, and torchft's tests use them. These
helpers turn either form into the long one.
"""

import datetime

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import AllgatherOptions

__all__ = ["AllgatherOptions", "is_options", "options", "tensor_list",
           "timeout_in"]


def is_options(x):
    """The long form's Options object (torch's classes are not all related
    in Python: AllreduceCoalescedOptions is no AllreduceOptions)."""
    return hasattr(x, "asyncOp")


def options(cls, given, timeout=None, **fields):
    """The Options of a call: `given` when the long form passed one, else
    one made from the short form's fields (an op, a root; None: torch's
    default) and its timeout."""
    if is_options(given):
        return given
    opts = cls()
    for name, value in fields.items():
        if value is not None:
            setattr(opts, name, value)
    if timeout is not None:
        opts.timeout = timeout
    return opts


def tensor_list(x):
    """[x] for a single tensor (the short forms), x itself for a list."""
    return [x] if isinstance(x, torch.Tensor) else x


def timeout_in(value):
    """A short form's positional timeout, or None when `value` is an
    Options object (the long form) or absent."""
    return value if isinstance(value, datetime.timedelta) else None
