"""shoal: collective communication for tensors on CPUs.

A torchcomms-style API over libshoal::

    import shoal
    comm = shoal.new_comm("shoal", "cpu", name="main")
    comm.all_reduce(t, shoal.ReduceOp.SUM, async_op=True).wait()
    comm.finalize()

Works with torch tensors, numpy arrays and any object with ``__dlpack__`` or
the buffer protocol; torch is not needed to import shoal.
"""

import os as _os

from . import _C
from ._C import (
    AbortedError,
    CommTimeoutError,
    InvalidArgumentError,
    MismatchError,
    PeerError,
    RevokedError,
    ShoalError,
)
from ._batch import BatchP2POptions, BatchSendRecv, P2POp
from ._bootstrap import new_comm
from .comm import Comm
from .compile_op import CustomOp, Future, TensorRegion, compile_op
from ._deadline import deadline
from ._flight import dump_flight_record, dump_flight_record_on_signal
from ._groups import find_process_group
from .memory import (empty, empty_like, is_shared, share_memory_, zeros,
                     zeros_like)
from ._options import CommOptions
from .queue import Empty, Full, Queue, open_queue_channel
from ._reduce_op import ReduceOp, RedOpType
from ._work import Work
from .window import WinAccessType, Window, WindowAttr, new_window
from . import tune

__version__ = "%d.%d.%d" % (_C.version() // 10000, _C.version() // 100 % 100,
                            _C.version() % 100)

__all__ = [
    "AbortedError", "BatchP2POptions", "BatchSendRecv", "Comm",
    "CommOptions", "CommTimeoutError", "CustomOp", "Empty", "Full",
    "Future", "P2POp", "Queue", "open_queue_channel",
    "TensorRegion", "deadline", "dump_flight_record",
    "dump_flight_record_on_signal",
    "InvalidArgumentError", "compile_op", "find_process_group",
    "MismatchError", "PeerError", "RedOpType", "ReduceOp", "RevokedError",
    "ShoalError",
    "Work", "get_include", "get_library_dir", "new_comm",
    "empty", "empty_like", "is_shared", "share_memory_", "zeros",
    "zeros_like", "new_window", "Window", "WindowAttr", "WinAccessType",
    "tune",
]


def get_include():
    """Directory holding shoal.h (for building C code against libshoal)."""
    return _os.path.join(_os.path.dirname(__file__), "include")


def get_library_dir():
    """Directory holding libshoal.so."""
    return _os.path.join(_os.path.dirname(__file__), "lib")

# torch.distributed backend "shoal": registered now or once torch loads.
from . import _c10d_hook  # noqa: E402

_c10d_hook.install()
