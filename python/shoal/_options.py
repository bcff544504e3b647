"""CommOptions: what Comm.get_options() reports (torchcomms' fields)."""


class CommOptions:
    """A communicator's options: abort_process_on_timeout_or_error,
    timeout (a timedelta), store (None: shoal keeps none after creation),
    name and hints (a dict)."""

    __slots__ = ("abort_process_on_timeout_or_error", "timeout", "store",
                 "name", "hints")

    def __init__(self, abort_process_on_timeout_or_error, timeout, name,
                 hints, store=None):
        self.abort_process_on_timeout_or_error = (
            abort_process_on_timeout_or_error)
        self.timeout = timeout
        self.name = name
        self.hints = dict(hints)
        self.store = store

    def __repr__(self):
        return (f"CommOptions(name={self.name!r}, timeout={self.timeout}, "
                f"abort_process_on_timeout_or_error="
                f"{self.abort_process_on_timeout_or_error}, "
                f"hints={self.hints})")
