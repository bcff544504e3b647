"""FSDP2 (fully_shard) training on CPU with torch.distributed backend "shoal".

    torchrun --nproc-per-node 4 examples/python/fsdp_train.py

shards a small transformer-like MLP stack over the ranks: parameters are
all-gathered before each layer runs and gradients reduce-scattered after
(dist.all_gather_into_tensor and dist.reduce_scatter_tensor, through
shoal). With --compare it trains the same model from the same start over
gloo (the default group) and over a shoal group in one job, and fails
unless both end with the same parameters.
"""

import argparse
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import fully_shard

import shoal  # noqa: F401  (registers backend "shoal")


class Block(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def make_model(width, depth, mesh):
    torch.manual_seed(0)  # every rank starts from the same weights
    model = torch.nn.Sequential(*[Block(width) for _ in range(depth)],
                                torch.nn.Linear(width, 4))
    for block in model[:-1]:
        fully_shard(block, mesh=mesh)  # one all-gather per block
    fully_shard(model, mesh=mesh)
    return model


def train(args, mesh):
    """Returns (full parameters, step seconds, last loss)."""
    model = make_model(args.width, args.depth, mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1000 + dist.get_rank())
    group = mesh.get_group()
    times = []
    for _ in range(args.steps):
        x = torch.randn(args.batch, args.width, generator=g)
        y = x[:, :4].sum(dim=1, keepdim=True).expand(-1, 4)
        dist.barrier(group)
        t0 = time.perf_counter()
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    params = torch.cat([p.full_tensor().reshape(-1)
                        for p in model.parameters()])
    return params, times[1:], loss.item()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="shoal")
    p.add_argument("--compare", action="store_true",
                   help="train over gloo and over shoal, compare")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--save", help="rank 0 writes the final parameters here")
    args = p.parse_args()
    torch.set_num_threads(1)  # ranks share the machine's cores

    if not args.compare:
        dist.init_process_group(args.backend)
        mesh = init_device_mesh("cpu", (dist.get_world_size(),))
        params, times, loss = train(args, mesh)
        if dist.get_rank() == 0:
            print(f"{args.backend}: FSDP2 over {dist.get_world_size()} "
                  f"ranks, {params.numel()} parameters, loss {loss:.5f}, "
                  f"median step {statistics.median(times) * 1e3:.1f} ms")
            if args.save:
                torch.save(params, args.save)
        dist.destroy_process_group()
        return 0

    dist.init_process_group("gloo")
    meshes = {"gloo": init_device_mesh("cpu", (dist.get_world_size(),)),
              "shoal": DeviceMesh.from_group(dist.new_group(backend="shoal"),
                                             "cpu")}
    results = {name: train(args, mesh) for name, mesh in meshes.items()}
    diff = (results["gloo"][0] - results["shoal"][0]).abs().max().item()
    same = diff <= 1e-4
    if dist.get_rank() == 0:
        for name, (params, times, loss) in results.items():
            print(f"{name:<6} FSDP2 over {dist.get_world_size()} ranks: "
                  f"loss {loss:.6f}, median step "
                  f"{statistics.median(times) * 1e3:.1f} ms")
        print(f"final parameters: max |shoal - gloo| = {diff:.2e} "
              f"({'same' if same else 'DIFFERENT'})")
    dist.destroy_process_group()
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
