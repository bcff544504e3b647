"""Cases that run inside each rank of a RankPool (see harness.py).

Every case takes the rank's State and JSON arguments, raises on a wrong
result, and returns something JSON can carry. Inputs are generated from
(rank, index), so each rank computes the expected result of a collective
locally from every rank's inputs.
"""

import array
import time

import numpy as np

import shoal

NUMPY_DTYPES = ["float32", "float64", "float16", "int8", "uint8", "int16",
                "int32", "int64", "bool"]
TORCH_DTYPES = NUMPY_DTYPES + ["bfloat16"]
FLOATS = ("float32", "float64", "float16", "bfloat16")
OPS = ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "AVG",
       "PREMUL_SUM"]
COUNTS = [0, 1, 13]


class State:
    def __init__(self):
        self._comm = None

    @property
    def comm(self):
        if self._comm is None:
            self._comm = shoal.new_comm(
                "shoal", "cpu", name="test",
                abort_process_on_timeout_or_error=False)
        return self._comm

    def close(self):
        if self._comm is not None:
            self._comm.finalize()
            self._comm = None


def drop(state):
    """Releases the communicator (after a fault aborted it). The harness
    runs `reconnect` only once every rank has dropped its communicator:
    rank 0's old one serves the store that a new one would otherwise
    reach first (see the report on store servers and recreation)."""
    if state._comm is not None:
        try:
            state._comm.finalize()
        except shoal.ShoalError:
            pass
        state._comm = None


def reconnect(state):
    """A fresh communicator works: all_reduce of ones."""
    t = np.ones(2, dtype=np.float32)
    state.comm.all_reduce(t, shoal.ReduceOp.SUM)
    n = state.comm.get_size()
    assert t.tolist() == [n, n], t
    return n


# ---- arrays of either library ---------------------------------------------


class Lib:
    """Makes test arrays of one library from numpy data and back."""

    def __init__(self, name):
        self.name = name
        if name == "torch":
            import torch
            self.torch = torch

    def dtypes(self):
        return TORCH_DTYPES if self.name == "torch" else NUMPY_DTYPES

    def make(self, data, dtype):
        """An array of `dtype` holding numpy `data` (float64 or bool)."""
        if self.name == "numpy":
            return np.array(data).astype(dtype)
        t = self.torch
        if dtype == "bfloat16":
            return t.from_numpy(np.array(data, dtype=np.float32)).to(
                t.bfloat16)
        return t.from_numpy(np.array(data).astype(dtype))

    def numpy(self, x):
        if self.name == "numpy":
            return np.asarray(x)
        if x.dtype == self.torch.bfloat16:
            return x.float().numpy()
        return x.numpy()

    def zeros(self, n, dtype):
        return self.make(np.zeros(n), dtype)


def gen(dtype, rank, n, salt=0):
    """Rank `rank`'s input: small values, exact in every dtype."""
    i = np.arange(n)
    if dtype == "bool":
        return (i + rank + salt) % 3 == 0
    v = ((i * 7 + rank * 3 + salt) % 5) + 1.0
    if dtype in FLOATS:
        v = v / 2.0
    return v


def expect_reduce(dtype, op, inputs, factor=0.5):
    """The reduction of `inputs` (list of numpy data) in `dtype`."""
    if dtype == "bool":
        x = np.array(inputs, dtype=bool)
        op = {"SUM": "BOR", "MAX": "BOR", "PRODUCT": "BAND",
              "MIN": "BAND"}.get(op, op)
        fn = {"BAND": np.logical_and, "BOR": np.logical_or,
              "BXOR": np.logical_xor}[op]
        return fn.reduce(x, axis=0)
    floating = dtype in FLOATS
    x = np.array(inputs, dtype=np.float64 if floating else np.int64)
    n = len(inputs)
    if op == "SUM":
        r = x.sum(axis=0)
    elif op == "PRODUCT":
        r = x.prod(axis=0)
    elif op == "MIN":
        r = x.min(axis=0)
    elif op == "MAX":
        r = x.max(axis=0)
    elif op == "AVG":
        r = x.sum(axis=0) / n if floating else np.trunc(x.sum(axis=0) / n)
    elif op == "PREMUL_SUM":
        r = (x * factor).sum(axis=0)
    else:
        fn = {"BAND": np.bitwise_and, "BOR": np.bitwise_or,
              "BXOR": np.bitwise_xor}[op]
        r = fn.reduce(x, axis=0)
    if floating:
        return r
    return r.astype(np.int64).astype(dtype)


