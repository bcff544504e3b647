"""Rank programs of test_queue.py.

``python queue_ranks.py CASE[,CASE...] [ARG]`` runs each case_CASE in turn
on one communicator of this rank (ranks, store and secret from the
environment, as harness.spawn sets them) and prints "ok" when all passed;
an assertion ends the rank with a traceback. Several cases share one
start of the ranks, which is most of a case's time.
"""

import datetime
import os
import pickle
import queue as stdqueue
import signal
import sys
import threading
import time

import torch

import shoal


def new_comm(name="queue"):
    return shoal.new_comm("shoal", "cpu", name=name,
                          abort_process_on_timeout_or_error=False)


def raises(exc, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        return e
    raise AssertionError(f"{fn.__name__}{args} did not raise {exc.__name__}")


def tensors(sender, seq):
    """What `sender` puts as its item `seq`: dtypes, shapes (0-dim,
    0-element, strided) that differ from item to item."""
    kinds = [
        lambda: torch.tensor([sender, seq], dtype=torch.int64),
        lambda: torch.full((2, 3), sender * 100.0 + seq),
        lambda: torch.tensor(sender * 1000 + seq, dtype=torch.int32),  # 0-dim
        lambda: torch.empty(0, sender + 1, dtype=torch.float64),  # empty
        lambda: (torch.arange(12, dtype=torch.bfloat16) + seq + 16 * sender)
        .view(3, 4).t(),  # strided: sent as a contiguous copy
        lambda: torch.tensor([seq % 2 == 0, True] * (sender + 1)),
        lambda: torch.arange(seq + 1, dtype=torch.uint8) + sender,
    ]
    return kinds[seq % len(kinds)]()


# Over TCP a put returns with its item on the wire: the item reaches its
# location shortly after, in order, and a size asked before then misses
# it. Over shared memory the item is there when the put returns.
IN_FLIGHT = os.environ.get("SHOAL_TRANSPORT") == "tcp"


def settled(q, want):
    """q.qsize() once every item put so far has arrived: exactly `want`
    at once over shared memory; over TCP it may rise to `want` (never
    past it) within 10 s."""
    size = q.qsize()
    deadline = time.monotonic() + 10
    while IN_FLIGHT and size < want and time.monotonic() < deadline:
        time.sleep(0.001)
        size = q.qsize()
    assert size == want, (size, want)
    return size


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


# ---- one location -----------------------------------------------------------


def case_single(c):
    """Every rank the location in turn: every rank puts tensors, the
    location takes them, keeping each sender's order; the taken tensors are
    ordinary, writable tensors; a non-location rank takes too (remote)."""
    rank, n = c.get_rank(), c.get_size()
    per = 7
    for owner in range(n):
        q = shoal.Queue(c, owner)
        assert q.location == owner and q.name is None
        for seq in range(per):
            w = q.put_tensor(tensors(rank, seq))
            assert w.is_completed() and w.wait()
        c.barrier()  # every put is in by now
        if rank == owner:
            settled(q, n * per)
            assert not q.empty() and q.wait(0)
            nxt = [0] * n
            for _ in range(n * per):
                t = q.get_tensor(timeout=10)
                sender = next(s for s in range(n)
                              if nxt[s] < per and same(t, tensors(s, nxt[s])))
                nxt[sender] += 1
                if t.dtype == torch.bool:  # taken tensors are writable
                    t.logical_not_()
                else:
                    t.add_(1)
            assert nxt == [per] * n, nxt
            assert q.qsize() == 0 and q.empty()
        c.barrier()
        # Remote gets: the next rank takes from this location.
        taker = (owner + 1) % n
        if rank == owner:
            for seq in range(3):
                q.put_tensor(torch.tensor([seq]))
            q.put_tensor(torch.full((1 << 19,), float(owner)))  # 2 MiB
        c.barrier()
        if rank == taker:
            settled(q, 4)
            assert q.wait(1.0)
            t, left = q.get_tensor(return_size=True)
            assert t.tolist() == [0] and left == 3, (t, left)
            assert q.get_tensor().tolist() == [1]
            assert q.get_tensor(block=False).tolist() == [2]
            assert torch.equal(q.get_tensor(),
                               torch.full((1 << 19,), float(owner)))
            assert q.empty()
        c.barrier()


def case_mixed(c):
    """Tensors and objects in one sender's order; the other kind than the
    one asked for raises TypeError carrying the item, and is not lost."""
    rank, n = c.get_rank(), c.get_size()
    owner, sender = 0, n - 1
    q = shoal.Queue(c, owner)
    things = [torch.ones(3), {"a": [1, 2]}, "text", torch.zeros(2, 2),
              None, (1, 2.5), torch.tensor(7)]
    if rank == sender:
        for x in things:
            if isinstance(x, torch.Tensor):
                q.put_tensor(x)
            else:
                assert q.put_object(x) is None
        q.put_object({"big": torch.arange(100_000)})  # > a ring slot
        q.put_tensor(torch.arange(3 << 18, dtype=torch.float32))  # 3 MiB
    c.barrier()
    if rank == owner:
        for x in things:
            if isinstance(x, torch.Tensor):
                assert same(q.get_tensor(), x)
            else:
                assert q.get_object() == x
        big = q.get_object()["big"]
        assert torch.equal(big, torch.arange(100_000))
        # Larger than the sender's ring: it came in pieces.
        assert torch.equal(q.get_tensor(),
                           torch.arange(3 << 18, dtype=torch.float32))
        # The wrong kind: taken, raised, and handed over whole.
        q.put_object({"k": 1})
        q.put_tensor(torch.arange(4))
        e = raises(TypeError, q.get_tensor)
        assert e.item == {"k": 1} and "object" in str(e), e
        assert "rank" in str(e) and ".item" in str(e), e
        e = raises(TypeError, q.get_object)
        assert same(e.item, torch.arange(4)), e
        assert q.empty()
    c.barrier()


def case_timeouts(c):
    """Empty queues: block=False and timeouts raise shoal.Empty (a
    queue.Empty) on the location and elsewhere; wait() says False."""
    rank, n = c.get_rank(), c.get_size()
    q = shoal.Queue(c, n - 1)
    e = raises(shoal.Empty, q.get_tensor, block=False)
    assert isinstance(e, stdqueue.Empty)
    raises(stdqueue.Empty, q.get_object, block=False)
    for timeout in (0.2, datetime.timedelta(milliseconds=200)):
        t0 = time.monotonic()
        raises(shoal.Empty, q.get_object, timeout=timeout)
        waited = time.monotonic() - t0
        assert 0.15 < waited < 2.0, waited
    t0 = time.monotonic()
    assert q.wait(0.1) is False
    assert 0.05 < time.monotonic() - t0 < 2.0
    raises(shoal.Empty, q.get_tensor, timeout=0)
    assert q.qsize() == 0 and q.empty()
    raises(shoal.InvalidArgumentError, q.get_tensor, timeout=-1)
    raises(shoal.InvalidArgumentError, q.get_tensor, timeout="1")
    raises(shoal.InvalidArgumentError, q.wait, -0.5)
    # shoal.deadline bounds the waits of this thread as any timeout does.
    t0 = time.monotonic()
    with shoal.deadline(0.2):
        raises(shoal.Empty, q.get_tensor)
        assert q.wait() is False
    assert time.monotonic() - t0 < 2.0
    # A signal handler that raises ends a wait without a limit, and leaves
    # the queue and the communicator as they were.
    class Interrupted(Exception):
        pass

    def interrupt(*_):
        raise Interrupted()

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        t0 = time.monotonic()
        raises(Interrupted, q.get_object)
        assert time.monotonic() - t0 < 2.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    # A get waits without the GIL: another thread of this rank puts.
    mine = shoal.Queue(c, rank, name=f"mine-{rank}")
    putter = threading.Timer(0.1, mine.put_object, args=("from a thread",))
    putter.start()
    assert mine.get_object(timeout=10) == "from a thread"
    putter.join()
    c.barrier()
    # An item that arrives while a get waits ends the wait.
    if rank == 0:
        time.sleep(0.1)
        q.put_tensor(torch.tensor([5]))
    if rank == n - 1:
        assert q.get_tensor(timeout=10).tolist() == [5]
    c.barrier()


def case_transactions(c):
    """A transaction's puts arrive together, in order, on exit; a block
    that raises sends none of them."""
    rank, n = c.get_rank(), c.get_size()
    owner, sender = n - 1, 0
    q = shoal.Queue(c, owner)
    if rank == sender:
        with q.transaction() as tx:
            w = tx.put_tensor(torch.tensor([1]))
            assert not w.is_completed()
            raises(shoal.InvalidArgumentError, w.wait)
            tx.put_object("two")
            tx.put_tensor(torch.tensor([3]))
        assert w.is_completed() and w.wait()
        try:
            with q.transaction() as tx:
                tx.put_object("never")
                w = tx.put_tensor(torch.tensor([-1]))
                raise KeyError("rolled back")
        except KeyError:
            pass
        raises(shoal.ShoalError, w.wait)
        raises(shoal.InvalidArgumentError, tx.put_object, "late")
        with q.transaction():
            pass  # empty: sends nothing
        q.put_object("after")
    c.barrier()
    if rank == owner:
        assert q.wait(10)
        settled(q, 4)  # visible together, and "after"
        assert q.get_tensor().tolist() == [1]
        assert q.get_object() == "two"
        assert q.get_tensor().tolist() == [3]
        assert q.get_object() == "after"
        assert q.empty()
    c.barrier()


def case_errors(c):
    """Bad arguments raise on the calling rank alone; the queue and the
    communicator stay usable."""
    rank, n = c.get_rank(), c.get_size()
    Bad = shoal.InvalidArgumentError
    for loc in (n, -1, [], [0, 0], True, "0", 1.0, [0, n]):
        raises(Bad, shoal.Queue, c, loc)
    raises(Bad, shoal.Queue, c, 0, name="")
    raises(Bad, shoal.Queue, c, 0, name=3)
    raises(Bad, shoal.Queue, object(), 0)
    raises(Bad, shoal.Queue, "no such group", 0)
    e = raises(shoal.ShoalError, shoal.Queue, c, 0, streaming=True)
    assert "stream" in str(e).lower(), e
    q = shoal.Queue(c, 0)
    raises(Bad, q.put_tensor, [1, 2])
    e = raises(Bad, q.put_tensor, torch.ones(2, dtype=torch.complex64))
    assert "complex64" in str(e), e
    raises(Bad, q.put_tensor, torch.ones([1] * 9))
    e = raises(ValueError, q.put_tensor, torch.ones(1), transaction=1)
    assert "q.transaction()" in str(e), e
    raises(ValueError, q.put_object, 1, transaction=5)
    raises(Bad, q.put_tensor, torch.ones(1), timeout=-1)
    e = raises(TypeError, pickle.dumps, q)
    assert "unnamed" in str(e), e
    raises(TypeError, q.put_object, q)  # nothing sent
    # A tensor that needs grad goes as its data.
    q.put_tensor(torch.ones(2, requires_grad=True))
    c.barrier()
    if rank == 0:
        for _ in range(n):
            t = q.get_tensor()
            assert not t.requires_grad and t.tolist() == [1.0, 1.0]
        assert q.empty()
    c.barrier()


# ---- several ranks ----------------------------------------------------------


def case_producers(c):
    """Many producers, one consumer: each sender's order is kept."""
    rank, n = c.get_rank(), c.get_size()
    per = 200
    q = shoal.Queue(c, 0)
    for seq in range(per):
        if seq % 3 == 0:
            q.put_object((rank, seq))
        else:
            q.put_object((rank, seq, "x" * (seq % 50)))
    if rank == 0:
        last = [-1] * n
        for _ in range(n * per):
            got = q.get_object(timeout=30)
            sender, seq = got[0], got[1]
            assert seq == last[sender] + 1, (got, last)
            last[sender] = seq
        assert last == [per - 1] * n and q.empty()
    c.barrier()


def case_multicast(c):
    """Each put reaches every listed rank, each taking from its own copy;
    other ranks put but cannot take."""
    rank, n = c.get_rank(), c.get_size()
    locs = list(range(1, n))
    q = shoal.Queue(c, locs)
    assert q.location == locs
    if rank == 0:
        for seq in range(5):
            q.put_tensor(tensors(0, seq))
        q.put_object("end")
        raises(shoal.InvalidArgumentError, q.get_tensor, block=False)
    c.barrier()
    if rank in locs:
        settled(q, 6)
        for seq in range(5):
            assert same(q.get_tensor(timeout=10), tensors(0, seq))
        assert q.get_object() == "end" and q.empty()
    c.barrier()
    # Every rank listed (a range), every rank putting: n items each.
    every = shoal.Queue(c, range(n))
    every.put_object(rank)
    got = sorted(every.get_object(timeout=10) for _ in range(n))
    assert got == list(range(n)), got
    c.barrier()


def case_named(c):
    """Named queues: opened by one rank alone, the same name reaches the
    same queue, other parameters raise, and a named queue travels through
    another queue."""
    rank, n = c.get_rank(), c.get_size()
    fresh = new_comm(name="queue-fresh")
    if os.environ.get("SHOAL_QUEUES") != "1":
        e = raises(shoal.InvalidArgumentError, shoal.Queue, fresh, 0,
                   name="early")
        assert "channel" in str(e), e
    fresh.open_queue_channel()  # collective
    fresh.open_queue_channel()  # a no-op now
    early = shoal.Queue(fresh, 0, name="early")
    early.put_object(rank)
    if rank == 0:
        assert sorted(early.get_object(timeout=10) for _ in range(n)) \
            == list(range(n))
        mine = shoal.Queue(fresh, 0, name="mine")
        mine.put_tensor(torch.arange(5))
        kept = mine.get_tensor()
    fresh.barrier()
    fresh.finalize()
    raises(shoal.ShoalError, early.put_object, 1)  # finalized
    if rank == 0:  # a taken tensor outlives its communicator
        assert kept.tolist() == list(range(5))
        del kept

    unnamed = shoal.Queue(c, 0)  # opens c's channel
    loc = n - 1
    if rank == 0:  # alone: the others have not opened it yet
        jobs = shoal.Queue(c, loc, name="jobs")
        jobs.put_tensor(torch.tensor([42]))
        jobs.put_object(jobs)  # a queue through itself
    c.barrier()
    jobs = shoal.Queue(c, loc, name="jobs")
    again = shoal.Queue(c, loc, name="jobs")
    assert jobs.id == again.id
    if n > 1:  # the same name at another location, on a rank that has it
        e = raises(shoal.InvalidArgumentError, shoal.Queue, c, (loc + 1) % n,
                   name="jobs")
        assert "jobs" in str(e), e
    ids = torch.tensor([jobs.id >> 32, jobs.id & 0xffffffff])
    every = torch.empty(2 * n, dtype=torch.int64)
    c.all_gather_single(every, ids)
    assert every.view(n, 2).eq(ids).all(), every
    if rank == loc:
        assert jobs.get_tensor().tolist() == [42]
        through = jobs.get_object()
        assert isinstance(through, shoal.Queue) and through.id == jobs.id
        assert through.name == "jobs" and through.location == loc
    c.barrier()
    # A named multicast queue sent to every rank through an unnamed one
    # (remote gets from its location, rank 0).
    if rank == 0:
        mc = shoal.Queue(c, list(range(n)), name="fan")
        mc.put_object("hello")
        for _ in range(n):
            unnamed.put_object(mc)
    got = unnamed.get_object(timeout=10)
    assert got.location == list(range(n)) and got.name == "fan"
    assert got.get_object(timeout=10) == "hello"
    c.barrier()


def case_capacity(c):
    """A bounded queue: the sender's puts find no room once the queue is
    full and its ring too (shoal.Full, a queue.Full, nothing sent); the
    location's gets make room again, and every item arrives once, in
    order."""
    rank, n = c.get_rank(), c.get_size()
    q = shoal.Queue(c, 1)
    item = torch.zeros(1024, dtype=torch.uint8)
    if rank == 0:
        sent = 0
        while True:  # until the queue and the ring are full
            item[0] = sent % 256
            t0 = time.monotonic()
            try:
                q.put_tensor(item, timeout=0.2)
            except shoal.Full as e:
                assert isinstance(e, stdqueue.Full)
                assert 0.15 < time.monotonic() - t0 < 2.0
                break
            sent += 1
            assert sent < 100_000, "no Full: the queue is not bounded"
        raises(shoal.Full, q.put_tensor, item, block=False)
        c.send(torch.ones(1), 1)  # not through the full ring
        q.put_object(sent)  # waits for room: the location takes
    if rank == 1:
        c.recv(torch.ones(1), 0)
        settled(q, int(os.environ["SHOAL_QUEUE_CAPACITY"]))
        got = 0
        while True:
            try:
                t = q.get_tensor(timeout=10)
            except TypeError as e:
                assert e.item == got, (e.item, got)
                break
            assert t[0] == got % 256, (t[0], got)
            got += 1
        assert q.empty()
    c.barrier()


# ---- faults -----------------------------------------------------------------


def case_kill(c):
    """The location dies while the others wait on its queue: their waits
    raise within 2 s, naming it; a put to it raises."""
    rank, n = c.get_rank(), c.get_size()
    owner = n - 1
    q = shoal.Queue(c, owner)
    c.barrier()
    if rank == owner:
        time.sleep(0.3)
        os.kill(os.getpid(), 9)
    t0 = time.monotonic()
    if rank == 0:
        e = raises(shoal.ShoalError, q.get_tensor)
    else:
        e = raises(shoal.ShoalError, q.wait)
    waited = time.monotonic() - t0
    assert f"rank {owner}" in str(e) and waited < 2.2, (waited, e)
    assert isinstance(e, shoal.PeerError), repr(e)
    raises(shoal.ShoalError, q.put_tensor, torch.ones(1))
    print(f"wait failed after {waited:.2f} s: {e}")
    sys.stdout.flush()
    os._exit(0)  # the communicator is broken: skip its goodbye


def case_backend_group(c):
    """A torch.distributed group of backend "shoal": as the group, as the
    default group (None) and by its name."""
    import torch.distributed as dist

    dist.init_process_group("shoal")
    rank, n = dist.get_rank(), dist.get_world_size()
    q = shoal.Queue(None, 0)
    q.put_object(rank)
    if rank == 0:
        assert sorted(q.get_object() for _ in range(n)) == list(range(n))
    q2 = shoal.Queue(dist.group.WORLD, n - 1)
    q2.put_tensor(torch.tensor([rank]))
    if rank == n - 1:
        got = sorted(q2.get_tensor().item() for _ in range(n))
        assert got == list(range(n))
    name = dist.group.WORLD.comm.get_name()
    named = shoal.Queue(name, 0, name="by-name")
    if rank == n - 1:
        q.put_object(named)
    if rank == 0:
        got = q.get_object(timeout=10)
        assert got.id == named.id
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    cases = sys.argv[1].split(",")
    comm = None if cases == ["backend_group"] else new_comm()
    for case in cases:
        globals()["case_" + case](comm)
    if comm is not None:
        comm.finalize()
    print("ok", flush=True)
