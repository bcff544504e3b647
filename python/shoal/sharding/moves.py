"""The data movement of the collectives, on local tensors: what each rank
sends and keeps, with DTensor's uneven pieces padded for the exchange.
autograd.py pairs each with its backward. Every collective shoal.sharding
issues, forward or backward, goes through here: this is where they are
counted (stats()) and where a dry run (dryrun.py: a meta tensor, shapes
and no data) records the collective it would issue instead of running
it."""

import collections
import math
import sys

import torch

from . import dryrun

issued = collections.Counter()  # collectives run, by kind


def _skip(local, kind, nbytes, comm):
    """True for a dry run (recorded, not run); else counts the run."""
    if local.is_meta:
        dryrun.record(kind, nbytes, comm)
        return True
    issued[kind] += 1
    return False


def _nbytes(t):
    return t.numel() * t.element_size()


def _row(t):
    """Bytes of one index of t's first dimension."""
    return math.prod(t.shape[1:]) * t.element_size()


def reduce(local, comm, op):
    """All-reduce of `local` (a new tensor)."""
    if _skip(local, "all_reduce", _nbytes(local), comm):
        return local.new_empty(local.shape)
    out = local.contiguous().clone()
    comm.all_reduce(out, op)
    return out


def gather(local, dim, lengths, comm):
    """Concatenation along `dim` of every rank's piece (rank j's has
    lengths[j] rows there), on every rank."""
    most = max(lengths)
    mine = local.movedim(dim, 0)
    if _skip(local, "all_gather", len(lengths) * most * _row(mine), comm):
        shape = list(local.shape)
        shape[dim] = sum(lengths)
        return local.new_empty(shape)
    send = mine.new_zeros((most,) + tuple(mine.shape[1:]))
    send[:mine.shape[0]] = mine
    out = mine.new_empty((len(lengths) * most,) + tuple(mine.shape[1:]))
    comm.all_gather_single(out, send)
    parts = [out[j * most:j * most + n] for j, n in enumerate(lengths)]
    return torch.cat(parts).movedim(0, dim).contiguous()


def scatter_reduce(local, dim, lengths, me, comm, op):
    """Piece `me` (of `lengths` along `dim`) of the reduction of every
    rank's `local`."""
    most = max(lengths)
    mine = local.movedim(dim, 0)
    if _skip(local, "reduce_scatter", len(lengths) * most * _row(mine),
             comm):
        shape = list(local.shape)
        shape[dim] = lengths[me]
        return local.new_empty(shape)
    send = mine.new_zeros((len(lengths) * most,) + tuple(mine.shape[1:]))
    off = 0
    for j, n in enumerate(lengths):
        send[j * most:j * most + n] = mine[off:off + n]
        off += n
    out = mine.new_empty((most,) + tuple(mine.shape[1:]))
    comm.reduce_scatter_single(out, send, op)
    return out[:lengths[me]].movedim(0, dim).contiguous()


def exchange(local, split_dim, concat_dim, split_lengths, incoming, comm):
    """All-to-all: piece j of `local` along split_dim (split_lengths[j]
    rows) goes to rank j; rank p's piece, incoming[p] long along
    concat_dim, comes back; concatenated along concat_dim."""
    me = comm.get_rank()
    if _skip(local, "all_to_all", _nbytes(local), comm):
        shape = list(local.shape)
        shape[split_dim], shape[concat_dim] = split_lengths[me], sum(incoming)
        return local.new_empty(shape)
    sends, recvs, off = [], [], 0
    for n in split_lengths:
        sends.append(local.narrow(split_dim, off, n).contiguous())
        off += n
    for p in range(len(incoming)):
        shape = list(local.shape)
        shape[split_dim], shape[concat_dim] = split_lengths[me], incoming[p]
        recvs.append(local.new_empty(shape))
    comm.all_to_all(recvs, sends)
    return torch.cat(recvs, dim=concat_dim).contiguous()


def permute(local, pairs, me, comm):
    """Sends `local` to d for (me, d) in pairs, receives from s for
    (s, me); zeros where nothing arrives."""
    to = [d for s, d in pairs if s == me]
    frm = [s for s, d in pairs if d == me]
    if _skip(local, "ppermute", _nbytes(local) if pairs else 0, comm):
        return local.new_empty(local.shape)
    out = torch.zeros_like(local)
    works = []
    if to and to[0] == me:
        out.copy_(local)
    elif to:
        works.append(comm.send(local.contiguous(), to[0], async_op=True))
    if frm and frm[0] != me:
        works.append(comm.recv(out, frm[0], async_op=True))
    for w in works:
        w.wait()
    return out


def _box(slices):
    return {"offset": [s.start for s in slices],
            "shape": [s.stop - s.start for s in slices]}


def _spare(entry):
    """entry[1] when nothing but `entry` reaches it or its memory (no other
    tensor, view, or autograd record), else None. CPython counts the
    list's reference and the argument's."""
    t = entry[1]
    if t is None or sys.getrefcount(entry[1]) > 3:  # list, t, argument
        return None
    if torch._C._storage_Use_Count(t.untyped_storage()._cdata) > 2:
        return None
    return t


def boxes(local, comm, shape, have, want, plans, key):
    """This rank holds global[have] (`local`) and gets global[want]: a
    compiled op (shoal.compile_op) moves the blocks, single copy where the
    transport allows and with no packing; compiled once per `key` (equal on
    every rank) and kept in `plans` with the last output it returned. That
    output is reused once nothing else references it (or its memory): a
    fresh 32 MiB tensor costs more in page faults (20 ms here) than the
    move itself (9 ms)."""
    if _skip(local, "all_to_all", _nbytes(local), comm):
        return local.new_empty(tuple(s.stop - s.start for s in want))
    entry = plans.get(key)
    if entry is None:
        from ..compile_op import compile_op
        op = compile_op(comm, shape=list(shape), dtype=local.dtype,
                        inputs=[_box(have)], outputs=[_box(want)])
        entry = plans[key] = [op, None]
    out = _spare(entry)
    if out is None:
        out = local.new_empty(tuple(s.stop - s.start for s in want))
    entry[1] = None
    entry[0]([local.contiguous()], [out]).wait()
    entry[1] = out
    return out
