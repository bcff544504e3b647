"""compile_op: resharding a DTensor and a custom pattern, on CPU with shoal.

    torchrun --nproc-per-node 4 examples/python/compile_op_reshard.py

1. A 2-D tensor sharded by rows (Shard(0)) is resharded by columns
   (Shard(1)) through one compiled op, and checked against
   DTensor.redistribute. Only the blocks each rank needs move; nothing
   gathers the whole tensor anywhere.
2. A halo exchange: each rank owns a band of rows and receives one row from
   each neighbour into its own slots, as a stencil code would. Overlapping
   outputs, no reduction.
3. A sum over overlapping contributions: every rank adds into a shared
   window (reduction='sum').
"""

import torch
import torch.distributed as dist
from torch.distributed.tensor import (DeviceMesh, DTensor, Shard,
                                      distribute_tensor)

import shoal

dist.init_process_group("shoal")
rank, n = dist.get_rank(), dist.get_world_size()
group = dist.group.WORLD

# 1. Shard(0) -> Shard(1) of a (4n) x (6n) tensor.
mesh = DeviceMesh("cpu", torch.arange(n))
full = torch.arange(4 * n * 6 * n, dtype=torch.float32).reshape(4 * n, 6 * n)
rows = distribute_tensor(full, mesh, [Shard(0)])
cols_spec = DTensor.from_local(torch.empty(4 * n, 6, device="meta"), mesh,
                               [Shard(1)], run_check=False,
                               shape=full.shape, stride=full.stride())
reshard = shoal.compile_op(group, inputs=[rows], outputs=[cols_spec])
cols = torch.empty(4 * n, 6)
reshard([rows.to_local()], [cols]).wait()
assert torch.equal(cols, rows.redistribute(mesh, [Shard(1)]).to_local())
print(f"rank {rank}: resharded rows -> columns, "
      f"{reshard.bytes[0]} bytes sent")

# 2. Halo exchange on a 1-D domain of n bands of 4 rows (periodic): my
#    band plus one ghost row above and below, in one (6, 8) tensor.
band, width = 4, 8
lo = rank * band
mine = {"offset": [lo, 0], "shape": [band, width]}
above = {"offset": [(lo - 1) % (n * band), 0], "shape": [1, width]}
below = {"offset": [(lo + band) % (n * band), 0], "shape": [1, width]}
halo = shoal.compile_op(group, shape=[n * band, width], dtype=torch.float32,
                        inputs=[mine], outputs=[above, below])
local = torch.full((band + 2, width), float(rank))
local[0] = local[-1] = -1.0
halo([local[1:-1]], [local[:1], local[-1:]]).wait()  # views: strided ok
assert local[0, 0] == (rank - 1) % n and local[-1, 0] == (rank + 1) % n
print(f"rank {rank}: ghost rows from ranks {int(local[0, 0])} and "
      f"{int(local[-1, 0])}")

# 3. Every rank adds a 4 x 4 patch of ones into an 8 x 8 window at its own
#    offset; rank 0 receives the sums over the patches' union (a region no
#    patch covers would be an error naming its elements).
patch = {"offset": [rank % 2 * 2, rank // 2 % 2 * 2], "shape": [4, 4]}
covered = [6 if n > 1 else 4, 6 if n > 2 else 4]  # the patches' union
window = shoal.compile_op(group, shape=[8, 8], dtype=torch.float32,
                          inputs=[patch],
                          outputs=[{"offset": [0, 0], "shape": covered}]
                          if rank == 0 else None, reduction="sum")
out = [torch.zeros(covered)] if rank == 0 else []
window([torch.ones(4, 4)], out).wait()
if rank == 0:
    print("rank 0: overlap counts\n", out[0].int())

dist.destroy_process_group()
