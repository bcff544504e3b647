"""Rank programs of test_deadline.py.

``python deadline_ranks.py CASE [ARG...]`` runs case_CASE on this rank
(ranks, store and secret from the environment, as harness.spawn sets them)
and prints "ok" when it passed. Rank 0 makes the calls; rank 1 never joins
them (a peer that does not arrive), and waits on a communicator of its own
until rank 0 is done, so that no call ends early because a peer left.
"""

import datetime
import os
import sys
import threading
import time

import torch

import shoal


def new_comm(name):
    return shoal.new_comm("shoal", "cpu", name=name,
                          abort_process_on_timeout_or_error=False)


def rank():
    return int(os.environ["SHOAL_RANK"])


def times_out(call, seconds, deadline=None):
    """call() raises CommTimeoutError after about `seconds` (at most 2 s
    late on a loaded machine) naming this thread's shoal.deadline of
    `deadline` seconds, or naming none when `deadline` is None."""
    t0 = time.monotonic()
    try:
        call()
    except shoal.CommTimeoutError as e:
        took = time.monotonic() - t0
        text = str(e)
    else:
        raise AssertionError("the call returned")
    print(f"{took:.2f} s: {text}")
    assert seconds - 0.05 <= took < seconds + 2, (took, seconds)
    if deadline is not None:
        assert f"shoal.deadline({deadline:g} s) of this thread ran out" \
            in text, text
    else:
        assert "shoal.deadline" not in text, text


def under(seconds, call):
    def run():
        with shoal.deadline(seconds):
            call()
    return run


def case_comm():
    """The deadline caps blocking calls (the short way and the full way),
    waits of a Work issued before it, and a call made after it passed;
    nested deadlines keep the earliest; a shorter timeout of the call's
    own still counts (and is not blamed on the deadline); other threads
    are not affected."""
    names = ("short", "nested", "own", "work", "passed", "thread")
    comms = {n: new_comm(n) for n in names}
    done = new_comm("done")
    if rank() == 0:
        t = torch.ones(4)
        strided = torch.ones(4, 2)[:, 0]  # not contiguous: the full way
        times_out(under(0.5, lambda: comms["short"].all_reduce(
            t, shoal.ReduceOp.SUM)), 0.5, 0.5)

        def nested():
            with shoal.deadline(5):
                with shoal.deadline(0.3):
                    with shoal.deadline(10):
                        comms["nested"].barrier()
        times_out(nested, 0.3, 0.3)
        times_out(under(10, lambda: comms["own"].all_reduce(
            strided, shoal.ReduceOp.SUM, timeout=0.3)), 0.3)
        work = comms["work"].all_reduce(t, shoal.ReduceOp.SUM,
                                        async_op=True)
        times_out(under(0.3, work.wait), 0.3, 0.3)

        def after_it_passed():
            with shoal.deadline(0.2):
                time.sleep(0.3)
                comms["passed"].recv(t, 1)
        times_out(after_it_passed, 0.3, 0.2)

        # A thread started inside a deadline has none: its call gets its
        # own timeout (1 s), not what is left of the main thread's.
        caught = []

        def other_thread():
            try:
                times_out(lambda: comms["thread"].barrier(timeout=1.0), 1.0)
            except BaseException as e:
                caught.append(e)
        with shoal.deadline(0.2):
            th = threading.Thread(target=other_thread)
            th.start()
            th.join()
        assert not caught, caught
        assert shoal._deadline.remaining() is None
    done.barrier(timeout=60)
    for c in list(comms.values()) + [done]:
        try:
            c.finalize()
        except shoal.ShoalError:
            pass
    print("ok")


def case_c10d(port):
    """Through torch.distributed with backend "shoal": a synchronous
    all_reduce, the wait of an asynchronous one, the wait of one whose
    future was asked for (another thread waits for it), and
    monitored_barrier."""
    import torch.distributed as dist
    dist.init_process_group("shoal", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank(), world_size=2)
    groups = [dist.new_group([0, 1]) for _ in range(4)]
    done = new_comm("done")
    if rank() == 0:
        t = torch.ones(4)
        times_out(under(0.5, lambda: dist.all_reduce(t, group=groups[0])),
                  0.5, 0.5)
        work = dist.all_reduce(t, group=groups[1], async_op=True)
        times_out(under(0.3, work.wait), 0.3, 0.3)
        work = dist.all_reduce(t, group=groups[2], async_op=True)
        work.get_future()
        times_out(under(0.3, work.wait), 0.3, 0.3)
        # torch lets only gloo groups have it: the group's own method.
        times_out(under(0.5, lambda: groups[3].monitored_barrier(
            datetime.timedelta(seconds=20))), 0.5, 0.5)
    done.barrier(timeout=60)
    done.finalize()
    print("ok")
    sys.stdout.flush()
    os._exit(0)  # the aborted groups need no goodbye


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]](*sys.argv[2:])
