"""shoal.torchft: a reconfigurable torchft process group over shoal.

torchft (Meta's fault-tolerant training, PyPI `torchft`, 0.2.0 tested)
rebuilds its process groups at every quorum change: configure() is called
with a fresh store prefix each time, abort() from its watchdog, errored()
polled. ProcessGroupShoal is torchft's ProcessGroupWrapper with a shoal
process group inside (shoal.c10d's, made from torchft's store), so it does
all of that the way torchft's gloo wrapper does, and also reduce_scatter,
which gloo's refuses.

    from shoal.torchft import ProcessGroupShoal
    pg = ProcessGroupShoal(timeout=timedelta(seconds=10))
    manager = torchft.Manager(pg=pg, ...)

torchft is an optional dependency: importing this module without it
raises ImportError saying how to install it.
"""

try:
    import torchft.process_group as _tpg
except ImportError as e:  # optional: say how to get it
    raise ImportError(
        f"shoal.torchft needs torchft ({e}): pip install torchft==0.2.0"
    ) from e

from .c10d.process_group import ProcessGroupShoal as _GroupOverShoal
from .c10d.process_group import connect as _connect

__all__ = ["ProcessGroupShoal"]


class ProcessGroupShoal(_tpg.ProcessGroupWrapper):
    """torchft's reconfigurable process group over shoal: configure()
    tears the communicator down and creates one under the new store
    prefix; abort() fails pending work without blocking; errored() says
    what failed it."""

    def _create_pg(self, store, rank, world_size):
        comm = _connect(store, rank, world_size, self._timeout, "torchft")
        return _GroupOverShoal(comm, store)

    def getBackendName(self):
        return "torchft-shoal"

    def errored(self):
        """The exception that failed the group (torchft's meaning), from
        torchft's own record of an error or from the communicator."""
        err = super().errored()
        pg = getattr(self, "_pg", None)
        if err is None and pg is not None and hasattr(pg, "errored"):
            err = pg.errored()
        return err
