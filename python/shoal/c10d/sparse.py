"""Sum-all-reduce of sparse COO tensors for the "shoal" process group.

torch asks a backend to all-reduce sparse gradients (DDP with
nn.Embedding(sparse=True)). Every rank's coalesced indices and values are
gathered (padded to the largest rank's count, so the equal-size gather
serves), summed by coalescing their union, and copied into the input
tensor in place, as gloo does. Only SUM has a sparse meaning here.
"""

import torch

from .. import _C
from .._reduce_op import ReduceOp


def check(tensor, op):
    """Refuses what a sparse all-reduce cannot do, before anything runs."""
    if tensor.layout != torch.sparse_coo:
        raise _C.InvalidArgumentError(
            f"allreduce: {tensor.layout} tensors are not supported; only "
            "dense (strided) and sparse COO tensors are: convert with "
            ".to_dense() or .to_sparse()")
    if op != ReduceOp.SUM:
        raise _C.InvalidArgumentError(
            f"allreduce: a sparse tensor can only be summed, not reduced "
            f"with {op}: use ReduceOp.SUM or convert with .to_dense()")


def all_reduce_sum(comm, tensor, timeout=None):
    """Sums `tensor` (sparse COO) over every rank of `comm`, in place."""
    local = tensor.coalesce()
    nnz = torch.tensor([local._nnz()], dtype=torch.int64)
    counts = torch.empty(comm.get_size(), dtype=torch.int64)
    comm.all_gather_single(counts, nnz, timeout=timeout)
    most = int(counts.max())
    indices = _gather_padded(comm, local._indices().t(), most, timeout)
    values = _gather_padded(comm, local._values(), most, timeout)
    keep = torch.cat([torch.arange(r * most, r * most + int(n))
                      for r, n in enumerate(counts.tolist())])
    total = torch.sparse_coo_tensor(indices[keep].t(), values[keep],
                                    tensor.shape, dtype=tensor.dtype)
    tensor.copy_(total.coalesce())
    return tensor


def _gather_padded(comm, rows, most, timeout):
    """Every rank's `rows` (first dimension at most `most`), stacked with
    each rank's block padded to `most` rows."""
    padded = rows.new_zeros((most,) + tuple(rows.shape[1:]))
    padded[:rows.shape[0]] = rows
    out = rows.new_empty((comm.get_size() * most,) + tuple(rows.shape[1:]))
    comm.all_gather_single(out, padded.contiguous(), timeout=timeout)
    return out
