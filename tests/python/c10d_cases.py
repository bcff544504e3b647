"""Cases for torch.distributed backend "shoal", run inside each rank of a
c10d pool (conftest.py's c10d_pools; see harness.py).

Every rank has gloo as its default group and a "shoal" group over the same
ranks beside it (dist.new_group(backend="shoal")), so a case can run one
torch.distributed call on both with the same inputs. Reductions are
checked against gloo; where gloo refuses (PREMUL_SUM, AVG of integers) and
for data movement the reference is computed locally from every rank's
inputs, which come from (rank, index) as in cases.py.

Each case takes `full`: False runs a deterministic sample of its matrix
(a different third on each world size), True all of it.
"""

import datetime
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

import shoal
from cases import FLOATS, expect_reduce, gen, valid_pair
from shoal.c10d import ProcessGroupShoal, Work

DTYPES = ["float32", "float64", "bfloat16", "float16", "int64", "int32",
          "int8", "uint8", "bool"]
OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR",
       "PREMUL_SUM"]
TIMEOUT = datetime.timedelta(seconds=30)
FACTOR = 0.5  # of PREMUL_SUM


class State:
    """The rank's torch.distributed world, made on first use."""

    def __init__(self):
        self._group = None
        self.rank = int(os.environ["SHOAL_RANK"])
        self.size = int(os.environ["SHOAL_SIZE"])

    @property
    def group(self):
        if self._group is None:
            if not dist.is_initialized():
                port = os.environ["TEST_TORCH_PORT"]
                dist.init_process_group(
                    "gloo", init_method=f"tcp://127.0.0.1:{port}",
                    rank=self.rank, world_size=self.size, timeout=TIMEOUT)
            self._group = dist.new_group(backend="shoal", timeout=TIMEOUT)
            assert isinstance(self._group, ProcessGroupShoal)
        return self._group

    def renew(self):
        """A fresh shoal group (after a fault aborted the old one)."""
        old, self._group = self._group, None
        if old is not None:
            try:
                old.shutdown()
            except shoal.ShoalError:
                pass
        return self.group

    def close(self):
        if dist.is_initialized():
            dist.destroy_process_group()
        self._group = None


# ---- helpers ----------------------------------------------------------------


def sample(combos, full, n):
    combos = list(combos)
    return combos if full else combos[n % 3::3]


def make(data, dtype):
    """A torch tensor of `dtype` holding numpy `data`."""
    if dtype == "bfloat16":
        return torch.from_numpy(np.asarray(data, dtype=np.float32)).to(
            torch.bfloat16)
    return torch.from_numpy(np.array(data).astype(dtype))


def tdtype(dtype):
    return getattr(torch, dtype)


def torch_op(op):
    if op == "PREMUL_SUM":
        return dist._make_nccl_premul_sum(FACTOR)
    return getattr(dist.ReduceOp, op)


def gloo_refuses(dtype, op):
    return op == "PREMUL_SUM" or (op == "AVG" and dtype not in FLOATS)


def check(got, want, dtype, what):
    if not isinstance(want, torch.Tensor):
        want = make(want, dtype)
    ok = got.shape == want.shape or got.numel() == want.numel() == 0
    if ok and dtype in FLOATS:
        tol = 2e-2 if dtype in ("float16", "bfloat16") else 1e-6
        ok = torch.allclose(got.double().reshape(-1),
                            want.double().reshape(-1), rtol=tol, atol=tol)
    elif ok:
        ok = torch.equal(got.reshape(-1), want.reshape(-1).to(got.dtype))
    if not ok:
        raise AssertionError(f"{what}: got {got.tolist()}, "
                             f"want {want.tolist()}")


def finish(work, async_op, tensors=(), staged=False):
    """Waits for an async work the ways torch offers (its future yields
    `tensors`); sync calls return None. Unless the call had to `staged`
    (tensor lists), contiguous tensors are used in place: no copies."""
    if not async_op:
        assert work is None, work
        return
    assert isinstance(work, Work), work
    if not staged:
        assert all(w._after is None for w in work._works), "staged a copy"
    work.is_completed()
    if tensors:
        got = work.get_future().wait()
        assert [t.data_ptr() for t in got] == [
            t.data_ptr() for t in tensors]
    assert work.wait() is True
    assert work.is_completed() and work.is_success()


