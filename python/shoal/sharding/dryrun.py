"""Costing an operation without running it: communication_cost runs the
operation on a meta tensor (its shape and dtype, no data). The data
movements (moves.py) see the meta tensor, record here the collective they
would issue (kind, bytes as shoal's rules count them, communicator)
instead of communicating, and return meta tensors of the shapes they
would have produced; everything between them (slices, spec changes) runs
as usual. Nothing is sent, so any rank can cost alone."""

import contextlib
import contextvars

import torch

_records = contextvars.ContextVar("shoal_sharding_records", default=None)


@contextlib.contextmanager
def recording():
    """Collects the records of what runs inside, as a list of (kind,
    bytes, comm)."""
    records = []
    token = _records.set(records)
    try:
        yield records
    finally:
        _records.reset(token)


def record(kind, nbytes, comm):
    records = _records.get()
    if records is not None:
        records.append((kind, int(nbytes), comm))


def meta_of(x):
    """x (a ShardedTensor or a torch tensor) with its data replaced by a
    meta tensor of the same shape and dtype; anything else unchanged."""
    from .tensor import ShardedTensor
    if isinstance(x, ShardedTensor):
        return ShardedTensor(meta_of(x.local), x.spec, x.shape)
    if isinstance(x, torch.Tensor):
        return torch.empty(x.shape, dtype=x.dtype, device="meta")
    return x
