"""Arrays in shared memory: shoal.empty, zeros, empty_like, zeros_like.

Collectives whose buffers lie in a communicator's shared heap skip a copy:
peers read them in place instead of through staging memory or the kernel
(a large all_reduce runs several times faster). ``shoal.empty``
returns a torch tensor (or a numpy array) whose memory comes from
``shoal_alloc`` on a communicator::

    grads = shoal.empty(1 << 20, dtype=torch.float32, comm=comm)
    comm.all_reduce(grads, shoal.ReduceOp.SUM)     # the zero-copy path

The memory belongs to a small object (``shoal._C.Block``) that every array
and view made from it keeps alive, so it is freed when the last of them is
garbage collected, whatever slicing, reshaping or numpy/torch conversion
happened in between. Use it with the communicator it was allocated on
(with another one it is ordinary memory: correct, but not zero-copy).

Lifetime and finalize: a block keeps its communicator object alive.
``comm.finalize()`` while such arrays exist ends the communicator for
operations at once (later calls raise ShoalError), but its shared memory
stays mapped until the last array over it is collected, which then
releases the communicator. Arrays are never left dangling, freeing them
after finalize is safe, and nothing else is deferred: work in flight was
already waited for by finalize.

At interpreter exit (torch never frees tensors then) the communicators
that such arrays keep alive are finalized and destroyed, so that peers see
a clean goodbye; the arrays' memory stays mapped, so exit code that still
reads them works.

``shoal.share_memory_(t, comm)`` moves an existing torch tensor's storage
into shared memory in place (every view follows): shoal.ddp uses it to put
DDP's gradient buckets there.
"""

import atexit
import sys
import weakref

from . import _C, _dtypes

InvalidArgumentError = _C.InvalidArgumentError

# address -> live Block, for is_shared (blocks vanish when collected).
_blocks = weakref.WeakValueDictionary()

# torch never frees tensors at exit: end the communicators their blocks
# keep alive then (memory stays mapped; see shoal/_C/alloc_exit.c).
atexit.register(_C.Block.release_at_exit)


def empty(*size, dtype=None, comm=None, array=None, requires_grad=False):
    """A new uninitialised array in `comm`'s shared memory.

    size: ints or one sequence of ints, as torch.empty. dtype: a torch
    dtype, a numpy dtype or its name ("float32"); default torch's default
    dtype (float32 for numpy). comm: the shoal.Comm whose collectives will
    use the array (or a process group of backend "shoal"; default: the
    default process group, when it is a shoal one). array: "torch" or
    "numpy"; default torch when dtype is not a numpy dtype and torch is
    installed, else numpy. requires_grad: torch only, as torch.empty.

    The memory is freed when the last array or view over it is collected;
    it stays valid after comm.finalize() (which then defers releasing the
    communicator to that moment). See the module's docstring.
    """
    shape = _shape(size)
    lib = _library(array, dtype)
    c = _resolve_comm(comm)
    if lib == "torch":
        return _torch_array(c, shape, dtype, requires_grad)
    if requires_grad:
        raise InvalidArgumentError("empty: requires_grad needs array='torch'")
    return _numpy_array(c, shape, dtype)


def zeros(*size, dtype=None, comm=None, array=None, requires_grad=False):
    """As empty, filled with zeros."""
    x = empty(*size, dtype=dtype, comm=comm, array=array)
    x[...] = 0
    if requires_grad:
        x.requires_grad_(True)
    return x


def empty_like(x, *, dtype=None, comm=None):
    """An array of x's shape, dtype (unless given) and library, in shared
    memory."""
    lib = "torch" if _is_torch(x) else "numpy"
    return empty(tuple(x.shape), dtype=dtype if dtype is not None
                 else x.dtype, comm=comm, array=lib)


def zeros_like(x, *, dtype=None, comm=None):
    """As empty_like, filled with zeros."""
    y = empty_like(x, dtype=dtype, comm=comm)
    y[...] = 0
    return y


def share_memory_(tensor, comm=None):
    """Moves a torch tensor's whole storage into `comm`'s shared memory, in
    place: the tensor and every other view of that storage (a DDP bucket's
    gradient views, say) read and write shared memory from now on. The
    contents are kept; the old memory is freed. Returns the tensor.

    Uses torch's private UntypedStorage._swap_data_ptr_ (torch 2.13 has
    it); raises InvalidArgumentError where torch lacks it. A storage already in
    shoal memory is left as it is.
    """
    import torch

    if not _is_torch(tensor):
        raise InvalidArgumentError(
            "share_memory_: needs a torch tensor (use shoal.empty for numpy)")
    storage = tensor.untyped_storage()
    nbytes = storage.nbytes()
    c = _resolve_comm(comm)
    if nbytes == 0 or _in_block(storage.data_ptr(), nbytes, c):
        return tensor
    swap = getattr(storage, "_swap_data_ptr_", None)
    if swap is None:
        raise InvalidArgumentError(
            f"share_memory_: torch {torch.__version__} cannot replace a "
            "storage's memory (UntypedStorage._swap_data_ptr_)")
    twin = _torch_array(c, (nbytes,), torch.uint8, False)
    with torch.no_grad():
        twin.copy_(torch.empty(0, dtype=torch.uint8).set_(
            storage, 0, (nbytes,), (1,)))
    swap(twin.untyped_storage())  # twin now holds the old memory
    return tensor


