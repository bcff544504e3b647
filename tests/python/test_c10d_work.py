"""The Work a blocking process-group call returns: handed out again once
nothing holds it, never while something does."""

import gc

import pytest

torch = pytest.importorskip("torch")

from shoal.c10d.work import done  # noqa: E402


def test_a_done_work_somebody_holds_is_never_handed_out_again():
    a, b = [torch.ones(1)], [torch.zeros(1)]
    first = done(a)
    second = done(b)
    assert second is not first
    assert first.result() is a and second.result() is b
    assert first.get_future().value() is a


def test_a_dropped_done_work_comes_back_empty():
    a, b = [torch.ones(1)], [torch.zeros(1)]
    work = done(a)
    future = work.get_future()  # sets the Work's own future
    kept = id(work)
    del work
    gc.collect()
    again = done(b)
    assert id(again) == kept  # the same object, handed out again ...
    assert again.result() is b  # ... with the new result
    assert again.get_future() is not future  # ... and none of the old state
    assert again.get_future().value() is b
    assert future.value() is a  # the old future keeps its own value
    assert again.wait() and again.is_completed() and again.is_success()
