"""Hints: what shoal reads from torchcomms' ``hints`` dicts.

Every operation and new_comm take ``hints`` (string keys and values, as
torchcomms passes them). shoal's keys:

- ``"shoal::algorithm"``: on an operation, the algorithm that call runs (a
  name ``Comm.algorithms(collective)`` lists, such as ``"ring"``); on a
  communicator, ``"collective:name"`` pairs separated by commas
  (``"all_reduce:twoshot,all_gather:direct"``), the algorithm of every
  call of those collectives. Every rank must give the same. A name the
  collective cannot run here makes that call raise ShoalError naming the
  ones it can; point-to-point operations and barriers have no algorithms
  to choose (InvalidArgumentError).
- ``"shoal::deadline_ms"``: a deadline in milliseconds (a positive
  integer): on an operation, that call's timeout is the earlier of it and
  ``timeout``; on a communicator, the same for every call.

Other keys (torchcomms' own for other backends, say) do nothing here: each
is said once per process at INFO (SHOAL_DEBUG=INFO, and the "shoal"
logger).
"""

from . import _C, _env, _log

ALGORITHM = "shoal::algorithm"
DEADLINE_MS = "shoal::deadline_ms"
KNOWN = (ALGORITHM, DEADLINE_MS)

# The collective each method's calls belong to, as the library names it
# (None: no algorithm to choose).
COLLECTIVE_OF = {
    "all_reduce": "all_reduce", "reduce": "reduce", "broadcast": "broadcast",
    "all_gather": "all_gather", "all_gather_single": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "reduce_scatter_single": "reduce_scatter", "all_to_all": "all_to_all",
    "all_to_all_single": "all_to_all", "all_to_all_v_single": "all_to_all",
    "gather": "gather", "scatter": "scatter",
}
COLLECTIVES = tuple(sorted(set(COLLECTIVE_OF.values())))

_told = set()


def _check_dict(hints, where):
    if not isinstance(hints, dict) or not all(
            isinstance(k, str) and isinstance(v, str)
            for k, v in hints.items()):
        raise _C.InvalidArgumentError(
            f"{where}: hints must be a dict of str to str, got {hints!r}")
    for key in hints:
        if key not in KNOWN and key not in _told:
            _told.add(key)
            _log.info(f"hint {key!r} is not one of shoal's ({', '.join(KNOWN)}"
                      f"): ignored")


def _deadline_ms(text, where):
    if not text.isdigit() or int(text) <= 0:
        raise _C.InvalidArgumentError(
            f"{where}: hint {DEADLINE_MS} is {text!r}; give a positive "
            "whole number of milliseconds")
    return int(text)


def _pairs(text, where):
    algos = {}
    for part in text.split(","):
        coll, sep, name = part.strip().partition(":")
        if not sep or coll not in COLLECTIVES or not name:
            raise _C.InvalidArgumentError(
                f"{where}: hint {ALGORITHM} on a communicator takes "
                f"'collective:algorithm' pairs (collectives: "
                f"{', '.join(COLLECTIVES)}), got {text!r}")
        algos[coll] = name
    return algos


class CommHints:
    """A communicator's hints, read once at its creation."""

    __slots__ = ("raw", "algorithms", "deadline_ms", "empty")

    def __init__(self, hints, where="new_comm"):
        self.raw = dict(hints or {})
        _check_dict(self.raw, where)
        self.algorithms = (_pairs(self.raw[ALGORITHM], where)
                           if ALGORITHM in self.raw else {})
        self.deadline_ms = (_deadline_ms(self.raw[DEADLINE_MS], where)
                            if DEADLINE_MS in self.raw else None)
        self.empty = not self.algorithms and self.deadline_ms is None


def call_timeout_ms(comm_hints, hints, timeout, op):
    """The timeout (ms; 0: the communicator's default) of a call of method
    `op` with these hints; gives the call its algorithm when one is
    hinted."""
    ms = _env.op_timeout_ms(timeout)
    if hints is None and comm_hints.empty:
        return ms
    collective = COLLECTIVE_OF.get(op)
    cap, algo = comm_hints.deadline_ms, comm_hints.algorithms.get(collective)
    if hints:
        _check_dict(hints, op)
        if DEADLINE_MS in hints:
            cap = _deadline_ms(hints[DEADLINE_MS], op)
        if ALGORITHM in hints:
            if collective is None:
                raise _C.InvalidArgumentError(
                    f"{op}: hint {ALGORITHM} names an algorithm, but {op} "
                    "has none to choose from")
            algo = hints[ALGORITHM]
    if cap is not None:
        ms = cap if ms <= 0 else min(ms, cap)
    if algo:
        _C.next_call_algorithm(algo)
    return ms