def reduced(state, dtype, op, count, salt=0):
    """The reduction of every rank's gen(dtype, rank, count, salt)."""
    return expect_reduce(dtype, op, [gen(dtype, r, count, salt)
                                     for r in range(state.size)], FACTOR)


# ---- reductions, against gloo -----------------------------------------------


def all_reduce(state, full):
    g, rank, n = state.group, state.rank, state.size
    combos = [(dtype, op, count, async_op)
              for dtype in DTYPES for op in OPS if valid_pair(dtype, op)
              for count in (0, 1, 13, 1000) for async_op in (False, True)]
    done = 0
    for dtype, op, count, async_op in sample(combos, full, n):
        what = f"all_reduce {dtype} {op} x{count} async={async_op}"
        t = make(gen(dtype, rank, count), dtype)
        w = dist.all_reduce(t, op=torch_op(op), group=g, async_op=async_op)
        finish(w, async_op, [t])
        if gloo_refuses(dtype, op):
            want = reduced(state, dtype, op, count)
        else:
            want = make(gen(dtype, rank, count), dtype)
            dist.all_reduce(want, op=torch_op(op))
        check(t, want, dtype, what)
        done += 1
    return done


def reduce(state, full):
    g, rank, n = state.group, state.rank, state.size
    combos = [(dtype, op, root, async_op)
              for dtype in DTYPES
              for op in ("SUM", "PRODUCT", "MAX", "BXOR", "AVG", "PREMUL_SUM")
              if valid_pair(dtype, op)
              for root in sorted({0, n - 1}) for async_op in (False, True)]
    for dtype, op, root, async_op in sample(combos, full, n):
        t = make(gen(dtype, rank, 13), dtype)
        w = dist.reduce(t, root, op=torch_op(op), group=g, async_op=async_op)
        finish(w, async_op, [t])
        if rank == root:
            check(t, reduced(state, dtype, op, 13), dtype,
                  f"reduce {dtype} {op} root {root}")
    return len(combos)


def reduce_scatters(state, full):
    """reduce_scatter (lists) and reduce_scatter_tensor (1-D and
    stacked input)."""
    g, rank, n = state.group, state.rank, state.size
    combos = [(dtype, op, count, async_op)
              for dtype in DTYPES for op in OPS if valid_pair(dtype, op)
              for count in (0, 5) for async_op in (False, True)]
    for dtype, op, count, async_op in sample(combos, full, n):
        what = f"{dtype} {op} x{count} async={async_op}"
        mine = gen(dtype, rank, n * count)
        want = reduced(state, dtype, op, n * count)
        want = want[rank * count:(rank + 1) * count]
        low_precision = dtype in ("float16", "bfloat16")
        if not gloo_refuses(dtype, op) and not low_precision:
            ref = make(np.zeros(count), dtype)
            dist.reduce_scatter_tensor(ref, make(mine, dtype),
                                       op=torch_op(op))
            check(ref, want, dtype, f"gloo reduce_scatter_tensor {what}")
        out = make(np.zeros(count), dtype)
        ins = list(make(mine, dtype).split(count)) if count else [
            make(np.zeros(0), dtype) for _ in range(n)]
        w = dist.reduce_scatter(out, ins, op=torch_op(op), group=g,
                                async_op=async_op)
        finish(w, async_op, [out], staged=True)
        check(out, want, dtype, f"reduce_scatter {what}")
        out = make(np.zeros(count), dtype)
        inp = make(mine, dtype)
        if count and rank % 2:
            inp = inp.reshape(n, count)  # stacked form
        w = dist.reduce_scatter_tensor(out, inp, op=torch_op(op), group=g,
                                       async_op=async_op)
        finish(w, async_op, [out])
        check(out, want, dtype, f"reduce_scatter_tensor {what}")
    return len(combos)


# ---- data movement, against local expectations ------------------------------


def broadcast(state, full):
    g, rank, n = state.group, state.rank, state.size
    combos = [(dtype, root, count, async_op) for dtype in DTYPES
              for root in range(n) for count in (0, 13, 5000)
              for async_op in (False, True)]
    for dtype, root, count, async_op in sample(combos, full, n):
        t = make(gen(dtype, rank, count), dtype)
        w = dist.broadcast(t, root, group=g, async_op=async_op)
        finish(w, async_op, [t])
        check(t, gen(dtype, root, count), dtype,
              f"broadcast {dtype} root {root} x{count}")
    return len(combos)


