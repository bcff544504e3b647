"""Rank programs of test_window.py.

``python window_ranks.py CASE [ARG]`` runs case_CASE on this rank (ranks,
store and secret from the environment, as harness.spawn sets them) and
prints "ok" when it passed; an assertion ends the rank with a traceback.
"""

import os
import sys
import time

import torch

import shoal


def new_comm(name="win"):
    return shoal.new_comm("shoal", "cpu", name=name,
                          abort_process_on_timeout_or_error=False)


def raises(exc, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        return e
    raise AssertionError(f"{fn.__name__}{args} did not raise {exc.__name__}")


def pattern(rank, it, count, dtype):
    base = torch.arange(count, dtype=torch.int64) * 7 + rank * 131 + it * 3
    if dtype.is_floating_point:
        return (base % 251).to(dtype)  # exact in bfloat16 too
    return (base % 120).to(dtype)


# ---- the ring torchcomms tests ----------------------------------------------


def case_ring(kind, sizes="all"):
    """kind: "shared" (shoal.zeros windows) or "plain" (torch.zeros);
    sizes "all" (4, 1024 and 1M+3 elements) or "small" (the first two)."""
    c = new_comm()
    rank, n = c.get_rank(), c.get_size()
    right, left = (rank + 1) % n, (rank - 1) % n
    counts = (4, 1024, (1 << 20) + 3) if sizes == "all" else (4, 1024)
    for count in counts:
        for dtype in (torch.float32, torch.int32, torch.int8,
                      torch.bfloat16):
            if kind == "shared":
                buf = shoal.zeros(count * n, dtype=dtype, comm=c)
            else:
                buf = torch.zeros(count * n, dtype=dtype)
            win = c.new_window()
            win.tensor_register(buf)
            assert win.get_size() == buf.numel() * buf.element_size()
            assert win.get_tensor() is buf
            assert win.dtype == dtype and win.shape == [count * n]
            for mode in range(4):
                async_put, async_signal = bool(mode & 1), bool(mode & 2)
                # Rounds reuse the window; the large size needs fewer.
                for it in range(10 if count < 1 << 20 else 3):
                    x = pattern(rank, it + 10 * mode, count, dtype)
                    pw = win.put(x, right, rank * count, async_put)
                    sw = win.signal(right, async_signal)
                    win.wait_signal(left, False)
                    got = buf[left * count:(left + 1) * count]
                    want = pattern(left, it + 10 * mode, count, dtype)
                    assert torch.equal(got, want), (count, dtype, mode, it)
                    pw.wait()
                    sw.wait()
                    c.barrier()
            win.tensor_deregister()
            assert win.get_size() == 0 and win.get_tensor() is None
    c.finalize()


# ---- mapped memory ----------------------------------------------------------


def case_map():
    c = new_comm()
    rank, n = c.get_rank(), c.get_size()
    right, left = (rank + 1) % n, (rank - 1) % n
    buf = shoal.zeros(2, 64, dtype=torch.float64, comm=c)
    win = c.new_window(buf)
    attr = win.get_attr(right)
    assert attr.access_type == shoal.WinAccessType.WIN_ACCESS_TYPE_UNIFIED
    peer = win.map_remote_tensor(right)
    assert peer.shape == buf.shape and peer.dtype == buf.dtype
    peer[0] = rank + 0.5  # stores into the right neighbour's buffer
    win.signal(right)
    win.wait_signal(left)
    assert torch.all(buf[0] == left + 0.5), buf[0]
    buf[1] = -rank
    c.barrier()
    assert torch.all(peer[1] == -right)  # loads from its buffer
    win.tensor_deregister()
    assert peer.numel() == 0  # emptied: nothing left to misuse
    # An ordinary tensor is not mapped: the error says what to register.
    plain = torch.zeros(16)
    win.tensor_register(plain, owning=False)
    assert win.get_tensor() is None
    if n > 1:
        assert win.get_attr(right).access_type == \
            shoal.WinAccessType.WIN_ACCESS_TYPE_SEPARATE
        e = raises(shoal.ShoalError, win.map_remote_tensor, right)
        assert "shoal_alloc" in str(e) or "TCP" in str(e), e
    win.tensor_deregister()
    c.finalize()


def case_stale_views():
    """Slices and views of a mapped peer tensor kept past deregistration
    (or past the window's close, or the communicator's finalize) no longer
    reach the peer: the peer's next buffer, at the same place in its heap,
    stays untouched, and a RuntimeWarning names the views left behind."""
    import warnings

    c = new_comm()
    rank, n = c.get_rank(), c.get_size()
    right = (rank + 1) % n
    for how in ("deregister", "close", "finalize"):
        buf = shoal.zeros(64, dtype=torch.float32, comm=c)
        win = c.new_window(buf)
        kept = win.map_remote_tensor(right)[8:56].view(6, 8)  # a view
        kept.fill_(1.0)  # still registered: reaches the peer
        c.barrier()
        assert buf[8:56].eq(1.0).all() and buf[:8].eq(0).all(), buf
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            if how == "deregister":
                win.tensor_deregister()
            elif how == "close":
                win._c.close()
            else:
                c.finalize()
        if how == "deregister":
            assert any("still alive" in str(w.message) for w in seen), seen
        if how == "finalize":
            c = new_comm(name="win2")
        del buf, win
        fresh = shoal.zeros(64, dtype=torch.float32, comm=c)
        c.barrier()
        kept.fill_(7.0)  # misuse: must not reach the peer any more
        c.barrier()
        assert fresh.eq(0).all(), (how, fresh)
        assert kept.eq(7.0).all()  # private memory, still valid
        del fresh, kept
        c.barrier()
    c.finalize()


# ---- bad input --------------------------------------------------------------


def case_errors():
    c = new_comm()
    rank, n = c.get_rank(), c.get_size()
    win = c.new_window()
    assert win.get_size() == 0
    e = raises(shoal.InvalidArgumentError, win.put, torch.ones(2), 0, 0)
    assert "register" in str(e), e
    raises(shoal.InvalidArgumentError, win.signal, 0)
    raises(shoal.InvalidArgumentError, win.wait_signal, 0)
    raises(shoal.InvalidArgumentError, win.tensor_deregister)
    buf = torch.zeros(8)
    e = raises(shoal.InvalidArgumentError, win.tensor_register,
               torch.zeros(4, 4).t())
    assert "contiguous" in str(e), e
    # A negated view's memory holds minus its values: refused, not exposed.
    e = raises(shoal.InvalidArgumentError, win.tensor_register,
               torch._neg_view(torch.zeros(8)))
    assert "resolve_neg" in str(e), e
    win.tensor_register(buf)
    e = raises(shoal.InvalidArgumentError, win.put, torch.ones(4), rank, 6)
    assert "exceeds the window size" in str(e), e
    assert torch.all(buf == 0)  # nothing written
    e = raises(shoal.InvalidArgumentError, win.put,
               torch.ones(2, dtype=torch.int8), rank, 0)
    assert "element sizes" in str(e), e
    raises(shoal.InvalidArgumentError, win.put, torch.ones(1), n, 0)
    raises(shoal.InvalidArgumentError, win.put, torch.ones(1), 0, -1)
    raises(shoal.InvalidArgumentError, win.signal, -1)
    # A strided source is copied: the put still lands.
    win.put(torch.arange(8.0)[::2], rank, 4)
    assert buf[4:].tolist() == [0.0, 2.0, 4.0, 6.0]
    # So is a negated view, with its values.
    win.put(torch._neg_view(torch.arange(2.0)), rank, 4)
    assert buf[4:6].tolist() == [0.0, -1.0]
    e = raises(shoal.InvalidArgumentError, win.tensor_register, buf)
    assert "registered already" in str(e), e
    win.tensor_deregister()
    if n > 1:
        # A peer registering another size: every rank fails, naming it.
        size = 9 if rank == n - 1 else 8
        e = raises(shoal.InvalidArgumentError, win.tensor_register,
                   torch.zeros(size))
        assert f"rank {n - 1}" in str(e), e
    c.finalize()
    e = raises(shoal.ShoalError, win.signal, 0)
    assert "finalized" in str(e), e
    print("errors checked")


# ---- faults ---------------------------------------------------------------


def case_kill():
    c = new_comm()
    rank, n = c.get_rank(), c.get_size()
    win = c.new_window(torch.zeros(8))
    c.barrier()
    if rank == n - 1:
        time.sleep(0.2)
        os.kill(os.getpid(), 9)
    t0 = time.monotonic()
    e = raises(shoal.ShoalError, win.wait_signal, n - 1)
    waited = time.monotonic() - t0
    assert isinstance(e, shoal.PeerError), repr(e)
    assert f"rank {n - 1}" in str(e) and waited < 2.2, (waited, e)
    print(f"wait_signal failed after {waited:.2f} s: {e}")


def case_timeout():
    c = new_comm()
    win = c.new_window(torch.zeros(8))
    if c.get_rank() == 0:
        t0 = time.monotonic()
        raises(shoal.CommTimeoutError, win.wait_signal, 0, timeout=0.3)
        assert time.monotonic() - t0 < 2.0
    else:
        c.finalize()


def case_backend_group():
    """shoal.new_window on a torch.distributed group of backend "shoal"."""
    import torch.distributed as dist

    dist.init_process_group("shoal")
    rank, n = dist.get_rank(), dist.get_world_size()
    win = shoal.new_window(dist.group.WORLD)
    buf = torch.zeros(n, dtype=torch.int64)
    win.tensor_register(buf)
    for dst in range(n):
        win.put(torch.tensor([rank + 100]), dst, rank, async_op=True)
        win.signal(dst)
    for src in range(n):
        win.wait_signal(src)
    assert buf.tolist() == [r + 100 for r in range(n)], buf
    win.tensor_deregister()
    dist.destroy_process_group()


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]](*sys.argv[2:])
    print("ok", flush=True)
