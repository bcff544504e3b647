"""calibrate(mesh): measures the collectives on a mesh's axes and keeps
the times beside the tuning file (FILE.sweep, where shoal-tune keeps its
sweep), so that the cost model fits its constants to them."""

from .. import _C, tune
from . import cost, moves

SIZES = [4 << 10 << i for i in range(15)]  # 4 KiB .. 64 MiB


def _runner(comm, op, nbytes):
    """A callable running `op` on `nbytes` (as estimate_cost counts them)
    over `comm`, float32 data."""
    import torch

    from .._reduce_op import ReduceOp
    n = comm.get_size()
    count = max(1, nbytes // 4)
    if op == "all_reduce":
        t = torch.ones(count)
        return lambda: comm.all_reduce(t, ReduceOp.SUM)
    if op == "ppermute":
        t, me = torch.ones(count), comm.get_rank()
        shift = [(i, (i + 1) % n) for i in range(n)]
        return lambda: moves.permute(t, shift, me, comm)
    block = max(1, count // n)
    big, small = torch.ones(block * n), torch.ones(block)
    if op == "all_gather":
        return lambda: comm.all_gather_single(big, small)
    if op == "reduce_scatter":
        return lambda: comm.reduce_scatter_single(small, big, ReduceOp.SUM)
    out = torch.empty(block * n)
    return lambda: comm.all_to_all_single(out, big)


def _groups(mesh):
    """Each axis alone, and all of them together."""
    groups = [(a,) for a in mesh.axis_names]
    if len(mesh.axis_names) > 1:
        groups.append(mesh.axis_names)
    return groups


def measure(comm, op, nbytes, reps=10):
    """Seconds of `op` on `nbytes` over `comm`, in lockstep on its ranks
    (the median of `reps` calls, each at its slowest rank)."""
    return tune.benchmark(_runner(comm, op, nbytes), group=comm, warmup=2,
                          reps=reps)


def _sweep(comm, ops, sizes, reps, passes):
    """{(op, bytes): seconds}: the lowest median over `passes` passes over
    every op and size. Another process's burst of work on a shared
    machine lasts a few measurements; it rarely hits one point in every
    pass."""
    best = {}
    for _ in range(passes):
        for op in ops:
            for nbytes in sizes:
                secs = measure(comm, op, nbytes, reps)
                best[op, nbytes] = min(secs, best.get((op, nbytes), secs))
    return best


def calibrate(mesh, path=None, sizes=None, ops=cost.OPS, reps=10,
              passes=2):
    """Measures `ops` on each axis of `mesh` and on all of them together
    (once per distinct rank and host count) at `sizes` (default 4 KiB to
    64 MiB, x2), through the calls shoal.sharding makes, each the lowest
    of `passes` medians of `reps` calls (about 6 s on 2 ranks by
    default), and keeps the times beside the tuning file at `path`
    (default: the one communicators read), in place of earlier
    measurements of the same collective, algorithm and counts
    (shoal-tune's among them); estimates then use constants fitted to
    them. Collective over the mesh. Returns the rows [(op, axes, bytes,
    algorithm, measured s)]."""
    if cost._tuning_path(path) is None:
        raise _C.InvalidArgumentError(
            "calibrate: no tuning file path (HOME unset): pass path=")
    sizes = sizes or SIZES
    rows, points, seen = [], [], set()
    for axes in _groups(mesh):
        comm = mesh.comm_for(axes)
        n, hosts = comm.get_size(), comm._c.hosts()
        if n == 1 or (n, hosts) in seen:
            continue
        seen.add((n, hosts))
        for (op, nbytes), secs in _sweep(comm, ops, sizes, reps,
                                         passes).items():
            algo = cost.algorithm(comm, op, nbytes)
            rows.append((op, axes, nbytes, algo, secs))
            points.append((op, algo, n, hosts, nbytes, secs))
    if mesh.rank == 0:
        tune.save_sweep(points, cost._tuning_path(path))
    mesh.comm.barrier()
    cost.forget(path)
    return rows
