"""shoal.compile_op across ranks: the spec's examples, a randomized
property test against a reference gathered on rank 0, DTensor
redistributions against DTensor.redistribute, bad specs and tensors, and
the Future's semantics. The rank side is compile_op_ranks.py."""

import os

import pytest

from test_c10d_jobs import EXAMPLES, job, ok

pytest.importorskip("torch")

RANKS = os.path.join(os.path.dirname(__file__), "compile_op_ranks.py")


def run(size, scenario, *args, extra_env=None, timeout=150):
    outs = ok(job(size, [RANKS, scenario, *args], timeout=timeout,
                  extra_env=extra_env))
    assert all(o.strip().endswith(f"ok {scenario}") for o in outs), outs


def test_examples_4_ranks():
    run(4, "examples")


def test_examples_over_tcp():
    run(3, "examples", extra_env={"SHOAL_TRANSPORT": "tcp"})


@pytest.mark.parametrize("size", [2, 4])
def test_random_against_gathered_reference(size):
    run(size, "random", "40", str(100 * size))


def test_dtensor_redistributions_match_redistribute():
    run(4, "dtensor")


def test_dtensor_redistributions_2_ranks():
    run(2, "dtensor")


def test_bad_specs_and_tensors_raise_everywhere():
    run(4, "errors")


def test_future_group_names_and_reuse():
    run(3, "semantics")


@pytest.mark.parametrize("size", [2, 4])
def test_reshard_example(size):
    outs = ok(job(size, [os.path.join(EXAMPLES, "compile_op_reshard.py")]))
    text = "".join(outs)
    assert text.count("resharded rows -> columns") == size, text
    assert "overlap counts" in text, text
