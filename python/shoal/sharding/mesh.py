"""DeviceMesh: ranks laid out row-major on named axes, with one
sub-communicator per combination of axes an operation needs."""

import math

from .. import _C


def _as_comm(group):
    """The shoal.Comm of a shoal.Comm or of a torch group of backend
    "shoal"."""
    from ..comm import Comm
    if isinstance(group, Comm):
        return group
    comm = getattr(group, "comm", None)
    if comm is None and hasattr(group, "_get_backend"):
        try:
            import torch
            comm = getattr(group._get_backend(torch.device("cpu")), "comm",
                           None)
        except Exception:
            comm = None
    if isinstance(comm, Comm):
        return comm
    raise _C.InvalidArgumentError(
        f"DeviceMesh: group must be a shoal.Comm or a process group of "
        f"backend 'shoal', not {type(group).__name__}")


class DeviceMesh:
    """`shape` ranks per axis, named `axis_names`, over every rank of
    `group` (row-major: the last axis varies fastest). Sub-communicators
    along axes are made on first use (collective: every rank of the mesh
    runs the same operations, as SPMD programs do) and kept."""

    def __init__(self, group, shape, axis_names):
        self.comm = _as_comm(group)
        self.shape = tuple(int(s) for s in shape)
        self.axis_names = tuple(str(a) for a in axis_names)
        if len(self.shape) != len(self.axis_names):
            raise _C.InvalidArgumentError(
                f"DeviceMesh: {len(self.shape)} sizes {self.shape} but "
                f"{len(self.axis_names)} names {self.axis_names}")
        if len(set(self.axis_names)) != len(self.axis_names):
            raise _C.InvalidArgumentError(
                f"DeviceMesh: axis names {self.axis_names} repeat a name")
        if any(s < 1 for s in self.shape):
            raise _C.InvalidArgumentError(
                f"DeviceMesh: sizes {self.shape} must be >= 1")
        if math.prod(self.shape) != self.comm.get_size():
            raise _C.InvalidArgumentError(
                f"DeviceMesh: shape {self.shape} holds "
                f"{math.prod(self.shape)} ranks but the group has "
                f"{self.comm.get_size()}")
        self.rank = self.comm.get_rank()
        self.coords = self.coords_of(self.rank)
        self._comms = {}
        # Compiled ops of reshard's moves, by a key equal on every rank.
        self.plans = {}

    def __repr__(self):
        axes = ", ".join(f"{n}={s}" for n, s in zip(self.axis_names,
                                                    self.shape))
        return f"DeviceMesh({axes})"

    def size(self, axis):
        """Ranks along `axis`."""
        return self.shape[self.axis(axis)]

    def axis(self, name):
        """The position of axis `name`; InvalidArgumentError naming the
        mesh's axes when there is none."""
        try:
            return self.axis_names.index(name)
        except ValueError:
            raise _C.InvalidArgumentError(
                f"unknown mesh axis {name!r} (the mesh has "
                f"{', '.join(map(repr, self.axis_names))})") from None

    def coords_of(self, rank):
        """The coordinates of `rank`, one per axis."""
        coords = []
        for s in reversed(self.shape):
            coords.append(rank % s)
            rank //= s
        return tuple(reversed(coords))

    def rank_of(self, coords):
        rank = 0
        for c, s in zip(coords, self.shape):
            rank = rank * s + c
        return rank

    def index(self, axes, coords=None):
        """This rank's (or `coords`') index along `axes` together, the
        first axis major."""
        coords = self.coords if coords is None else coords
        i = 0
        for a in axes:
            p = self.axis(a)
            i = i * self.shape[p] + coords[p]
        return i

    def group_ranks(self, axes):
        """The ranks sharing this rank's coordinates off `axes`, in the
        order of their index along `axes`."""
        pos = [self.axis(a) for a in axes]
        sizes = [self.shape[p] for p in pos]
        ranks = []
        for i in range(math.prod(sizes)):
            coords = list(self.coords)
            for p, s in zip(reversed(pos), reversed(sizes)):
                coords[p] = i % s
                i //= s
            ranks.append(self.rank_of(coords))
        return ranks

    def comm_for(self, axes):
        """The sub-communicator along `axes` (a name or a tuple, the first
        major); this rank's rank in it is index(axes)."""
        axes = (axes,) if isinstance(axes, str) else tuple(axes)
        for a in axes:
            self.axis(a)
        if len(set(axes)) != len(axes):
            raise _C.InvalidArgumentError(f"axes {axes} repeat an axis")
        comm = self._comms.get(axes)
        if comm is None:
            if len(axes) == len(self.shape) and axes == self.axis_names:
                comm = self.comm
            else:
                name = f"{self.comm.get_name()}/{'+'.join(axes)}"
                comm = self.comm.split(self.group_ranks(axes), name=name)
            self._comms[axes] = comm
        return comm
