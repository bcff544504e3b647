"""shoal.Queue across ranks: one location on 1-4 ranks, multicast, named
and unnamed queues, many producers, tensors and objects mixed, the wrong
kind of item, transactions, timeouts, bounded capacity, bad arguments, a
dying location, shared memory and TCP, a torch.distributed group, the
example pipeline and the benchmark's queue section. The rank side is
queue_ranks.py; each test starts its ranks once and runs several cases on
them."""

import os
import sys

import pytest

from harness import HERE, run_python, spawn
from test_c10d_jobs import job, ok

pytest.importorskip("torch")

PROGRAM = os.path.join(HERE, "queue_ranks.py")
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "python",
                       "queue_pipeline.py")
TCP = {"SHOAL_TRANSPORT": "tcp"}

# The cases that hold on any number of ranks, one included.
ANY_SIZE = "single,mixed,timeouts,transactions,errors"
# Those that need several ranks to mean something.
SEVERAL = "producers,multicast,named"


def run(n, cases, env=None, timeout=120):
    results = spawn(n, None, extra_env=env, timeout=timeout,
                    argv=[sys.executable, PROGRAM, cases])
    for r, (rc, out, err) in enumerate(results):
        assert rc == 0 and "ok" in out.split(), \
            f"{cases} rank {r}: exit {rc}\n{out}\n{err[-4000:]}"
    return results


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_one_location(n):
    run(n, ANY_SIZE + ("," + SEVERAL if n > 1 else ""))


@pytest.mark.full  # the C suite runs the queue cases over TCP
def test_over_tcp():
    run(3, ANY_SIZE + "," + SEVERAL, env=TCP)


def test_channel_open_at_creation():
    """SHOAL_QUEUES=1: named queues work before any unnamed one."""
    run(2, "named", env={"SHOAL_QUEUES": "1"})


# Over TCP only in make test-full: the C suite covers both transports.
TCP_FULL = pytest.param(TCP, marks=pytest.mark.full, id="tcp")


@pytest.mark.parametrize("env", [{}, TCP_FULL])
def test_bounded_capacity(env):
    run(2, "capacity", env=dict(env, SHOAL_QUEUE_CAPACITY="16",
                                SHOAL_QUEUE_RING_BYTES="16384"))


@pytest.mark.parametrize("env", [{}, TCP_FULL])
def test_dead_location_fails_the_waits(env):
    results = spawn(3, None, extra_env=env, timeout=60,
                    argv=[sys.executable, PROGRAM, "kill"])
    for r in (0, 1):
        rc, out, err = results[r]
        assert rc == 0 and "wait failed after" in out, \
            f"rank {r}: exit {rc}\n{out}\n{err[-4000:]}"
    assert results[2][0] == -9, results[2]


def test_backend_group():
    outs = ok(job(2, [PROGRAM, "backend_group"]))
    assert all("ok" in o.split() for o in outs), outs


def test_example_pipeline():
    results = spawn(3, None, timeout=120, argv=[sys.executable, EXAMPLE])
    for r, (rc, out, err) in enumerate(results):
        assert rc == 0, f"rank {r}: exit {rc}\n{out}\n{err[-4000:]}"
    assert "pipeline ok" in results[0][1], results[0][1]


@pytest.mark.full
def test_bench_queue_section():
    """python -m shoal.bench --queue-only --quick prints its three tables
    (a smoke test: the numbers are not judged)."""
    p = run_python(["-m", "shoal.bench", "--queue-only", "--quick"],
                   timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    for title in ("# shoal.Queue", "# (b) 4 tensors of 1 MiB", "# (c) 500"):
        assert title in p.stdout, p.stdout
    rows = {line.split()[0] for line in p.stdout.splitlines()
            if line and not line.startswith("#")}
    assert {"queue", "gloo", "memcpy", "objects"} <= rows, p.stdout
