"""shoal.tune: benchmark and select in lockstep (the slowest rank counts,
every rank picks the same winner), the cache, and the failures: a
candidate raising on one rank, hanging on one rank, raising while the
others are blocked in its collective, a rank that never arrives and a rank
killed; over a shoal.Comm, a torch group of backend "shoal" and one of
backend "gloo". The rank side is tune_ranks.py."""

import os
import subprocess
import sys

import pytest

from harness import HERE, free_port, run_python, spawn, tool_path

pytest.importorskip("torch")

PROGRAM = os.path.join(HERE, "tune_ranks.py")


def run(n, case, *extra, timeout=120):
    return spawn(n, None, timeout=timeout,
                 argv=[sys.executable, PROGRAM, case, *map(str, extra)])


def passed(results, ranks=None):
    for r, (rc, out, err) in enumerate(results):
        if ranks is None or r in ranks:
            assert rc == 0 and "ok" in out.split(), \
                f"rank {r}: exit {rc}\n{out}\n{err[-4000:]}"


@pytest.mark.timed
@pytest.mark.parametrize("kind", ["comm", "shoal", "gloo"])
def test_lockstep_counts_the_slowest_rank(kind):
    passed(run(2, "lockstep", kind, free_port()))


@pytest.mark.timed
def test_lockstep_three_ranks():
    passed(run(3, "lockstep", "comm"))


@pytest.mark.timed
def test_cache_per_key():
    passed(run(2, "cache"))


@pytest.mark.parametrize("kind", ["comm", "gloo"])
def test_candidate_raising_on_one_rank_is_excluded(kind):
    passed(run(2, "raises_after_collective", kind, free_port()))


@pytest.mark.parametrize("mode,comm", [
    pytest.param("hang", "tuned", marks=pytest.mark.full),  # hang-other too
    ("hang", "other"), ("raise_blocked", "tuned"),
    ("raise_blocked", "other")])
def test_candidate_stuck_on_one_rank_ends_by_the_deadline(mode, comm):
    """Also when the candidate's collective runs on another shoal
    communicator than the one tuned on (whose own timeout is 30 s)."""
    passed(run(2, "hangs", mode, comm))


@pytest.mark.parametrize("kind", [
    "comm", pytest.param("gloo", marks=pytest.mark.full)])
def test_missing_rank_is_named(kind):
    passed(run(3, "missing", kind, free_port()))


def test_killed_rank_is_named():
    results = run(3, "killed")
    passed(results, ranks=(0, 2))
    assert results[1][0] == 9


def test_without_a_group_outside_distributed_times_locally():
    """No group and no torch.distributed: local timing (the spec's
    fallback), with the same counts and the same choice."""
    import time
    import torch.distributed as dist
    from shoal import tune
    assert not dist.is_initialized()
    calls = []

    def nap():
        calls.append(1)
        time.sleep(0.004)

    secs = tune.benchmark(nap, warmup=1, reps=3)
    assert len(calls) == 4 and 0.004 <= secs < 1, (calls, secs)
    tune.clear_cache()
    assert tune.select({"nap": nap, "quick": lambda: None}, warmup=0,
                       reps=3) == "quick"


@pytest.mark.timed
def test_the_faster_candidate_wins_in_either_order():
    """Two candidates of known costs (2 and 6 ms) while the first 20
    candidate calls of a select each take 12 ms more (a slow start:
    first-touch costs, a burst of load): in either order the faster must
    win. Measured one after the other, the first candidate alone met the
    slow start and lost although faster."""
    passed(run(2, "order"))


