"""torch.distributed backend "shoal".

``import shoal`` registers it (see shoal._c10d_hook), so that::

    import torch.distributed as dist
    import shoal  # noqa: F401
    dist.init_process_group("shoal")   # env://, tcp://, file:// or store=

runs every torch.distributed operation on CPU tensors through shoal: DDP,
FSDP, DTensor and the functional collectives included. dist.new_group
makes a group of the backend it is asked for; one of backend "shoal" is a
communicator of its members, met through the group's store. The process group's
``comm`` attribute is its shoal.Comm (the torchcomms-style API).

This module imports torch; ``import shoal`` alone does not.
"""

from .process_group import BACKEND, ProcessGroupShoal, create_process_group
from .work import Work

__all__ = ["BACKEND", "ProcessGroupShoal", "Work", "create_process_group"]
