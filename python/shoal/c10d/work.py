"""The Work objects the "shoal" process group hands to torch.

A Work wraps the shoal.Work(s) of one torch call. wait() blocks on them
(without the GIL); get_future() returns a torch Future that completes on
its own, which DDP needs: its comm hooks chain callbacks on the future of
each bucket's all-reduce and only wait at the end of backward. A thread
that waits for the operation marks it done, and another one completes the
future and runs its callbacks (see Completer).
"""

import datetime
import queue
import sys
import threading

import torch
import torch.distributed as dist

from .. import _C, _deadline


def _seconds(timeout):
    """torch's per-wait timeout (timedelta; zero: none) as seconds or None."""
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    return timeout if timeout and timeout > 0 else None


class Work(dist.Work):
    """One process-group operation: shoal works and the tensors its future
    yields (torch's convention: the output tensors)."""

    # Defaults a new Work shares until it sets its own: a blocking call's
    # Work (done already) sets only what __init__ must.
    _source = None  # an any-source receive's shoal.Work
    _completer = None  # completes futures (None: done ones)
    _ordered = True  # collectives; False for point-to-point
    _future = None
    _done = None  # an Event once a thread owns the waiting
    _error = None
    _profiled = None  # a Future: the profiler event has ended

    def __init__(self, works, result, completer=None, ordered=True,
                 source=None):
        super().__init__()
        self._works = works  # shoal.Work list; emptied once waited for
        self._result = result
        if completer is not None:
            self._completer = completer
        if not ordered:
            self._ordered = False
        if source is not None:
            self._source = source

    def wait(self, timeout=None):
        if self._done is not None:
            self._wait_done()
        elif self._works:
            self._wait_works(_seconds(timeout))
        if self._profiled is not None:
            self._profiled.wait()
        if self._error is not None:
            raise self._error
        return True

    def _wait_done(self):
        """Waits for the completer's thread to finish the works, within
        this thread's shoal.deadline. Ctrl-C or the deadline here stop
        this rank halfway through an operation its peers are in: the
        communicator is aborted so that they hear of it."""
        try:
            done = self._done.wait(_deadline.remaining())
        except KeyboardInterrupt:
            self._completer.abort("interrupted by a signal "
                                  "(KeyboardInterrupt) while waiting")
            raise
        if not done:
            why = (f"the wait for an operation did not end in time "
                   f"({_deadline.describe()} of this thread ran out)")
            self._completer.abort(why)
            raise _C.CommTimeoutError(why + "; the communicator is aborted")

    def _wait_works(self, timeout):
        try:
            while self._works:
                self._works[0].wait(timeout)
                self._works.pop(0)
        except KeyboardInterrupt:  # shoal aborted the communicator
            self._works = []
            self._error = _C.AbortedError(
                "the wait was interrupted (KeyboardInterrupt) and the "
                "communicator aborted")
            raise
        except BaseException as e:
            self._error = e
            self._settle_rest()

    def _settle_rest(self):
        """After the first failure: the other works of this call fail with
        the same cause (the communicator is aborted), which this Work
        reports; waiting for them says so, so that none is taken for a
        failure nobody saw."""
        rest, self._works = self._works[1:], []
        for w in rest:
            try:
                w.wait()
            except BaseException:  # noqa: BLE001: explained by _error
                pass

    def is_completed(self):
        if self._done is not None:
            return self._done.is_set()
        try:
            return all(w.is_completed() for w in self._works)
        except BaseException as e:
            self._works = []
            self._error = e
            return True

    def is_success(self):
        return self.is_completed() and self._error is None

    def exception(self):
        return self._error

    def _source_rank(self):
        """The sender of a completed receive (torch's recv(src=None))."""
        if self._source is None:
            raise RuntimeError("_source_rank: this work is not a receive "
                               "from any source")
        self.wait()
        return self._source.source()

    def result(self):
        """The operation's output tensors, once it has completed (waits)."""
        self.wait()
        return self._result

    def get_future(self):
        with _future_lock:
            if self._future is not None:
                return self._future
            fut = self._future = torch.futures.Future()
            pending = self._works and self._done is None
            if pending:
                self._done = threading.Event()
        if pending:
            self._completer.put(self, self._ordered)
        else:
            self._settle()
        return fut

    def _finish(self):
        """In a waiting thread: wait for the works, mark them done."""
        self._wait_works(None)
        self._done.set()

    def _settle(self):
        if self._error is not None:
            self._future.set_exception(self._error)
        else:
            self._future.set_result(self._result)


