"""shoal.deadline: a time limit on every shoal call a thread makes.

``with shoal.deadline(seconds):`` caps every operation the thread issues
inside it (blocking or not, through shoal.Comm, its windows, or a
torch.distributed group of backend "shoal") and every wait of a Work: a
call gets the earlier of its own timeout (or its communicator's default)
and what is left of the deadline. Nested deadlines keep the earliest. A
call that runs past it fails as any timeout does: CommTimeoutError, whose
message names the deadline, and the communicator is aborted (its peers
hear of it). Other threads are not affected.

The limit itself lives in the C extension (deadline.c), where every
operation's timeout passes; effective_timeout() gives Python code that
hands a timeout to something else the same rule.
"""

from . import _C, _env

_UNSET = object()

# A wait this close to the deadline's end ended by it (as in deadline.c:
# clocks and waits count whole milliseconds).
_SLACK = 0.002


class deadline:
    """Context manager: every shoal call this thread makes inside it ends
    within `seconds` (a number or a timedelta) of entering, or raises
    CommTimeoutError naming this deadline."""

    __slots__ = ("seconds", "_saved")

    def __init__(self, seconds):
        value = _env.seconds(seconds, "shoal.deadline: seconds")
        if not value:
            raise _C.InvalidArgumentError(
                f"shoal.deadline: seconds must be > 0, not {seconds!r}")
        self.seconds = value
        self._saved = _UNSET

    def __enter__(self):
        if self._saved is not _UNSET:
            raise _C.InvalidArgumentError(
                f"{self!r} is already in effect; enter a new one")
        self._saved = _C.deadline_enter(self.seconds)
        return self

    def __exit__(self, *exc):
        saved, self._saved = self._saved, _UNSET
        _C.deadline_restore(saved)
        return False

    def __repr__(self):
        return f"shoal.deadline({self.seconds:g} s)"


def remaining():
    """Seconds left before this thread's deadline (0 once passed), or None
    outside every deadline."""
    left = _C.deadline_left()
    return None if left is None else left[0]


def effective_timeout(timeout, default=None):
    """Seconds a call made now may take: the earlier of its own `timeout`
    (a number or timedelta; None: `default`, None meaning no limit) and
    what is left of this thread's deadline. None: no limit at all."""
    own = _env.seconds(timeout)
    if own is None:
        own = default
    left = remaining()
    if left is None or (own is not None and own <= left):
        return own
    return left


def describe():
    """'shoal.deadline(S s)' for this thread's deadline (the one that ends
    first), or None outside every deadline: for messages."""
    left = _C.deadline_left()
    return None if left is None else f"shoal.deadline({left[1]:g} s)"


def passed():
    """' (shoal.deadline(S s) of this thread ran out)' once this thread's
    deadline has passed, else '': for the messages of timeouts found in
    Python (the extension adds it to its own)."""
    left = remaining()
    if left is None or left > _SLACK:
        return ""
    return f" ({describe()} of this thread ran out)"
