"""The phrases torch's and torchft's test suites look for in errors (gloo's
wording) are in shoal's messages, ahead of shoal's own precise cause: a
timeout says " Timed out waiting " (torch: " (Timed out|closed|timeout) ",
torchft: "Timed out waiting"), a creation that times out "timeout after
Nms" (torchft), and a peer gone "Connection closed by peer"."""

import re

import pytest

from harness import spawn

pytest.importorskip("torch")

TORCH = re.compile(" (Timed out|closed|timeout) ")
TORCHFT = re.compile("(Connection closed by peer|timed out after|"
                     "Timed out waiting)")

WORDING = """
import datetime, os, sys, time, torch, shoal
from shoal.c10d.process_group import connect
import torch.distributed as dist

c = shoal.new_comm("shoal", "cpu", name="w",
                   abort_process_on_timeout_or_error=False)
r = c.get_rank()
said = {}
if r == 1:
    time.sleep(2)
try:
    c.barrier(timeout=datetime.timedelta(seconds=0.3))
except shoal.ShoalError as e:
    said["timeout"] = str(e)
c2 = shoal.new_comm("shoal", "cpu", name="w2",
                    abort_process_on_timeout_or_error=False)
if r == 1:
    c2.finalize()  # leaves while rank 0 waits for it
else:
    try:
        c2.all_reduce(torch.ones(1), shoal.ReduceOp.SUM)
    except shoal.ShoalError as e:
        said["gone"] = str(e)
    try:  # nobody else creates it: the creation times out
        connect(dist.HashStore(), 0, 2, datetime.timedelta(seconds=0.2),
                "alone")
    except shoal.ShoalError as e:
        said["create"] = str(e)
print(repr(said))
"""


def test_gloo_phrases_lead_shoal_messages():
    results = spawn(2, WORDING, timeout=60)
    for r, (rc, out, err) in enumerate(results):
        assert rc == 0, f"rank {r}: exit {rc}\n{out}\n{err[-3000:]}"
    said = eval(results[0][1].strip().splitlines()[-1])  # noqa: S307
    assert TORCH.search(said["timeout"]) and TORCHFT.search(said["timeout"])
    assert "on rank 0: Timed out waiting for rank 1 after 0." in \
        said["timeout"], said
    assert "Connection closed by peer" in said["gone"], said
    assert TORCH.search(said["gone"]), said
    assert "timeout after 200ms" in said["create"], said
