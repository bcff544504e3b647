"""Fixtures: the rank pools (one per world size) and a check that shoal is
importable (make test-python installs it into build/python-target)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Pools, free_port  # noqa: E402


def pytest_configure(config):
    try:
        import shoal  # noqa: F401
    except ImportError as e:
        pytest.exit(f"shoal is not importable ({e}): run `make test-python`, "
                    "or pip install . first", returncode=2)


@pytest.fixture(scope="session")
def pools():
    p = Pools()
    yield p
    p.close()


@pytest.fixture(scope="session")
def c10d_pools():
    """Pools whose ranks run c10d_cases.py: torch.distributed with gloo as
    the default group and a "shoal" group beside it."""
    pytest.importorskip("torch")
    p = Pools(lambda: {"SHOAL_TEST_CASES": "c10d_cases",
                       "TEST_TORCH_PORT": str(free_port())})
    yield p
    p.close()
