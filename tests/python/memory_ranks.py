"""Rank programs of test_memory.py.

``python memory_ranks.py CASE`` runs case_CASE on this rank (ranks, store
and secret from the environment, as harness.spawn sets them) and prints
"ok" when it passed; an assertion ends the rank with a traceback.
"""

import atexit
import gc
import os
import sys
import threading

import numpy as np


def _late_reader():
    # Registered before shoal is imported, so it runs after shoal's own
    # exit handler: arrays must still be readable then.
    t = _KEEP.get("tensor")
    if t is not None:
        t += 1
        print(f"late sum {float(t.sum()):.0f}", flush=True)


_KEEP = {}
atexit.register(_late_reader)

import torch  # noqa: E402

import shoal  # noqa: E402

SUM = shoal.ReduceOp.SUM


def new_comm(name="mem"):
    return shoal.new_comm("shoal", "cpu", name=name,
                          abort_process_on_timeout_or_error=False)


def live(c):
    """Blocks alive on communicator c."""
    return shoal._C.Block.live_on(c._c)


def raises(exc, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        return e
    raise AssertionError(f"{fn.__name__}{args} did not raise {exc.__name__}")


# ---- allocation, dtypes, shapes --------------------------------------------


def case_basics():
    c = new_comm()
    dtypes = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
              torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64,
              torch.bool, torch.complex64]
    for dt in dtypes:
        t = shoal.empty(3, 5, dtype=dt, comm=c)
        assert t.dtype == dt and tuple(t.shape) == (3, 5), (dt, t)
        assert t.is_contiguous() and t.data_ptr() % 64 == 0
        assert shoal.is_shared(t) and shoal.is_shared(t, c)
        assert shoal.is_shared(t[1:, 2:]) and shoal.is_shared(t.t())
        t.fill_(1)
    for size, shape in (((2, 3), (2, 3)), (([2, 3],), (2, 3)),
                        ((torch.Size([4, 1, 2]),), (4, 1, 2)), ((7,), (7,)),
                        ((0,), (0,)), ((), ()), (((),), ())):
        t = shoal.empty(*size, comm=c)
        assert tuple(t.shape) == shape, (size, t.shape)
        assert t.dtype == torch.get_default_dtype()
    z = shoal.zeros(100, dtype=torch.int32, comm=c)
    assert z.dtype == torch.int32 and int(z.abs().sum()) == 0
    g = shoal.zeros(3, comm=c, requires_grad=True)
    assert g.requires_grad and g.is_leaf
    assert shoal.empty(2, comm=c, array="torch").dtype == torch.float32
    # numpy, by dtype or by request
    for dt in (np.float32, np.float64, np.int8, np.uint8, np.int64, np.bool_,
               np.float16):
        a = shoal.empty((4, 2), dtype=dt, comm=c)
        assert isinstance(a, np.ndarray) and a.dtype == dt
        assert a.shape == (4, 2) and a.flags.c_contiguous and a.flags.writeable
        assert shoal.is_shared(a, c) and shoal.is_shared(a[::2])
    a = shoal.zeros(5, dtype="int16", comm=c, array="numpy")
    assert a.dtype == np.int16 and not a.any()
    assert shoal.empty(0, dtype=np.float32, comm=c).size == 0
    # *_like keep shape, dtype and library
    x = torch.ones(2, 3, dtype=torch.float64)
    y = shoal.zeros_like(x, comm=c)
    assert y.shape == x.shape and y.dtype == x.dtype and not y.any()
    assert shoal.empty_like(x, dtype=torch.int8, comm=c).dtype == torch.int8
    n = shoal.empty_like(np.ones((3, 4), np.int32), comm=c)
    assert isinstance(n, np.ndarray) and n.shape == (3, 4)
    # ordinary memory is not shared
    assert not shoal.is_shared(torch.empty(10))
    assert not shoal.is_shared(np.empty(10))
    # bad arguments
    bad = shoal.InvalidArgumentError
    raises(bad, shoal.empty, -1, comm=c)
    raises(bad, shoal.empty, "x", comm=c)
    raises(bad, shoal.empty, 3, dtype="no_such_type", comm=c)
    raises(bad, shoal.empty, 3, comm=c, array="jax")
    raises(bad, shoal.empty, 3, dtype=torch.float8_e4m3fn, comm=c)
    raises(bad, shoal.empty, 3, dtype=np.float32, requires_grad=True, comm=c)
    raises(bad, shoal.empty, 3)  # no communicator, no process group
    raises(bad, shoal.empty, 3, comm=object())
    e = raises(shoal.ShoalError, shoal._C.Block, c._c, 1 << 62)
    assert "heap" in str(e) or "no room" in str(e), e
    c.all_reduce(torch.ones(1), SUM)  # still usable after the refusal
    c.finalize()
    print("ok")