def gathers(state, full):
    """all_gather, all_gather_into_tensor (1-D and stacked), gather."""
    g, rank, n = state.group, state.rank, state.size
    combos = [(dtype, count, async_op) for dtype in DTYPES
              for count in (0, 1, 13) for async_op in (False, True)]
    for dtype, count, async_op in sample(combos, full, n):
        what = f"{dtype} x{count} async={async_op}"
        mine = make(gen(dtype, rank, count), dtype)
        parts = [gen(dtype, r, count) for r in range(n)]
        outs = [make(np.zeros(count), dtype) for _ in range(n)]
        finish(dist.all_gather(outs, mine, group=g, async_op=async_op),
               async_op, staged=True)
        for r in range(n):
            check(outs[r], parts[r], dtype, f"all_gather[{r}] {what}")
        for shape in ((n * count,), (n, count)):
            out = make(np.zeros(shape), dtype)
            w = dist.all_gather_into_tensor(out, mine, group=g,
                                            async_op=async_op)
            finish(w, async_op, [out])
            check(out.reshape(-1), np.concatenate(parts), dtype,
                  f"all_gather_into_tensor {shape} {what}")
        for root in sorted({0, n - 1}):
            outs = ([make(np.zeros(count), dtype) for _ in range(n)]
                    if rank == root else None)
            finish(dist.gather(mine, outs, dst=root, group=g,
                               async_op=async_op), async_op, staged=True)
            for r in range(n if rank == root else 0):
                check(outs[r], parts[r], dtype,
                      f"gather[{r}] root {root} {what}")
    return len(combos)


def scatters(state, full):
    g, rank, n = state.group, state.rank, state.size
    combos = [(dtype, root, count, async_op) for dtype in DTYPES
              for root in range(n) for count in (0, 13)
              for async_op in (False, True)]
    for dtype, root, count, async_op in sample(combos, full, n):
        ins = ([make(gen(dtype, root, count, salt=r), dtype)
                for r in range(n)] if rank == root else None)
        out = make(np.zeros(count), dtype)
        w = dist.scatter(out, ins, src=root, group=g, async_op=async_op)
        finish(w, async_op, [out], staged=True)
        check(out, gen(dtype, root, count, salt=rank), dtype,
              f"scatter {dtype} root {root} x{count}")
    return len(combos)


def _rows(src, dst):
    """Rows rank src sends rank dst in the uneven all-to-alls."""
    return (src + 2 * dst) % 3


def all_to_alls(state, full):
    """all_to_all_single (even splits, uneven splits of 2-D tensors) and
    all_to_all (lists of different sizes)."""
    g, rank, n = state.group, state.rank, state.size
    combos = [(dtype, async_op) for dtype in DTYPES
              for async_op in (False, True)]
    for dtype, async_op in sample(combos, full, n):
        what = f"{dtype} async={async_op}"
        # Even: block d of rank r's input is gen(r, 4, salt=d).
        inp = make(np.concatenate([gen(dtype, rank, 4, salt=d)
                                   for d in range(n)]), dtype)
        out = make(np.zeros(4 * n), dtype)
        w = dist.all_to_all_single(out, inp, group=g, async_op=async_op)
        finish(w, async_op, [out])
        want = np.concatenate([gen(dtype, s, 4, salt=rank)
                               for s in range(n)])
        check(out, want, dtype, f"all_to_all_single even {what}")
        # Uneven, rows of 3 elements.
        sends = [_rows(rank, d) for d in range(n)]
        recvs = [_rows(s, rank) for s in range(n)]
        inp = make(np.concatenate([gen(dtype, rank, 3 * k, salt=d)
                                   for d, k in enumerate(sends)]
                                  + [np.zeros(0)]), dtype).reshape(-1, 3)
        out = make(np.zeros(3 * sum(recvs)), dtype).reshape(-1, 3)
        w = dist.all_to_all_single(out, inp, recvs, sends, group=g,
                                   async_op=async_op)
        finish(w, async_op, [out])
        want = np.concatenate([gen(dtype, s, 3 * k, salt=rank)
                               for s, k in enumerate(recvs)] + [np.zeros(0)])
        check(out.reshape(-1), want, dtype, f"all_to_all_single v {what}")
        # Lists: one tensor per peer, 1 + rows elements.
        ins = [make(gen(dtype, rank, 1 + k, salt=d), dtype)
               for d, k in enumerate(sends)]
        outs = [make(np.zeros(1 + k), dtype) for k in recvs]
        finish(dist.all_to_all(outs, ins, group=g, async_op=async_op),
               async_op, staged=True)
        for s, k in enumerate(recvs):
            check(outs[s], gen(dtype, s, 1 + k, salt=rank), dtype,
                  f"all_to_all[{s}] {what}")
    return len(combos)


