"""Ways to start ranks and make communicators: torch stores, launchers,
the bundled shoalrun; import without torch; dead ranks and
abort_process_on_timeout_or_error."""

import os
import socket
import signal
import subprocess
import sys

import pytest

from harness import HERE, free_master_port, free_port, spawn

COMMON = """
import os, sys, numpy as np, shoal
def allreduce_ones(comm):
    t = np.ones(3, dtype=np.float32)
    comm.all_reduce(t, shoal.ReduceOp.SUM)
    assert t.tolist() == [comm.get_size()] * 3, t
"""


def ok(results):
    for rank, (rc, out, err) in enumerate(results):
        assert rc == 0, f"rank {rank} exited {rc}:\n{out}\n{err}"
    return [out for _, out, _ in results]


def test_import_without_torch():
    code = COMMON.replace("import os", "import sys; sys.modules['torch'] = None\nimport os") + """
comm = shoal.new_comm("shoal", "cpu")
allreduce_ones(comm)
comm.finalize()
print("torch" in sys.modules and sys.modules["torch"] is not None)
"""
    assert ok(spawn(1, code)) == ["False\n"]


@pytest.mark.parametrize("kind", ["tcp", "file"])
def test_torch_store_bootstrap(kind, tmp_path):
    pytest.importorskip("torch")
    code = COMMON + f"""
import torch.distributed as dist
rank, size = int(os.environ["TORCHCOMM_RANK"]), int(os.environ["TORCHCOMM_SIZE"])
if {kind!r} == "tcp":
    store = dist.TCPStore("127.0.0.1", int(os.environ["TEST_STORE_PORT"]),
                          size, rank == 0)
else:
    store = dist.FileStore({str(tmp_path / "store")!r}, size)
# Two communicators with one name on one store get different keys.
a = shoal.new_comm("shoal", "cpu", name="x", store=store,
                   abort_process_on_timeout_or_error=False)
b = shoal.new_comm("shoal", "cpu", name="x", store=store,
                   abort_process_on_timeout_or_error=False)
allreduce_ones(a)
allreduce_ones(b)
assert (a.get_rank(), a.get_size()) == (rank, size)
a.finalize()
b.finalize()
print("done")
"""
    assert ok(spawn(3, code, store=False)) == ["done\n"] * 3


def torchrun(code, nproc=2, timeout=120):
    """Runs `code` on `nproc` ranks under torchrun; returns its result."""
    env = dict(os.environ, TORCHCOMM_ABORT_ON_ERROR="0", OMP_NUM_THREADS="1",
               TORCHCOMM_TIMEOUT_SECONDS="30")
    env.pop("PYTHONUNBUFFERED", None)  # one write per line: ranks share a pipe
    for name in ("SHOAL_RANK", "SHOAL_SIZE", "SHOAL_STORE"):
        env.pop(name, None)
    port = free_master_port()
    r = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
         str(nproc), "--master-addr", "127.0.0.1", "--master-port",
         str(port), "--no-python", sys.executable, "-c", code],
        env=env, cwd=HERE, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def test_torchrun():
    pytest.importorskip("torch")
    code = COMMON + """
comm = shoal.new_comm("shoal", "cpu", name="main")
allreduce_ones(comm)
print(comm.get_rank(), comm.get_size())
comm.finalize()
"""
    r = torchrun(code)
    assert sorted(r.stdout.split("\n")[:-1]) == ["0 2", "1 2"], r.stdout


