"""shoal.empty & co: arrays in a communicator's shared memory, their use in
collectives on 1-4 ranks, their lifetime against collection, finalize and
interpreter exit, and shoal.share_memory_. Each test runs a case of
memory_ranks.py on fresh ranks."""

import os
import sys

import pytest

from harness import HERE, spawn

pytest.importorskip("torch")

PROGRAM = os.path.join(HERE, "memory_ranks.py")


def run(n, case, *extra, env=None, timeout=120):
    """Runs memory_ranks.py CASE on n ranks; returns their outputs."""
    results = spawn(n, None, extra_env=env, timeout=timeout,
                    argv=[sys.executable, PROGRAM, case, *extra])
    for r, (rc, out, err) in enumerate(results):
        assert rc == 0 and "ok" in out.split(), \
            f"{case} rank {r}: exit {rc}\n--- stdout\n{out}\n--- stderr\n{err}"
    return results


def no_dead_peers(results):
    for r, (_, _, err) in enumerate(results):
        assert "died" not in err and "aborted" not in err, \
            f"rank {r} saw a peer die:\n{err}"


def test_allocation_dtypes_and_shapes():
    run(1, "basics")


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_collectives_on_shared_memory(n):
    run(n, "collectives")


def test_lifetime_follows_views_and_heap_is_reused():
    run(2, "lifetime", env={"SHOAL_SHM_HEAP_BYTES": str(256 << 20)})


def test_finalize_with_live_arrays():
    no_dead_peers(run(2, "finalize"))


@pytest.mark.parametrize("finalize", ["finalize", "keep"])
def test_exit_with_live_arrays(finalize):
    results = run(2, "exit_with_arrays", finalize)
    no_dead_peers(results)
    for rc, out, err in results:
        # an exit handler running after shoal's still reads the memory
        assert "late sum 100000" in out, out + err


def test_split_communicator_arrays():
    run(3, "split")


def test_share_memory_moves_a_storage():
    run(2, "share_memory")


NO_TORCH = """
import sys
sys.modules["torch"] = None  # import torch fails: as if not installed
import numpy as np
import shoal
c = shoal.new_comm("shoal", "cpu", abort_process_on_timeout_or_error=False)
a = shoal.zeros(100000, comm=c)
assert isinstance(a, np.ndarray) and a.dtype == np.float32, (type(a), a)
a += c.get_rank() + 1
c.all_reduce(a, shoal.ReduceOp.SUM)
n = c.get_size()
assert (a == n * (n + 1) // 2).all()
assert shoal.is_shared(a, c)
c.finalize()
print("ok")
"""


def test_numpy_arrays_without_torch():
    for r, (rc, out, err) in enumerate(spawn(2, NO_TORCH)):
        assert rc == 0 and out.split() == ["ok"], f"rank {r}: {rc}\n{out}\n{err}"
