"""torch.distributed backend "shoal": every operation DDP, FSDP, DTensor
and the functional collectives use, on 1-4 ranks, sync and async, against
gloo in the same job (see c10d_cases.py).

The matrices are sampled (a different third per world size) unless
SHOAL_PY_FULL=1 (make test-full).
"""

import os

import pytest

SIZES = [1, 2, 3, 4]
FULL = os.environ.get("SHOAL_PY_FULL", "") not in ("", "0")


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("case", [
    "all_reduce", "reduce", "reduce_scatters", "broadcast", "gathers",
    "scatters", "all_to_alls", "coalesced", "barrier", "functional",
    "dtensor",
])
def test_collective(c10d_pools, n, case):
    c10d_pools.get(n).check(case, FULL)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_send_recv(c10d_pools, n):
    c10d_pools.get(n).check("send_recv", FULL)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_recv_any_source(c10d_pools, n):
    c10d_pools.get(n).check("recv_any_source", FULL)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("case", ["ddp_parity", "fsdp_parity"])
def test_training_matches_gloo(c10d_pools, n, case):
    c10d_pools.get(n).check(case, FULL)


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("case", [
    "powersgd_parity", "nested_future_wait", "all_gather_coalesced",
    "sparse_all_reduce", "backend_hooks",
])
def test_drop_in(c10d_pools, n, case):
    """Behaviours real training code relies on (each failed before)."""
    c10d_pools.get(n).check(case, FULL)


@pytest.mark.parametrize("n", [3, 4])
def test_monitored_barrier_names_absent_ranks(c10d_pools, n):
    texts = c10d_pools.get(n).check("monitored_barrier_names_absent", FULL)
    first, every = texts[0]
    assert "Rank 1 failed to pass monitoredBarrier in 1000 ms" in first, first
    absent = sorted({1, n - 1})
    names = ", ".join(map(str, absent))
    want = (f"Rank {names}" if len(absent) == 1 else f"Ranks {names}")
    assert f"{want} failed to pass monitoredBarrier" in every, every
    for r in range(2, n - 1):  # present ranks hear rank 0's verdict
        assert all("reports" in t for t in texts[r]), texts[r]


@pytest.mark.parametrize("n", [1, 3])
def test_bad_inputs_raise_everywhere(c10d_pools, n):
    errors = c10d_pools.get(n).check("bad_inputs", FULL)
    for name in errors[0]:
        missing = [r for r in range(n) if errors[r][name] is None]
        assert not missing, f"{name}: ranks {missing} did not raise"


@pytest.mark.parametrize("n", [2, 4])
def test_mismatch_raises_everywhere(c10d_pools, n):
    texts = c10d_pools.get(n).check("mismatch", FULL)
    assert all("MismatchError" in t for t in texts), texts