def is_shared(x, comm=None):
    """True when array x lies wholly in memory from shoal.empty & co (on
    `comm`, when given): the arrays collectives use without a copy."""
    start, nbytes = _extent(x)
    return _in_block(start, nbytes,
                     None if comm is None else _resolve_comm(comm))


def _in_block(start, nbytes, c):
    """True when [start, start + nbytes) lies in a live block (of c)."""
    for address, block in list(_blocks.items()):
        if c is not None and block.comm is not c:
            continue
        if address <= start and start + nbytes <= address + block.nbytes:
            return True
    return False


# ---- the two libraries -----------------------------------------------------


def _new_block(c, nbytes):
    block = _C.Block(c, nbytes)
    _blocks[block.address] = block
    return block


def _torch_array(c, shape, dtype, requires_grad):
    import torch

    dt = _dtypes.torch_dtype(torch, dtype)
    code, bits = _dtypes.dl_type(torch, dt)
    count = _count(shape)
    block = _new_block(c, count * (bits // 8))
    t = torch.from_dlpack(block.dlpack(shape, code, bits))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _numpy_array(c, shape, dtype):
    import numpy as np

    try:
        dt = np.dtype("float32" if dtype is None else _dtypes.name_of(dtype))
    except TypeError as e:
        raise InvalidArgumentError(f"empty: dtype {dtype!r}: {e}") from None
    count = _count(shape)
    block = _new_block(c, count * dt.itemsize)
    # The array's base chain ends at the block, which frees the memory.
    return np.frombuffer(block, dtype=dt, count=count).reshape(shape)


# ---- arguments -------------------------------------------------------------


def _shape(size):
    if len(size) == 1 and not isinstance(size[0], int):
        size = tuple(size[0])  # empty((2, 3)), empty([2, 3]), torch.Size
    try:
        shape = tuple(int(d) for d in size)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"empty: size {size!r} is not a sequence of ints") from None
    if any(d < 0 for d in shape):
        raise InvalidArgumentError(f"empty: negative dimension in {shape}")
    return shape


def _count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _library(array, dtype):
    if array is not None:
        if array not in ("torch", "numpy"):
            raise InvalidArgumentError(
                f"empty: array must be 'torch' or 'numpy', not {array!r}")
        return array
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(dtype, torch.dtype):
        return "torch"
    np = sys.modules.get("numpy")
    if np is not None and dtype is not None and not isinstance(dtype, str):
        try:
            np.dtype(dtype)
            return "numpy"  # a numpy dtype or scalar type
        except TypeError:
            pass
    try:
        import torch  # noqa: F401
        return "torch"
    except ImportError:
        return "numpy"


def _resolve_comm(comm):
    """The shoal._C.Comm behind `comm` (a shoal.Comm, a shoal._C.Comm, or
    a torch.distributed process group of backend "shoal")."""
    if comm is None:
        comm = _default_group()
    if isinstance(comm, _C.Comm):
        c = comm
    elif isinstance(getattr(comm, "_c", None), _C.Comm):
        c = comm._c  # shoal.Comm
    else:
        c = _comm_of_group(comm)
    if c.finalized:
        raise _C.ShoalError("empty: the communicator was finalized")
    return c


def _default_group():
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.group.WORLD
    raise InvalidArgumentError(
        "empty: pass comm= (a shoal.Comm, or a process group of backend "
        "'shoal'): the memory lies in that communicator's shared heap")


def _comm_of_group(group):
    """The shoal._C.Comm of a torch.distributed process group of backend
    "shoal" (its ``comm`` attribute is a shoal.Comm)."""
    c = getattr(getattr(group, "comm", None), "_c", None)
    if not isinstance(c, _C.Comm):
        raise InvalidArgumentError(
            f"empty: comm={group!r} is neither a shoal.Comm nor a process "
            "group of backend 'shoal'")
    return c


def _is_torch(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _extent(x):
    """(first address, bytes spanned) of an array's elements."""
    if _is_torch(x):
        if x.numel() == 0:
            return x.data_ptr(), 0
        last = sum((d - 1) * s for d, s in zip(x.shape, x.stride()))
        return x.data_ptr(), (last + 1) * x.element_size()
    np = sys.modules.get("numpy")
    if np is not None:
        a = np.asarray(x)
        lo, hi = np.lib.array_utils.byte_bounds(a) \
            if hasattr(np.lib, "array_utils") else np.byte_bounds(a)
        return lo, hi - lo
    raise InvalidArgumentError(
        f"is_shared: a {type(x).__name__} needs numpy to be located")