def test_costs_from_shoal_tune(tmp_path):
    """shoal-tune's cost model and measurements beside its file, read by
    load_costs and load_sweep; a later run on another rank count keeps
    the measurements of this one."""
    path = str(tmp_path / "tuning")

    def tune(ranks, most):
        p = subprocess.run([tool_path("shoalrun"), "-n", str(ranks),
                            tool_path("shoal-tune"), "-c", "all_reduce",
                            "--max", most, "--budget-ms", "1", "-o", path],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr

    tune(2, "64K")
    passed(run(1, "costs", path))
    before = open(path + ".sweep").read()
    tune(1, "64")
    after = open(path + ".sweep").read()
    kept = [line for line in before.splitlines() if ", 2, 1, " in line]
    assert kept and all(line in after.splitlines() for line in kept)
    assert ", 1, 1, 64, " in after


# ---- torch.compile: inductor's collective autotuning on CPU -------------------

EXAMPLE = os.path.join(HERE, "..", "..", "examples", "python",
                       "autotune_custom_op.py")


@pytest.mark.full  # test_inductor_counts_come_from_its_config samples it
def test_inductor_autotunes_the_spec_example_on_cpu():
    """The corrected spec example on 2 ranks of backend "shoal": inductor
    measures both choices in lockstep (the chunked one far slower), the
    compiled function runs the fast one and equals eager. Inductor's
    counts, from its environment variables, are kept small (its defaults,
    25 warm-up and 50 timed calls per choice, are for GPUs)."""
    from test_c10d_jobs import job, ok
    out = ok(job(2, [EXAMPLE, "--backend", "shoal"], timeout=600,
                 extra_env={"OMP_NUM_THREADS": "1",
                            "TORCHINDUCTOR_DEFAULT_AUTOTUNE_WARMUP": "3",
                            "TORCHINDUCTOR_COLLECTIVE_BENCHMARK_NRUNS":
                                "10"}))[0]
    times = {}
    for line in out.splitlines():
        if line.startswith("choice "):
            name, us = line[len("choice "):].split(": ", 1)
            times[name] = float(us.split()[0])
    fast = [t for n, t in times.items() if "allreduce_fast" in n]
    slow = [t for n, t in times.items() if "allreduce_slow" in n]
    assert fast and slow and fast[0] < slow[0], out
    assert "runs the fast choice; its result equals eager" in out, out


PATCH_CHECK = """
import warnings, torch, shoal.tune
{setup}
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    ok = shoal.tune.enable_inductor()
print("enabled" if ok else "refused", *[str(x.message) for x in w])
"""


INDUCTOR_COUNTS = """
import torch, torch.distributed as dist, shoal.tune
from torch._inductor import config
from torch._inductor.select_algorithm import AlgorithmSelectorCache as sa
dist.init_process_group("shoal", store=dist.HashStore(), rank=0,
                        world_size=1)
assert shoal.tune.enable_inductor()
config.inductor_default_autotune_warmup = 2
config.collective_benchmark_nruns = 7
calls = []

class Choice:
    name = "counted"
    def benchmark_collective(self, *inputs, out=None):
        calls.append(1)

class Tensors:
    def unpack(self):
        return (), None

class Args:
    def get_benchmark_tensors(self, extern):
        return Tensors()

ms = sa.benchmark_collective_choice(Choice(), Args())
print("calls", len(calls), "ms", ms)
dist.destroy_process_group()
"""


def test_inductor_counts_come_from_its_config():
    """Under inductor, the warm-up and timed calls per choice are
    inductor's settings (inductor_default_autotune_warmup,
    collective_benchmark_nruns), read when measuring."""
    p = run_python(["-c", INDUCTOR_COUNTS], timeout=120)
    assert p.returncode == 0 and "calls 9 ms " in p.stdout, \
        p.stdout + p.stderr
    assert float(p.stdout.split()[-1]) < 1e3, p.stdout


@pytest.mark.parametrize("setup,want", [
    ("", "enabled"),
    ("torch.__version__ = '2.14.0'",
     "refused shoal.tune.enable_inductor: torch 2.14.0 is not a version"),
    ("import torch._inductor.select_algorithm as sa\n"
     "sa.AlgorithmSelectorCache.benchmark_collective_choice = "
     "classmethod(lambda cls, choice: 0)",
     "refused shoal.tune.enable_inductor: inductor's internals differ"),
])
def test_inductor_patch_is_fenced(setup, want):
    """Applied on torch 2.13; another version, or internals shaped
    otherwise, leave inductor alone with a warning saying why."""
    p = run_python(["-c", PATCH_CHECK.format(setup=setup)], timeout=120)
    assert p.returncode == 0 and p.stdout.startswith(want), \
        p.stdout + p.stderr