def test_torchrun_recreate():
    """Communicators made, finalized and made again without a store, as
    torchcomms' tests do: the store rank 0 serves outlives each of them, so
    no rank meets a dying server or misses the next one. Each rank in turn
    lags behind the others' next communicator, and two communicators overlap."""
    pytest.importorskip("torch")
    code = COMMON + """
import time
rank = int(os.environ["RANK"])
for i in range(6):
    comm = shoal.new_comm("shoal", "cpu", name="again")
    allreduce_ones(comm)
    if (i + rank) % 3 == 0:  # the others go on to the next one
        time.sleep(0.3)
    if i == 3:
        other = shoal.new_comm("shoal", "cpu", name="beside")
        allreduce_ones(other)
    comm.finalize()
    if i == 3:
        allreduce_ones(other)
        other.finalize()
print("ok", rank)
"""
    r = torchrun(code, nproc=3, timeout=240)
    assert sorted(r.stdout.split("\n")[:-1]) == ["ok 0", "ok 1", "ok 2"], (
        r.stdout + r.stderr)


@pytest.mark.parametrize("launcher", [
    "torchrun", pytest.param("shoalrun", marks=pytest.mark.full)])
def test_torchcomms_behaviours(launcher):
    """What torchcomms' integration tests check, each behaviour on a
    communicator of its own, under both launchers (4 ranks)."""
    pytest.importorskip("torch")
    script = os.path.join(HERE, "torchcomms_behaviours.py")
    if launcher == "torchrun":
        out = torchrun(open(script).read(), nproc=4, timeout=400).stdout
    else:
        env = dict(os.environ, TORCHCOMM_ABORT_ON_ERROR="0",
                   TORCHCOMM_TIMEOUT_SECONDS="60", OMP_NUM_THREADS="1")
        env.pop("PYTHONUNBUFFERED", None)
        r = subprocess.run(
            [sys.executable, "-m", "shoal.run", "-n", "4", sys.executable,
             script], env=env, cwd=HERE, capture_output=True, text=True,
            timeout=400)
        assert r.returncode == 0, r.stdout + r.stderr
        out = r.stdout
    lines = set(out.split("\n")) - {""}
    import torchcomms_behaviours as tb
    want = {f"{b.__name__} ok rank {r}" for b in tb.BEHAVIOURS
            for r in range(4)}
    assert lines == want, sorted(want - lines)


