"""Fixtures: the rank pools (one per world size) and a check that shoal is
importable (make test-python installs it into build/python-target).

With SHOAL_TEST_SAMPLE=1 (make test) the suite is a sample: a test
parametrized by world size (`n` or `size`) runs at one size, 3 where it has
3, else the fewest ranks above one, else one; and tests marked `full` (the
slow ones whose ground a faster test covers too) do not run. The summary
says how many were left out; make test-full runs everything.
"""

import collections
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Pools, free_port, port_slice  # noqa: E402


SAMPLE = os.environ.get("SHOAL_TEST_SAMPLE") == "1"


def _own_ports():
    """Each pytest-xdist worker draws its ports (shoal's stores, torch's
    MASTER_PORT) from its own slice of SHOAL_STORE_PORTS, so that tests
    running side by side never pick the same port between one's check and
    its server's bind. Subprocesses inherit the slice."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or count < 2:
        return
    try:
        os.environ["SHOAL_STORE_PORTS"] = port_slice(int(worker[2:]), count)
    except ImportError:  # shoal missing: reported by the fixture below
        pass


_own_ports()
_left_out = []


def _world_size(item):
    """(the world-size parameter's name, its value) of a test, or None."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    for name in ("n", "size"):
        if isinstance(params.get(name), int):
            return name, params[name]
    return None


def _sampled_out(items):
    """The tests a sample leaves out (see the module docstring)."""
    families = collections.defaultdict(list)
    out = [it for it in items if it.get_closest_marker("full")]
    for it in items:
        found = _world_size(it)
        if found is None or it in out:
            continue
        name, n = found
        others = tuple(sorted((k, repr(v)) for k, v in
                              it.callspec.params.items() if k != name))
        families[(it.module.__name__, it.originalname, others)].append(
            (n, it))
    for members in families.values():
        sizes = {n for n, _ in members}
        keep = 3 if 3 in sizes else min(
            [s for s in sizes if s >= 2] or sizes)
        out += [it for n, it in members if n != keep]
    return out


def pytest_collection_modifyitems(config, items):
    if not SAMPLE:
        return
    out = set(_sampled_out(items))
    if out:
        _left_out.extend(out)
        config.hook.pytest_deselected(items=list(out))
        items[:] = [it for it in items if it not in out]


def pytest_terminal_summary(terminalreporter):
    if _left_out:
        terminalreporter.write_line(
            f"a sample (SHOAL_TEST_SAMPLE=1): {len(_left_out)} tests of other "
            "world sizes or marked full were left out; make test-full runs "
            "them")


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
