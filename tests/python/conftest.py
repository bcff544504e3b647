"""Fixtures: the rank pools (one per world size) and a check that shoal is
importable (make test-python installs it into build/python-target)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Pools  # noqa: E402


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
