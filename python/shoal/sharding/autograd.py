"""The collectives as autograd functions, each backward the transposed
movement (JAX's and Megatron's pairs):

  all_reduce of partial sums  <->  identity (avg: divided by the ranks)
  all_gather                  <->  reduce_scatter (sum)
  reduce_scatter (sum)        <->  all_gather
  all_to_all                  <->  the reverse all_to_all
  ppermute                    <->  the inverse permutation

Convention: the gradient arriving at a value that sharded computation
consumed is a partial sum over the axes of that computation (each rank
holds its part), as in Megatron's tensor parallelism; a replicated
tensor's .grad after backward is therefore partial over such axes."""

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
        return (moves.scatter_reduce(grad, ctx.dim, ctx.lengths, me,
                                     ctx.comm, ReduceOp.SUM),
                None, None, None)


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
