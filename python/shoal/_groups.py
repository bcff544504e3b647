"""Live shoal groups by name, for shoal.find_process_group.

Every shoal.Comm is registered under its name, and every torch process
group of backend "shoal" under its communicator's name and torch's group
name (unique per group). Only weak references are kept.
"""

import weakref

from . import _C

# name -> weak references to the groups registered under it.
_groups = {}


def register(group, name):
    """Makes `group` findable as `name` (while it lives)."""
    refs = _groups.setdefault(str(name), [])
    refs[:] = [r for r in refs if r() is not None and r() is not group]
    refs.append(weakref.ref(group))


def native_comm(group):
    """The _C.Comm under a shoal.Comm or a shoal process group, or None."""
    from .comm import Comm

    comm = getattr(group, "comm", None)
    if isinstance(comm, Comm):
        return comm._c
    if isinstance(group, Comm):
        return group._c
    return None


def find_process_group(name):
    """The live shoal group (shoal.Comm, or torch ProcessGroup of backend
    "shoal") named `name`, or None. A process group is found by its torch
    group name or its communicator's name, a Comm by its name. A name that
    several live groups share raises InvalidArgumentError instead of
    guessing (give groups distinct names)."""
    from .comm import Comm

    live = {}
    for ref in _groups.get(str(name), []):
        g = ref()
        if g is None:
            continue
        key = id(native_comm(g))
        # A process group and its own Comm are one group: keep the group.
        if key not in live or isinstance(live[key], Comm):
            live[key] = g
    if len(live) > 1:
        raise _C.InvalidArgumentError(
            f"find_process_group: {len(live)} live groups are named "
            f"{name!r}; give them distinct names")
    return next(iter(live.values()), None)
