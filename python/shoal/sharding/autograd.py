"""The collectives and layout changes as autograd functions, each
backward the transposed movement (Megatron's and JAX's pairs):

  all_reduce of partial sums   <->  identity (avg: divided by the ranks)
  all_gather                   <->  this rank's piece (no communication)
  reduce_scatter (sum)         <->  all_gather
  all_to_all                   <->  the reverse all_to_all
  ppermute                     <->  the inverse permutation
  replicated -> sharded slice  <->  all_gather of the pieces
  replicated -> partial sum    <->  identity
  use of a replicated operand  <->  all_reduce (sum) over the axes
  by pieces that differ             its consumer's pieces differ on

Convention (Megatron's, and JAX's shard_map): a gradient has the layout
of its value. A sharded value's piece gets the gradient of that piece; a
replicated value gets its whole gradient, the same on every rank (so a
loss computed alike on every rank counts once); each rank's addend of a
partial sum gets the gradient of the sum. Hence a replicated operand
consumed by pieces that differ over an axis (the weight of data
parallelism, whose batch that axis splits; the input of a column-parallel
layer) has its gradient contributions all-reduced over that axis in
backward (GradAllReduce): after loss.backward() a replicated weight's
.grad is complete, with no all_reduce of .grad by hand. A loss that
differs per rank (each rank's on its own batch) is taken as the sum of
the ranks' losses; divide it by the ranks for their mean."""

import torch

from .._reduce_op import ReduceOp
from . import moves


class AllReduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, local, comm, op, name):
        ctx.name, ctx.n = name, comm.get_size()
        return moves.reduce(local, comm, op)

    @staticmethod
    def backward(ctx, grad):
        if ctx.name == "sum":
            return grad, None, None, None
        if ctx.name == "avg":
            return grad / ctx.n, None, None, None
        raise RuntimeError(
            f"all_reduce with op {ctx.name!r} has no gradient in "
            "shoal.sharding (sum and avg do)")


class AllGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, local, dim, lengths, comm):
        ctx.dim, ctx.lengths, ctx.comm = dim, lengths, comm
        return moves.gather(local, dim, lengths, comm)

    @staticmethod
    def backward(ctx, grad):
        me = ctx.comm.get_rank()
        off = sum(ctx.lengths[:me])
        piece = grad.narrow(ctx.dim, off, ctx.lengths[me])
        return piece.contiguous(), None, None, None


class ReduceScatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, local, dim, lengths, comm, op, name):
        ctx.dim, ctx.lengths, ctx.comm, ctx.name = dim, lengths, comm, name
        return moves.scatter_reduce(local, dim, lengths, comm.get_rank(),
                                    comm, op)

    @staticmethod
    def backward(ctx, grad):
        if ctx.name not in ("sum", "avg"):
            raise RuntimeError(
                f"reduce_scatter with op {ctx.name!r} has no gradient")
        g = moves.gather(grad, ctx.dim, ctx.lengths, ctx.comm)
        if ctx.name == "avg":
            g = g / ctx.comm.get_size()
        return g, None, None, None, None, None


class AllToAll(torch.autograd.Function):
    """`plan`: (shape, have, want, plans, key) to move by a compiled op
    (every piece non-empty), or None for the padded exchange."""

    @staticmethod
    def forward(ctx, local, split_dim, concat_dim, split_lengths, incoming,
                comm, plan):
        ctx.args = (split_dim, concat_dim, split_lengths, incoming, comm,
                    plan)
        if plan is not None:
            shape, have, want, plans, key = plan
            return moves.boxes(local, comm, shape, have, want, plans, key)
        return moves.exchange(local, split_dim, concat_dim, split_lengths,
                              incoming, comm)

    @staticmethod
    def backward(ctx, grad):
        split_dim, concat_dim, split_lengths, incoming, comm, plan = ctx.args
        if plan is not None:
            shape, have, want, plans, key = plan
            back = moves.boxes(grad, comm, shape, want, have, plans,
                               ("back",) + key)
        else:
            back = moves.exchange(grad, concat_dim, split_dim, incoming,
                                  split_lengths, comm)
        return back, None, None, None, None, None, None


class PPermute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, local, pairs, me, comm):
        ctx.pairs, ctx.me, ctx.comm = pairs, me, comm
        return moves.permute(local, pairs, me, comm)

    @staticmethod
    def backward(ctx, grad):
        inverse = [(d, s) for s, d in ctx.pairs]
        return (moves.permute(grad, inverse, ctx.me, ctx.comm), None, None,
                None)


class GradAllReduce(torch.autograd.Function):
    """A replicated operand used by computation whose pieces differ over
    `axes` of `mesh`: forward the operand itself (no communication, no
    sub-communicator made); backward its gradient contributions summed
    over those axes (Megatron's f)."""

    @staticmethod
    def forward(ctx, local, mesh, axes):
        ctx.mesh, ctx.axes = mesh, axes
        return local.view_as(local)

    @staticmethod
    def backward(ctx, grad):
        comm = ctx.mesh.comm_for(ctx.axes)
        return moves.reduce(grad, comm, ReduceOp.SUM), None, None


class Slice(torch.autograd.Function):
    """A replicated value cut to piece `me` along `dim` (pieces of
    `lengths` along `axis` of `mesh`): no communication; backward gathers
    the pieces' gradients into the replicated value's whole one."""

    @staticmethod
    def forward(ctx, local, dim, lengths, me, mesh, axis):
        ctx.dim, ctx.lengths, ctx.mesh, ctx.axis = dim, lengths, mesh, axis
        return local.narrow(dim, sum(lengths[:me]), lengths[me]).contiguous()

    @staticmethod
    def backward(ctx, grad):
        comm = ctx.mesh.comm_for((ctx.axis,))
        return (moves.gather(grad.contiguous(), ctx.dim, ctx.lengths, comm),
                None, None, None, None, None)


class KeepOnRoot(torch.autograd.Function):
    """A replicated value as partial sums: kept where `keep` (rank 0 of
    the axes), zeros elsewhere; backward the gradient of the sum on every
    rank, as the value's whole gradient."""

    @staticmethod
    def forward(ctx, local, keep):
        return local.view_as(local) if keep else torch.zeros_like(local)

    @staticmethod
    def backward(ctx, grad):
        return grad, None