_future_lock = threading.Lock()  # get_future may race with itself only


class _DoneWork(Work):
    """A Work whose operation has completed: torch's base initialiser
    only, the rest the class defaults (no works to wait for)."""

    __init__ = dist.Work.__init__
    _works = ()


def done(result, _last=[None], _refs=sys.getrefcount):
    """The Work of an operation that has completed, yielding `result`:
    the blocking calls' Work (on every small call's way).

    Making a Work costs 0.6-0.8 us (torch's C++ base), a tenth of a small
    all_reduce through torch.distributed, which drops the Work as soon as
    it has waited. So the last one made is handed out again, emptied,
    while nothing else holds it: its references are then this function's
    three (the slot, `work`, the count's argument); every holder, torch's
    C++ side included (it keeps a Python Work by a reference), adds one,
    and a Work held anywhere is never changed under its holder."""
    work = _last[0]
    if work is None or _refs(work) != 3:
        work = _last[0] = _DoneWork()
    else:
        work.__dict__.clear()  # what get_future or the profiler set
    work._result = result
    return work


class Completer:
    """Threads that wait for a communicator's works and complete their
    futures.

    One thread, waiting in issue order, serves the collectives: they
    complete in issue order on every rank, so waiting for an earlier one
    never delays a later one that could otherwise have completed.
    Point-to-point works have no such order and get a thread each.

    Completing a future runs the callbacks chained on it with then(), and
    a callback may wait for another collective (DDP's PowerSGD hook does).
    So a waiting thread never completes a future itself: it hands the
    future to the Callbacks pool and goes on waiting, and a blocked
    callback holds up nothing but itself.
    """

    def __init__(self, comm):
        self._name = comm.get_name()
        self.abort = comm.abort  # what an interrupted wait calls
        self._queue = queue.SimpleQueue()
        self._thread = None
        self._others = set()  # point-to-point threads still running
        self._lock = threading.Lock()
        self._callbacks = Callbacks(self._name)

    def put(self, work, ordered=True):
        with self._lock:
            if not ordered:
                t = threading.Thread(target=self._run_one, args=(work,),
                                     daemon=True,
                                     name=f"shoal-p2p-{self._name}")
                self._others.add(t)
                t.start()
                return
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, daemon=True,
                    name=f"shoal-completer-{self._name}")
                self._thread.start()
        self._queue.put(work)

    def _run(self):
        while True:
            work = self._queue.get()
            if work is None:
                return
            work._finish()
            self.call_soon(work._settle)

    def _run_one(self, work):
        work._finish()
        self.call_soon(work._settle)
        with self._lock:
            self._others.discard(threading.current_thread())

    def call_soon(self, fn):
        """Runs fn() on a callback thread."""
        self._callbacks.put(fn)

    def close(self):
        """Lets pending works finish, then stops the waiting threads (their
        futures' callbacks may still be running)."""
        with self._lock:
            thread, self._thread = self._thread, None
            others, self._others = list(self._others), set()
        if thread is not None:
            self._queue.put(None)
            thread.join()
        for t in others:
            t.join()


class Callbacks:
    """A pool of threads that complete futures, in the order handed in.

    A thread is started only when every thread of the pool is busy (a
    callback that blocks), so callbacks usually run one after another on
    one thread; idle threads end after IDLE_SECONDS.
    """

    IDLE_SECONDS = 10.0

    def __init__(self, name):
        self._name = name
        self._queue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def put(self, complete):
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1  # claimed: the next put must not count it
        self._queue.put(complete)
        if start:
            threading.Thread(target=self._run, daemon=True,
                             name=f"shoal-callbacks-{self._name}").start()

    def _run(self):
        while True:
            try:
                complete = self._queue.get(timeout=self.IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0 and self._queue.empty():
                        self._idle -= 1
                        return
                continue
            complete()
            with self._lock:
                self._idle += 1
