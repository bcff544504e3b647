"""Choosing between implementations by measuring them in lockstep on every
rank (the collective autotuning of torch inductor, for any callable).

``benchmark(fn, *args)`` times ``fn(*args)`` on every rank of a group at
once: after every call the ranks meet, every call counts at its slowest
rank's time, and the result is the median of those, in seconds, equal on
every rank. ``select(choices, *args)`` measures the candidates the same
way, interleaved (each round calls every candidate once, the order
rotating from round to round, so that no candidate alone meets a slow
start or a burst of load), and returns the same winner on every rank,
caching it per key.

The group: a shoal.Comm, a torch ProcessGroup of backend "shoal" (both use
the shoal communicator underneath) or of any other backend, or None:
torch's default group when torch.distributed is initialized, else this
process alone (local timing: the spec's fallback outside distributed
runs). For a group of another backend (gloo) the exchanges run on a shoal
communicator of the same ranks, made through torch's default store the
first time the group is tuned and kept until exit: a gloo all-reduce costs
0.4-0.6 ms here, and a candidate takes 25 exchanges (one per call).
Without a default store the group's own all-reduce is used.

``timeout`` bounds every exchange, and every call of a candidate: the call
runs under ``shoal.deadline(timeout)``, which caps every shoal operation
and wait it makes, on any communicator (a gloo group's operations get
``timeout`` as the group's default while tuning).

Failures:
- A candidate that raises on some ranks after its own collectives
  completed is excluded on every rank: the ranks exchange their status
  after every call, so every rank learns of the failure at once, and the
  tuning goes on (``select``), or every rank raises CandidateError naming
  the ranks it failed on (``benchmark``).
- A candidate that raises on one rank while the others are blocked inside
  its own collective cannot be told apart from a dead rank: the others
  stay blocked until ``timeout`` ends their call, which aborts the shoal
  communicator they were blocked on (its later operations raise
  AbortedError). The exchange then fails on every rank, and every rank
  raises, the one that failed with its own exception chained. Prefer
  candidates that validate their input before their first collective.
- A rank that never arrives (dead, or elsewhere in the program) makes
  every other rank raise CommTimeoutError within ``timeout`` naming it.

``enable_inductor()`` makes torch inductor's collective autotuning use
benchmark() on CPU (shoal/_inductor_tune.py).
"""

import atexit
import contextlib
import os
import statistics
import time

from . import _C
from ._deadline import deadline
from ._reduce_op import ReduceOp

__all__ = ["CandidateError", "benchmark", "select", "clear_cache",
           "enable_inductor", "inductor_timings", "load_costs", "load_sweep",
           "save_sweep"]


class CandidateError(_C.ShoalError):
    """A benchmarked callable raised on some ranks (named in `ranks`)."""

    def __init__(self, message, ranks=()):
        super().__init__(message)
        self.ranks = tuple(ranks)


# ---- the lockstep exchange over a group --------------------------------------


class _Exchange:
    """Meets the ranks between calls: max() is an all-reduce (MAX) of a
    few numbers. deadline() bounds what shoal.deadline cannot (another
    backend's collectives); arrive() marks a measurement begun."""

    rank, size = 0, 1

    def deadline(self, timeout):
        return contextlib.nullcontext()

    def arrive(self):
        pass


class _LocalExchange(_Exchange):
    """No group and no torch.distributed: this process alone, timed
    locally (each call's time is its own)."""

    def max(self, values, timeout):
        return list(values)


class _ShoalExchange(_Exchange):
    """Exchanges over a shoal communicator: its own deadlines name a rank
    that does not arrive, and abort the communicator."""

    def __init__(self, comm):
        self.comm = comm
        self.rank, self.size = comm.get_rank(), comm.get_size()

    def max(self, values, timeout):
        import array
        buf = array.array("d", values)
        self.comm.all_reduce(buf, ReduceOp.MAX, timeout=timeout)
        return list(buf)


