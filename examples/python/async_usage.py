"""torchcomms' "Asynchronous Operations" example, on CPU with shoal.

    torchrun --nproc-per-node 2 examples/python/async_usage.py [STORE_FILE]

Rank 0 sends a tensor to rank 1 without blocking, both do other work while
it moves, then wait. (Ranks past 1, if any, only take part in creating the
communicator.)
"""

import os
import sys
import tempfile

import torch

import shoal

world_size = int(os.environ.get("WORLD_SIZE")
                 or os.environ.get("SHOAL_SIZE") or 2)
path = (sys.argv[1] if len(sys.argv) > 1 else
        os.path.join(tempfile.gettempdir(), "shoal_async_usage"))

# Create a communicator
store = torch.distributed.FileStore(path, world_size)
device = torch.device("cpu")
comm = shoal.new_comm("shoal", device, store=store)

rank = comm.get_rank()
world_size = comm.get_size()

# Create tensors (rank + 1, so that what arrives differs from zeros)
send_tensor = torch.ones(10, device=device) * (rank + 1)
recv_tensor = torch.zeros(10, device=device)

# Perform asynchronous send and receive
work = None
if rank == 0:
    work = comm.send(send_tensor, dst=1, async_op=True)
elif rank == 1:
    work = comm.recv(recv_tensor, src=0, async_op=True)

# Do other work while communication is in progress (the wait releases the
# GIL, and shoal moves the data in the background meanwhile)
other = torch.randn(256, 256)
other = other @ other

# Wait for the operation to complete
if work is not None:
    work.wait()
if rank == 1:
    print(f"Rank 1 received {recv_tensor}")
    assert torch.equal(recv_tensor, torch.ones(10))

# Finalize the communicator
comm.finalize()

# The last rank to release the FileStore deletes its file. Release it here:
# Python does not promise to destroy objects still alive when it exits.
del store
