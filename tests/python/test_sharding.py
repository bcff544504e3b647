"""shoal.sharding: every transition between specs against the dense
tensor (1-D meshes of 2-4 ranks, 2x1 and 2x2 meshes; float32, bfloat16,
int64; even and uneven shapes), the collective each reshard rule issues,
the explicit ops, ppermute and bad input, gradients (tensor and data
parallelism), the operations' communication_cost and the cost model
(built-in, fitted per size range). The rank side is sharding_ranks.py."""

import math
import os
import subprocess
import sys

import pytest

from harness import HERE, spawn, tool_path

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


def test_data_parallel_gradient_is_all_reduced():
    """The spec's data parallelism: the replicated weight's .grad is the
    dense gradient after backward, one all_reduce issued there, none
    forward."""
    run(2, "data_parallel")


def test_shard_method_and_gather_all_axes():
    run(2, "shard_names")


def test_every_operation_reports_its_communication_cost(tmp_path):
    run(2, "op_costs", str(tmp_path / "tuning"))


@pytest.mark.timed
def test_estimate_cost_works_before_any_calibration(tmp_path):
    """Built-in constants (marked uncalibrated) when nothing was measured;
    the table is in the output."""
    run(2, "builtin_cost", str(tmp_path / "tuning"))


def test_fit_gives_each_cache_level_its_beta():
    """A machine moving 50, 14 and 5 GB/s below 1.5 MiB, below 24 MiB and
    beyond (5% noise): the fit per size range predicts every measured size
    within 10%, where one range for all (the model before ranges) is off
    by more than 25% somewhere."""
    from shoal.sharding.fit import fit_ranges, predict

    def secs(nbytes):
        gbps = 50 if nbytes < 1.5 * 2**20 else 14 if nbytes < 24 * 2**20 \
            else 5
        return 2e-6 + nbytes / (gbps * 1e9)

    points = []
    for i in range(24):
        nbytes = 8 << i
        noise = 1 + 0.05 * math.sin(7 * i)
        points.append((nbytes, (2.0, float(nbytes), 0.0),
                       secs(nbytes) * noise))

    def worst(ranges):
        return max(abs(predict(ranges, b, c) / s - 1) for b, c, s in points)

    ranges = fit_ranges(points)
    assert len(ranges) == 3, ranges
    assert ranges[0].hi == pytest.approx(1.5 * 2**20, rel=0.5), ranges
    assert ranges[1].hi == pytest.approx(24 * 2**20, rel=0.5), ranges
    assert worst(ranges) < 0.10, worst(ranges)
    assert worst(fit_ranges(points, max_ranges=1)) > 0.25


def test_cost_model_never_cheaper_for_a_larger_call():
    """Two ranges fitted apart, the second starting below where the first
    ends (as noisy sizes near a cut give): a size just past the cut is
    estimated at least at the first range's end, and estimates grow with
    the size throughout."""
    from shoal.sharding.fit import Range, predict

    cut = 512 << 10
    ranges = [Range(0, cut, 10e-6, 1e-9, 0.0),
              Range(cut, math.inf, 0.0, 0.4e-9, 0.0)]
    last = 0.0
    for nbytes in [64 << 10, 256 << 10, cut - 1, cut, 600 << 10, 1 << 20,
                   4 << 20]:
        est = predict(ranges, nbytes, (1.0, float(nbytes), 0.0))
        assert est >= last, (nbytes, est, last)
        last = est
    # Beyond the point where the second range's own line overtakes, its
    # constants decide.
    big = 64 << 20
    assert predict(ranges, big, (1.0, float(big), 0.0)) == \
        pytest.approx(0.4e-9 * big)


@pytest.mark.timed
def test_cost_model_fits_shoal_tunes_sweep(tmp_path):
    """shoal-tune's sweep (all_gather and all_reduce) beside a tuning
    file gives constants fitted per size range; then calibrate():
    estimate_cost against fresh measurements (the table is in the output;
    the bound is loose: see case_cost)."""
    path = str(tmp_path / "tuning")
    p = subprocess.run([tool_path("shoalrun"), "-n", "2",
                        tool_path("shoal-tune"), "-c",
                        "all_gather,all_reduce", "--min", "64K", "--max",
                        "16M", "--budget-ms", "2", "-o", path],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    run(2, "cost", path)


@pytest.mark.parametrize("n", [2, 4])
def test_dtensor_both_ways(n):
    from harness import free_port
    run(n, "dtensor", str(free_port()))
