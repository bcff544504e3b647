"""The flight recorder: each communicator's last operations, written in
torch's flight-recorder format (one file per rank,
<dir>/shoal_trace_<communicator>_rank_<rank>), which
`python -m torch.distributed.flight_recorder.fr_trace <dir>` reads to name
the rank that skipped or mismatched a collective.

Every communicator records its last SHOAL_FR_ENTRIES operations (2000 by
default; 0 turns it off). The record is written on a time-out, an abort
or a revoke when SHOAL_FR_DUMP_DIR is set, and whenever asked here.
"""

import signal as _signal

from . import _C


def dump_flight_record(comm=None, dir=None):
    """Writes `comm`'s flight record (None: every communicator of this
    process) into `dir` (None: SHOAL_FR_DUMP_DIR)."""
    if comm is None:
        _C.dump_flight_records(dir)
    else:
        getattr(comm, "_c", comm).dump_flight_record(dir)


def dump_flight_record_on_signal(signum=_signal.SIGUSR1, dir=None):
    """From now on, signal `signum` (SIGUSR1 by default) makes this process
    write every communicator's flight record into `dir` (None:
    SHOAL_FR_DUMP_DIR): for a job that hangs, `kill -USR1 <pid>` on each
    rank. Returns the handler it replaced. Main thread only (Python's
    rule for signal handlers)."""
    def handler(num, frame):
        dump_flight_record(None, dir)
    return _signal.signal(signum, handler)
