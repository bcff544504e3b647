"""torch.distributed backend "shoal" in whole jobs: the ways to start a
group, new_group semantics, a rank killed mid-collective, and the examples
under examples/python (DDP and FSDP against gloo included).

Ranks get what torchrun gives them (RANK, WORLD_SIZE, MASTER_ADDR, ...);
one test starts them through torchrun itself.
"""

import os
import subprocess
import sys

import pytest

from harness import (HERE, collect, free_master_port, free_port, launch,
                     rank_env)

torch = pytest.importorskip("torch")

EXAMPLES = os.path.join(HERE, "..", "..", "examples", "python")


def job(size, argv, timeout=90, extra_env=None, fresh=False):
    """Runs argv (a Python program and its arguments) on `size` ranks with
    torchrun's variables; returns [(returncode, stdout, stderr)]. fresh:
    each rank a new interpreter (harness.launch)."""
    port = free_master_port()
    procs = []
    for r in range(size):
        env = rank_env(r, size, f"127.0.0.1:{free_port()}", "x" * 32,
                       extra_env)
        for name in ("SHOAL_RANK", "SHOAL_SIZE", "SHOAL_STORE",
                     "SHOAL_SECRET"):
            env.pop(name)
        env.update(RANK=str(r), WORLD_SIZE=str(size), LOCAL_RANK=str(r),
                   LOCAL_WORLD_SIZE=str(size), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), PYTHONWARNINGS="ignore")
        procs.append(launch(argv, env, fresh=fresh))
    return collect(procs, timeout)


def ok(results):
    for r, (rc, o, e) in enumerate(results):
        assert rc == 0, f"rank {r} exited {rc}\n{o}\n{e[-4000:]}"
    return [o for _, o, _ in results]


def code(text):
    return ["-c", text]


INIT_METHODS = """
import datetime, os, torch, torch.distributed as dist
import shoal
from shoal.c10d import ProcessGroupShoal

rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
ports = os.environ["TEST_PORTS"].split(",")

def use(deadline=30.0, **kwargs):
    dist.init_process_group(**kwargs)
    assert isinstance(dist.group.WORLD, ProcessGroupShoal)
    assert "shoal" in dist.get_backend(), dist.get_backend()
    # torch's default timeout gives way to TORCHCOMM_TIMEOUT_SECONDS (30)
    assert dist.group.WORLD.comm.get_timeout() == deadline
    t = torch.ones(3) * (rank + 1)
    dist.all_reduce(t)
    assert t.tolist() == [n * (n + 1) / 2] * 3, t
    dist.destroy_process_group()

use(backend="shoal")                                  # env://
for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
    del os.environ[name]
use(backend="shoal", init_method=f"tcp://127.0.0.1:{ports[0]}", rank=rank,
    world_size=n)
use(backend="cpu:shoal", init_method="file://" + os.environ["TEST_FILE"],
    rank=rank, world_size=n)
store = dist.TCPStore("127.0.0.1", int(ports[1]), n, rank == 0)
use(backend="shoal", store=store, rank=rank, world_size=n)
use(backend="shoal", store=store, rank=rank, world_size=n,  # again
    timeout=datetime.timedelta(seconds=12), deadline=12.0)
print("ok")
"""


def test_init_methods(tmp_path):
    env = {"TEST_PORTS": f"{free_port()},{free_port()}",
           "TEST_FILE": str(tmp_path / "init")}
    assert ok(job(2, code(INIT_METHODS), extra_env=env)) == ["ok\n"] * 2


IMPORT_ORDER = """
import sys
import shoal
assert "torch" not in sys.modules
import torch
import torch.distributed as dist
assert "shoal" in dist.Backend.backend_list
dist.init_process_group("shoal", store=dist.HashStore(), rank=0,
                        world_size=1)
t = torch.ones(2)
dist.all_reduce(t)
dist.destroy_process_group()
print("ok")
"""


def test_import_before_torch_registers():
    # A fresh interpreter: the preload server has torch imported.
    assert ok(job(1, code(IMPORT_ORDER), fresh=True)) == ["ok\n"]


