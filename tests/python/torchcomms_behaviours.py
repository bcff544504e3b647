"""What torchcomms' own integration tests check, as one program run under
a launcher (torchrun or shoalrun; see test_launch.py).

Like those tests, every behaviour makes its own communicator from the
launch environment and finalizes it, so communicators are created and
destroyed one after another without a store passed in. Each checks its
results for several dtypes, synchronously and with async_op, and prints
"<name> ok" once done.
"""

import os
import sys

import torch

import shoal

DTYPES = [torch.float32, torch.int32, torch.int8]
COUNTS = [1, 1024]


def new():
    return shoal.new_comm("shoal", "cpu", name="behaviours",
                          abort_process_on_timeout_or_error=False)


def value(rank, count, dtype, salt=0):
    """Rank r's input: r + salt + 1 everywhere (small, so int8 sums fit)."""
    return torch.full((count,), rank + salt + 1, dtype=dtype)


def done(work, async_op):
    if async_op:
        work.wait()
        assert work.is_completed()


def cases():
    for dtype in DTYPES:
        for count in COUNTS:
            for async_op in (False, True):
                yield dtype, count, async_op


def all_reduce(c, r, n):
    for dtype, count, async_op in cases():
        for op, want in ((shoal.ReduceOp.SUM, n * (n + 1) // 2),
                         (shoal.ReduceOp.MAX, n)):
            t = value(r, count, dtype)
            done(c.all_reduce(t, op, async_op=async_op), async_op)
            assert torch.equal(t, torch.full_like(t, want)), (op, t)


def broadcast(c, r, n):
    for dtype, count, async_op in cases():
        for root in range(n):
            t = value(r, count, dtype)
            done(c.broadcast(t, root, async_op=async_op), async_op)
            assert torch.equal(t, value(root, count, dtype)), t


def reduce(c, r, n):
    for dtype, count, async_op in cases():
        root = count % n
        t = value(r, count, dtype)
        done(c.reduce(t, root, shoal.ReduceOp.SUM, async_op=async_op),
             async_op)
        if r == root:
            assert torch.equal(t, torch.full_like(t, n * (n + 1) // 2))


def all_gather(c, r, n):
    for dtype, count, async_op in cases():
        outs = [torch.zeros(count, dtype=dtype) for _ in range(n)]
        done(c.all_gather(outs, value(r, count, dtype), async_op=async_op),
             async_op)
        assert all(torch.equal(o, value(p, count, dtype))
                   for p, o in enumerate(outs))
        out = torch.zeros(n * count, dtype=dtype)
        done(c.all_gather_single(out, value(r, count, dtype),
                                 async_op=async_op), async_op)
        assert torch.equal(out, torch.cat([value(p, count, dtype)
                                           for p in range(n)]))


def reduce_scatter(c, r, n):
    for dtype, count, async_op in cases():
        ins = [value(r, count, dtype, salt=p) for p in range(n)]
        out = torch.zeros(count, dtype=dtype)
        done(c.reduce_scatter(out, ins, shoal.ReduceOp.SUM,
                              async_op=async_op), async_op)
        want = sum(q + r + 1 for q in range(n))
        assert torch.equal(out, torch.full_like(out, want)), out
        out = torch.zeros(count, dtype=dtype)
        done(c.reduce_scatter_single(out, torch.cat(ins), shoal.ReduceOp.SUM,
                                     async_op=async_op), async_op)
        assert torch.equal(out, torch.full_like(out, want)), out


def all_to_all(c, r, n):
    for dtype, count, async_op in cases():
        ins = [value(r, count, dtype, salt=p) for p in range(n)]
        outs = [torch.zeros(count, dtype=dtype) for _ in range(n)]
        done(c.all_to_all(outs, ins, async_op=async_op), async_op)
        assert all(torch.equal(o, value(p, count, dtype, salt=r))
                   for p, o in enumerate(outs))
        out = torch.zeros(n * count, dtype=dtype)
        done(c.all_to_all_single(out, torch.cat(ins), async_op=async_op),
             async_op)
        assert torch.equal(out, torch.cat(outs))
        # v: rank p sends p + q + 1 elements to rank q.
        sends = [r + q + 1 for q in range(n)]
        recvs = [p + r + 1 for p in range(n)]
        inp = torch.cat([value(r, k, dtype, salt=q)
                         for q, k in enumerate(sends)])
        out = torch.zeros(sum(recvs), dtype=dtype)
        done(c.all_to_all_v_single(out, inp, recvs, sends,
                                   async_op=async_op), async_op)
        assert torch.equal(out, torch.cat([value(p, k, dtype, salt=r)
                                           for p, k in enumerate(recvs)]))


def send_recv(c, r, n):
    nxt, prv = (r + 1) % n, (r - 1) % n
    for dtype, count, async_op in cases():
        got = torch.zeros(count, dtype=dtype)
        if async_op:  # both posted before either is waited
            ws = [c.send(value(r, count, dtype), nxt, async_op=True),
                  c.recv(got, prv, async_op=True)]
            for w in ws:
                w.wait()
        elif r % 2 == 0:  # even ranks send first, odd ones receive first
            c.send(value(r, count, dtype), nxt)
            c.recv(got, prv)
        else:
            c.recv(got, prv)
            c.send(value(r, count, dtype), nxt)
        assert torch.equal(got, value(prv, count, dtype)), got


def batch_send_recv(c, r, n):
    nxt, prv = (r + 1) % n, (r - 1) % n
    for dtype, count, async_op in cases():
        got = torch.zeros(count, dtype=dtype)
        back = torch.zeros(count, dtype=dtype)
        batch = c.batch_op_create()
        batch.send(value(r, count, dtype), nxt)  # sends first everywhere
        batch.send(value(r, count, dtype, salt=1), prv)
        batch.recv(got, prv)
        batch.recv(back, nxt)
        assert [op.type for op in batch.ops] == ["send", "send", "recv",
                                                 "recv"]
        done(batch.issue(async_op), async_op)
        assert torch.equal(got, value(prv, count, dtype))
        assert torch.equal(back, value(nxt, count, dtype, salt=1))


def scatter_gather(c, r, n):
    for dtype, count, async_op in cases():
        root = count % n
        ins = ([value(p, count, dtype, salt=root) for p in range(n)]
               if r == root else [])
        out = torch.zeros(count, dtype=dtype)
        done(c.scatter(out, ins, root, async_op=async_op), async_op)
        assert torch.equal(out, value(r, count, dtype, salt=root))
        outs = ([torch.zeros(count, dtype=dtype) for _ in range(n)]
                if r == root else [])
        done(c.gather(outs, value(r, count, dtype), root,
                      async_op=async_op), async_op)
        assert all(torch.equal(o, value(p, count, dtype))
                   for p, o in enumerate(outs))


def split(c, r, n):
    evens = [p for p in range(n) if p % 2 == 0]
    odds = [p for p in range(n) if p % 2 == 1]
    mine = evens if r % 2 == 0 else odds
    sub = c.split(mine, name=f"half{r % 2}")
    assert sub.get_size() == len(mine) and sub.get_rank() == mine.index(r)
    t = value(r, 8, torch.float32)
    sub.all_reduce(t, shoal.ReduceOp.SUM)
    assert torch.equal(t, torch.full_like(t, sum(p + 1 for p in mine)))
    assert c.split([], name="nobody") is None
    sub.finalize()


def multi_comm(c, r, n):
    """Two more communicators beside c; operations interleaved on all."""
    others = [new() for _ in range(2)]
    works = []
    for i, comm in enumerate([c] + others):
        t = value(r, 64, torch.float32, salt=i)
        works.append((t, i, comm.all_reduce(t, shoal.ReduceOp.SUM,
                                            async_op=True)))
    for t, i, w in works:
        w.wait()
        assert torch.equal(t, torch.full_like(
            t, sum(p + i + 1 for p in range(n))))
    for comm in others:
        comm.finalize()


def options(c, r, n):
    opts = c.get_options()
    assert opts.abort_process_on_timeout_or_error is False
    assert opts.timeout.total_seconds() == c.get_timeout()
    assert opts.name == c.get_name()


BEHAVIOURS = [all_reduce, broadcast, reduce, all_gather, reduce_scatter,
              all_to_all, send_recv, batch_send_recv, scatter_gather, split,
              multi_comm, options]


def main():
    names = sys.argv[1:] or [b.__name__ for b in BEHAVIOURS]
    for b in BEHAVIOURS:
        if b.__name__ not in names:
            continue
        c = new()
        b(c, c.get_rank(), c.get_size())
        c.barrier()
        c.finalize()
        print(f"{b.__name__} ok rank {os.environ.get('RANK', '?')}",
              flush=True)


if __name__ == "__main__":
    main()
