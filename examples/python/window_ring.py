"""One-sided communication on CPUs with a shoal window (torchcomms'
``comm.new_window``).

    shoalrun -n 4 python examples/python/window_ring.py
    torchrun --nproc-per-node 4 examples/python/window_ring.py

1. The ring torchcomms tests its windows with: every rank puts its input
   into slot `rank` of its right neighbour's window, signals it, waits for
   its left neighbour's signal and finds that neighbour's input in its own
   slot. No receive is ever posted.
2. A halo exchange for a periodic 1-D stencil, written with puts and
   signals instead of send/recv: each step a rank writes its edge cells
   into its neighbours' ghost cells, signals them, waits for their signals,
   then updates its cells. Two ghost slots alternate between steps, so a
   neighbour that runs one step ahead never overwrites cells still in use.
   The result is checked against the same stencil computed on one rank.
"""

import os

import torch

import shoal

torchrun = "RANK" in os.environ and "SHOAL_RANK" not in os.environ
if torchrun:
    import torch.distributed as dist

    dist.init_process_group("shoal")
    comm = dist.group.WORLD.comm
else:
    comm = shoal.new_comm("shoal", "cpu", name="window_ring")
rank, world = comm.get_rank(), comm.get_size()
right, left = (rank + 1) % world, (rank - 1) % world

# ---- 1. the ring --------------------------------------------------------------
count = 1024
window = comm.new_window()
slots = shoal.zeros(count * world, dtype=torch.float32, comm=comm)
window.tensor_register(slots)  # collective
mine = torch.arange(count, dtype=torch.float32) + 1000 * rank
window.put(mine, right, rank * count)
window.signal(right)
window.wait_signal(left)  # left's put has landed in slots
expect = torch.arange(count, dtype=torch.float32) + 1000 * left
assert torch.equal(slots[left * count:(left + 1) * count], expect)
window.tensor_deregister()  # collective
print(f"rank {rank}: ring ok (slot {left} holds rank {left}'s input)",
      flush=True)

# ---- 2. a halo exchange -------------------------------------------------------
cells, steps = 16, 50
start = torch.sin(torch.arange(cells * world, dtype=torch.float64) * 0.3)
u = start[rank * cells:(rank + 1) * cells].clone()

# ghosts[parity] = [left ghost, right ghost]; in shared memory, so that the
# neighbours' puts are plain stores.
ghosts = shoal.zeros(2, 2, dtype=torch.float64, comm=comm)
halo = comm.new_window(ghosts)
LEFT_GHOST, RIGHT_GHOST = 0, 1
for step in range(steps):
    p = step % 2
    # My first cell is my left neighbour's right ghost, my last cell my
    # right neighbour's left ghost.
    halo.put(u[:1], left, 2 * p + RIGHT_GHOST)
    halo.put(u[-1:], right, 2 * p + LEFT_GHOST)
    halo.signal(left)
    halo.signal(right)
    halo.wait_signal(left)
    halo.wait_signal(right)
    padded = torch.cat([ghosts[p, :1], u, ghosts[p, 1:]])
    u = 0.25 * padded[:-2] + 0.5 * padded[1:-1] + 0.25 * padded[2:]
halo.tensor_deregister()

# The same stencil on the whole periodic domain, on this rank alone.
ref = start.clone()
for _ in range(steps):
    ref = 0.25 * torch.roll(ref, 1) + 0.5 * ref + 0.25 * torch.roll(ref, -1)
assert torch.allclose(u, ref[rank * cells:(rank + 1) * cells]), (u, ref)
print(f"rank {rank}: halo exchange ok ({steps} steps, {cells} cells per "
      "rank)", flush=True)
if torchrun:
    dist.destroy_process_group()
else:
    comm.finalize()
