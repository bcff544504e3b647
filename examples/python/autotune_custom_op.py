"""torch.compile choosing between two implementations of a collective by
measuring them in lockstep on every rank, on CPU (the usage example of
inductor's collective autotuning, corrected so that it runs on CPU).

    torchrun --nproc-per-node 2 examples/python/autotune_custom_op.py
    torchrun --nproc-per-node 2 examples/python/autotune_custom_op.py --backend gloo

``shoal.tune.enable_inductor()`` makes inductor time each choice with
``shoal.tune.benchmark`` (lockstep, each call at its slowest rank) on the
group the choices' collectives name, as many times as inductor's config
says (TORCHINDUCTOR_COLLECTIVE_BENCHMARK_NRUNS, default 50, after
TORCHINDUCTOR_DEFAULT_AUTOTUNE_WARMUP, default 25); without it every
choice fails on CPU (inductor times with CUDA events) and the op's own
implementation is used.

What differs from the spec's example, and why:
- the group is an argument of the op (``group_name``), given the group's
  real name: the name "default" resolves to no group in torch 2.13;
- every functional collective's result is waited for (``wait_tensor``):
  the functional ops return before the data has arrived;
- torch.distributed is initialised before compiling, and the op's fake
  implementation takes the same arguments as the op;
- the implementation without extra parameters comes first: inductor gives
  the first config's parameters to the op's own implementation too.

The two choices: one all_reduce of the whole tensor ("fast"), and the same
data all-reduced in 64 small pieces ("slow"). The program prints each
choice's measured time, eager times of both, and the compiled function's
time (the three timed in turns), and checks the compiled result against
eager.
"""

import argparse
import statistics
import time

import torch
import torch.distributed as dist
from torch._inductor.kernel.custom_op import (CustomOpConfig,
                                              register_custom_op_autotuning)

import shoal
import shoal.tune

F = torch.ops._c10d_functional


@torch.library.custom_op("shoal_example::my_allreduce", mutates_args=())
def my_allreduce(x: torch.Tensor, group_name: str) -> torch.Tensor:
    result = x.clone()
    return F.wait_tensor(F.all_reduce_(result, "sum", group_name))


@my_allreduce.register_fake
def _(x, group_name):
    return torch.empty_like(x)


def allreduce_fast(x, group_name):
    result = x.clone()
    return F.wait_tensor(F.all_reduce_(result, "sum", group_name))


def allreduce_slow(x, group_name, pieces=64):
    parts = [F.wait_tensor(F.all_reduce(p, "sum", group_name))
             for p in x.chunk(pieces)]
    return torch.cat(parts)


register_custom_op_autotuning(
    my_allreduce,
    configs=[CustomOpConfig(allreduce_fast),
             CustomOpConfig(allreduce_slow, pieces=64)])


def timed(fns, x, reps=30):
    """Per function the median seconds of fn(x), each call started together
    on every rank, at its slowest rank. The functions take turns, one call
    each per round, so a machine whose load drifts weighs on all alike."""
    times = [[] for _ in fns]
    for _ in range(reps):
        for fn, mine in zip(fns, times):
            dist.barrier()
            t0 = time.perf_counter()
            fn(x)
            mine.append(time.perf_counter() - t0)
    t = torch.tensor([statistics.median(m) for m in times],
                     dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="shoal")
    parser.add_argument("--elements", type=int, default=1 << 16)
    args = parser.parse_args()
    dist.init_process_group(args.backend)
    rank = dist.get_rank()
    assert shoal.tune.enable_inductor(), "the inductor patch did not apply"
    group = dist.group.WORLD.group_name

    def model(x):
        return my_allreduce(x * 2, group) + 1

    compiled = torch.compile(model)
    x = torch.arange(args.elements, dtype=torch.float32) + rank
    got = compiled(x)  # compiles: inductor measures both choices here
    want = model(x)
    torch.testing.assert_close(got, want)

    fast, slow, comp = timed([
        lambda v: allreduce_fast(v * 2, group) + 1,
        lambda v: allreduce_slow(v * 2, group) + 1,
        compiled], x)
    if rank == 0:
        measured = shoal.tune.inductor_timings()[-1]
        for name, ms in sorted(measured.items(), key=lambda kv: kv[1]):
            print(f"choice {name}: {ms * 1e3:.1f} us (lockstep, slowest "
                  "rank)")
        print(f"eager fast {fast * 1e6:.1f} us, eager slow {slow * 1e6:.1f} "
              f"us, compiled {comp * 1e6:.1f} us")
        print("the compiled function runs the "
              + ("fast" if comp < (fast * slow) ** 0.5 else "slow")
              + " choice; its result equals eager")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
