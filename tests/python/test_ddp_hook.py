"""shoal.ddp: DDP's gradient buckets in shared memory. After a few steps
the parameters equal those of plain DDP over gloo, whether the hook moves
the buckets or reduces into twins, with and without bucket views, over a
gloo process group plus a shoal communicator or over backend "shoal"."""

import os
import sys

import pytest

from harness import HERE, free_port, spawn

pytest.importorskip("torch")

PROGRAM = os.path.join(HERE, "ddp_ranks.py")


def run(n, case):
    results = spawn(n, None, extra_env={"TEST_TORCH_PORT": str(free_port())},
                    timeout=150, argv=[sys.executable, PROGRAM, case])
    for r, (rc, out, err) in enumerate(results):
        assert rc == 0 and ("ok" in out.split() or "skip:" in out), \
            f"{case} rank {r}: exit {rc}\n--- stdout\n{out}\n--- stderr\n{err}"
    return results


@pytest.mark.parametrize("n", [2, 3])
def test_ddp_parity_with_gloo(n):
    run(n, "ddp_gloo")


def test_ddp_over_shoal_backend():
    results = run(2, "ddp_shoal_backend")
    if "skip:" in results[0][1]:
        pytest.skip(results[0][1].strip())
