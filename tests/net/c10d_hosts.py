"""One rank of torch.distributed with backend "shoal" across hosts (run by
test_c10d_hosts.sh): RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT come
from the environment, as torchrun gives them. Every rank checks an
all_reduce, an all_gather and a broadcast, then prints "c10d ... OK"."""
import os

import torch
import torch.distributed as dist

import shoal  # noqa: F401  (registers the backend)

rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("shoal", rank=rank, world_size=size)
t = torch.full((1000,), float(rank + 1))
dist.all_reduce(t)
assert torch.equal(t, torch.full((1000,), size * (size + 1) / 2)), t[:4]
out = [torch.empty(3) for _ in range(size)]
dist.all_gather(out, torch.full((3,), float(rank)))
assert all(torch.equal(o, torch.full((3,), float(r)))
           for r, o in enumerate(out)), out
b = torch.arange(5.0) if rank == 0 else torch.zeros(5)
dist.broadcast(b, 0)
assert torch.equal(b, torch.arange(5.0)), b
dist.destroy_process_group()
print(f"c10d rank {rank} of {size} OK", flush=True)