def coalesced(state, full):
    """Coalesced forms: _coalescing_manager over all_reduce,
    all_gather_into_tensor and reduce_scatter_tensor, and the deprecated
    all_reduce_coalesced / all_gather_coalesced."""
    g, rank, n = state.group, state.rank, state.size
    for async_op in (False, True):
        ts = [make(gen("float32", rank, k), "float32") for k in (1, 7, 100)]
        with dist._coalescing_manager(group=g, async_ops=async_op) as cm:
            for t in ts:
                dist.all_reduce(t, group=g)
        if async_op:
            cm.wait()
        for t, k in zip(ts, (1, 7, 100)):
            check(t, reduced(state, "float32", "SUM", k), "float32",
                  f"coalesced all_reduce x{k}")
        ins = [make(gen("int32", rank, k), "int32") for k in (2, 5)]
        outs = [make(np.zeros(n * k), "int32") for k in (2, 5)]
        with dist._coalescing_manager(group=g, async_ops=async_op) as cm:
            for o, i in zip(outs, ins):
                dist.all_gather_into_tensor(o, i, group=g)
        if async_op:
            cm.wait()
        for o, k in zip(outs, (2, 5)):
            check(o, np.concatenate([gen("int32", r, k) for r in range(n)]),
                  "int32", f"coalesced all_gather_into_tensor x{k}")
        ins = [make(gen("float64", rank, n * k), "float64") for k in (1, 3)]
        outs = [make(np.zeros(k), "float64") for k in (1, 3)]
        with dist._coalescing_manager(group=g, async_ops=async_op) as cm:
            for o, i in zip(outs, ins):
                dist.reduce_scatter_tensor(o, i, group=g)
        if async_op:
            cm.wait()
        for o, k in zip(outs, (1, 3)):
            want = reduced(state, "float64", "SUM", n * k)
            check(o, want[rank * k:(rank + 1) * k], "float64",
                  f"coalesced reduce_scatter_tensor x{k}")
    ts = [make(gen("int64", rank, k), "int64") for k in (3, 4)]
    dist.all_reduce_coalesced(ts, op=dist.ReduceOp.MAX, group=g)
    for t, k in zip(ts, (3, 4)):
        check(t, reduced(state, "int64", "MAX", k), "int64",
              "all_reduce_coalesced")
    return 3


