"""The cost model: seconds a collective takes over a mesh's axes, from the
cost terms of the algorithm shoal would run (its registry row: latency
rounds, bytes moved, bytes reduced, at that size and rank count) times
constants of this machine: alpha (s per round), beta (s per byte moved),
gamma (s per byte reduced), per size range (fit.py: a core's cache, the
last-level cache and memory beyond move bytes at different speeds).

Where the constants come from, first found first:

  "measured"        fitted to the measurements beside the tuning file
                    (FILE.sweep: shoal-tune's full sweep of the C API, or
                    calibrate(mesh)'s through the calls shoal.sharding
                    makes, which replace shoal-tune's for the collectives
                    it measures), per (collective, algorithm, ranks,
                    hosts);
  "shoal-tune fit"  shoal-tune's single-range fit (FILE.costs) where no
                    measurements are kept (files of older shoal-tunes);
  "built-in"        a quick local measurement (builtin.py): memcpy and
                    a float sum per byte, a cache-line round trip. Works
                    out of the box; its estimates say calibrated=False.

all_to_all is costed like the others ((N-1)/N of the bytes cross the
busiest link), never as free; ppermute (send and receive, no registry
row) as one round moving the rank's piece."""

import math

from .. import _C
from .. import tune
from . import builtin
from .fit import Range, fit_ranges, predict

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all",
       "ppermute")

_files = {}  # tuning file path -> its measurements, fits and fitted models


class CostEstimate(float):
    """Seconds, with where they come from: `calibrated` (False when any
    part used the built-in constants), `source` ("measured", "shoal-tune
    fit", "built-in", "no communication", or "mixed") and `parts`: for an
    operation of several collectives, [(collective, bytes, ranks,
    CostEstimate)] in the order they would run."""

    def __new__(cls, seconds, calibrated, source, parts=()):
        self = super().__new__(cls, seconds)
        self.calibrated, self.source = calibrated, source
        self.parts = list(parts)
        return self

    def __repr__(self):
        flag = "" if self.calibrated else ", uncalibrated"
        return f"CostEstimate({float(self):.3g} s, {self.source}{flag})"


def _tuning_path(path):
    return str(path) if path is not None else _C.tuning_file_path()


def _file(path):
    path = _tuning_path(path)
    if path not in _files:
        _files[path] = {"sweep": tune.load_sweep(path) if path else {},
                        "costs": tune.load_costs(path) if path else {},
                        "models": {}}
    return _files[path]


def forget(path=None):
    """Drops what was read from beside the tuning file at `path` (its next
    use reads it again)."""
    _files.pop(_tuning_path(path), None)


def algorithm(comm, op, nbytes):
    """The algorithm shoal runs `op` with on `nbytes` over `comm`."""
    return "p2p" if op == "ppermute" else comm._c.algorithm_for(op, nbytes)


def coefficients(comm, op, algo, nbytes):
    """(rounds, bytes moved, bytes reduced) of `algo` running `op`."""
    if op == "ppermute":
        return (1.0, float(nbytes), 0.0)
    return comm._c.algorithm_cost(op, algo, int(nbytes))


def model(comm, op, algo, path=None):
    """([Range], source) for `op` with `algo` on `comm`'s ranks and
    hosts."""
    f = _file(path)
    key = (op, algo, comm.get_size(), comm._c.hosts())
    if key not in f["models"]:
        points = [(b, coefficients(comm, op, algo, b), s)
                  for b, s in f["sweep"].get(key, ())]
        ranges = fit_ranges(points)
        if ranges:
            f["models"][key] = (ranges, "measured")
        elif key in f["costs"]:
            f["models"][key] = ([Range(0, math.inf, *f["costs"][key])],
                                "shoal-tune fit")
        else:
            return builtin.ranges(), "built-in"
    return f["models"][key]


def estimate_on(comm, op, nbytes, path=None):
    """estimate_cost over the communicator `comm`."""
    if op not in OPS:
        raise _C.InvalidArgumentError(f"estimate_cost: op {op!r} is not one "
                                      f"of {OPS}")
    if comm.get_size() == 1 or nbytes == 0:
        return CostEstimate(0.0, True, "no communication")
    algo = algorithm(comm, op, int(nbytes))
    ranges, source = model(comm, op, algo, path)
    secs = predict(ranges, nbytes, coefficients(comm, op, algo, nbytes))
    return CostEstimate(secs, source != "built-in", source)


def estimate_cost(op, nbytes, mesh, axes, path=None):
    """Seconds `op` ("all_reduce", "all_gather", "reduce_scatter",
    "all_to_all", "ppermute") takes on `nbytes` (the buffer as shoal's
    rules count it: all_reduce's tensor, the whole gathered output, the
    whole reduce_scatter input, a rank's whole all_to_all buffer, the
    piece ppermute sends) over `axes` of `mesh`, as a CostEstimate (a
    float). Constants from beside the tuning file at `path` (default: the
    one communicators read), else the built-in ones (calibrated=False)."""
    return estimate_on(mesh.comm_for(axes), op, nbytes, path)


def price(records, path=None):
    """The CostEstimate of recorded collectives [(kind, bytes, comm)]."""
    parts = [(kind, nbytes, comm.get_size(),
              estimate_on(comm, kind, nbytes, path))
             for kind, nbytes, comm in records]
    if not parts:
        return CostEstimate(0.0, True, "no communication")
    sources = {p[3].source for p in parts}
    return CostEstimate(sum(p[3] for p in parts),
                        all(p[3].calibrated for p in parts),
                        sources.pop() if len(sources) == 1 else "mixed",
                        parts)


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
    for forward and backward when training) is the same term in all.
    Compute is measured on each rank: ranks may choose differently when
    two strategies are about as fast."""
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