class _TorchExchange(_Exchange):
    """Exchanges over a torch process group: an all_reduce waited on with
    a deadline; each rank counts its arrivals in the default store first,
    so that a deadline passed names the ranks that did not arrive."""

    # Measurements begun so far per group name: every rank begins the same
    # ones, so a rank whose count in the store is below ours has not
    # arrived at this one (a rank that dies later is named by the
    # backend's own error).
    _seq = {}

    def __init__(self, pg):
        import torch.distributed as dist
        self.dist, self.pg = dist, pg
        self.rank, self.size = pg.rank(), pg.size()
        try:
            self.store = dist.distributed_c10d._get_default_store()
        except Exception:  # not every setup has one: names are then vague
            self.store = None
        self.name = dist.distributed_c10d._get_process_group_name(pg)

    def _key(self, rank):
        return f"shoal.tune/{self.name}/{rank}/arrived"

    def _missing(self):
        if self.store is None:
            return "some rank (no store to tell which)"
        late = []
        for r in range(self.size):
            try:
                n = int(self.store.add(self._key(r), 0))
            except Exception:
                n = -1
            if n < self._seq[self.name]:
                late.append(r)
        return ("rank " + ", ".join(map(str, late)) if late
                else "no rank (a rank left it early)")

    @contextlib.contextmanager
    def deadline(self, timeout):
        """The group's operations (the candidates' too) get `timeout`
        while tuning where the backend says its default (gloo: beyond
        shoal.deadline's reach), so a candidate stuck on one rank ends;
        the old default comes back."""
        import datetime
        c10d = self.dist.distributed_c10d
        try:
            old = self.pg._get_backend(_cpu()).options._timeout
            c10d._set_pg_timeout(datetime.timedelta(seconds=timeout),
                                 self.pg)
        except Exception:  # a backend that does not say: left alone
            old = None
        try:
            yield
        finally:
            if old is not None:
                try:
                    c10d._set_pg_timeout(old, self.pg)
                except Exception:
                    pass

    def arrive(self):
        """Counts this rank's arrival at a measurement in the store (once
        per measurement: a store round trip costs as much as the exchange)."""
        self._seq[self.name] = self._seq.get(self.name, 0) + 1
        if self.store is not None:
            self.store.add(self._key(self.rank), 1)

    def max(self, values, timeout):
        import datetime
        import torch
        t = torch.tensor(values, dtype=torch.float64)
        work = self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX,
                                    group=self.pg, async_op=True)
        try:
            work.wait(timeout=datetime.timedelta(seconds=timeout))
        except Exception as e:
            raise _C.CommTimeoutError(
                f"tune: the ranks' exchange did not complete within "
                f"{timeout} s on rank {self.rank}: {self._missing()} did not "
                f"arrive ({e})") from e
        return t.tolist()


class _SideExchange(_ShoalExchange):
    """Exchanges for a torch group of another backend (gloo) over a shoal
    communicator of the same ranks, made once per group through torch's
    default store: an exchange then costs microseconds instead of a gloo
    all-reduce (0.4-0.6 ms here, 25 per candidate), and a missing rank is
    named by shoal's deadline. The group's own timeout bounds a candidate
    stuck in the group's collectives (deadline())."""

    _comms = {}  # group name -> shoal.Comm

    def __init__(self, pg, store, timeout):
        import torch.distributed as dist
        self.torch_side = _TorchExchange(pg)
        name = dist.distributed_c10d._get_process_group_name(pg)
        comm = self._comms.get(name)
        if comm is None:
            comm = self._connect(dist, store, pg, name, timeout)
            if not self._comms:
                atexit.register(_close_side_comms)
            self._comms[name] = comm
        super().__init__(comm)

    @staticmethod
    def _connect(dist, store, pg, name, timeout):
        from . import _bootstrap
        from .comm import Comm
        prefixed = dist.PrefixStore(f"shoal.tune/{name}", store)
        args = _bootstrap.store_rendezvous(prefixed, "comm", pg.rank(),
                                           pg.size())
        c = _C.Comm(timeout_ms=int(timeout * 1000), name=f"tune {name}",
                    abort_on_error=False, **args)
        return Comm(c, name=c.name, abort_process_on_timeout_or_error=False)

    def deadline(self, timeout):
        return self.torch_side.deadline(timeout)