def test_bundled_shoalrun():
    code = COMMON + """
comm = shoal.new_comm("shoal", "cpu")
allreduce_ones(comm)
print("rank", comm.get_rank(), "of", comm.get_size())
comm.finalize()
"""
    env = dict(os.environ, TORCHCOMM_ABORT_ON_ERROR="0")
    env.pop("PYTHONUNBUFFERED", None)  # one write per line: ranks share a pipe
    r = subprocess.run(
        [sys.executable, "-m", "shoal.run", "-n", "3", sys.executable, "-c",
         code], env=env, cwd=HERE, capture_output=True, text=True,
        timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(r.stdout.split("\n")[:-1]) == [
        f"rank {i} of 3" for i in range(3)], r.stdout
    # The console scripts pip made next to the interpreter.
    bindir = os.path.dirname(sys.executable)
    for name in ("shoalrun", "shoal-perf"):
        assert os.access(os.path.join(bindir, name), os.X_OK), name


DEAD_PEER = COMMON + """
comm = shoal.new_comm("shoal", "cpu", timeout=20)
allreduce_ones(comm)
if comm.get_rank() == 1:
    os._exit(3)  # dies without a word
t = np.ones(1 << 16, dtype=np.float32)
# PeerError if the death is seen during this call; AbortedError naming the
# same cause if rank 0's watcher saw it before the call started.
try:
    comm.all_reduce(t, shoal.ReduceOp.SUM)
except (shoal.PeerError, shoal.AbortedError) as e:
    print(type(e).__name__, e)
"""


def test_dead_peer_raises():
    results = spawn(2, DEAD_PEER, timeout=30)
    rc, out, err = results[0]
    assert rc == 0, (rc, out, err)
    assert out.startswith(("PeerError", "AbortedError")), (out, err)
    assert "rank 1" in out and "died" in out, out
    assert results[1][0] == 3


def test_abort_on_error_by_default():
    # TORCHCOMM_ABORT_ON_ERROR unset: torchcomms' default is to abort.
    results = spawn(2, DEAD_PEER, timeout=30,
                    extra_env={"TORCHCOMM_ABORT_ON_ERROR": ""})
    rc, out, err = results[0]
    assert rc == -signal.SIGABRT, (rc, out, err)
    assert "aborting the process" in err, err


INTERRUPTED = """
import os, signal, sys, threading, time
import torch, shoal
import torch.distributed as dist
rank = int(os.environ["TORCHCOMM_RANK"])
dist.init_process_group(
    "shoal", init_method=f"tcp://127.0.0.1:{os.environ['TEST_STORE_PORT']}",
    rank=rank, world_size=2)
comm = dist.group.WORLD.comm
t = torch.ones(1 << 10)
flag = os.environ["INTERRUPTED_FLAG"]
if rank == 1:  # late: rank 0 is interrupted while it waits for us
    while not os.path.exists(flag):  # however slowly rank 0 got there
        time.sleep(0.01)
    try:
        comm.all_reduce(t, shoal.ReduceOp.SUM)
    except shoal.ShoalError as e:
        print(type(e).__name__, e)
    sys.exit(0)
sent = []
def interrupt():
    time.sleep(0.5)
    sent.append(time.monotonic())
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=interrupt, daemon=True).start()
try:
    if MODE == "comm":
        comm.all_reduce(t, shoal.ReduceOp.SUM)
    elif MODE == "pg":
        dist.all_reduce(t)
    else:  # a future's completer thread waits; this thread waits on it
        w = dist.all_reduce(t, async_op=True)
        w.get_future()
        w.wait()
except KeyboardInterrupt:
    print(f"KeyboardInterrupt after {time.monotonic() - sent[0]:.3f} s")
open(flag, "w").close()
try:
    comm.all_reduce(t, shoal.ReduceOp.SUM)
except shoal.AbortedError as e:
    print("AbortedError", e)
"""


@pytest.mark.parametrize("mode", [
    "comm", pytest.param("pg", marks=pytest.mark.full),
    pytest.param("pg_future", marks=pytest.mark.full)])
def test_ctrl_c_interrupts_a_wait(mode, tmp_path):
    """SIGINT to a rank waiting in a collective (shoal API, process group,
    a future's wait) raises KeyboardInterrupt within about 100 ms, and the
    communicator is aborted with that cause on every rank. The other rank
    joins only once the first was interrupted (a file says so), so a slow
    start of either cannot let the collective complete first."""
    pytest.importorskip("torch")
    code = f"MODE = {mode!r}\n" + INTERRUPTED
    flag = {"INTERRUPTED_FLAG": str(tmp_path / "interrupted")}
    (rc0, out0, err0), (rc1, out1, err1) = spawn(2, code, flag, store=False,
                                                timeout=60)
    assert rc0 == 0 and rc1 == 0, (out0, err0, out1, err1)
    first, second = out0.splitlines()[:2]
    assert first.startswith("KeyboardInterrupt after"), (out0, err0)
    assert float(first.split()[2]) < 0.5, first  # ~0.05 s; CI is loaded
    assert "interrupted by a signal (KeyboardInterrupt)" in second, second
    assert "AbortedError" in out1 and "rank 0 aborted" in out1, (out1, err1)


FORKED = """
import multiprocessing, os, sys
import numpy as np, torch, shoal

def child_uses(comm):
    t = np.ones(3, dtype=np.float32)
    try:
        comm.all_reduce(t, shoal.ReduceOp.SUM)
    except shoal.InvalidArgumentError as e:
        assert "is a fork of it" in str(e), e
    else:
        raise AssertionError("the child used its parent's communicator")
    sys.exit(0)  # a normal exit: the interpreter finalizes the Comm

class Squares(torch.utils.data.Dataset):
    def __len__(self):
        return 16
    def __getitem__(self, i):
        return torch.tensor([float(i * i)])

comm = shoal.new_comm("shoal", "cpu", abort_process_on_timeout_or_error=False)
rank, size = comm.get_rank(), comm.get_size()
pid = os.fork()
if pid == 0:
    child_uses(comm)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
p = multiprocessing.get_context("fork").Process(target=child_uses,
                                                 args=(comm,))
p.start()
p.join()
assert p.exitcode == 0, p.exitcode
loader = torch.utils.data.DataLoader(Squares(), batch_size=4, num_workers=2)
total = sum(float(b.sum()) for b in loader)
for _ in range(3):
    t = np.full(5, rank + 1.0, dtype=np.float32)
    comm.all_reduce(t, shoal.ReduceOp.SUM)
    assert t.tolist() == [size * (size + 1) / 2] * 5, t
comm.finalize()
print("ok", total)
"""


def test_forked_children_cannot_hurt_the_parent():
    """Children made by os.fork, multiprocessing and a torch DataLoader's
    workers: using the inherited communicator raises at once, exiting
    normally is harmless, and the parent's sums stay right."""
    pytest.importorskip("torch")
    results = spawn(2, FORKED, timeout=120)
    for rc, out, err in results:
        assert rc == 0 and out.strip() == "ok 1240.0", (rc, out, err)


SECONDS_RULE = """
import os, shoal
from shoal import _C
os.environ["TORCHCOMM_TIMEOUT_SECONDS"] = ""
for text, ms in (("3.5", 3500), ("30", 30000), (".25", 250)):
    os.environ["SHOAL_TIMEOUT_SECONDS"] = text
    c = shoal.new_comm("shoal", "cpu", name=f"t{ms}")
    native = _C.Comm(name=f"n{ms}")  # libshoal reads it itself
    assert c.get_timeout() == ms / 1000 and native.timeout_ms == ms, (
        text, c.get_timeout(), native.timeout_ms)
    c.finalize()
    native.finalize()
for text in ("0", "-2", "1e3", "nan", "inf", "3s", " 3"):
    os.environ["SHOAL_TIMEOUT_SECONDS"] = text
    for make in (lambda: shoal.new_comm("shoal", "cpu"), lambda: _C.Comm()):
        try:
            make()
        except shoal.ShoalError as e:
            assert "positive decimal number" in str(e), e
        else:
            raise AssertionError(f"SHOAL_TIMEOUT_SECONDS={text!r} accepted")
print("ok")
"""


def test_timeout_seconds_one_rule_in_python_and_c():
    """SHOAL_TIMEOUT_SECONDS takes decimals (3.5) and refuses the same
    texts through the Python layer and libshoal's own parser."""
    (rc, out, err), = spawn(1, SECONDS_RULE)
    assert rc == 0 and out == "ok\n", out + err


def test_store_port_draws_are_free_to_listen_on(monkeypatch):
    """The store's port comes from SHOAL_STORE_PORTS, is one a server can
    listen on (a port bound by a socket that is not listening would pass a
    bind check with SO_REUSEADDR and then fail the server's listen), and
    is not handed out twice by one process before its server binds it."""
    from shoal import _C
    from shoal._bootstrap import free_port
    with socket.socket() as bound, socket.socket() as closed:
        bound.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        bound.bind(("127.0.0.1", 0))
        taken = bound.getsockname()[1]
        monkeypatch.setenv("SHOAL_STORE_PORTS", f"{taken}-{taken}")
        with pytest.raises(_C.ShoalError, match="SHOAL_STORE_PORTS"):
            free_port("127.0.0.1")
        closed.bind(("127.0.0.1", 0))  # closed below: free again
        free = closed.getsockname()[1]
    monkeypatch.setenv("SHOAL_STORE_PORTS", f"{free}-{free}")
    assert free_port("127.0.0.1") == free
    with pytest.raises(_C.ShoalError, match="no free port"):
        free_port("127.0.0.1")  # handed out already, not bound yet
    monkeypatch.setenv("SHOAL_STORE_PORTS", "9-3")
    with pytest.raises(_C.InvalidArgumentError, match="low-high"):
        free_port("127.0.0.1")
