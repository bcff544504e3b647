"""Profiler events for the "shoal" process group's operations.

torch.profiler shows a backend's work only if the backend records it. Each
operation here is recorded as "shoal:<operation>" (gloo's are
"gloo:<operation>", with the same operation names), with the shapes of its
input tensors, from its call until it completes. Like a C++ backend's
work, the event ends on another thread than the one that started it (the
profiler marks it asynchronous), and wait() returns only once it has
ended, so the profiler has it when its context closes. With no profiler
running, the cost is one check per call.
"""

import functools

import torch

# ProcessGroupShoal's method -> the event's name and the index of the
# argument holding the tensors recorded as its inputs.
EVENTS = {
    "allreduce": ("all_reduce", 0),  # allreduce_coalesced calls it
    "broadcast": ("broadcast", 0),
    "reduce": ("reduce", 0),
    "barrier": ("barrier", None),
    "allgather": ("all_gather", 1),
    "allgather_coalesced": ("all_gather", 1),
    "all_gather_single_coalesced": ("_allgather_base", 1),
    "gather": ("gather", 1),
    "scatter": ("scatter", 1),
    "reduce_scatter": ("reduce_scatter", 1),
    "reduce_scatter_single_coalesced": ("_reduce_scatter_base", 1),
    "all_to_all_single": ("all_to_all", 1),
    "alltoall": ("all_to_all", 1),
    "send": ("send", 0),
    "recv": ("recv", 0),
    "recv_anysource": ("recvAnySource", 0),
    "monitored_barrier": ("monitored_barrier", None),
}


def _tensors(x):
    """The tensors in x (a tensor, or nested lists of them)."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in _tensors(item)]
    return []


_profiler_enabled = torch.autograd._profiler_enabled


def _record(method, event, inputs_at):
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        if not _profiler_enabled():
            return method(self, *args, **kwargs)
        inputs = _tensors(args[inputs_at]) if inputs_at is not None and \
            len(args) > inputs_at else []
        handle = torch.autograd._record_function_with_args_enter(
            event, *inputs)
        try:
            work = method(self, *args, **kwargs)
        except BaseException:
            torch.autograd._record_function_with_args_exit(handle)
            raise
        _end_when_done(self, work, handle)
        return work
    return run


def _end_when_done(pg, work, handle):
    """Ends the event on a callback thread once `work` is complete."""
    ended = torch.futures.Future()
    profiled = torch.ops.profiler._call_end_callbacks_on_jit_fut(
        handle, ended)
    if work is None:  # monitored_barrier returns nothing: it is done
        pg._completer.call_soon(lambda: ended.set_result(None))
        profiled.wait()
        return
    work._profiled = profiled
    work.get_future().add_done_callback(
        lambda _: pg._completer.call_soon(lambda: ended.set_result(None)))


def profiled(cls):
    """Records every operation of EVENTS that `cls` defines, under each
    name it has (torch calls some by several)."""
    for name, (event, inputs_at) in EVENTS.items():
        method = cls.__dict__.get(name)
        if method is None:
            continue
        recorded = _record(method, f"shoal:{event}", inputs_at)
        for alias, value in list(cls.__dict__.items()):
            if value is method:
                setattr(cls, alias, recorded)
    return cls