def _close_side_comms():
    """At exit, before torch tears its groups down: the side communicators
    say goodbye to their peers instead of looking dead to them."""
    for comm in _SideExchange._comms.values():
        try:
            comm.finalize()
        except _C.ShoalError:
            pass
    _SideExchange._comms.clear()


def _exchange_for(group, timeout):
    from .comm import Comm
    if isinstance(group, Comm):
        return _ShoalExchange(group)
    if group is None:
        if not _torch_distributed_initialized():
            return _LocalExchange()
        import torch.distributed as dist
        group = dist.distributed_c10d._get_default_group()
    comm = getattr(group, "comm", None)
    if comm is None and hasattr(group, "_get_backend"):
        try:
            comm = getattr(group._get_backend(_cpu()), "comm", None)
        except Exception:
            comm = None
    if isinstance(comm, Comm):
        return _ShoalExchange(comm)
    if not (hasattr(group, "rank") and hasattr(group, "size")):
        raise _C.InvalidArgumentError(
            f"tune: group must be a shoal.Comm or a torch ProcessGroup, not "
            f"{type(group).__name__}")
    import torch.distributed as dist
    try:
        store = dist.distributed_c10d._get_default_store()
    except Exception:  # no store to meet through: the group's own exchange
        return _TorchExchange(group)
    return _SideExchange(group, store, timeout)


def _torch_distributed_initialized():
    try:
        import torch.distributed as dist
    except ImportError:  # no torch: no default group either
        return False
    return dist.is_available() and dist.is_initialized()


def _cpu():
    import torch
    return torch.device("cpu")


# ---- measuring ---------------------------------------------------------------


def _check_counts(warmup, reps, timeout):
    if int(warmup) < 0 or int(reps) < 1:
        raise _C.InvalidArgumentError(
            f"tune: warmup must be >= 0 and reps >= 1 (got {warmup}, {reps})")
    if not timeout > 0:
        raise _C.InvalidArgumentError(f"tune: timeout must be > 0, not "
                                      f"{timeout}")


def _timed_call(fn, args, kwargs, timeout):
    """(seconds, the exception or None) of one call, every shoal call in
    it bounded by shoal.deadline(timeout), whichever communicator."""
    with deadline(timeout):
        t0 = time.perf_counter()
        try:
            fn(*args, **kwargs)
        except Exception as e:  # told to every rank at the next exchange
            return time.perf_counter() - t0, e
        return time.perf_counter() - t0, None


def _measure(ex, names, fns, args, kwargs, warmup, reps, timeout):
    """Times every candidate in lockstep, interleaved: `warmup` then
    `reps` rounds, each calling every candidate still in once, in an
    order rotated by one per round. Every call is followed by an exchange
    of its status (a slot per rank) and duration, so each call counts at
    its slowest rank and every rank learns of a failure at once.

    Interleaving spreads every candidate's calls over the same stretch of
    time: measured one after the other, the first candidate alone met
    what changes while tuning runs (a slow start, a burst of load on a
    shared machine) and lost to the second even when faster. Rotating the
    order gives each candidate every place in a round and every
    neighbour. Returns ({index: median seconds}, {index: CandidateError})
    for the candidates that ran through and those that failed, the same
    on every rank."""
    _check_counts(warmup, reps, timeout)
    warmup, reps = int(warmup), int(reps)
    ex.arrive()
    ex.max([0.0] * (ex.size + 1), timeout)  # start together
    alive = list(range(len(fns)))
    samples = {i: [] for i in alive}
    errors = {}
    for n in range(warmup + reps):
        if not alive:
            break
        k = n % len(alive)
        for i in alive[k:] + alive[:k]:
            dt, err = _timed_call(fns[i], args, kwargs, timeout)
            failed = [0.0] * ex.size
            if err is not None:
                failed[ex.rank] = 1.0
            got = ex.max(failed + [dt], timeout)
            bad = [r for r in range(ex.size) if got[r] != 0]
            if bad:
                alive.remove(i)
                errors[i] = CandidateError(
                    f"tune: {names[i]} raised on rank "
                    f"{', '.join(map(str, bad))}", bad)
                errors[i].__cause__ = err
            elif n >= warmup:
                samples[i].append(got[-1])
    return {i: statistics.median(samples[i]) for i in alive}, errors