def send_recv(state, full):
    """send/recv in a ring (blocking, ordered by parity), isend/irecv,
    batch_isend_irecv with tags."""
    g, rank, n = state.group, state.rank, state.size
    nxt, prv = (rank + 1) % n, (rank - 1) % n
    combos = [(dtype, count) for dtype in DTYPES for count in (0, 13, 70000)]
    for dtype, count in sample(combos, full, n):
        out = make(gen(dtype, rank, count), dtype)
        want = gen(dtype, prv, count)
        into = make(np.zeros(count), dtype)
        if rank % 2 == 0:
            dist.send(out, nxt, group=g)
            dist.recv(into, prv, group=g)
        else:
            dist.recv(into, prv, group=g)
            dist.send(out, nxt, group=g)
        check(into, want, dtype, f"send/recv {dtype} x{count}")
        into = make(np.zeros(count), dtype)
        ws = dist.isend(out, nxt, group=g)
        wr = dist.irecv(into, prv, group=g)
        assert wr.get_future().wait()[0].data_ptr() == into.data_ptr()
        ws.wait()
        check(into, want, dtype, f"isend/irecv {dtype} x{count}")
        a, b = make(np.zeros(count), dtype), make(np.zeros(count), dtype)
        ops = [dist.P2POp(dist.isend, out, nxt, g, tag=1),
               dist.P2POp(dist.isend, out * 0 if dtype != "bool" else ~out,
                          nxt, g, tag=2),
               dist.P2POp(dist.irecv, b, prv, g, tag=2),
               dist.P2POp(dist.irecv, a, prv, g, tag=1)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        check(a, want, dtype, f"batch_isend_irecv tag 1 {dtype}")
    return len(combos)


def recv_any_source(state, full):
    """dist.recv without src (and irecv) takes whichever rank sends first
    and returns the sender, like gloo; every rank but 0 sends its rank."""
    g, rank, n = state.group, state.rank, state.size
    senders = []
    if rank == 0:
        for _ in range(n - 1):
            t = torch.zeros(3)
            src = dist.recv(t, group=g)
            check(t, np.full(3, float(src)), "float32", f"from {src}")
            senders.append(src)
        assert sorted(senders) == list(range(1, n)), senders
    else:
        dist.send(torch.full((3,), float(rank)), 0, group=g)
    if rank == 0 and n > 1:  # torch's irecv without src: the same path
        t = torch.zeros(2)
        w = dist.irecv(t, group=g, tag=5)
        dist.barrier(group=g)
        w.wait()
        assert w._source_rank() == n - 1 and t.tolist() == [7.0, 7.0]
    elif rank == n - 1:
        dist.barrier(group=g)
        dist.send(torch.full((2,), 7.0), 0, group=g, tag=5)
    else:
        dist.barrier(group=g)
    return senders


def barrier(state, full):
    g = state.group
    dist.barrier(group=g)
    works = [dist.barrier(group=g, async_op=True) for _ in range(3)]
    for w in reversed(works):
        w.wait()
    return all(w.is_completed() for w in works)


# ---- what DDP, FSDP and DTensor build on ------------------------------------


def _waited(x):
    return x.wait() if hasattr(x, "wait") else x


def functional(state, full):
    """c10d functional collectives (as DTensor and torch.compile use them)
    on the shoal group."""
    g, rank, n = state.group, state.rank, state.size
    x = make(gen("float32", rank, 2 * n), "float32")
    y = make(gen("float32", rank, 3, salt=1), "float32")
    allx = [gen("float32", r, 2 * n) for r in range(n)]
    sum_ = reduced(state, "float32", "SUM", 2 * n)
    mine = slice(2 * rank, 2 * rank + 2)
    checks = [
        (funcol.all_reduce(x, "sum", g), sum_, "all_reduce"),
        (funcol.all_gather_tensor(x, 0, g), np.concatenate(allx),
         "all_gather_tensor"),
        (funcol.reduce_scatter_tensor(x, "sum", 0, g), sum_[mine],
         "reduce_scatter_tensor"),
        (funcol.all_to_all_single(x, None, None, g),
         np.concatenate([a[mine] for a in allx]), "all_to_all_single"),
        (funcol.broadcast(x, n - 1, g), allx[n - 1], "broadcast"),
    ]
    got = funcol.all_reduce_coalesced([x, y], "max", g)
    checks += [(got[0], reduced(state, "float32", "MAX", 2 * n),
                "all_reduce_coalesced[0]"),
               (got[1], reduced(state, "float32", "MAX", 3, salt=1),
                "all_reduce_coalesced[1]")]
    got = funcol.all_gather_into_tensor_coalesced([x, y], g)
    checks.append((got[1], np.concatenate([gen("float32", r, 3, salt=1)
                                           for r in range(n)]),
                   "all_gather_into_tensor_coalesced"))
    got = funcol.reduce_scatter_tensor_coalesced([x], "sum", [0], g)
    checks.append((got[0], sum_[mine], "reduce_scatter_tensor_coalesced"))
    for t, want, what in checks:
        check(_waited(t), want, "float32", f"funcol.{what}")
    return len(checks)


def dtensor(state, full):
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.tensor import (DTensor, Partial, Replicate, Shard,
                                          distribute_tensor)

    rank, n = state.rank, state.size
    mesh = DeviceMesh.from_group(state.group, "cpu")
    torch.manual_seed(0)
    full_t = torch.randn(2 * n, 6)
    d = distribute_tensor(full_t, mesh, [Shard(0)])
    check(d.full_tensor(), full_t, "float32", "Shard(0) -> full")
    check(d.redistribute(mesh, [Replicate()]).to_local(), full_t, "float32",
          "Shard(0) -> Replicate")
    p = DTensor.from_local(torch.ones(2 * n) * (rank + 1), mesh, [Partial()])
    total = sum(range(1, n + 1))
    check(p.redistribute(mesh, [Replicate()]).to_local(),
          torch.full((2 * n,), float(total)), "float32",
          "Partial -> Replicate")
    check(p.redistribute(mesh, [Shard(0)]).to_local(),
          torch.full((2,), float(total)), "float32", "Partial -> Shard(0)")
    a, b = torch.randn(2 * n, 5), torch.randn(5, 3)
    prod = (distribute_tensor(a, mesh, [Shard(0)])
            @ distribute_tensor(b, mesh, [Replicate()]))
    check(prod.full_tensor(), a @ b, "float32", "Shard(0) @ Replicate")
    return 5


def _model():
    torch.manual_seed(0)  # the same start on every rank, for each backend
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 2))


