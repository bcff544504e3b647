"""The short call forms of torch's ProcessGroup methods (pg.allreduce(t,
op), pg.broadcast(t, root), pg.barrier(timeout=...), single-tensor gather
and scatter, ...), on a shoal group and on a gloo group side by side: both
must accept every form and give the same results."""

import json

import pytest

from test_c10d_jobs import code, free_port, job, ok

pytest.importorskip("torch")

FORMS = """
import datetime, json, os, torch, torch.distributed as dist
import shoal  # noqa: F401

rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
SUM, MAX = dist.ReduceOp.SUM, dist.ReduceOp.MAX
sec = datetime.timedelta(seconds=20)
results = {}
for i, backend in enumerate(("gloo", "shoal")):
    port = int(os.environ["TEST_PORTS"].split(",")[i])
    store = dist.TCPStore("127.0.0.1", port, n, rank == 0)
    dist.init_process_group(backend, store=store, rank=rank, world_size=n)
    pg = dist.group.WORLD
    got = {}
    v = lambda: torch.arange(4.0) + 10 * rank

    def run(name, make, call, read):
        t = make()
        w = call(t)
        assert w is not None, name
        w.wait()
        got[name] = read(t)

    run("allreduce([t], op)", v, lambda t: pg.allreduce([t], MAX),
        lambda t: t.tolist())
    run("allreduce(t, op)", v, lambda t: pg.allreduce(t, SUM),
        lambda t: t.tolist())
    run("allreduce(t, op=, timeout=)", v,
        lambda t: pg.allreduce(t, op=MAX, timeout=sec), lambda t: t.tolist())
    run("reduce(t, root, op)", v, lambda t: pg.reduce(t, 1, MAX),
        lambda t: t.tolist() if rank == 1 else None)
    run("broadcast(t, root)", v, lambda t: pg.broadcast(t, 1),
        lambda t: t.tolist())
    run("broadcast(t, root, timeout)", v, lambda t: pg.broadcast(t, 0, sec),
        lambda t: t.tolist())
    outs = [torch.zeros(4) for _ in range(n)]
    run("allgather([o], t)", v, lambda t: pg.allgather(outs, t),
        lambda t: [o.tolist() for o in outs])
    ins = [torch.full((2,), float(rank + r)) for r in range(n)]
    run("reduce_scatter(o, [t], op)", lambda: torch.zeros(2),
        lambda o: pg.reduce_scatter(o, ins, SUM), lambda o: o.tolist())
    run("barrier(timeout=)", lambda: None,
        lambda _: pg.barrier(timeout=sec), lambda _: True)
    run("barrier()", lambda: None, lambda _: pg.barrier(), lambda _: True)
    gouts = [torch.zeros(4) for _ in range(n)] if rank == 0 else []
    run("gather([o], t, root)", v, lambda t: pg.gather(gouts, t, 0),
        lambda t: [o.tolist() for o in gouts])
    sins = [torch.full((3,), float(r)) for r in range(n)] if rank == 1 else []
    run("scatter(t, [i], root)", lambda: torch.zeros(3),
        lambda t: pg.scatter(t, sins, 1), lambda t: t.tolist())
    results[backend] = got
    dist.destroy_process_group()
assert results["shoal"] == results["gloo"], results
print(json.dumps(results["shoal"]))
"""


def test_short_forms_match_gloo():
    ports = ",".join(str(free_port()) for _ in range(2))
    outs = ok(job(2, code(FORMS), extra_env={"TEST_PORTS": ports}))
    got = [json.loads(o) for o in outs]
    assert len(got[0]) == 12, got[0]
    assert got[0]["allreduce(t, op)"] == [10.0, 12.0, 14.0, 16.0], got
    assert got[1]["broadcast(t, root)"] == [10.0, 11.0, 12.0, 13.0], got
    assert got[1]["scatter(t, [i], root)"] == [1.0] * 3, got
