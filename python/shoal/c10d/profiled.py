"""Profiler events for the "shoal" process group's operations.

torch.profiler shows a backend's work only if the backend records it: each
operation here is recorded as "shoal:<operation>" (gloo's are
"gloo:<operation>"). The event spans the call, and for an asynchronous
operation lasts until its future completes. With no profiler running, the
cost is one check per call.
"""

import functools

import torch
from torch.autograd.profiler import record_function

# ProcessGroupShoal's method -> the event's name.
EVENTS = {
    "allreduce": "all_reduce",  # allreduce_coalesced calls it
    "broadcast": "broadcast", "reduce": "reduce", "barrier": "barrier",
    "allgather": "all_gather", "allgather_coalesced": "all_gather_coalesced",
    "all_gather_single_coalesced": "all_gather_into_tensor",
    "gather": "gather", "scatter": "scatter",
    "reduce_scatter": "reduce_scatter",
    "reduce_scatter_single_coalesced": "reduce_scatter_tensor",
    "all_to_all_single": "all_to_all_single", "alltoall": "all_to_all",
    "send": "send", "recv": "recv", "recv_anysource": "recv_anysource",
    "monitored_barrier": "monitored_barrier",
}


def _record(method, event):
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        if not torch.autograd._profiler_enabled():
            return method(self, *args, **kwargs)
        with record_function(event) as rf:
            work = method(self, *args, **kwargs)
            if work is not None and not work.is_completed():
                rf._call_end_callbacks_on_future(work.get_future())
        return work
    return run


def profiled(cls):
    """Records every operation of EVENTS that `cls` defines, under each
    name it has (torch calls some by several)."""
    for name, event in EVENTS.items():
        method = cls.__dict__.get(name)
        if method is None:
            continue
        recorded = _record(method, f"shoal:{event}")
        for alias, value in list(cls.__dict__.items()):
            if value is method:
                setattr(cls, alias, recorded)
    return cls