def _train(group, wrap, steps=3):
    """Trains a small model wrapped by `wrap` over `group` (None: gloo);
    returns the final parameters as one tensor."""
    m = wrap(_model(), group)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(10 + dist.get_rank())
    for _ in range(steps):
        x = torch.randn(4, 8, generator=data)
        loss = (m(x) - x[:, :2]).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    out = []
    for p in m.parameters():
        p = p.full_tensor() if hasattr(p, "full_tensor") else p
        out.append(p.detach().reshape(-1).clone())
    return torch.cat(out)


def _parity(state, wrap):
    diff = (_train(None, wrap) - _train(state.group, wrap)).abs().max()
    assert diff.item() < 1e-5, f"parameters differ from gloo's by {diff}"
    return diff.item()


def ddp_parity(state, full):
    from torch.nn.parallel import DistributedDataParallel as DDP

    return _parity(state, lambda m, g: DDP(m, process_group=g,
                                           bucket_cap_mb=0.0005))


def fsdp_parity(state, full):
    from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
    from torch.distributed.fsdp import fully_shard

    def wrap(m, g):
        mesh = (init_device_mesh("cpu", (state.size,)) if g is None
                else DeviceMesh.from_group(g, "cpu"))
        fully_shard(m[0], mesh=mesh)
        return fully_shard(m, mesh=mesh)

    return _parity(state, wrap)


def powersgd_parity(state, full):
    """DDP with PowerSGD compression, whose hook waits inside a future's
    callback for further all-reduces (a single thread completing futures
    and running their callbacks deadlocks on it)."""
    from torch.distributed.algorithms.ddp_comm_hooks import (
        powerSGD_hook as psgd)
    from torch.nn.parallel import DistributedDataParallel as DDP

    def wrap(m, g):
        ddp = DDP(m, process_group=g, bucket_cap_mb=0.0005)
        st = psgd.PowerSGDState(process_group=g, matrix_approximation_rank=1,
                                start_powerSGD_iter=2, random_seed=0)
        ddp.register_comm_hook(st, psgd.powerSGD_hook)
        return ddp

    state.group  # the default (gloo) group too
    return _parity(state, wrap)


def nested_future_wait(state, full):
    """A callback on one collective's future waits for another collective,
    on its own future and through Work.wait (DDP hooks do); chains of them
    too. Nothing may deadlock."""
    g, n = state.group, state.size
    x, y, z = torch.ones(4), torch.ones(4), torch.ones(4)

    def inner(fut):
        w = dist.all_reduce(y, group=g, async_op=True)
        return w.get_future().wait()[0] + fut.value()[0]

    def deeper(fut):
        dist.all_reduce(z, group=g, async_op=True).wait()
        return fut.value() + z

    chained = dist.all_reduce(x, group=g, async_op=True).get_future()
    got = chained.then(inner).then(deeper).wait()
    check(got, np.full(4, 3.0 * n), "float32", "nested callbacks")
    # Work.result() is the output tensors, as gloo's.
    t = torch.full((3,), float(state.rank))
    w = dist.all_reduce(t, group=g, async_op=True)
    assert w.result()[0].data_ptr() == t.data_ptr()
    check(t, np.full(3, float(sum(range(n)))), "float32", "result()")
    return True


