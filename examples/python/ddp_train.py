"""DDP training on CPU with torch.distributed backend "shoal".

    torchrun --nproc-per-node 4 examples/python/ddp_train.py

trains a small MLP on synthetic data with DistributedDataParallel; the
only shoal-specific lines are ``import shoal`` and the backend name.

    torchrun --nproc-per-node 4 examples/python/ddp_train.py --compare

trains the same model from the same start twice in one job, over gloo (the
default group) and over a shoal group, prints the step times side by side
and fails unless both end with the same parameters.
"""

import argparse
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import shoal  # noqa: F401  (registers backend "shoal")


def make_model(width, depth):
    torch.manual_seed(0)  # every rank starts from the same weights
    layers = [torch.nn.Linear(64, width), torch.nn.ReLU()]
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(width, 8))
    return torch.nn.Sequential(*layers)


def batches(rank, steps, batch):
    g = torch.Generator().manual_seed(1000 + rank)  # each rank its own data
    for _ in range(steps):
        x = torch.randn(batch, 64, generator=g)
        yield x, torch.sin(x[:, :8]) + 0.1 * torch.randn(batch, 8, generator=g)


def train(args, group=None):
    """Trains with DDP over `group`; returns (parameters, step seconds)."""
    model = make_model(args.width, args.depth)
    ddp = DDP(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    times = []
    for x, y in batches(dist.get_rank(), args.steps, args.batch):
        dist.barrier(group)  # time each step from a common start
        t0 = time.perf_counter()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return params, times[args.warmup:], loss.item()


def allreduce_ms(numel, group, reps=5):
    """Median time of one all-reduce of a gradient-sized float32 tensor."""
    t = torch.ones(numel)
    times = []
    for _ in range(reps + 1):
        dist.barrier(group)
        t0 = time.perf_counter()
        dist.all_reduce(t, group=group)
        times.append(time.perf_counter() - t0)
    return statistics.median(times[1:]) * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="shoal")
    p.add_argument("--compare", action="store_true",
                   help="train over gloo and over shoal, compare")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--save", help="rank 0 writes the final parameters here")
    args = p.parse_args()
    torch.set_num_threads(1)  # ranks share the machine's cores

    if not args.compare:
        dist.init_process_group(args.backend)
        params, times, loss = train(args)
        if dist.get_rank() == 0:
            print(f"{args.backend}: {dist.get_world_size()} ranks, "
                  f"{params.numel()} parameters, loss {loss:.4f}, median "
                  f"step {statistics.median(times) * 1e3:.1f} ms")
            if args.save:
                torch.save(params, args.save)
        dist.destroy_process_group()
        return 0

    dist.init_process_group("gloo")
    groups = {"gloo": None, "shoal": dist.new_group(backend="shoal")}
    results = {name: train(args, g) for name, g in groups.items()}
    numel = results["gloo"][0].numel()
    comm = {name: allreduce_ms(numel, g) for name, g in groups.items()}
    diff = (results["gloo"][0] - results["shoal"][0]).abs().max().item()
    same = diff <= 1e-4
    if dist.get_rank() == 0:
        n = dist.get_world_size()
        print(f"DDP, {n} ranks, MLP of {numel / 1e6:.1f}M parameters, "
              f"batch {args.batch} per rank, median of "
              f"{args.steps - args.warmup} steps")
        print(f"{'backend':<8}{'step ms':>10}{'all-reduce ms':>15}"
              f"{'final loss':>12}")
        for name in groups:
            params, times, loss = results[name]
            print(f"{name:<8}{statistics.median(times) * 1e3:>10.1f}"
                  f"{comm[name]:>15.2f}{loss:>12.5f}")
        g, s = (statistics.median(results[k][1]) for k in ("gloo", "shoal"))
        print(f"shoal step time: {g / s:.2f}x gloo's speed; all-reduce "
              f"of the {numel * 4 / 2**20:.0f} MiB of gradients: "
              f"{comm['gloo'] / comm['shoal']:.1f}x")
        print(f"final parameters: max |shoal - gloo| = {diff:.2e} "
              f"({'same' if same else 'DIFFERENT'})")
        if args.save:
            torch.save({k: v[0] for k, v in results.items()}, args.save)
    dist.destroy_process_group()
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
