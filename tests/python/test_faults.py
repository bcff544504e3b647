"""Faults across ranks: mismatched calls and timeouts raise on every rank
and a new communicator works afterwards."""

import pytest


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
