"""Settings from arguments and environment variables.

Precedence follows torchcomms: an explicit argument, then TORCHCOMM_* (what
torchcomms reads), then SHOAL_* (what libshoal reads), then the default.
"""

import datetime
import os

from . import _C

DEFAULT_TIMEOUT_S = 600.0

# How rank and size are found when the caller brings a store; the same
# launchers, in the same order, as libshoal's own detection.
_RANK_SIZE_VARS = (
    ("TORCHCOMM_RANK", "TORCHCOMM_SIZE"),
    ("SHOAL_RANK", "SHOAL_SIZE"),
    ("RANK", "WORLD_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
)

_TRUE = ("1", "true", "yes", "on", "y", "t")
_FALSE = ("0", "false", "no", "off", "n", "f")


def env_bool(name, default):
    text = os.environ.get(name, "").strip().lower()
    if not text:
        return default
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise _C.InvalidArgumentError(
        f"{name}={os.environ[name]!r} is not a boolean (use 1/0, true/false)")


def seconds(timeout, what="timeout"):
    """A timedelta or a number of seconds as float seconds; None stays."""
    if timeout is None:
        return None
    if isinstance(timeout, datetime.timedelta):
        value = timeout.total_seconds()
    elif isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        value = float(timeout)
    else:
        raise _C.InvalidArgumentError(
            f"{what} must be a datetime.timedelta or seconds, "
            f"not {type(timeout).__name__}")
    if value < 0:
        raise _C.InvalidArgumentError(f"{what} must not be negative")
    return value


def op_timeout_ms(timeout):
    """A per-operation timeout in ms for the extension; 0: the default."""
    value = seconds(timeout)
    return 0 if not value else max(1, int(value * 1000 + 0.5))


def _env_seconds(name):
    """A *_SECONDS setting, by libshoal's rule (shi_env_seconds): a
    positive decimal number such as 30 or 2.5."""
    text = os.environ.get(name, "")
    if not text:
        return None
    value = (float(text) if text.count(".") <= 1 and text.replace(".", "")
             .isdigit() and text.isascii() else 0.0)
    if not 0 < value <= 1e9:
        raise _C.InvalidArgumentError(
            f"{name}={text!r} is not a number of seconds: give a positive "
            f"decimal number, e.g. 30 or 2.5")
    return value


def default_timeout_ms(timeout):
    """The communicator's default deadline in ms."""
    value = seconds(timeout)
    if not value:
        value = (_env_seconds("TORCHCOMM_TIMEOUT_SECONDS")
                 or _env_seconds("SHOAL_TIMEOUT_SECONDS")
                 or DEFAULT_TIMEOUT_S)
    return max(1, int(value * 1000 + 0.5))


def abort_on_error(flag):
    """abort_process_on_timeout_or_error; torchcomms' default is True."""
    if flag is not None:
        return bool(flag)
    return env_bool("TORCHCOMM_ABORT_ON_ERROR", True)


def rank_size():
    """(rank, size) from the first launcher whose variables are set."""
    for rank_var, size_var in _RANK_SIZE_VARS:
        rank, size = os.environ.get(rank_var), os.environ.get(size_var)
        if rank is None and size is None:
            continue
        try:
            return int(rank), int(size)
        except (TypeError, ValueError):
            raise _C.InvalidArgumentError(
                f"{rank_var}={rank!r} and {size_var}={size!r} must both be "
                "integers") from None
    names = ", ".join(f"{r}/{s}" for r, s in _RANK_SIZE_VARS)
    raise _C.InvalidArgumentError(
        "new_comm: a store was given but no rank and size: set one of "
        f"{names} (torchrun and shoalrun do)")


def store_ports():
    """(low, high): the ports rank 0 draws its libshoal store's port from
    when the caller brings a store (SHOAL_STORE_PORTS, "low-high"; default
    20000-32767), for a firewall that opens only some."""
    text = os.environ.get("SHOAL_STORE_PORTS", "").strip()
    if not text:
        return 20000, 32767
    try:
        low, high = (int(part) for part in text.split("-"))
    except ValueError:
        low = high = -1
    if not 1024 <= low <= high <= 65535:
        raise _C.InvalidArgumentError(
            f"SHOAL_STORE_PORTS={text!r} is not a range low-high of ports "
            f"in 1024-65535 (e.g. 20000-32767)")
    return low, high
