"""Rank programs of test_ddp_hook.py: ``python ddp_ranks.py CASE`` runs
case_CASE on this rank (shoal ranks from the environment as harness.spawn
sets them, torch's store at TEST_TORCH_PORT) and prints "ok" when it
passed."""

import os
import sys

import torch

import shoal
import shoal.ddp
from memory_ranks import new_comm, raises


def _ddp_world():
    import torch.distributed as dist

    rank = int(os.environ["SHOAL_RANK"])
    size = int(os.environ["SHOAL_SIZE"])
    store = dist.TCPStore("127.0.0.1", int(os.environ["TEST_TORCH_PORT"]),
                          size, rank == 0)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=size)
    return dist, rank, size


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))


def _train(group, steps, hook=None, gav=False):
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = _model()
    # Small buckets: several of them, rebuilt after the first step.
    ddp = DDP(model, process_group=group, gradient_as_bucket_view=gav,
              bucket_cap_mb=0.1)
    state = hook(ddp) if hook is not None else None
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1234 + group.rank())
    for _ in range(steps):
        x = torch.randn(16, 64, generator=gen)
        y = torch.randn(16, 8, generator=gen)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    shared = None
    if state is not None:
        shared = [shoal.is_shared(p.grad) for p in model.parameters()]
    return [p.detach().clone() for p in model.parameters()], shared, state


def _close(a, b):
    return all(torch.allclose(x, y, rtol=1e-5, atol=1e-6)
               for x, y in zip(a, b))


class _NotDDP:
    """Just what register_shared_buckets looks at."""

    def __init__(self, group):
        self.process_group = group

    def register_comm_hook(self, state, hook):
        raise AssertionError("registered a hook on mismatched ranks")


def case_ddp_gloo():
    """DDP over gloo plus the hook on a separate shoal communicator ends
    with gloo's parameters, moving buckets or reducing into twins."""
    dist, rank, size = _ddp_world()
    c = new_comm()
    gloo = dist.group.WORLD
    ref, _, _ = _train(gloo, 5)
    for move in (True, False):
        for gav in (False, True):
            got, shared, state = _train(
                gloo, 5, lambda m: shoal.ddp.register_shared_buckets(
                    m, comm=c, move_buckets=move), gav)
            assert _close(got, ref), (move, gav)
            assert state.move_buckets == move
            # with bucket views, grads are the (moved) buckets themselves
            assert all(shared) == (move and gav), (move, gav, shared)
    # A communicator over other ranks is refused (before any hook runs).
    if size > 2:
        sub = c.split([0, 1] if rank < 2 else [])
        if sub is not None:
            raises(shoal.InvalidArgumentError,
                   shoal.ddp.register_shared_buckets, _NotDDP(gloo), comm=sub)
            sub.finalize()
    dist.destroy_process_group()
    c.finalize()
    print("ok")


def case_ddp_shoal_backend():
    """DDP over a process group of backend "shoal": the hook finds the
    communicator itself, and parameters match gloo's."""
    dist, rank, size = _ddp_world()
    if "shoal" not in [b.lower() for b in dist.Backend.backend_list]:
        print("skip: backend 'shoal' not registered")
        return
    spg = dist.new_group(backend="shoal")
    ref, _, _ = _train(dist.group.WORLD, 4)
    got, shared, _ = _train(
        spg, 4, lambda m: shoal.ddp.register_shared_buckets(m), gav=True)
    assert _close(got, ref)
    assert all(shared)
    # shoal.empty accepts the process group as comm
    t = shoal.zeros(10, comm=spg)
    t += 1
    dist.all_reduce(t, group=spg)
    assert bool((t == size).all())
    dist.destroy_process_group()
    print("ok")


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]]()
