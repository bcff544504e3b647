"""The cost model: seconds a collective takes on a mesh's axes, from the
alpha-beta-gamma formula of the algorithm shoal would run (its registry
row: latency rounds, bytes moved, bytes reduced, at that size and rank
count) and constants measured on this machine: alpha (s per round), beta
(s per byte moved), gamma (s per byte reduced), per (collective,
algorithm, ranks, hosts).

The constants come from the file shoal-tune writes beside a tuning file
(FILE.costs; shoal.tune.load_costs), or from calibrate(mesh), which
measures the four collectives on the mesh's axes and saves its fit in the
same format. all_to_all is costed like the others ((N-1)/N of the bytes
cross the busiest link), never as free."""

import math
import os

from .. import _C
from .. import tune

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")

_loaded = {}  # path -> constants


def _costs_path(path):
    if path is not None:
        return str(path)
    tuning = _C.tuning_file_path()
    if tuning is None:
        raise _C.InvalidArgumentError(
            "no tuning file path (HOME unset): pass path=")
    return tuning


def constants(path=None):
    """The fitted constants: {(collective, algorithm, ranks, hosts):
    (alpha, beta, gamma)}, from path + ".costs" (default: beside the
    tuning file communicators read)."""
    path = _costs_path(path)
    if path not in _loaded:
        _loaded[path] = tune.load_costs(path)
    return _loaded[path]


def estimate_cost(op, nbytes, mesh, axes, path=None):
    """Seconds `op` ("all_reduce", "all_gather", "reduce_scatter",
    "all_to_all") takes on `nbytes` (the buffer as shoal's rules count it:
    all_reduce's tensor, the whole gathered output, the whole
    reduce_scatter input, a rank's whole all_to_all buffer) over `axes`
    of `mesh`. InvalidArgumentError when this machine has no constants
    for it yet (run shoal-tune or calibrate)."""
    if op not in OPS:
        raise _C.InvalidArgumentError(f"estimate_cost: op {op!r} is not one "
                                      f"of {OPS}")
    comm = mesh.comm_for(axes)
    n = comm.get_size()
    if n == 1 or nbytes == 0:
        return 0.0
    c = comm._c
    algo = c.algorithm_for(op, int(nbytes))
    key = (op, algo, n, c.hosts())
    k = constants(path).get(key)
    if k is None:
        raise _C.InvalidArgumentError(
            f"estimate_cost: no measured constants for {op} with {algo} on "
            f"{n} ranks and {c.hosts()} host(s) in "
            f"{_costs_path(path)}.costs; run shoal.sharding.calibrate(mesh) "
            f"or shoalrun -n {n} shoal-tune")
    coef = c.algorithm_cost(op, algo, int(nbytes))
    return k[0] * coef[0] + k[1] * coef[1] + k[2] * coef[2]