def all_gather_coalesced(state, full):
    """dist.all_gather_coalesced: output_tensor_lists[r][i] is input i of
    rank r, as gloo (the default group) computes it, for 1 and 2 inputs."""
    g, rank, n = state.group, state.rank, state.size
    for k in (1, 2, 3):
        ins = [torch.arange(i + 1, dtype=torch.float32) + 10 * rank + i
               for i in range(k)]
        got = [[torch.zeros(i + 1) for i in range(k)] for _ in range(n)]
        want = [[torch.zeros(i + 1) for i in range(k)] for _ in range(n)]
        dist.all_gather_coalesced(got, ins, group=g)
        dist.all_gather_coalesced(want, ins)
        for r in range(n):
            for i in range(k):
                check(got[r][i], want[r][i], "float32",
                      f"all_gather_coalesced rank {r} input {i} of {k}")
        # Lists of the wrong shape are refused, not misread.
        bad = [[torch.zeros(1)] * (k + 1)] * n
        assert "one per rank" in _raises(
            lambda: dist.all_gather_coalesced(bad, ins, group=g))
    return True


def sparse_all_reduce(state, full):
    """Sparse COO all_reduce sums like gloo's (overlapping and disjoint
    indices, dense trailing dimensions, a rank with no entries); DDP with
    a sparse embedding trains like gloo; other ops are refused."""
    g, rank, n = state.group, state.rank, state.size
    for dense in ((), (3,)):
        idx = torch.tensor([[rank, 5, 0][:rank + 1]]) if rank < 3 else \
            torch.zeros((1, 0), dtype=torch.int64)
        vals = torch.ones((idx.shape[1],) + dense) * (rank + 1)
        a = torch.sparse_coo_tensor(idx, vals, (8,) + dense)
        b = a.clone()
        dist.all_reduce(a, group=g)
        dist.all_reduce(b)
        check(a.to_dense(), b.to_dense(), "float32", f"sparse {dense}")
    text = _raises(lambda: dist.all_reduce(
        torch.sparse_coo_tensor([[0]], [1.0], (2,)), dist.ReduceOp.MAX,
        group=g))
    assert "sparse" in text and "SUM" in text, text

    def wrap(m, grp):
        from torch.nn.parallel import DistributedDataParallel as DDP
        return DDP(m, process_group=grp)

    def train(grp):
        torch.manual_seed(0)
        m = wrap(torch.nn.Sequential(torch.nn.Embedding(10, 4, sparse=True),
                                     torch.nn.Linear(4, 1)), grp)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        for step in range(3):
            ids = torch.tensor([[(rank + step) % 10, 3]])
            m(ids).sum().backward()
            opt.step()
            opt.zero_grad()
        return torch.cat([p.detach().reshape(-1) for p in m.parameters()])

    diff = (train(None) - train(g)).abs().max().item()
    assert diff < 1e-6, f"sparse DDP differs from gloo by {diff}"
    return True


def backend_hooks(state, full):
    """What torch asks of a group's per-device backend: _get_backend for
    the CPU (and an error for CUDA), _set_pg_timeout, monitored_barrier;
    profiler events for the operations."""
    g, rank = state.group, state.rank
    assert g._get_backend(torch.device("cpu")) is g
    assert "cuda" in _raises(lambda: g._get_backend(torch.device("cuda")))
    g._get_backend(torch.device("cpu"))._set_default_timeout(
        datetime.timedelta(seconds=25))
    assert g.comm.get_timeout() == 25.0
    g._set_default_timeout(TIMEOUT)
    for wait_all in (False, True):
        g.monitored_barrier(datetime.timedelta(seconds=10), wait_all)
    # As a C++ backend's: asynchronous events (ended on another thread)
    # with the input shapes, ended once wait() returns.
    with torch.autograd.profiler.profile(record_shapes=True) as prof:
        t = torch.ones(4)
        dist.all_reduce(t, group=g)
        dist.all_reduce(t, group=g, async_op=True).wait()
        dist.broadcast(t, 0, group=g)
        dist.all_reduce_coalesced([t, torch.ones(2, 3)], group=g)
    events = [e for e in prof.function_events if e.name.startswith("shoal:")]
    names = [e.name for e in events]
    assert names.count("shoal:all_reduce") == 3, names
    assert "shoal:broadcast" in names, names
    assert all(e.is_async for e in events), [(e.name, e.is_async)
                                             for e in events]
    shapes = [e.input_shapes for e in events if e.name.endswith("reduce")]
    assert shapes == [[[4]], [[4]], [[4], [2, 3]]], shapes
    return True


