"""torch inductor's collective autotuning on CPU (shoal.tune.enable_inductor).

torch 2.13's inductor benchmarks the choices of a custom op registered with
``register_custom_op_autotuning`` in lockstep when they contain functional
collectives (``AlgorithmSelectorCache.benchmark_collective_choice``), but
that method times with CUDA events: on CPU every choice fails, the failure
is logged and swallowed, and the op's own (fallback) implementation is used.
It also averages over ranks and always uses the default group.

Two class methods of ``AlgorithmSelectorCache`` are replaced:

- ``benchmark_choices`` (wrapped): finds the process group the choices'
  collectives name (their ``group_name`` argument, resolved as inductor's
  generated code resolves it), compiles every subgraph choice first, and
  waits for every rank to arrive before anything is timed (compiling takes
  seconds and differs between ranks);
- ``benchmark_collective_choice``: times one choice with
  ``shoal.tune.benchmark`` on that group (lockstep, each call at its slowest
  rank, the median), with inductor's own settings, read at every
  measurement as inductor's method reads them: ``config.
  collective_benchmark_nruns`` timed calls (TORCHINDUCTOR_COLLECTIVE_
  BENCHMARK_NRUNS) after ``config.inductor_default_autotune_warmup``
  warm-up calls, each within ``config.collective_benchmark_timeout``;
  returns milliseconds, or inf on every rank when the choice failed on any
  (inductor then uses the op's own implementation on every rank).

Everything runs with torch's Python dispatcher off: inductor compiles with
it on, and a c10d call made under it holds the GIL where gloo's worker
thread needs it (a deadlock). Three caches are turned off: inductor's
local autotuning cache, which would keep the failed (inf) timings of an
earlier run without the patch, and the FX graph and AOT autograd caches,
which skip lowering (and so the measurement) on a hit: a rank finding the
graph another rank (or an earlier run) cached would skip the measurement
its peers wait for, or keep a choice made without the patch.

Only torch versions in TESTED are patched; any other version, or internals
not shaped as in 2.13, leave inductor alone with a warning.
"""

import inspect
import logging
import math
import threading
import warnings

TESTED = ("2.13.",)

log = logging.getLogger("shoal.tune")

# The choices' group, for the benchmark_collective_choice calls that follow
# (inductor benchmarks the choices of one op in one thread).
_local = threading.local()
_state = {"enabled": False}

# Per benchmarked op: {choice name: milliseconds}, newest last (what the
# example and the tests read; inductor's own log says it on rank 0 too).
timings = []


def _shape_ok(sa):
    """Whether inductor's methods look as in the tested version."""
    cls = sa.AlgorithmSelectorCache
    want = {"benchmark_choices": ["choices", "autotune_args",
                                  "is_collective"],
            "benchmark_collective_choice": ["choice", "autotune_args"]}
    for name, params in want.items():
        fn = getattr(cls, name).__func__
        got = list(inspect.signature(fn).parameters)[1:]
        if got != params:
            return f"{name}{tuple(got)} is not {name}{tuple(params)}"
    if not hasattr(cls, "_is_extern"):
        return "AlgorithmSelectorCache._is_extern is missing"
    return None


def enable():
    """Patches inductor (once); True when its collective autotuning now
    works on CPU through shoal.tune, False (with a warning) when this torch
    is not one the patch was tested with."""
    import torch
    if not torch.__version__.startswith(TESTED):
        warnings.warn(
            f"shoal.tune.enable_inductor: torch {torch.__version__} is not a "
            f"version the patch was tested with ({', '.join(TESTED)}x); "
            "inductor's collective autotuning is left as it is",
            RuntimeWarning, stacklevel=3)
        return False
    try:
        from torch._inductor import config
        from torch._inductor import select_algorithm as sa
        problem = _shape_ok(sa)
    except (ImportError, AttributeError, ValueError, TypeError) as e:
        problem = f"{type(e).__name__}: {e}"
    if problem:
        warnings.warn(
            "shoal.tune.enable_inductor: inductor's internals differ from "
            f"torch 2.13's ({problem}); its collective autotuning is left "
            "as it is", RuntimeWarning, stacklevel=3)
        return False
    if not _state["enabled"]:
        cls = sa.AlgorithmSelectorCache
        original = cls.benchmark_choices.__func__
        cls.benchmark_choices = classmethod(_wrap_choices(original))
        cls.benchmark_collective_choice = classmethod(_benchmark_choice)
        _state["enabled"] = True
    config.autotune_local_cache = False
    config.fx_graph_cache = False
    try:
        import torch._functorch.config as functorch_config
        functorch_config.enable_autograd_cache = False
    except (ImportError, AttributeError):
        pass
    return True


def _group_of(choices):
    """The process group the first functional collective of the choices
    names, or None (the default group)."""
    import torch.distributed as dist
    from torch._inductor.utils import is_collective_op
    for choice in choices:
        gm = getattr(choice, "gm", None)
        for node in (gm.graph.nodes if gm is not None else ()):
            name = str(node.target)
            if node.op != "call_function" or not (
                    is_collective_op(name)
                    or is_collective_op(f"torch.ops.{name}")):
                continue
            names = [a.name for a in node.target._schema.arguments]
            if "group_name" not in names:
                continue
            i = names.index("group_name")
            group = (node.args[i] if i < len(node.args)
                     else node.kwargs["group_name"])
            return dist.distributed_c10d._resolve_process_group(group)
    return None


def _wrap_choices(original):
    def benchmark_choices(cls, choices, autotune_args, is_collective=False):
        if not is_collective:
            return original(cls, choices, autotune_args, is_collective)
        import torch
        from . import tune
        from torch._inductor import config
        _local.group = _group_of(choices)
        for choice in choices:  # compile before anything is timed
            ensure = getattr(choice, "_ensure_compiled", None)
            if ensure is not None:
                ensure()
        with torch._C._DisablePythonDispatcher():
            # Ranks finish compiling at different times: meet first, with
            # room for the slowest compiler.
            tune.benchmark(lambda: None, group=_local.group, warmup=0,
                           reps=1,
                           timeout=max(600.0,
                                       config.collective_benchmark_timeout))
        result = original(cls, choices, autotune_args, is_collective)
        timings.append({getattr(c, "name", str(c)): ms
                        for c, ms in result.items()})
        return result
    return benchmark_choices


def _benchmark_choice(cls, choice, autotune_args):
    import torch
    from . import tune
    from torch._inductor import config
    name = getattr(choice, "name", "<choice>")
    try:
        inputs, out = autotune_args.get_benchmark_tensors(
            cls._is_extern(choice)).unpack()
        with torch._C._DisablePythonDispatcher():
            secs = tune.benchmark(
                lambda: choice.benchmark_collective(*inputs, out=out),
                group=getattr(_local, "group", None),
                warmup=config.inductor_default_autotune_warmup,
                reps=config.collective_benchmark_nruns,
                timeout=config.collective_benchmark_timeout)
        return secs * 1e3
    except Exception as e:  # inf on every rank: inductor falls back alike
        log.warning("shoal.tune: collective autotuning choice %s failed: "
                    "%s: %s", name, type(e).__name__, e)
        return math.inf
