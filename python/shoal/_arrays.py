"""What shoal needs from an array library: views, copies and temporaries.

Operations run on torch tensors, numpy arrays, or any object with
``__dlpack__`` or the buffer protocol. torch and numpy are used only when the
caller's objects come from them (``sys.modules`` is consulted, nothing is
imported for a torch tensor), so ``import shoal`` needs neither. Other
objects are seen through numpy when it is installed, which gives them
copies and temporaries too; without numpy they still work where no copy is
needed (contiguous arrays, one per argument).
"""

import sys

from . import _C

InvalidArgumentError = _C.InvalidArgumentError


def _torch():
    return sys.modules.get("torch")


def _numpy():
    return sys.modules.get("numpy")


_tensor_type = None  # torch.Tensor once torch is imported


def is_torch(x):
    global _tensor_type
    if _tensor_type is None:
        torch = _torch()
        if torch is None:
            return False
        _tensor_type = torch.Tensor
    return isinstance(x, _tensor_type)


def normalize(x, what):
    """Returns x as a torch tensor, a numpy array, or (without numpy) as is.

    Refuses torch tensors that are not on the CPU, naming `what`.
    """
    if is_torch(x):
        if x.device.type != "cpu":
            raise InvalidArgumentError(
                f"{what} is on {x.device}: shoal moves CPU tensors only "
                "(use .cpu(), or the gloo/nccl backends for devices)")
        if x.layout is not _torch().strided:
            raise InvalidArgumentError(
                f"{what} is a {x.layout} tensor: shoal.Comm moves dense "
                "tensors; pass x.to_dense() (or all-reduce sparse COO "
                "gradients with SUM through torch.distributed's \"shoal\" "
                "backend, which handles them)")
        # DLPack refuses tensors that require grad; the data is the same.
        return x.detach() if x.requires_grad else x
    np = _numpy()
    if np is None or isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    try:
        return np.asarray(memoryview(x))
    except TypeError:
        raise InvalidArgumentError(
            f"{what} is a {type(x).__name__}, not an array: pass a torch "
            "tensor, a numpy array, or an object with __dlpack__ or the "
            "buffer protocol") from None


def buffer(x, writable=False):
    """A _C.Buffer over x. A torch tensor is exported with
    torch.utils.dlpack.to_dlpack, a C call: its __dlpack__ method spends
    microseconds in Python, a large part of a small collective's cost.

    A tensor with its negative bit set (a lazy negation such as
    z.conj().imag) is refused: its memory holds the negated values, and
    DLPack exports that memory without saying so. contiguous() resolves
    one into a copy for the calls that stage."""
    if is_torch(x):
        if x.is_neg():
            raise InvalidArgumentError(
                "the tensor is a negated view (is_neg(): its memory holds "
                "minus its values, as z.conj().imag makes): pass "
                "x.resolve_neg()")
        return _C.Buffer(x, writable, _torch().utils.dlpack.to_dlpack(x))
    return _C.Buffer(x, writable)


_to_dlpack = None  # torch.utils.dlpack.to_dlpack once a tensor came by


def direct(x, writable=False):
    """A Buffer over x when x is a contiguous CPU torch tensor whose
    memory holds its values (not a negated view), else None: the blocking
    calls' short way, which skips the checks and staging a copy would need
    (the full way gives the errors for everything else). A tensor that
    requires grad is taken as it is: the full way would detach it, which
    shares the same memory. The Buffer checks the device from the DLPack
    export, where it costs nothing more."""
    global _to_dlpack
    if _tensor_type is None or type(x) is not _tensor_type:
        return None
    if _to_dlpack is None:
        _to_dlpack = _torch().utils.dlpack.to_dlpack
    try:
        if not x.is_contiguous() or x.is_neg():
            return None
        return _C.Buffer(x, writable, _to_dlpack(x))
    except (RuntimeError, BufferError, InvalidArgumentError):
        return None  # sparse, meta, another device, a dtype shoal lacks


def storage_bytes(t):
    """The whole storage under torch tensor t, as a flat uint8 tensor."""
    torch = _torch()
    storage = t.untyped_storage()
    return torch.empty(0, dtype=torch.uint8).set_(storage, 0,
                                                  (storage.nbytes(),), (1,))


def describe(b):
    """'float32 of shape (2, 3)' for a Buffer."""
    return f"{b.dtype} of shape {tuple(b.shape)}"


def contiguous(x):
    """x itself when contiguous, else a contiguous copy (of a torch
    tensor's values, with a negated view's negation done: buffer())."""
    if is_torch(x):
        if x.is_neg():
            return x.resolve_neg().contiguous()
        return x if x.is_contiguous() else x.contiguous()
    np = _numpy()
    if np is not None and isinstance(x, np.ndarray):
        return x if x.flags.c_contiguous else np.ascontiguousarray(x)
    return x  # the extension reports what it cannot use


def empty(like, count):
    """A new contiguous 1-D array of `count` elements of like's dtype."""
    if is_torch(like):
        return _torch().empty(count, dtype=like.dtype)
    np = _numpy()
    if np is not None and isinstance(like, np.ndarray):
        return np.empty(count, dtype=like.dtype)
    raise InvalidArgumentError(
        f"a {type(like).__name__} needs numpy for this operation's "
        "temporary buffer: install numpy, or pass numpy arrays or torch "
        "tensors")


def flat(x):
    """A 1-D view of contiguous x."""
    return x.reshape(-1)


def copy_into(dst, src):
    """Copies the elements of src into dst in order (shapes may differ)."""
    if is_torch(dst):
        dst.copy_(src.reshape(dst.shape))
    else:
        dst[...] = src.reshape(dst.shape)


def pack(items, out):
    """Copies each array of `items` into consecutive pieces of 1-D `out`."""
    pos = 0
    for x in items:
        n = _numel(x)
        copy_into(out[pos:pos + n], x)
        pos += n


def unpack(src, items):
    """Copies consecutive pieces of 1-D `src` into each array of `items`."""
    pos = 0
    for x in items:
        n = _numel(x)
        copy_into(x, src[pos:pos + n])
        pos += n


def _numel(x):
    return x.numel() if is_torch(x) else x.size