def monitored_barrier_names_absent(state, full):
    """monitored_barrier on rank 0 names the ranks that did not come (the
    first, or all with wait_all_ranks); the others hear it at once."""
    n, rank = state.size, state.rank
    state.group  # the default (gloo) group too
    texts = []
    for wait_all in (False, True):
        g = dist.new_group(backend="shoal", timeout=TIMEOUT)
        if rank in (1, n - 1):  # absent
            texts.append(None)
        else:
            texts.append(_raises(lambda: g.monitored_barrier(
                datetime.timedelta(seconds=1), wait_all)))
        dist.barrier()  # the default (gloo) group: everyone done
        dist.destroy_process_group(g)
    return texts


# ---- faults -----------------------------------------------------------------


def _raises(fn):
    try:
        fn()
    except (RuntimeError, ValueError, TypeError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def bad_inputs(state, full):
    """Every rank passes the same bad arguments: every rank raises, and
    the next operation works."""
    g, n = state.group, state.size
    f32, i64 = torch.ones(4), torch.ones(4, dtype=torch.int64)
    calls = {
        "band on float": lambda: dist.all_reduce(
            torch.ones(4), op=dist.ReduceOp.BAND, group=g),
        "avg on bool": lambda: dist.all_reduce(
            torch.ones(4, dtype=torch.bool), op=dist.ReduceOp.AVG, group=g),
        "all_gather_into_tensor size": lambda: dist.all_gather_into_tensor(
            torch.zeros(4 * n + 1), f32, group=g),
        "all_gather_into_tensor dtype": lambda: dist.all_gather_into_tensor(
            torch.zeros(4 * n, dtype=torch.int64), f32, group=g),
        "reduce_scatter_tensor size": lambda: dist.reduce_scatter_tensor(
            torch.zeros(3), f32, group=g),
        "all_to_all_single dtype": lambda: dist.all_to_all_single(
            torch.zeros(4 * n), torch.ones(4 * n, dtype=torch.int64),
            group=g),
        "all_to_all_single splits": lambda: dist.all_to_all_single(
            torch.zeros(4), f32, [4] + [0] * (n - 1), [5] + [0] * (n - 1),
            group=g),
        "all_gather list length": lambda: dist.all_gather(
            [torch.zeros(4) for _ in range(n + 1)], f32, group=g),
        "all_gather list dtype": lambda: dist.all_gather(
            [torch.zeros(4, dtype=torch.int8) for _ in range(n)], f32,
            group=g),
        "meta tensor": lambda: dist.all_reduce(
            torch.empty(4, device="meta"), group=g),
        "unsupported dtype": lambda: dist.all_reduce(
            torch.ones(4, dtype=torch.uint16), group=g),
        "broadcast root": lambda: dist.broadcast(f32, n, group=g),
        "all_to_all list": lambda: dist.all_to_all(
            [torch.zeros(4)] * n, [f32] * (n + 1), group=g),
        "send to a rank outside": lambda: dist.send(i64, n + 1, group=g),
    }
    errors = {}
    for name, fn in calls.items():
        errors[name] = _raises(fn)
        t = torch.ones(3)
        dist.all_reduce(t, group=g)
        check(t, np.full(3, float(n)), "float32", f"after {name}")
    return errors


def mismatch(state, full):
    """Ranks passing different counts: every rank raises (the shoal group
    is aborted); a new group works."""
    g, rank, n = state.group, state.rank, state.size
    try:
        dist.all_reduce(torch.ones(4 + rank), group=g)
    except shoal.ShoalError as e:
        text = f"{type(e).__name__}: {e}"
    else:
        raise AssertionError("different counts did not raise")
    g = state.renew()
    t = torch.ones(2)
    dist.all_reduce(t, group=g)
    check(t, np.full(2, float(n)), "float32", "a new group")
    return text