def benchmark(fn, *args, group=None, warmup=5, reps=20, timeout=30.0,
              **kwargs):
    """Seconds ``fn(*args, **kwargs)`` takes on the group, measured in
    lockstep: the median over `reps` calls (after `warmup`) of each call's
    slowest rank. Collective: every rank of the group calls it with the
    same fn and counts. Without a group outside torch.distributed, times
    fn in this process alone. Every shoal call fn makes runs under
    ``shoal.deadline(timeout)``. Raises CandidateError on every rank when
    fn raised on any; see the module's notes for hangs and missing
    ranks."""
    ex = _exchange_for(group, timeout)
    with ex.deadline(timeout):
        times, errors = _measure(ex, [getattr(fn, "__name__", "fn")], [fn],
                                 args, kwargs, warmup, reps, timeout)
    if errors:
        raise errors[0] from errors[0].__cause__
    return times[0]


# ---- select -------------------------------------------------------------------

# (group, candidate names, key) -> the winner's name. Per process; every rank
# fills it alike.
_cache = {}


def clear_cache():
    """Forgets every winner select() chose."""
    _cache.clear()


def _default_key(args, kwargs):
    def one(a):
        shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
        if shape is not None and dtype is not None:
            return ("tensor", tuple(shape), str(dtype))
        try:
            hash(a)
            return a
        except TypeError:
            return type(a).__name__
    return (tuple(one(a) for a in args),
            tuple(sorted((k, one(v)) for k, v in kwargs.items())))


def _key_hash(key):
    """A number every rank computes alike for equal keys (Python's hash of
    strings differs between processes)."""
    import zlib
    return float(zlib.crc32(repr(key).encode()) & 0xFFFFFFFF)


def _agree_on_key(ex, key, timeout):
    h = _key_hash(key)
    ex.arrive()
    lo_hi = ex.max([h, -h], timeout)
    if lo_hi[0] != -lo_hi[1]:
        raise _C.MismatchError(
            f"tune.select: the ranks passed different keys (this rank: "
            f"{key!r}); pass key= equal on every rank")


def _named(choices):
    if isinstance(choices, dict):
        return list(choices.keys()), list(choices.values()), True
    fns = list(choices)
    return [getattr(f, "__name__", str(i)) + f"#{i}"
            for i, f in enumerate(fns)], fns, False


def select(choices, *args, group=None, key=None, warmup=5, reps=20,
           timeout=30.0, **kwargs):
    """Benchmarks every candidate on `args` in lockstep and returns the
    fastest, the same on every rank: `choices` a list of callables (returns
    the winning callable) or a dict name -> callable (returns the name).
    The winner is cached per `key` (default: the shapes and dtypes of the
    tensors among the arguments, and the other arguments' values), which
    must be equal on every rank. The candidates are measured interleaved
    (see the module's notes); without a group outside torch.distributed,
    in this process alone. A candidate that raises on any rank is
    excluded on every rank and tuning goes on; if all fail, every rank
    raises CandidateError. Collective: every rank calls it alike."""
    names, fns, by_name = _named(choices)
    if not fns:
        raise _C.InvalidArgumentError("tune.select: no choices")
    ex = _exchange_for(group, timeout)
    key = _default_key(args, kwargs) if key is None else key
    slot = (id(getattr(ex, "comm", None) or getattr(ex, "pg", None)),
            tuple(names), key)
    if slot in _cache:
        name = _cache[slot]
    else:
        with ex.deadline(timeout):
            _agree_on_key(ex, key, timeout)
            name = _choose(ex, names, fns, args, kwargs, warmup, reps,
                           timeout)
        _cache[slot] = name
    return name if by_name else fns[names.index(name)]


def _choose(ex, names, fns, args, kwargs, warmup, reps, timeout):
    times, errors = _measure(ex, names, fns, args, kwargs, warmup, reps,
                             timeout)
    if not times:
        raise CandidateError("tune.select: every candidate failed: "
                             + "; ".join(str(errors[i])
                                         for i in sorted(errors)))
    return names[min(times, key=lambda i: (times[i], i))]


# ---- the cost model shoal-tune fitted -----------------------------------------


