"""shoal windows from Python (comm.new_window, torchcomms' window API): the
ring over shoal.zeros and ordinary tensors, shared memory and TCP, on 2,
3, 4 and 8 ranks; mapped peer tensors; bad input; a killed peer; a
deadline; a torch.distributed group of backend "shoal"; and the example
program. The rank side is window_ranks.py."""

import os
import sys

import pytest

from harness import HERE, spawn
from test_c10d_jobs import job, ok

pytest.importorskip("torch")

PROGRAM = os.path.join(HERE, "window_ranks.py")
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "python",
                       "window_ring.py")


def run(n, case, *extra, env=None, timeout=240, want_rc=0):
    results = spawn(n, None, extra_env=env, timeout=timeout,
                    argv=[sys.executable, PROGRAM, case, *extra])
    for r, (rc, out, err) in enumerate(results):
        if want_rc == 0:
            assert rc == 0 and "ok" in out.split(), \
                f"{case} rank {r}: exit {rc}\n{out}\n{err}"
    return results


# Every size on 2 ranks; the small ones elsewhere, unless SHOAL_PY_FULL
# (make test-full). The C tests (window_test.c) run the whole matrix on
# 1-8 ranks over both transports.
FULL = os.environ.get("SHOAL_PY_FULL") == "1"


@pytest.mark.parametrize("n,kind", [(2, "shared"), (3, "plain"),
                                    (4, "shared"), (8, "plain")])
def test_ring_shared_memory(n, kind):
    run(n, "ring", kind, "all" if n == 2 or FULL else "small")


@pytest.mark.parametrize("n", [2, 3])
def test_ring_tcp(n):
    run(n, "ring", "plain", "all" if FULL else "small",
        env={"SHOAL_TRANSPORT": "tcp"})


def test_mapped_peer_tensors():
    run(3, "map")


def test_views_kept_past_deregistration_cannot_reach_the_peer():
    run(2, "stale_views")


def test_bad_input():
    run(3, "errors")


def test_bad_input_tcp():
    run(2, "errors", env={"SHOAL_TRANSPORT": "tcp"})


def test_killed_peer_fails_the_wait():
    results = run(3, "kill", want_rc=None)
    for r in (0, 1):
        rc, out, err = results[r]
        assert rc == 0 and "ok" in out.split(), \
            f"rank {r}: exit {rc}\n{out}\n{err}"
    assert results[2][0] == -9


def test_deadline():
    run(2, "timeout")


def test_backend_group():
    outs = ok(job(2, [PROGRAM, "backend_group"]))
    assert all("ok" in o.split() for o in outs), outs


@pytest.mark.parametrize("env", [{}, {"SHOAL_TRANSPORT": "tcp"}])
def test_example_window_ring(env):
    results = spawn(3, None, extra_env=env, timeout=120,
                    argv=[sys.executable, EXAMPLE])
    for r, (rc, out, err) in enumerate(results):
        assert rc == 0 and "halo exchange ok" in out, \
            f"rank {r}: exit {rc}\n{out}\n{err}"
