"""shoal.sharding: every transition between specs against the dense
tensor (1-D meshes of 2-4 ranks, 2x1 and 2x2 meshes; float32, bfloat16,
int64; even and uneven shapes), the collective each reshard rule issues,
the explicit ops, ppermute and bad input. The rank side is
sharding_ranks.py."""

import os
import sys

import pytest

from harness import HERE, spawn

pytest.importorskip("torch")

PROGRAM = os.path.join(HERE, "sharding_ranks.py")


def run(n, case, *extra, timeout=240):
    results = spawn(n, None, timeout=timeout,
                    argv=[sys.executable, PROGRAM, case, *extra])
    for r, (rc, out, err) in enumerate(results):
        assert rc == 0 and "ok" in out.split(), \
            f"{case} rank {r}: exit {rc}\n{out}\n{err[-4000:]}"
    return results


@pytest.mark.parametrize("n,kind", [(2, "1d"), (3, "1d"), (4, "1d"),
                                    (2, "2d"), (4, "2d")])
def test_every_transition(n, kind):
    run(n, "transitions", kind)


def test_reshard_issues_the_named_collective():
    run(4, "counts")


@pytest.mark.parametrize("n", [2, 4])
def test_reshard_reuses_only_unreachable_outputs(n):
    run(n, "reuse")


@pytest.mark.parametrize("n", [2, 4])
def test_explicit_ops(n):
    run(n, "explicit")


@pytest.mark.parametrize("n", [2, 4])
def test_ppermute(n):
    run(n, "ppermute")


def test_bad_input():
    run(4, "bad_input")


@pytest.mark.parametrize("n", [2, 4])
def test_patterns_count_their_collectives(n):
    """Column-parallel: none; row-parallel: one all_reduce (or
    reduce_scatter) when the value is needed; data-parallel: none."""
    run(n, "patterns")


@pytest.mark.parametrize("n", [2, 4])
def test_tensor_parallel_mlp_gradients(n):
    run(n, "mlp_grad")


@pytest.mark.parametrize("n", [2, 4])
def test_cost_model(n, tmp_path):
    """calibrate, then estimate_cost against measurements (the table is in
    the output; the bound is loose: see case_cost)."""
    run(n, "cost", str(tmp_path / "tuning"))


@pytest.mark.parametrize("n", [2, 4])
def test_dtensor_both_ways(n):
    from harness import free_port
    run(n, "dtensor", str(free_port()))