# ---- collectives on shared memory ------------------------------------------


def case_collectives():
    c = new_comm()
    n, r = c.get_size(), c.get_rank()
    tri = n * (n + 1) // 2
    for dt in (torch.float32, torch.float64, torch.bfloat16, torch.int64,
               torch.int8):
        t = shoal.empty(1000, dtype=dt, comm=c)
        t.fill_(r + 1)
        c.all_reduce(t, SUM)
        assert bool((t == tri).all()), (dt, t[:4])
    a = shoal.empty(1000, dtype=np.float64, comm=c)
    a[:] = r + 1
    c.all_reduce(a, SUM)
    assert (a == tri).all()
    # Large enough for the single-copy algorithms (zero-copy in the heap).
    big = shoal.empty(1 << 20, comm=c)
    big.fill_(r + 1)
    c.all_reduce(big, SUM)
    assert bool((big == tri).all())
    # A view that starts inside a block, and a strided (copied) view.
    big.zero_()
    v = big[1000:301000]
    v.fill_(r)
    c.all_reduce(v, SUM)
    assert bool((v == n * (n - 1) // 2).all()) and float(big[0]) == 0
    s = big[::2][:1000]
    s.fill_(1)
    c.all_reduce(s, SUM)
    assert bool((s == n).all()) and float(big[1]) == 0
    # Shared memory on some ranks only.
    m = shoal.empty(300001, comm=c) if r % 2 == 0 else torch.empty(300001)
    m.fill_(r + 1)
    c.all_reduce(m, SUM)
    assert bool((m == tri).all())
    # Gathers, scatters, broadcast, with the output or both in the heap.
    k = 70000
    inp = shoal.empty(k, comm=c)
    inp.fill_(r + 1)
    out = shoal.zeros(n * k, comm=c)
    c.all_gather_single(out, inp)
    want = torch.arange(1, n + 1, dtype=torch.float32).repeat_interleave(k)
    assert bool((out == want).all())
    rs_out = shoal.zeros(k, comm=c)
    c.reduce_scatter_single(rs_out, out, SUM)
    assert bool((rs_out == n * (r + 1)).all())
    b = shoal.empty(5000, dtype=torch.int32, comm=c)
    b.fill_(r + 7)
    c.broadcast(b, n - 1)
    assert bool((b == n - 1 + 7).all())
    # Async: the Work keeps the memory alive after the caller drops it.
    t = shoal.empty(400000, comm=c)
    t.fill_(1)
    w = c.all_reduce(t, SUM, async_op=True)
    del t
    gc.collect()
    w.wait()
    c.finalize()
    print("ok")


# ---- lifetime --------------------------------------------------------------


def case_lifetime():
    c = new_comm()
    assert live(c) == 0
    t = shoal.empty(1000, comm=c)
    assert live(c) == 1
    v = t[10:20]
    del t
    gc.collect()
    assert live(c) == 1, "a view keeps the block"
    v.fill_(1)
    del v
    gc.collect()
    assert live(c) == 0, "the last view frees the block"
    # Conversions between libraries keep the block too.
    t = shoal.zeros(100, comm=c)
    a = t.numpy()
    del t
    gc.collect()
    assert live(c) == 1
    a[:] = 3
    del a
    gc.collect()
    assert live(c) == 0
    a = shoal.zeros(100, dtype=np.float32, comm=c)
    b = a.reshape(10, 10)[2:]
    t = torch.from_numpy(a)
    del a
    gc.collect()
    assert live(c) == 1
    del b, t
    gc.collect()
    assert live(c) == 0
    # A capsule nobody consumed frees its block.
    blk = shoal._C.Block(c._c, 64)
    cap = blk.dlpack((16,), 2, 32)
    del blk
    assert live(c) == 1
    del cap
    gc.collect()
    assert live(c) == 0
    raises(shoal.InvalidArgumentError, shoal._C.Block(c._c, 16).dlpack,
           (8,), 2, 32)
    # Freed from another thread (torch's deleter takes the GIL itself).
    box = [shoal.zeros(1000, comm=c)]
    th = threading.Thread(target=box.clear)
    th.start()
    th.join()
    gc.collect()
    assert live(c) == 0
    # Freed memory is reused: 20 x 16 MiB through a 256 MiB heap (the
    # test sets SHOAL_SHM_HEAP_BYTES).
    for _ in range(20):
        t = shoal.empty(4 << 20, comm=c)
        t.fill_(1)
        del t
    # Running out raises, and the communicator stays usable.
    keep = [shoal.empty(8 << 20, comm=c) for _ in range(7)]  # 224 MiB
    raises(shoal.ShoalError, shoal.empty, 16 << 20, comm=c)  # 64 MiB
    del keep
    gc.collect()
    x = shoal.empty(4 << 20, comm=c)
    x.fill_(1)
    c.all_reduce(x, SUM)
    assert bool((x == c.get_size()).all())
    del x
    gc.collect()
    assert live(c) == 0
    c.finalize()
    print("ok")


# ---- finalize and exit -----------------------------------------------------


def case_finalize():
    c = new_comm()
    n = c.get_size()
    t = shoal.zeros(300000, comm=c)
    tail = t[5:]
    t += 1
    c.all_reduce(t, SUM)
    c.finalize()
    # The communicator is gone for operations, its memory is not.
    assert c._c.finalized and live(c) == 1
    t += 1
    assert float(t.sum()) == 300000 * (n + 1)
    raises(shoal.ShoalError, c.all_reduce, t, SUM)
    raises(shoal.ShoalError, shoal.empty, 10, comm=c)
    del t
    gc.collect()
    tail.fill_(2)
    assert live(c) == 1
    del tail
    gc.collect()
    assert live(c) == 0  # the last block destroyed the communicator
    c.finalize()  # idempotent
    # A fresh communicator works after that.
    d = new_comm("again")
    x = shoal.zeros(1, comm=d)
    x += 1
    d.all_reduce(x, SUM)
    assert float(x) == n
    d.finalize()
    print("ok")


def case_exit_with_arrays():
    """Arrays alive at exit, their communicator finalized or not (argv):
    the ranks must part cleanly (no peer reported dead) and exit code
    running after shoal's exit handler must still read the memory."""
    c = new_comm()
    t = shoal.zeros(100000, comm=c)
    n_arr = shoal.zeros(1000, dtype=np.float32, comm=c)
    c.all_reduce(t, SUM)
    n_arr += 1
    _KEEP["tensor"] = t
    _KEEP["numpy"] = n_arr
    if sys.argv[2] == "finalize":
        c.finalize()
    print("ok", flush=True)


def case_split():
    c = new_comm()
    r, n = c.get_rank(), c.get_size()
    sub = c.split([0, 1] if r < 2 else [])
    if sub is not None:
        t = shoal.empty(200000, comm=sub)
        assert shoal.is_shared(t, sub) and not shoal.is_shared(t, c)
        t.fill_(r + 1)
        sub.all_reduce(t, SUM)
        assert bool((t == 3).all())
        sub.finalize()  # arrays still alive: deferred
        t += 1
    w = shoal.zeros(200000, comm=c)
    w += 1
    c.all_reduce(w, SUM)  # the parent is unaffected
    assert bool((w == n).all())
    if sub is not None:
        del t
        gc.collect()
        assert live(sub) == 0
    c.finalize()
    print("ok")


def case_share_memory():
    c = new_comm()
    n, r = c.get_size(), c.get_rank()
    x = torch.arange(300000, dtype=torch.float32)
    view = x[100:200]
    ptr = x.data_ptr()
    assert shoal.share_memory_(x, comm=c) is x
    assert x.data_ptr() != ptr and shoal.is_shared(x, c)
    assert shoal.is_shared(view, c), "views of the storage follow"
    assert float(view[0]) == 100 and float(x[-1]) == 299999
    assert live(c) == 1
    shoal.share_memory_(x, comm=c)  # already shared: unchanged
    assert live(c) == 1
    x.fill_(r + 1)
    c.all_reduce(x, SUM)
    assert bool((view == n * (n + 1) // 2).all())
    del x
    gc.collect()
    assert live(c) == 1
    del view
    gc.collect()
    assert live(c) == 0
    raises(shoal.InvalidArgumentError, shoal.share_memory_, np.zeros(3),
           comm=c)
    c.finalize()
    print("ok")


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]]()