def _run(comm, op, nbytes):
    """A callable running `op` on `nbytes` (as estimate_cost counts them)
    over `comm`, float32 data."""
    import torch

    from .._reduce_op import ReduceOp
    n = comm.get_size()
    count = max(1, nbytes // 4)
    if op == "all_reduce":
        t = torch.ones(count)
        return lambda: comm.all_reduce(t, ReduceOp.SUM)
    block = max(1, count // n)
    big, small = torch.ones(block * n), torch.ones(block)
    if op == "all_gather":
        return lambda: comm.all_gather_single(big, small)
    if op == "reduce_scatter":
        return lambda: comm.reduce_scatter_single(small, big, ReduceOp.SUM)
    out = torch.empty(block * n)
    return lambda: comm.all_to_all_single(out, big)


def calibrate(mesh, path=None, sizes=None, ops=OPS, reps=10):
    """Measures `ops` on each axis of `mesh` and on all of them together
    (lockstep, shoal.tune) at
    `sizes` (default 64 KiB to 64 MiB, x4), fits each (collective,
    algorithm)'s constants to the times with shoal's cost formulas, and
    saves them to path + ".costs" (default: beside the tuning file),
    keeping other entries. Collective over the mesh. Returns the rows
    [(op, axes, bytes, algorithm, measured s)]."""
    sizes = sizes or [64 << 10 << (2 * i) for i in range(6)]
    rows, seen = [], set()
    groups = [(a,) for a in mesh.axis_names]
    if len(mesh.axis_names) > 1:
        groups.append(mesh.axis_names)
    for axes in groups:
        comm = mesh.comm_for(axes)
        n, hosts = comm.get_size(), comm._c.hosts()
        if n == 1 or (n, hosts) in seen:
            continue
        seen.add((n, hosts))
        for op in ops:
            for nbytes in sizes:
                secs = tune.benchmark(_run(comm, op, nbytes), group=comm,
                                      warmup=2, reps=reps)
                algo = comm._c.algorithm_for(op, nbytes)
                coef = comm._c.algorithm_cost(op, algo, nbytes)
                rows.append((op, axes, nbytes, algo, secs, n, hosts, coef))
    fits = _fit_rows(rows)
    if mesh.rank == 0:
        _save(_costs_path(path), fits)
    mesh.comm.barrier()
    _loaded.pop(_costs_path(path), None)
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def _fit_rows(rows):
    groups = {}
    for op, _, _, algo, secs, n, hosts, coef in rows:
        groups.setdefault((op, algo, n, hosts), []).append((coef, secs))
    return {key: _fit(points) for key, points in groups.items()}


def _fit(points):
    """alpha, beta, gamma >= 0 minimising the relative error (every
    subset of the three tried, as shoal-tune fits)."""
    best, best_err = (0.0, 0.0, 0.0), math.inf
    for mask in range(1, 8):
        idx = [j for j in range(3) if mask & (1 << j)]
        x = _least_squares(points, idx)
        if x is None:
            continue
        err = sum(((sum(x[j] * c[j] for j in range(3)) - s) / s) ** 2
                  for c, s in points)
        if err < best_err:
            best, best_err = x, err
    return best


def _least_squares(points, idx):
    k = len(idx)
    m = [[0.0] * k for _ in range(k)]
    r = [0.0] * k
    for c, s in points:
        w = 1.0 / s
        for a in range(k):
            r[a] += c[idx[a]] * w
            for b in range(k):
                m[a][b] += c[idx[a]] * c[idx[b]] * w * w
    try:
        y = _solve(m, r)
    except ZeroDivisionError:
        return None
    if any(v < 0 for v in y):
        return None
    x = [0.0, 0.0, 0.0]
    for a, j in enumerate(idx):
        x[j] = y[a]
    return tuple(x)


def _solve(m, r):
    k = len(r)
    m = [row[:] + [r[i]] for i, row in enumerate(m)]
    for col in range(k):
        piv = max(range(col, k), key=lambda i: abs(m[i][col]))
        if abs(m[piv][col]) < 1e-300:
            raise ZeroDivisionError
        m[col], m[piv] = m[piv], m[col]
        for i in range(col + 1, k):
            f = m[i][col] / m[col][col]
            for j in range(col, k + 1):
                m[i][j] -= f * m[col][j]
    x = [0.0] * k
    for i in reversed(range(k)):
        x[i] = (m[i][k] - sum(m[i][j] * x[j] for j in range(i + 1, k))) \
            / m[i][i]
    return x


def _save(path, fits):
    """Merges `fits` into path + ".costs" (written whole, then renamed)."""
    name = path + ".costs"
    keep = []
    try:
        with open(name) as f:
            for line in f:
                fields = [x.strip() for x in line.split("#", 1)[0].split(",")]
                if len(fields) >= 4 and fields[0]:
                    try:
                        key = (fields[0], fields[1], int(fields[2]),
                               int(fields[3]))
                    except ValueError:
                        continue
                    if key not in fits:
                        keep.append(line if line.endswith("\n")
                                    else line + "\n")
    except OSError:
        pass
    os.makedirs(os.path.dirname(os.path.abspath(name)), exist_ok=True)
    tmp = f"{name}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write("# shoal cost model: collective, algorithm, ranks, hosts, "
                "alpha s, beta s/B, gamma s/B\n")
        f.write("# (shoal.sharding.calibrate and shoal-tune write it)\n")
        for (op, algo, n, hosts), (a, b, g) in sorted(fits.items()):
            f.write(f"{op}, {algo}, {n}, {hosts}, {a:.4g}, {b:.4g}, "
                    f"{g:.4g}\n")
        f.writelines(keep)
    os.replace(tmp, name)


def _matmul_seconds(batch, k, n, dtype):
    """Seconds of one local (batch x k) @ (k x n) product here."""
    import time

    import torch
    a, b = torch.ones(batch, k, dtype=dtype), torch.ones(k, n, dtype=dtype)
    a @ b
    t0 = time.perf_counter()
    for _ in range(3):
        a @ b
    return (time.perf_counter() - t0) / 3


def choose(batch, in_features, out_features, mesh, axis, dtype=None,
           training=True, path=None):
    """The cheapest way to run a linear layer (batch x in) @ (in x out)
    over `axis` of `mesh`, by estimated compute + communication per step.
    Returns (name, {name: seconds}) for:

      "data":   batch split, weight replicated: no forward communication;
                training all-reduces the weight's gradient (in x out).
      "column": weight split by output features, input replicated: the
                output is gathered (batch x out) for the next layer;
                training all-reduces the input's gradient (batch x in).
      "row":    weight split by input features, input sliced locally:
                the output's partial sums are all-reduced (batch x out);
                training gathers the input's gradient (batch x in).

    Each splits the multiply n ways, so compute (measured here once, 3x
    for forward and backward when training) is the same term in all."""
    import torch
    dtype = dtype or torch.float32
    es = torch.empty((), dtype=dtype).element_size()
    n = mesh.size(axis)
    passes = 3 if training else 1
    compute = passes * _matmul_seconds(max(1, batch // n), in_features,
                                       out_features, dtype)

    def cost(op, nbytes):
        return estimate_cost(op, nbytes, mesh, (axis,), path)

    times = {
        "data": compute + (cost("all_reduce", in_features * out_features
                                * es) if training else 0.0),
        "column": compute + cost("all_gather", batch * out_features * es)
        + (cost("all_reduce", batch * in_features * es) if training
           else 0.0),
        "row": compute + cost("all_reduce", batch * out_features * es)
        + (cost("all_gather", batch * in_features * es) if training
           else 0.0),
    }
    return min(times, key=times.get), times
