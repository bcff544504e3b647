"""Live shoal groups by name, for shoal.find_process_group.

Two registries answer: shoal's own, where every shoal.Comm is registered
under its name and every torch process group of backend "shoal" under its
communicator's name and the group names torch gives it (weak references
only); and torch.distributed's, which lists every live group with its
group name, and whose groups carry their description (``group_desc``), so
that a group is found however torch made it.
"""

import sys
import weakref

from . import _C

# name -> weak references to the groups registered under it.
_groups = {}


def register(group, name):
    """Makes `group` findable as `name` (while it lives: its entry goes
    with it, so the registry does not grow with every group ever made)."""
    key = str(name)
    refs = _groups.setdefault(key, [])
    refs[:] = [r for r in refs if r() is not None and r() is not group]
    refs.append(weakref.ref(group, lambda ref: _forget(key, ref)))


def _forget(key, ref):
    """A group registered under `key` died: drops its reference, and the
    name once no live group has it."""
    refs = _groups.get(key)
    if refs is None:
        return
    refs[:] = [r for r in refs if r is not ref and r() is not None]
    if not refs:
        del _groups[key]


def _cpu_backend(group):
    """The backend a torch ProcessGroup runs CPU tensors on, or None."""
    torch = sys.modules.get("torch")
    get = getattr(group, "_get_backend", None)
    if torch is None or get is None:
        return None
    try:
        return get(torch.device("cpu"))
    except Exception:  # noqa: BLE001: no CPU backend, or not a real group
        return None


def native_comm(group):
    """The _C.Comm under a shoal.Comm or a shoal process group (itself, or
    the CPU backend of a torch ProcessGroup), or None."""
    from .comm import Comm

    for g in (group, _cpu_backend(group)):
        if isinstance(g, Comm):
            return g._c
        comm = getattr(g, "comm", None)
        if isinstance(comm, Comm):
            return comm._c
    return None


def _torch_groups():
    """(group, group name, group description) of every live group in
    torch.distributed's registry (none while torch.distributed is not
    loaded)."""
    c10d = sys.modules.get("torch.distributed.distributed_c10d")
    world = getattr(c10d, "_world", None)
    try:
        names = dict(world.pg_names) if world is not None else {}
    except Exception:  # noqa: BLE001: not initialized, or torch changed
        return []
    out = []
    for pg, name in names.items():
        try:
            desc = pg.group_desc
        except Exception:  # noqa: BLE001: a group without a description
            desc = None
        out.append((pg, name, desc))
    return out


def find_process_group(name):
    """The live shoal group (shoal.Comm, or torch ProcessGroup of backend
    "shoal") named `name`, or None. A torch process group is found by its
    group name, its description (new_group's group_desc) or its
    communicator's name, a Comm by its name. A name that several live
    groups share raises InvalidArgumentError instead of guessing (give
    groups distinct names or descriptions)."""
    from .comm import Comm

    name = str(name)
    live = {}

    def add(g):
        comm = native_comm(g)
        if comm is None:
            return  # not a shoal group
        # A process group and its own Comm are one group: keep the group.
        if id(comm) not in live or isinstance(live[id(comm)], Comm):
            live[id(comm)] = g

    # torch's groups first: where torch wraps a shoal backend, its own
    # group is the one to hand out.
    for pg, group_name, desc in _torch_groups():
        if name in (group_name, desc):
            add(pg)
    for ref in _groups.get(name, []):
        g = ref()
        if g is not None:
            add(g)
    if len(live) > 1:
        raise _C.InvalidArgumentError(
            f"find_process_group: {len(live)} live groups are named "
            f"{name!r}; give them distinct names")
    return next(iter(live.values()), None)
