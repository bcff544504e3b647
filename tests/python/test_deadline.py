"""shoal.deadline: a time limit on every shoal call a thread makes,
through shoal.Comm and through torch.distributed's "shoal" group. The rank
side is deadline_ranks.py."""

import datetime
import os
import sys

import pytest

from harness import HERE, free_port, spawn

import shoal

PROGRAM = os.path.join(HERE, "deadline_ranks.py")


def passed(results):
    for r, (rc, out, err) in enumerate(results):
        assert rc == 0 and "ok" in out.split(), \
            f"rank {r}: exit {rc}\n{out}\n{err[-4000:]}"


def test_caps_every_call_of_the_thread():
    passed(spawn(2, None, timeout=120,
                 argv=[sys.executable, PROGRAM, "comm"]))


def test_caps_calls_through_torch_distributed():
    pytest.importorskip("torch")
    passed(spawn(2, None, timeout=120,
                 argv=[sys.executable, PROGRAM, "c10d", str(free_port())]))


def test_effective_timeout_is_the_earliest():
    """The helper other layers use: a call's own timeout (or default)
    against what is left of the thread's nested deadlines."""
    from shoal._deadline import effective_timeout, remaining
    assert remaining() is None
    assert effective_timeout(None, 30.0) == 30.0
    assert effective_timeout(None) is None
    with shoal.deadline(datetime.timedelta(seconds=60)):
        assert 59 < remaining() <= 60
        assert effective_timeout(2.0, 30.0) == 2.0
        with shoal.deadline(5):
            assert 4 < effective_timeout(None, 30.0) <= 5
            assert 4 < effective_timeout(None) <= 5
            with shoal.deadline(100):
                assert 4 < remaining() <= 5
        assert 59 < remaining() <= 60
    assert remaining() is None


@pytest.mark.parametrize("bad", [0, -1, "soon", float("nan")])
def test_bad_seconds_are_refused(bad):
    with pytest.raises(shoal.InvalidArgumentError, match="shoal.deadline"):
        with shoal.deadline(bad):
            pass
