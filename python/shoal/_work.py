"""Work: the handle every operation returns."""

from . import _env


class Work:
    """An operation in flight, or finished.

    ``wait()`` blocks until it completes (without holding the GIL) and
    raises its error; ``is_completed()`` polls. Results that had to be
    staged (strided tensors, tensor lists) are copied into the caller's
    tensors when the work is first found complete. A Work dropped without
    wait() is waited for when it is collected, so memory stays valid; if
    its operation failed, the error goes to sys.unraisablehook and the next
    call on the communicator raises it (the outputs are undefined).
    """

    __slots__ = ("_c", "_after")

    def __init__(self, c_work=None, after=None):
        self._c = c_work
        self._after = after

    def wait(self, timeout=None):
        if self._c is not None:
            try:
                self._c.wait(_env.seconds(timeout))
            except BaseException:
                self._after = None  # results are not valid
                raise
            self._c = None
        self._run_after()
        return True

    def is_completed(self):
        if self._c is not None:
            if not self._c.is_completed():
                return False
            if self._c.status < 0:
                self._after = None
                return True  # wait() raises the error
            self._c = None
        self._run_after()
        return True

    def _run_after(self):
        after, self._after = self._after, None
        if after is not None:
            after()

    def __del__(self):
        # Without staged results the native work waits and reports itself.
        if self._c is not None and self._after is not None:
            c = self._c
            try:
                self.wait()
            except Exception as e:  # noqa: BLE001: nobody else will see it
                c.comm._note_dropped(e, self)

    def __repr__(self):
        state = "pending" if self._c is not None else "completed"
        return f"<shoal.Work {state}>"
