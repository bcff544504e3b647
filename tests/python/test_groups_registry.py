"""shoal's registry of live groups by name (shoal.find_process_group's own
half) forgets a group when it dies: a job that makes and drops groups
for hours must not grow it."""

import gc

from shoal import _groups


class Group:
    """Stands in for a shoal.Comm or a process group (weakly referenced)."""


def test_dead_groups_leave_the_registry():
    before = set(_groups._groups)
    kept = Group()
    _groups.register(kept, "registry-test-kept")
    for i in range(1000):
        _groups.register(Group(), f"registry-test-gone-{i}")
    gc.collect()
    assert set(_groups._groups) - before == {"registry-test-kept"}
    assert [r() for r in _groups._groups["registry-test-kept"]] == [kept]


def test_a_name_stays_while_one_of_its_groups_lives():
    a, b = Group(), Group()
    _groups.register(a, "registry-test-shared")
    _groups.register(b, "registry-test-shared")
    del a
    gc.collect()
    assert [r() for r in _groups._groups["registry-test-shared"]] == [b]
    del b
    gc.collect()
    assert "registry-test-shared" not in _groups._groups