def valid_pair(dtype, op):
    if op in ("BAND", "BOR", "BXOR"):
        return dtype not in FLOATS
    if op == "PREMUL_SUM":
        return dtype in FLOATS
    if op == "AVG":
        return dtype != "bool"
    return True


def reduce_op(op):
    if op == "PREMUL_SUM":
        return shoal.ReduceOp.PREMUL_SUM(0.5)
    return getattr(shoal.ReduceOp, op)


def check(lib, got, want, dtype, what):
    g = lib.numpy(got).reshape(-1)
    w = np.asarray(want).reshape(-1)
    if dtype in FLOATS:
        tol = 2e-2 if dtype in ("float16", "bfloat16") else 1e-6
        ok = g.shape == w.shape and np.allclose(
            g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)
    else:
        ok = g.shape == w.shape and np.array_equal(g, w.astype(g.dtype))
    if not ok:
        raise AssertionError(f"{what}: got {g.tolist()}, want {w.tolist()}")


def finish(work, async_op):
    """Waits for an async work (polling once first); checks sync ones."""
    assert isinstance(work, shoal.Work)
    if async_op:
        work.is_completed()
        work.wait()
    assert work.is_completed()


def strided(lib, data, dtype):
    """A non-contiguous array holding `data` (every other element)."""
    n = len(data)
    base = lib.make(np.zeros(2 * n + 1), dtype)
    view = base[1::2]
    view[...] = lib.make(data, dtype)
    return view


# ---- collectives, matrices -------------------------------------------------


def all_reduce(state, libname):
    lib, comm = Lib(libname), state.comm
    rank, n = comm.get_rank(), comm.get_size()
    done = 0
    for dtype in lib.dtypes():
        for op in OPS:
            if not valid_pair(dtype, op):
                continue
            for count in COUNTS:
                for async_op in (False, True):
                    want = expect_reduce(
                        dtype, op, [gen(dtype, r, count) for r in range(n)])
                    t = lib.make(gen(dtype, rank, count), dtype)
                    if count == 13 and async_op:
                        t = strided(lib, gen(dtype, rank, count), dtype)
                    w = comm.all_reduce(t, reduce_op(op), async_op=async_op)
                    finish(w, async_op)
                    check(lib, t, want, dtype,
                          f"all_reduce {dtype} {op} x{count} async={async_op}")
                    done += 1
    return done


def reduce(state, libname):
    lib, comm = Lib(libname), state.comm
    rank, n = comm.get_rank(), comm.get_size()
    for dtype in lib.dtypes():
        for op in ("SUM", "MAX", "BXOR", "PREMUL_SUM"):
            if not valid_pair(dtype, op):
                continue
            for root in sorted({0, n - 1}):
                for async_op in (False, True):
                    mine = gen(dtype, rank, 13)
                    want = expect_reduce(
                        dtype, op, [gen(dtype, r, 13) for r in range(n)])
                    t = lib.make(mine, dtype)
                    w = comm.reduce(t, root, reduce_op(op), async_op=async_op)
                    finish(w, async_op)
                    check(lib, t, want if rank == root else
                          lib.numpy(lib.make(mine, dtype)), dtype,
                          f"reduce {dtype} {op} root {root}")


def broadcast(state, libname):
    lib, comm = Lib(libname), state.comm
    rank, n = comm.get_rank(), comm.get_size()
    for dtype in lib.dtypes():
        for root in range(n):
            for count in COUNTS + [5000]:
                for async_op in (False, True):
                    t = lib.make(gen(dtype, rank, count), dtype)
                    if count == 13 and async_op:
                        t = strided(lib, gen(dtype, rank, count), dtype)
                    finish(comm.broadcast(t, root, async_op=async_op),
                           async_op)
                    check(lib, t, lib.numpy(lib.make(gen(dtype, root, count),
                                                     dtype)),
                          dtype, f"broadcast {dtype} root {root} x{count}")


