"""monitored_barrier for the "shoal" process group, with gloo's semantics.

Every rank other than 0 reports its arrival; rank 0 waits for each of them
until the timeout, names the ranks that did not arrive (the first one, or
all of them with wait_all_ranks) and raises; otherwise it lets everyone
go. The ranks meet through the group's torch store rather than the
communicator, so a rank stuck inside a collective is still found, and the
others hear rank 0's verdict at once instead of waiting out the timeout.
"""

import datetime
import itertools
import time

from .. import _C, _deadline, _env

_ARRIVED, _DONE = "arrived", "done"


def barrier(pg, timeout, wait_all_ranks):
    timeout = _seconds(pg, timeout)
    store = pg._store
    if store is None:  # a group made without a store: a plain barrier
        pg._comm.barrier(timeout=timeout)
        return
    if not hasattr(pg, "_monitored_count"):
        pg._monitored_count = itertools.count()
    key = f"shoal/monitored/{pg.getGroupName()}/{next(pg._monitored_count)}"
    if pg.rank() == 0:
        _lead(pg, store, key, _deadline.effective_timeout(timeout),
              wait_all_ranks)
    else:
        _follow(pg, store, key, timeout)


def _seconds(pg, timeout):
    """timeout (timedelta or seconds) in seconds; None: the group's."""
    value = _env.seconds(timeout, "monitored_barrier: timeout")
    return pg._comm.get_timeout() if value is None else value


def _lead(pg, store, key, timeout, wait_all_ranks):
    deadline = time.monotonic() + timeout
    ms = int(timeout * 1000)
    missing = []
    for r in range(1, pg.size()):
        if not wait_all_ranks and time.monotonic() >= deadline and \
                not store.check([f"{key}/{_ARRIVED}/{r}"]):
            # The time ran out before this rank's turn (gloo's wording).
            _fail(store, key, f"[Rank 0]: Rank 0 timed out in "
                  f"monitoredBarrier after {ms} ms, still waiting for "
                  f"rank {r} (ranks 1 to {r - 1} arrived)")
        if not _arrives(store, f"{key}/{_ARRIVED}/{r}", deadline):
            missing.append(r)
            if not wait_all_ranks:
                break
    if not missing:
        store.set(f"{key}/{_DONE}", "ok")
        return
    who = (f"Rank {missing[0]}" if len(missing) == 1 else
           "Ranks " + ", ".join(str(r) for r in missing))
    _fail(store, key, f"[Rank 0]: {who} failed to pass monitoredBarrier "
          f"in {ms} ms")


def _fail(store, key, text):
    """Tells the other ranks, then raises (naming this thread's
    shoal.deadline when it cut the wait short)."""
    store.set(f"{key}/{_DONE}", text)
    raise _C.CommTimeoutError(text + _deadline.passed())


def _arrives(store, name, deadline):
    """Whether `name` is set before `deadline` (checked once if passed)."""
    left = deadline - time.monotonic()
    if left <= 0:
        return store.check([name])
    try:
        store.wait([name], datetime.timedelta(seconds=left))
        return True
    except RuntimeError:  # the store's timeout
        return store.check([name])


def _follow(pg, store, key, timeout):
    store.set(f"{key}/{_ARRIVED}/{pg.rank()}", "1")
    done = f"{key}/{_DONE}"
    # Rank 0 answers within its own timeout; allow it that much again.
    # gloo's wording for a failure seen from here.
    failed = (f"[Rank {pg.rank()}]: Rank {pg.rank()} successfully reached "
              f"monitoredBarrier, but received errors while waiting for "
              f"send/recv from rank 0")
    limit = _deadline.effective_timeout(2 * timeout)
    if not _arrives(store, done, time.monotonic() + limit):
        raise _C.CommTimeoutError(
            f"{failed}: rank 0 did not answer within "
            f"{int(limit * 1000)} ms; check its logs{_deadline.passed()}")
    verdict = store.get(done).decode()
    if verdict != "ok":
        raise _C.CommTimeoutError(f"{failed}: rank 0 reports: {verdict}")