def _rows(name, layout, parse):
    """parse(fields) of each line of file `name` (comma-separated fields,
    '#' comments), or [] when it cannot be read; a line parse cannot
    read raises InvalidArgumentError saying which and what `layout` it
    should have."""
    try:
        with open(name) as f:
            lines = f.readlines()
    except (OSError, TypeError):
        return []
    rows = []
    for n, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            rows.append(parse([x.strip() for x in line.split(",")]))
        except (IndexError, ValueError):
            raise _C.InvalidArgumentError(
                f"{name} line {n}: not '{layout}': {line!r}") from None
    return rows


def _key(f):
    return (f[0], f[1], int(f[2]), int(f[3]))


def load_costs(path=None):
    """The cost model shoal-tune fitted beside a tuning file (path: the
    tuning file, default the one communicators read): a dict
    (collective, algorithm, ranks, hosts) -> (alpha s, beta s/B, gamma s/B).
    Empty when there is none."""
    if path is None:
        path = _C.tuning_file_path()
    if path is None:
        return {}
    return dict(_rows(
        str(path) + ".costs",
        "collective, algorithm, ranks, hosts, alpha, beta, gamma, ...",
        lambda f: (_key(f), (float(f[4]), float(f[5]), float(f[6])))))


def _sweep_name(path):
    if path is None:
        path = _C.tuning_file_path()
    return None if path is None else str(path) + ".sweep"


def load_sweep(path=None):
    """The measurements beside a tuning file (path: the tuning file,
    default the one communicators read), from shoal-tune's sweep and
    shoal.sharding.calibrate(): a dict (collective, algorithm, ranks,
    hosts) -> [(bytes, seconds)] sorted by bytes. Empty when there is
    none."""
    sweep = {}
    for key, point in _rows(
            _sweep_name(path),
            "collective, algorithm, ranks, hosts, bytes, seconds",
            lambda f: (_key(f), (int(f[4]), float(f[5])))):
        sweep.setdefault(key, []).append(point)
    for points in sweep.values():
        points.sort()
    return sweep


def save_sweep(points, path=None):
    """Merges measurements [(collective, algorithm, ranks, hosts, bytes,
    seconds)] into the file load_sweep reads: they replace every earlier
    measurement of the same collective, algorithm, ranks and hosts (one
    curve comes from one method and moment), others are kept. Written
    whole, then renamed into place."""
    name = _sweep_name(path)
    if name is None:
        raise _C.InvalidArgumentError(
            "no tuning file path (HOME unset): pass path=")
    new = {}
    for coll, algo, ranks, hosts, nbytes, secs in points:
        new.setdefault((coll, algo, int(ranks), int(hosts)), []).append(
            (int(nbytes), float(secs)))
    merged = dict(load_sweep(path))
    merged.update(new)
    os.makedirs(os.path.dirname(os.path.abspath(name)), exist_ok=True)
    tmp = f"{name}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write("# shoal measurements (shoal-tune, shoal.sharding.calibrate)"
                "\n# collective, algorithm, ranks, hosts, bytes, seconds\n")
        for (coll, algo, ranks, hosts), pts in sorted(merged.items()):
            for nbytes, secs in sorted(pts):
                f.write(f"{coll}, {algo}, {ranks}, {hosts}, {nbytes}, "
                        f"{secs:.6g}\n")
    os.replace(tmp, name)


def enable_inductor():
    """Makes torch inductor's collective autotuning (custom ops registered
    with register_custom_op_autotuning whose choices contain functional
    collectives) work on CPU: each choice is timed with benchmark() on the
    group its collectives name, in lockstep, at the slowest rank, with
    inductor's settings: config.collective_benchmark_nruns timed calls
    after config.inductor_default_autotune_warmup warm-up calls, each
    within config.collective_benchmark_timeout. Importing shoal does not
    call it. Patches torch 2.13 only: other versions get a warning and
    False. Returns True when the patch is in place."""
    from . import _inductor_tune
    return _inductor_tune.enable()


def inductor_timings():
    """What inductor measured through enable_inductor(), per autotuned op
    (oldest first): {choice name: milliseconds}, inf for a choice that
    failed on some rank."""
    from . import _inductor_tune
    return [dict(t) for t in _inductor_tune.timings]