NEW_GROUP = """
import datetime, torch, torch.distributed as dist
import shoal
from shoal.c10d import ProcessGroupShoal

dist.init_process_group("shoal")
r, n = dist.get_rank(), dist.get_world_size()
NOT = dist.GroupMember.NON_GROUP_MEMBER

g02 = dist.new_group([2, 0])
g123 = dist.new_group([1, 2, 3])
if r in (0, 2):
    assert isinstance(g02, ProcessGroupShoal) and g02.size() == 2
    assert dist.get_rank(g02) == [0, 2].index(r)
    t = torch.tensor([float(r)])
    dist.all_reduce(t, group=g02)
    assert t.item() == 2.0, t
    b = torch.tensor([r])
    dist.broadcast(b, src=2, group=g02)   # src: a world rank
    assert b.item() == 2
else:
    assert g02 is NOT
    dist.all_reduce(torch.ones(1), group=g02)  # not a member: no-op
if r != 0:
    outs = [torch.zeros(1, dtype=torch.int64) for _ in range(3)]
    dist.all_gather(outs, torch.tensor([r * 10]), group=g123)
    assert [o.item() for o in outs] == [10, 20, 30], outs
t = torch.ones(1)
dist.all_reduce(t)  # the world, between subgroup calls
assert t.item() == n

sub, _ = dist.new_subgroups(2)  # [0, 1], [2, 3]
t = torch.tensor([float(r)])
dist.all_reduce(t, group=sub)
assert t.item() == (1.0 if r < 2 else 5.0), t

if r in (1, 3):  # only the members call in
    g13 = dist.new_group([1, 3], use_local_synchronization=True)
    t = torch.tensor([float(r)])
    dist.all_reduce(t, group=g13)
    assert t.item() == 4.0, t

g01 = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=1))
if r == 0:  # rank 1 never joins: the deadline passes
    try:
        dist.all_reduce(torch.ones(1), group=g01)
    except shoal.CommTimeoutError as e:
        print("timeout", type(e).__name__)
    else:
        raise AssertionError("no timeout")
t = torch.ones(1)
dist.all_reduce(t)  # the world is unaffected
assert t.item() == n
dist.destroy_process_group()
print("ok")
"""


def test_new_group_splits():
    outs = ok(job(4, code(NEW_GROUP)))
    assert outs == ["timeout CommTimeoutError\nok\n"] + ["ok\n"] * 3, outs


BACKENDS = """
import os, torch, torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from shoal.c10d import ProcessGroupShoal

rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
ports = [int(p) for p in os.environ["TEST_PORTS"].split(",")]
cpu = torch.device("cpu")


def real(g):
    # The class that runs a CPU collective of group g.
    return type(g if isinstance(g, ProcessGroupShoal)
                else g._get_backend(cpu)).__name__


def check(g, asked, members):
    if rank not in members:
        assert g is dist.GroupMember.NON_GROUP_MEMBER, g
        return
    want = "ProcessGroupShoal" if "shoal" in asked else "ProcessGroupGloo"
    assert real(g) == want, (asked, real(g))
    assert dist.get_backend(g) == asked, (dist.get_backend(g), asked)
    t = torch.ones(2) * (rank + 1)
    dist.all_reduce(t, group=g)
    assert t.tolist() == [sum(m + 1 for m in members)] * 2, (asked, t)


for i, default in enumerate(("shoal", "gloo", "cpu:shoal")):
    store = dist.TCPStore("127.0.0.1", ports[i], n, rank == 0)
    dist.init_process_group(default, store=store, rank=rank, world_size=n)
    check(dist.group.WORLD, default, range(n))
    for asked in (None, "shoal", "gloo", "cpu:gloo", "cpu:shoal"):
        check(dist.new_group([0, 2], backend=asked), asked or default, [0, 2])
        sub, _ = dist.new_subgroups(2, backend=asked)
        check(sub, asked or default, [0, 1] if rank < 2 else [2, 3])
        mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("a", "b"),
                                backend_override={"a": asked or default})
        check(mesh.get_group("a"), asked or default, [rank % 2, rank % 2 + 2])
        check(mesh.get_group("b"), default, [rank // 2 * 2, rank // 2 * 2 + 1])
    try:  # torch splits only groups bound to an accelerator, gloo's too
        dist.split_group(split_ranks=[[0, 1], [2, 3]])
    except RuntimeError as e:
        assert "not safe to split" in str(e), e
    else:
        raise AssertionError("split_group of a CPU group did not raise")
    dist.destroy_process_group()
print("ok")
"""


def test_new_groups_have_the_backend_asked_for():
    """new_group, new_subgroups and init_device_mesh under a shoal, gloo and
    "cpu:shoal" default group give a group of each backend asked for, and
    dist.get_backend names what really runs it."""
    env = {"TEST_PORTS": ",".join(str(free_port()) for _ in range(3))}
    assert ok(job(4, code(BACKENDS), timeout=150, extra_env=env)) == \
        ["ok\n"] * 4


