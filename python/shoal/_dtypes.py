"""What shoal knows of dtypes on the Python side, in one place: their
names across torch, numpy and strings, torch dtypes by name, their DLPack
codes, and which ones libshoal moves (``_C.DTYPES``, from the C library's
own table; the C extension maps a buffer's format or DLPack type to it).
"""

import sys

from . import _C

InvalidArgumentError = _C.InvalidArgumentError

# DLPack type codes (DLDataTypeCode).
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT, DL_COMPLEX, DL_BOOL = 0, 1, 2, 4, 5, 6


def name_of(dtype):
    """'float32' for torch.float32, numpy.float32, 'float32' alike."""
    if isinstance(dtype, str):
        return dtype
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(dtype, torch.dtype):
        return str(dtype).split(".")[-1]
    np = sys.modules.get("numpy")
    if np is not None:
        return np.dtype(dtype).name
    return str(dtype)


def torch_dtype(torch, dtype):
    """The torch dtype for a torch dtype, a numpy one or a name (None:
    torch's default)."""
    if dtype is None:
        return torch.get_default_dtype()
    if isinstance(dtype, torch.dtype):
        return dtype
    name = name_of(dtype)
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise InvalidArgumentError(f"empty: {dtype!r} is not a torch dtype")
    return dt


def dl_type(torch, dt):
    """(DLPack code, bits) of a torch dtype."""
    bits = dt.itemsize * 8
    if dt == torch.bool:
        return DL_BOOL, 8
    if dt == torch.bfloat16:
        return DL_BFLOAT, 16
    if dt.is_complex:
        return DL_COMPLEX, bits
    if dt.is_floating_point:
        if bits < 16:  # float8 kinds have no code in DLPack's older ABI
            raise InvalidArgumentError(f"empty: {dt} is not supported")
        return DL_FLOAT, bits
    try:
        signed = torch.iinfo(dt).min < 0
    except TypeError:
        raise InvalidArgumentError(f"empty: {dt} is not supported") from None
    return (DL_INT if signed else DL_UINT), bits
