"""Faults across ranks: mismatched calls and timeouts raise on every rank
and a new communicator works afterwards; after a rank dies, or a rank
revokes, the others agree, shrink and go on (Comm.revoke, shrink, agree,
failed_ranks, get_async_error)."""

import pytest

from harness import spawn


@pytest.mark.parametrize("n", [2, 3])
def test_mismatched_counts_raise_everywhere(pools, n):
    texts = pools.get(n).check("mismatch")
    assert all("all_reduce" in t for t in texts), texts
    assert pools.get(n).check("reconnect") == [n] * n


@pytest.mark.parametrize("n", [2])
def test_per_operation_timeout(pools, n):
    texts = pools.get(n).check("op_timeout")
    assert texts[0], texts
    assert pools.get(n).check("reconnect") == [n] * n


LOST_RANK = """
import os, signal, numpy as np, shoal
comm = shoal.new_comm("shoal", "cpu", name="ft")
rank, size = comm.get_rank(), comm.get_size()
comm.barrier()
if rank == size - 1:
    os.kill(os.getpid(), signal.SIGKILL)
t = np.ones(4, dtype=np.float32)
try:
    while True:
        comm.all_reduce(t, shoal.ReduceOp.SUM)
except (shoal.PeerError, shoal.AbortedError) as e:
    assert "rank %d" % (size - 1) in str(e), e
assert isinstance(comm.get_async_error(), shoal.ShoalError)
assert comm.agree(True) == (True, [size - 1])
assert comm.failed_ranks() == [size - 1]
small = comm.shrink()
assert (small.get_rank(), small.get_size()) == (rank, size - 1)
assert small.get_async_error() is None
t = np.full(4, rank + 1, dtype=np.float32)
small.all_reduce(t, shoal.ReduceOp.SUM)
assert t.tolist() == [size * (size - 1) / 2] * 4, t
small.finalize()
comm.finalize()
print("went on")
"""


def test_survivors_shrink_and_go_on():
    results = spawn(3, LOST_RANK, timeout=60)
    for rank in (0, 1):
        rc, out, err = results[rank]
        assert rc == 0 and "went on" in out, (rank, rc, out, err)
    assert results[2][0] == -9


REVOKED = """
import time, numpy as np, shoal
comm = shoal.new_comm("shoal", "cpu", name="rv")
rank = comm.get_rank()
comm.barrier()
if rank == 0:
    time.sleep(0.2)
    comm.revoke("the test is done with it")
else:
    try:
        comm.recv(np.zeros(1, dtype=np.float32), 0)
        raise SystemExit("the receive did not fail")
    except shoal.RevokedError as e:
        assert isinstance(e, shoal.AbortedError)
        assert "the test is done with it" in str(e), e
assert isinstance(comm.get_async_error(), shoal.RevokedError)
assert comm.agree(rank != 1) == (False, [])
again = comm.shrink()
t = np.ones(2, dtype=np.float32)
again.all_reduce(t, shoal.ReduceOp.SUM)
assert t.tolist() == [again.get_size()] * 2 and again.get_size() == 2
again.finalize()
comm.finalize()
print("revoked and back")
"""


def test_revoke_fails_every_rank_and_shrinks_back():
    results = spawn(2, REVOKED, timeout=60)
    for rank, (rc, out, err) in enumerate(results):
        assert rc == 0 and "revoked and back" in out, (rank, rc, out, err)