HISTORY = """
import os, torch, torch.distributed as dist

rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
if rank == 0:  # one more communicator in this process's past
    dist.init_process_group("shoal", store=dist.HashStore(), rank=0,
                            world_size=1)
    dist.destroy_process_group()
store = dist.TCPStore("127.0.0.1", int(os.environ["TEST_PORT"]), n, rank == 0)
for _ in range(2):  # made, destroyed and made again on one store
    dist.init_process_group("shoal", store=store, rank=rank, world_size=n)
    t = torch.ones(1)
    dist.all_reduce(t)
    assert t.item() == n, t
    dist.destroy_process_group()
print("ok")
"""


def test_creation_does_not_depend_on_process_history():
    env = {"TEST_PORT": str(free_port()), "TORCHCOMM_TIMEOUT_SECONDS": "10"}
    assert ok(job(2, code(HISTORY), extra_env=env)) == ["ok\n"] * 2


THREADS = """
import threading, torch, torch.distributed as dist
from shoal.c10d.process_group import connect

store, n, sums, errors = dist.HashStore(), 3, [], []


def rank(r):
    try:
        comm = connect(store, r, n, None, "threads")
        t = torch.ones(4) * (r + 1)
        for _ in range(50):
            comm.all_reduce(t, "sum")
            t /= 6
        sums.append(t.tolist())
        comm.finalize()
    except Exception as e:  # reported below
        errors.append(repr(e))


threads = [threading.Thread(target=rank, args=(r,)) for r in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not errors, errors
assert len(sums) == n and all(s == sums[0] for s in sums), sums
print("ok")
"""


def test_ranks_of_one_communicator_in_threads_of_one_process():
    env = {"TORCHCOMM_TIMEOUT_SECONDS": "20"}
    assert ok(job(1, code(THREADS), extra_env=env)) == ["ok\n"]


LEAVE = """
import os, sys, threading, time, torch, torch.distributed as dist

dist.init_process_group("shoal")
r = dist.get_rank()
t = torch.ones(1)
dist.all_reduce(t)
# As in a trainer with threads of its own: a daemon thread keeps the group
# alive, so the interpreter's teardown never destroys it.
threading.Thread(target=lambda g=dist.group.WORLD: time.sleep(60),
                 daemon=True).start()
if r == 0:
    time.sleep(1.5)  # outlives the others, watching them go
elif r == 1 and os.environ["HOW"] == "crash":
    os._exit(0)  # no exit handlers: a crash as far as peers can tell
elif r == 2:
    sys.exit(0)
print("ok")  # rank 1 (exit) leaves at the end of the interpreter
"""


@pytest.mark.parametrize("how", [
    pytest.param("exit", marks=pytest.mark.full), "crash"])
def test_exit_without_destroy_says_goodbye(how):
    """Ranks that leave through the end of the interpreter or sys.exit()
    without destroy_process_group are not reported as dead; a rank that
    ends with os._exit still is."""
    results = job(3, code(LEAVE), extra_env={"HOW": how})
    assert all(rc == 0 for rc, _, _ in results), results
    err0 = results[0][2]
    if how == "exit":
        assert "WARN" not in err0 and "died" not in err0, err0
    else:
        assert "rank 1" in err0 and "died" in err0, err0


SPLIT_THEN_LEAVE = """
import os, time, torch, shoal

comm = shoal.new_comm("shoal", "cpu", name="w")
r = comm.get_rank()
if r == 0:  # splits off alone and leaves at once
    assert comm.split([0]).get_size() == 1
else:  # the others choose a second later, then meet in the child
    time.sleep(1.0)
    child = comm.split([1, 2])
    t = torch.ones(1)
    child.all_reduce(t, shoal.ReduceOp.SUM)
    assert t.item() == 2, t
print("ok")
"""


def test_split_waits_for_every_rank_and_the_store_outlives_it():
    """Rank 0 (which serves the store) splits alone and exits; the others
    split a second later and still meet, through its store."""
    assert ok(job(3, code(SPLIT_THEN_LEAVE))) == ["ok\n"] * 3


KILLED = """
import os, signal, threading, time, torch, torch.distributed as dist
import shoal

dist.init_process_group("shoal")
r = dist.get_rank()
t = torch.ones(1 << 22)
dist.all_reduce(t)
if r == 2:  # dies in the middle of the next all-reduces
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGKILL)).start()
t0 = time.monotonic()
try:
    for _ in range(100000):
        dist.all_reduce(t, async_op=True).wait()
except shoal.ShoalError as e:
    print(f"{type(e).__name__} after {time.monotonic() - t0:.1f} s: {e}")
"""


