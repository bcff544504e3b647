"""The cost model's built-in constants, for a machine nothing has been
measured on yet: estimate_cost works out of the box, its estimates marked
calibrated=False. They come from a quick local measurement (about a tenth
of a second, once per process, no communication):

  alpha  a cache-line round trip between two threads: a round of a
         shared-memory algorithm is a flag one rank writes and another
         sees;
  beta   memcpy's time per byte;
  gamma  a float32 sum's time per byte of input (two arrays into a third);

beta and gamma at sizes 64 KiB to 64 MiB (x4), each size the middle of a
range ending half-way (geometric) to the next, so that the caches this
machine copies from (a core's own, the shared last-level one, memory
beyond) each get their own. One process measures its own: ranks may
disagree slightly, as they do on any measurement."""

import math

from .. import _C
from .fit import Range

SIZES = [64 << 10 << (2 * i) for i in range(6)]

_ranges = None


def _reps(nbytes):
    return 3 if nbytes >= 16 << 20 else 10


def ranges():
    """[Range] from the measurement (made on the first call)."""
    global _ranges
    if _ranges is None:
        alpha = _C.probe_round_trip(200, 20)
        times = _C.probe_memory([(s, _reps(s)) for s in SIZES])
        out = []
        for i, (s, (copy, reduce)) in enumerate(zip(SIZES, times)):
            lo = 0 if i == 0 else out[-1].hi
            hi = (math.inf if i == len(SIZES) - 1
                  else round(math.sqrt(s * SIZES[i + 1])))
            out.append(Range(lo, hi, alpha, copy / s, reduce / s))
        _ranges = out
    return _ranges
