"""CommOptions: torchcomms' communicator options.

Constructible with keyword arguments, each optional with torchcomms'
default (None: TORCHCOMM_ABORT_ON_ERROR else True; the default timeout,
TORCHCOMM_TIMEOUT_SECONDS, SHOAL_TIMEOUT_SECONDS or 600 s; no store; the
name "world"; no hints), and passed to new_comm(..., options=...), whose
keyword arguments override its fields. Comm.get_options() returns the
options a communicator was made with, every field resolved.
"""


class CommOptions:
    """A communicator's options: abort_process_on_timeout_or_error,
    timeout (timedelta or seconds), store, name and hints (a dict)."""

    __slots__ = ("abort_process_on_timeout_or_error", "timeout", "store",
                 "name", "hints")

    def __init__(self, abort_process_on_timeout_or_error=None, timeout=None,
                 store=None, name=None, hints=None):
        self.abort_process_on_timeout_or_error = (
            abort_process_on_timeout_or_error)
        self.timeout = timeout
        self.store = store
        self.name = name
        self.hints = dict(hints) if hints is not None else {}

    def __repr__(self):
        return (f"CommOptions(name={self.name!r}, timeout={self.timeout}, "
                f"abort_process_on_timeout_or_error="
                f"{self.abort_process_on_timeout_or_error}, "
                f"store={self.store!r}, hints={self.hints})")