def send_recv(state, libname):
    lib, comm = Lib(libname), state.comm
    rank, n = comm.get_rank(), comm.get_size()
    nxt, prv = (rank + 1) % n, (rank - 1) % n
    for dtype in lib.dtypes():
        for count in COUNTS + [100000]:
            for mode in ("async", "sync"):
                out = lib.make(gen(dtype, rank, count), dtype)
                into = lib.zeros(count, dtype)
                if mode == "async":
                    ws = comm.send(out, nxt, async_op=True)
                    wr = comm.recv(into, prv, async_op=True)
                    wr.wait()
                    ws.wait()
                elif rank % 2 == 0:
                    comm.send(out, nxt)
                    comm.recv(into, prv)
                else:
                    comm.recv(into, prv)
                    comm.send(out, nxt)
                check(lib, into, lib.numpy(lib.make(gen(dtype, prv, count),
                                                    dtype)),
                      dtype, f"recv {dtype} x{count} {mode}")


def recv_any(state, libname):
    """recv with src=None: rank 0 takes every other rank's small and large
    messages without naming the sender; each Work's source() names it,
    and each sender's messages come in send order."""
    lib, comm = Lib(libname), state.comm
    rank, n = comm.get_rank(), comm.get_size()
    sizes = {5: 100, 7: 150000}  # tag: int64 elements (1.2 MB: chunked)
    if n == 1:
        _expect_invalid(lambda: comm.recv(lib.zeros(4, "int64"), None),
                        ["SHOAL_ANY_SOURCE", "one rank"])
        return []
    if rank != 0:
        for i in range(3):
            for tag, count in sizes.items():
                comm.send(lib.make(np.array([rank, i] * (count // 2)),
                                   "int64"), 0, tag=tag)
        return _recv_any_pending(comm, lib)
    order, taken = [], {tag: [0] * n for tag in sizes}
    for j in range(3 * (n - 1)):
        for tag, count in sizes.items():
            async_op = j % 2 == 0
            into = lib.zeros(count, "int64")
            if tag == 5 and j == 1:
                into = strided(lib, np.zeros(count), "int64")
            w = comm.recv(into, None, async_op=async_op, tag=tag)
            finish(w, async_op)
            src = w.source()
            want = [src, taken[tag][src]] * (count // 2)
            check(lib, into, want, "int64", f"tag {tag} from rank {src}")
            taken[tag][src] += 1
            order.append(src)
    assert all(taken[tag][1:] == [3] * (n - 1) for tag in sizes), taken
    _recv_any_pending(comm, lib)
    return order


def _recv_any_pending(comm, lib):
    """source() of a receive still in flight raises; once rank 1's message
    arrives (after the barrier) it names rank 1."""
    rank = comm.get_rank()
    into = lib.zeros(1, "int64")
    if rank == 0:
        w = comm.recv(into, None, async_op=True, tag=6)
        try:
            w.source()
        except RuntimeError as e:
            assert "not completed" in str(e), e
        else:
            raise AssertionError("source() of a pending receive returned")
    comm.barrier()
    if rank == 1:
        comm.send(lib.make(np.array([41]), "int64"), 0, tag=6)
    if rank == 0:
        w.wait()
        assert w.source() == 1 and lib.numpy(into).tolist() == [41]
    return []


def barrier(state):
    comm = state.comm
    comm.barrier()
    works = [comm.barrier(async_op=True) for _ in range(3)]
    for w in reversed(works):
        w.wait()
    return all(w.is_completed() for w in works)


def gathers(state, libname):
    """all_gather, all_gather_single, gather."""
    lib, comm = Lib(libname), state.comm
    rank, n = comm.get_rank(), comm.get_size()
    for dtype in lib.dtypes():
        for count in COUNTS:
            for async_op in (False, True):
                mine = lib.make(gen(dtype, rank, count), dtype)
                parts = [gen(dtype, r, count) for r in range(n)]
                want = np.concatenate(parts) if count else np.zeros(0)
                what = f"{dtype} x{count} async={async_op}"
                outs = [lib.zeros(count, dtype) for _ in range(n)]
                finish(comm.all_gather(outs, mine, async_op=async_op),
                       async_op)
                for r in range(n):
                    check(lib, outs[r], lib.numpy(lib.make(parts[r], dtype)),
                          dtype, f"all_gather[{r}] {what}")
                out = lib.zeros(n * count, dtype)
                finish(comm.all_gather_single(out, mine, async_op=async_op),
                       async_op)
                check(lib, out, lib.numpy(lib.make(want, dtype)), dtype,
                      f"all_gather_single {what}")
                for root in sorted({0, n - 1}):
                    outs = ([lib.zeros(count, dtype) for _ in range(n)]
                            if rank == root else [])
                    finish(comm.gather(outs, mine, root, async_op=async_op),
                           async_op)
                    for r in range(len(outs)):
                        check(lib, outs[r],
                              lib.numpy(lib.make(parts[r], dtype)), dtype,
                              f"gather[{r}] root {root} {what}")


def all_gather_in_place(state, libname):
    """all_gather_single whose input is this rank's block of the output."""
    lib, comm = Lib(libname), state.comm
    rank, n = comm.get_rank(), comm.get_size()
    out = lib.zeros(4 * n, "float32")
    out[4 * rank:4 * rank + 4] = lib.make(gen("float32", rank, 4), "float32")
    comm.all_gather_single(out, out[4 * rank:4 * rank + 4])
    want = np.concatenate([gen("float32", r, 4) for r in range(n)])
    check(lib, out, want, "float32", "all_gather_single in place")


def scatters(state, libname):
    """reduce_scatter, reduce_scatter_single, scatter."""
    lib, comm = Lib(libname), state.comm
    rank, n = comm.get_rank(), comm.get_size()
    for dtype in lib.dtypes():
        for op in ("SUM", "MIN", "BOR", "AVG"):
            if not valid_pair(dtype, op):
                continue
            for count in COUNTS:
                for async_op in (False, True):
                    what = f"{dtype} {op} x{count} async={async_op}"
                    blocks = {r: [gen(dtype, r, count, salt=p)
                                  for p in range(n)] for r in range(n)}
                    want = expect_reduce(dtype, op,
                                         [blocks[r][rank] for r in range(n)])
                    ins = [lib.make(b, dtype) for b in blocks[rank]]
                    out = lib.zeros(count, dtype)
                    finish(comm.reduce_scatter(out, ins, reduce_op(op),
                                               async_op=async_op), async_op)
                    check(lib, out, want, dtype, f"reduce_scatter {what}")
                    whole = lib.make(np.concatenate(blocks[rank]), dtype)
                    out = lib.zeros(count, dtype)
                    finish(comm.reduce_scatter_single(
                        out, whole, reduce_op(op), async_op=async_op),
                        async_op)
                    check(lib, out, want, dtype,
                          f"reduce_scatter_single {what}")
        for root in sorted({0, n - 1}):
            ins = ([lib.make(gen(dtype, root, 7, salt=p), dtype)
                    for p in range(n)] if rank == root else [])
            out = lib.zeros(7, dtype)
            comm.scatter(out, ins, root)
            check(lib, out, lib.numpy(lib.make(gen(dtype, root, 7, salt=rank),
                                               dtype)),
                  dtype, f"scatter {dtype} root {root}")


def all_to_alls(state, libname):
    """all_to_all (uneven lists), all_to_all_single, all_to_all_v_single."""
    lib, comm = Lib(libname), state.comm
    rank, n = comm.get_rank(), comm.get_size()

    def rows(src, dst):  # rows rank src sends to rank dst
        return (src + 2 * dst) % 3

    for dtype in lib.dtypes():
        for async_op in (False, True):
            what = f"{dtype} async={async_op}"
            ins = [lib.make(gen(dtype, rank, rows(rank, p) * 2, salt=p),
                            dtype) for p in range(n)]
            outs = [lib.zeros(rows(p, rank) * 2, dtype) for p in range(n)]
            finish(comm.all_to_all(outs, ins, async_op=async_op), async_op)
            for p in range(n):
                check(lib, outs[p], lib.numpy(lib.make(
                    gen(dtype, p, rows(p, rank) * 2, salt=rank), dtype)),
                    dtype, f"all_to_all from {p} {what}")
            k = 3
            inp = lib.make(np.concatenate(
                [gen(dtype, rank, k, salt=p) for p in range(n)]), dtype)
            out = lib.zeros(n * k, dtype)
            finish(comm.all_to_all_single(out, inp, async_op=async_op),
                   async_op)
            check(lib, out, lib.numpy(lib.make(np.concatenate(
                [gen(dtype, p, k, salt=rank) for p in range(n)]), dtype)),
                dtype, f"all_to_all_single {what}")
            # 2-D: splits count rows of 2 elements.
            send_rows = [rows(rank, p) for p in range(n)]
            recv_rows = [rows(p, rank) for p in range(n)]
            inp = lib.make(np.concatenate(
                [gen(dtype, rank, 2 * rows(rank, p), salt=p)
                 for p in range(n)]), dtype).reshape(-1, 2)
            out = lib.zeros(2 * sum(recv_rows), dtype).reshape(-1, 2)
            finish(comm.all_to_all_v_single(out, inp, recv_rows, send_rows,
                                            async_op=async_op), async_op)
            check(lib, out, lib.numpy(lib.make(np.concatenate(
                [gen(dtype, p, 2 * rows(p, rank), salt=rank)
                 for p in range(n)]), dtype)),
                dtype, f"all_to_all_v_single {what}")


def overlap(state, libname):
    """Several works in flight, waited out of order; one never waited."""
    lib, comm = Lib(libname), state.comm
    rank, n = comm.get_rank(), comm.get_size()
    ts = [lib.make(np.full(1000, float(rank + i)), "float32")
          for i in range(4)]
    works = [comm.all_reduce(t, shoal.ReduceOp.SUM, async_op=True)
             for t in ts]
    dropped = comm.all_reduce(lib.make(np.ones(10), "float32"),
                              shoal.ReduceOp.SUM, async_op=True)
    del dropped  # waited for when collected: no crash, no leak
    for w in reversed(works):
        w.wait()
    base = n * (n - 1) / 2
    for i, t in enumerate(ts):
        check(lib, t, np.full(1000, base + n * i), "float32", f"overlap {i}")
    comm.barrier()


def split(state):
    comm = state.comm
    rank, n = comm.get_rank(), comm.get_size()
    evens = [r for r in range(n) if r % 2 == 0]
    # Members in reverse order: the child's rank is the list position.
    members = list(reversed(evens))
    child = comm.split(members if rank in members else [], name="evens")
    if rank not in members:
        assert child is None, child
        comm.barrier()
        return None
    assert child.get_size() == len(members)
    assert child.get_rank() == members.index(rank)
    assert child.get_name() == "evens"
    t = np.array([rank], dtype=np.int64)
    child.all_reduce(t, shoal.ReduceOp.SUM)
    assert t[0] == sum(members), t
    child.finalize()
    comm.barrier()
    return child.get_rank()


def buffers(state):
    """Objects other than numpy arrays and torch tensors."""
    comm = state.comm
    rank, n = comm.get_rank(), comm.get_size()
    a = array.array("d", [rank + 1.0] * 5)  # buffer protocol
    comm.all_reduce(a, shoal.ReduceOp.SUM)
    assert list(a) == [n * (n + 1) / 2] * 5, a
    b = bytearray([rank] * 4)
    comm.broadcast(b, n - 1)
    assert list(b) == [n - 1] * 4, b
    src = bytes([rank + 7] * 3)  # read-only is fine to send
    out = bytearray(3 * n)
    comm.all_gather_single(out, src)
    assert list(out) == sum(([r + 7] * 3 for r in range(n)), []), out
    m = memoryview(bytearray(8)).cast("i")
    m[0], m[1] = rank, 1
    comm.all_reduce(m, "sum")
    assert m.tolist() == [n * (n - 1) // 2, n], m.tolist()


def torch_specials(state):
    """requires_grad, transposed, 2-D, 0-d and negated-view tensors."""
    import torch
    comm = state.comm
    rank, n = comm.get_rank(), comm.get_size()
    p = torch.full((3,), float(rank), requires_grad=True)
    comm.all_reduce(p, shoal.ReduceOp.SUM)
    assert torch.equal(p.detach(), torch.full((3,), n * (n - 1) / 2)), p
    m = (torch.arange(6, dtype=torch.float64) + rank).reshape(2, 3).t()
    assert not m.is_contiguous()
    comm.all_reduce(m, shoal.ReduceOp.MAX)
    want = (torch.arange(6, dtype=torch.float64) + n - 1).reshape(2, 3).t()
    assert torch.equal(m, want), m
    s = torch.tensor(rank + 1, dtype=torch.int32)
    comm.all_reduce(s, shoal.ReduceOp.PRODUCT)
    assert s.item() == int(np.prod(np.arange(1, n + 1))), s
    f = torch.tensor([2.0])
    t = torch.ones(4, dtype=torch.float32)
    comm.all_reduce(t, shoal.ReduceOp.PREMUL_SUM(f))
    assert torch.equal(t, torch.full((4,), 2.0 * n)), t
    _negated_views(comm, rank, n)


def _negated_views(comm, rank, n):
    """A negated view (is_neg(): its memory holds minus its values) is
    reduced, sent and written by its values."""
    import torch
    v = torch._neg_view(torch.tensor([1.0 + rank, 5.0 - rank]))
    comm.all_reduce(v, shoal.ReduceOp.MAX)  # values -1-r and r-5
    assert v.tolist() == [-1.0, n - 6.0], v
    b = torch._neg_view(torch.tensor([3.0, 4.0]))
    if rank != 0:
        b = torch.zeros(2)
    comm.broadcast(b, 0)
    assert b.tolist() == [-3.0, -4.0], b
    into = torch.tensor([7.0]) if rank == 0 else torch._neg_view(
        torch.zeros(1))
    comm.broadcast(into, 0)
    assert into.tolist() == [7.0], into


def timeouts(state):
    """Per-op and default timeouts come from arguments and the env."""
    import datetime
    comm = state.comm
    assert comm.get_timeout() == 30.0, comm.get_timeout()  # env of the pool
    comm.barrier(timeout=datetime.timedelta(seconds=5))
    comm.barrier(timeout=2.5)
    assert comm.get_timeout() == 30.0
    comm.set_timeout(datetime.timedelta(seconds=20))
    assert comm.get_timeout() == 20.0
    comm.set_timeout(30)


# ---- errors ---------------------------------------------------------------


def _expect_invalid(fn, words):
    try:
        fn()
    except shoal.InvalidArgumentError as e:
        text = str(e)
        for w in words:
            assert w in text, f"message {text!r} lacks {w!r}"
        return text
    raise AssertionError(f"no error; expected one mentioning {words}")


def bad_inputs(state, libname):
    """Every rank raises InvalidArgumentError; the next op still works."""
    lib, comm = Lib(libname), state.comm
    rank, n = comm.get_rank(), comm.get_size()
    f32 = lib.make(np.ones(4), "float32")
    i64 = lib.make(np.ones(4), "int64")
    cases = [
        (lambda: comm.all_reduce(lib.make(np.ones(4), "float32"),
                                 shoal.ReduceOp.BAND), ["band", "float32"]),
        (lambda: comm.all_reduce(lib.make(np.ones(4), "int32"),
                                 shoal.ReduceOp.PREMUL_SUM(2.0)),
         ["premul_sum", "int32"]),
        (lambda: comm.all_gather_single(lib.zeros(4 * n + 1, "float32"),
                                        f32), ["output", f"{4 * n + 1}"]),
        (lambda: comm.all_gather_single(lib.zeros(4 * n, "int64"), f32),
         ["int64", "float32"]),
        (lambda: comm.reduce_scatter_single(lib.zeros(3, "float32"), f32,
                                            shoal.ReduceOp.SUM),
         ["input", "4 elements"]),
        (lambda: comm.all_to_all_single(lib.zeros(4, "float32"), i64),
         ["dtypes differ"]),
        (lambda: comm.broadcast(f32, n), ["root", str(n)]),
        (lambda: comm.send(f32, -1), ["dst", "-1"]),
        (lambda: comm.reduce(f32, 0, "nonsense"), ["nonsense"]),
        (lambda: comm.all_gather([f32] * (n + 1), f32),
         ["tensor_list", str(n + 1)]),
        (lambda: comm.all_gather([lib.zeros(4, "int8")] * n, f32),
         ["tensor_list[0]", "int8"]),
        (lambda: comm.scatter(f32, [f32] * (n + 2), 0) if rank == 0 else
         comm.scatter(f32, [], n + 5),
         ["input_tensor_list"] if rank == 0 else ["outside"]),
        (lambda: comm.all_to_all_v_single(lib.zeros(4, "float32"), f32,
                                          [4] + [0] * (n - 1),
                                          [5] + [0] * (n - 1)),
         ["input_split_sizes", "sum to 5"]),
        (lambda: comm.all_reduce("not an array", "sum"), ["str"]),
        (lambda: comm.split([(rank + 1) % n] if n > 1 else [5]),
         ["split"]),
    ]
    if libname == "numpy":
        ro = np.ones(4, dtype=np.float32)
        ro.flags.writeable = False
        cases.append((lambda: comm.all_reduce(ro, "sum"), ["read-only"]))
    else:
        import torch
        meta = torch.empty(4, device="meta")
        cases.append((lambda: comm.all_reduce(meta, "sum"), ["meta"]))
    messages = []
    for fn, words in cases:
        messages.append(_expect_invalid(fn, words))
        t = lib.make(np.ones(3), "float32")
        comm.all_reduce(t, shoal.ReduceOp.SUM)
        check(lib, t, np.full(3, float(n)), "float32", "after a bad call")
    return len(messages)


def mismatch(state):
    """Ranks passing different counts: MismatchError on every rank, and
    the communicator is aborted."""
    comm = state.comm
    rank = comm.get_rank()
    t = np.ones(4 + rank, dtype=np.float32)
    try:
        comm.all_reduce(t, shoal.ReduceOp.SUM, timeout=10)
    except shoal.MismatchError as e:
        assert "all_reduce" in str(e), e
        text = str(e)
    else:
        raise AssertionError("no MismatchError")
    try:
        comm.barrier()
    except shoal.ShoalError:
        pass
    else:
        raise AssertionError("an aborted communicator still worked")
    drop(state)
    return text


def op_timeout(state):
    """Rank 0 waits alone past a per-op timeout: CommTimeoutError."""
    comm = state.comm
    rank = comm.get_rank()
    if rank == 0:
        start = time.monotonic()
        try:
            comm.barrier(timeout=0.5)
        except shoal.CommTimeoutError as e:
            took = time.monotonic() - start
            assert took < 5, took
            text = str(e)
        else:
            raise AssertionError("no CommTimeoutError")
    else:
        time.sleep(1.5)
        try:
            comm.barrier(timeout=5)
        except shoal.ShoalError as e:
            text = str(e)
        else:
            raise AssertionError("peer of a timed-out rank saw no error")
    drop(state)
    return text


def gil_released(state):
    """While rank 0 waits in a barrier for rank 1 (which sleeps first), a
    Python thread of rank 0 keeps running: the wait does not hold the GIL.
    An async barrier returns at once and overlaps Python work."""
    import threading
    comm = state.comm
    rank = comm.get_rank()
    if rank != 0:
        time.sleep(0.5)
        comm.barrier()
        time.sleep(0.5)
        comm.barrier()
        return None
    ticks, stop = [0], threading.Event()

    def spin():
        while not stop.is_set():
            ticks[0] += 1

    th = threading.Thread(target=spin)
    th.start()
    comm.barrier()
    stop.set()
    th.join()
    start = time.monotonic()
    work = comm.barrier(async_op=True)
    issued = time.monotonic() - start
    busy = 0
    while not work.is_completed():
        busy += 1  # Python work while the barrier is in flight
    work.wait()
    assert issued < 0.2, issued
    assert ticks[0] > 1000, ticks
    return [ticks[0], busy]
