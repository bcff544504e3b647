"""torchcomms' communicator options and hints as shoal reads them, memory
registration (commRegister), and the errors of tensors shoal cannot move:
CommOptions with keyword arguments and new_comm(options=...), the hints
shoal::algorithm and shoal::deadline_ms (per call and per communicator),
unknown hints said once at INFO, register_memory/deregister_memory, and a
sparse tensor refused with what to do."""

import pytest

from harness import spawn

pytest.importorskip("torch")


def run(n, code, env=None, timeout=90):
    results = spawn(n, code, extra_env=env, timeout=timeout)
    for r, (rc, out, err) in enumerate(results):
        assert rc == 0 and out.strip().endswith("ok"), \
            f"rank {r}: exit {rc}\n{out}\n{err[-3000:]}"
    return results


OPTIONS = """
import datetime, shoal
o = shoal.CommOptions(timeout=datetime.timedelta(seconds=7), name="opt",
                      hints={"shoal::deadline_ms": "5000"},
                      abort_process_on_timeout_or_error=False)
c = shoal.new_comm("shoal", "cpu", options=o)
assert c.get_name() == "opt" and c.get_timeout() == 7, c
got = c.get_options()
assert got.hints == {"shoal::deadline_ms": "5000"}, got
assert got.abort_process_on_timeout_or_error is False, got
c2 = shoal.new_comm("shoal", "cpu", options=o, name="kw", timeout=9)
assert c2.get_name() == "kw" and c2.get_timeout() == 9, c2
d = shoal.CommOptions()  # every field optional
assert d.name is None and d.hints == {} and d.timeout is None, d
c3 = shoal.new_comm("shoal", "cpu", options=d)
assert c3.get_name() == "world", c3.get_name()
for c in (c, c2, c3):
    c.finalize()
try:
    shoal.new_comm("shoal", "cpu", options={"name": "x"})
except shoal.InvalidArgumentError as e:
    assert "CommOptions" in str(e), e
else:
    raise AssertionError("a dict was taken for options")
print("ok")
"""


def test_comm_options():
    run(2, OPTIONS)


HINTS = """
import os, sys, time, torch, shoal
SUM = shoal.ReduceOp.SUM
c = shoal.new_comm("shoal", "cpu", name="h",
                   abort_process_on_timeout_or_error=False)
r, n = c.get_rank(), c.get_size()


def raises(exc, fn, needle):
    try:
        fn()
    except exc as e:
        assert needle in str(e), (needle, str(e))
    else:
        raise AssertionError(f"no {exc.__name__} ({needle})")


names = c.algorithms("all_reduce")
for name in names:  # each one the hint names runs, with the right sum
    t = torch.ones(1000) * (r + 1)
    c.all_reduce(t, SUM, hints={"shoal::algorithm": name})
    assert t[0].item() == n * (n + 1) / 2, (name, t[0])
raises(shoal.ShoalError, lambda: c.all_reduce(
    torch.ones(4), SUM, hints={"shoal::algorithm": "no_such"}), "no_such")
raises(shoal.InvalidArgumentError, lambda: c.send(
    torch.ones(4), (r + 1) % n, hints={"shoal::algorithm": names[0]}),
    "none to choose")
raises(shoal.InvalidArgumentError, lambda: c.all_reduce(
    torch.ones(4), SUM, hints={"shoal::deadline_ms": "soon"}),
    "milliseconds")
for _ in range(3):  # said once, at INFO
    c.barrier(hints={"torchcomm::ncclx::high_priority_stream": "true"})
# A communicator's hint names the algorithm of every call of a collective.
bad = shoal.new_comm("shoal", "cpu", name="h2",
                     hints={"shoal::algorithm": "all_reduce:no_such"})
raises(shoal.ShoalError,
       lambda: bad.all_reduce(torch.ones(4), SUM), "no_such")
t = torch.ones(4)
bad.broadcast(t, 0)  # other collectives keep the table's choice
bad.finalize()
raises(shoal.InvalidArgumentError, lambda: shoal.new_comm(
    "shoal", "cpu", hints={"shoal::algorithm": "ring"}), "pairs")
# shoal::deadline_ms caps one call: rank 1 is late by 3 s.
if r == 1:
    time.sleep(3)
t0 = time.monotonic()
try:
    c.barrier(hints={"shoal::deadline_ms": "400"})
except shoal.ShoalError as e:  # rank 0's timeout aborts it for rank 1 too
    took = time.monotonic() - t0
    assert "on rank 0: Timed out waiting for rank 1 after 0.4" in str(e), (
        r, e)
    assert r == 1 or took < 2.5, (r, took, e)
else:
    raise AssertionError("the barrier outlived its 400 ms deadline")
print("ok")
"""


def test_hints():
    results = spawn(2, HINTS, extra_env={"SHOAL_DEBUG": "INFO"}, timeout=90)
    for r, (rc, out, err) in enumerate(results):
        assert rc == 0 and out.strip().endswith("ok"), \
            f"rank {r}: exit {rc}\n{out}\n{err[-3000:]}"
        said = [line for line in err.splitlines()
                if "torchcomm::ncclx::high_priority_stream" in line]
        assert len(said) == 1 and "INFO" in said[0], said


MEMORY = """
import numpy as np, torch, shoal
c = shoal.new_comm("shoal", "cpu", name="m")
r, n = c.get_rank(), c.get_size()
t = torch.ones(1 << 16)
view = t[10:20]
assert not shoal.is_shared(t, c)
kind = c.register_memory(t)
assert kind == "shared", kind
assert shoal.is_shared(t, c) and shoal.is_shared(view, c)  # moved, in place
c.all_reduce(t, shoal.ReduceOp.SUM)
assert t[0].item() == n and view[0].item() == n
try:
    c.register_memory(t)
except shoal.InvalidArgumentError as e:
    assert "already" in str(e), e
else:
    raise AssertionError("registered twice")
c.deregister_memory(t)
a = np.ones(4096, dtype=np.float32)
assert c.register_memory(a) in ("pinned", "plain")  # cannot move
c.deregister_memory(a)
try:
    c.deregister_memory(a)
except shoal.InvalidArgumentError as e:
    assert "not registered" in str(e), e
else:
    raise AssertionError("deregistered twice")
sparse = torch.ones(4).to_sparse()
try:
    c.all_reduce(sparse, shoal.ReduceOp.SUM)
except shoal.InvalidArgumentError as e:
    assert "to_dense" in str(e), e
else:
    raise AssertionError("a sparse tensor was taken")
c.finalize()
print("ok")
"""


def test_memory_registration_and_sparse_tensors():
    run(2, MEMORY)
