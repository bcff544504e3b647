"""torchcomms' "Basic Usage" example, on CPU with shoal.

    torchrun --nproc-per-node 2 examples/python/basic_usage.py [STORE_FILE]

Every rank creates a communicator from a shared FileStore (a file all ranks
can see, fresh for each run: a default name under the temp directory), all-
reduces a tensor and prints it. Rank and world size come from the launcher
(torchrun's RANK and WORLD_SIZE here; shoalrun, mpirun and srun work too).
"""

import os
import sys
import tempfile

import torch

import shoal

world_size = int(os.environ.get("WORLD_SIZE")
                 or os.environ.get("SHOAL_SIZE") or 2)
path = (sys.argv[1] if len(sys.argv) > 1 else
        os.path.join(tempfile.gettempdir(), "shoal_basic_usage"))

# Create a store for rendezvous
store = torch.distributed.FileStore(path, world_size)

# Create a communicator
device = torch.device("cpu")
comm = shoal.new_comm("shoal", device, store=store)

# Get rank and world size
rank = comm.get_rank()
world_size = comm.get_size()

# Create a tensor
tensor = torch.ones(10, device=device) * rank

# Perform an all-reduce operation
comm.all_reduce(tensor, shoal.ReduceOp.SUM, async_op=False)

# Tensor now contains the sum of all ranks
print(f"Rank {rank}: {tensor}")
assert torch.equal(tensor, torch.full((10,), float(sum(range(world_size)))))

# Finalize the communicator
comm.finalize()

# The last rank to release the FileStore deletes its file. Release it here:
# Python does not promise to destroy objects still alive when it exits.
del store