def test_killed_rank_makes_the_others_raise():
    results = job(3, code(KILLED), timeout=60,
                  extra_env={"TORCHCOMM_TIMEOUT_SECONDS": "600"})
    assert results[2][0] == -9, results[2]
    for rc, out, err in results[:2]:
        # PeerError ("rank 2 died"); a transfer into the dead rank's memory
        # may fail first, as a ShoalError naming the system call.
        assert rc == 0 and " after " in out, (out, err)
        assert float(out.split()[2]) < 10, out  # well before any deadline


ABORTED = """
import threading, time, torch, torch.distributed as dist
import shoal
dist.init_process_group("shoal")
pg, r = dist.group.WORLD, dist.get_rank()
dist.barrier()
assert pg.errored() is None
if r == 0:  # a watchdog aborts while this rank waits for a message
    threading.Timer(0.3, pg.abort).start()
t0 = time.monotonic()
try:
    dist.recv(torch.zeros(1), src=1 - r)
    raise SystemExit("the receive did not fail")
except shoal.AbortedError as e:
    assert "aborted" in str(e), e
assert isinstance(pg.errored(), shoal.AbortedError), pg.errored()
print(f"failed after {time.monotonic() - t0:.2f} s")
dist.destroy_process_group()
"""


def test_process_group_abort_from_another_thread():
    """abort() from a watchdog thread ends the waits of every rank with
    AbortedError; errored() says so, and None before."""
    for rc, out, err in job(2, code(ABORTED), timeout=60):
        assert rc == 0 and "failed after" in out, (out, err)
        assert float(out.split()[2]) < 2.0, out


# ---- the examples ---------------------------------------------------------


@pytest.mark.parametrize("name", ["basic_usage", "async_usage"])
def test_torchcomms_examples(name, tmp_path):
    outs = ok(job(2, [os.path.join(EXAMPLES, f"{name}.py"),
                      str(tmp_path / "store")]))
    assert "Rank 1" in "".join(outs)
    assert os.listdir(tmp_path) == []  # the FileStore cleaned up


@pytest.mark.full  # make run runs it
def test_ddp_example_matches_gloo_under_torchrun():
    """As `make run` does: the real launcher, 4 ranks, both backends."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore",
               TORCHCOMM_ABORT_ON_ERROR="0")
    p = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
         "4", "--master-port", str(free_master_port()),
         os.path.join(EXAMPLES, "ddp_train.py"), "--compare", "--steps",
         "6", "--warmup", "1", "--width", "512"],
        capture_output=True, text=True, timeout=150, env=env, cwd=HERE)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    assert "(same)" in p.stdout and "gloo" in p.stdout, p.stdout


def test_ddp_example_under_shoalrun():
    """shoalrun gives ranks torch's env:// variables too, so a script that
    calls init_process_group("shoal") runs under it as under torchrun."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    p = subprocess.run(
        [sys.executable, "-m", "shoal.run", "-n", "2", sys.executable,
         os.path.join(EXAMPLES, "ddp_train.py"), "--steps", "4", "--warmup",
         "1", "--width", "256"],
        capture_output=True, text=True, timeout=120, env=env, cwd=HERE)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    assert "shoal: 2 ranks" in p.stdout, p.stdout


@pytest.mark.full  # DDP: under_shoalrun, test_ddp_hook
def test_ddp_example_on_the_default_group():
    outs = ok(job(2, [os.path.join(EXAMPLES, "ddp_train.py"), "--steps",
                      "4", "--warmup", "1", "--width", "256"]))
    assert outs[0].startswith("shoal: 2 ranks"), outs


@pytest.mark.parametrize("n, args", [
    pytest.param(4, ["--compare"], marks=pytest.mark.full), (2, [])])
def test_fsdp_example(n, args):
    outs = ok(job(n, [os.path.join(EXAMPLES, "fsdp_train.py"), "--steps",
                      "3"] + args))
    assert ("(same)" if args else "shoal: FSDP2") in outs[0], outs


@pytest.mark.full  # the TCP path's collectives run in the C tests
def test_ddp_example_matches_gloo_over_tcp():
    """The TCP transport (as across hosts) under the real launcher: DDP
    through backend "shoal" trains like gloo."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore",
               TORCHCOMM_ABORT_ON_ERROR="0", SHOAL_TRANSPORT="tcp")
    p = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
         "3", "--master-port", str(free_master_port()),
         os.path.join(EXAMPLES, "ddp_train.py"), "--compare", "--steps",
         "4", "--warmup", "1", "--width", "256"],
        capture_output=True, text=True, timeout=150, env=env, cwd=HERE)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    assert "(same)" in p.stdout and "gloo" in p.stdout, p.stdout
