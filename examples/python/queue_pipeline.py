"""A data pipeline over shoal queues: rank 0 loads batches, the other
ranks train on them.

    shoalrun -n 3 python examples/python/queue_pipeline.py
    torchrun --nproc-per-node 3 examples/python/queue_pipeline.py

Every consumer rank has a queue of its own, located on it. Rank 0 (the
loader) makes batches of a linear regression problem and deals them out
in turn; each batch is one transaction (its number, inputs and
targets arrive together, or not at all). The loader never waits for a
consumer to ask: a put returns once the batch is on its way, and a
consumer that falls behind only makes its queue longer, up to
SHOAL_QUEUE_CAPACITY. A consumer gets a batch, takes one SGD step on its
own copy of the model, and after the last batch finds a sentinel (None
for a number); it sends its summary back to rank 0 through a queue
located there.
"""

import os
import time

import torch

import shoal

torchrun = "RANK" in os.environ and "SHOAL_RANK" not in os.environ
if torchrun:
    import torch.distributed as dist

    dist.init_process_group("shoal")
    comm = dist.group.WORLD.comm
else:
    comm = shoal.new_comm("shoal", "cpu", name="queue_pipeline")
rank, world = comm.get_rank(), comm.get_size()
if world < 2:
    raise SystemExit("queue_pipeline: run it on 2 ranks or more")

FEATURES, BATCH, BATCHES = 16, 32, 60
consumers = list(range(1, world))

# Unnamed queues are created by every rank together, in the same order.
inbox = {r: shoal.Queue(comm, r) for r in consumers}  # batches, on r
reports = shoal.Queue(comm, 0)  # summaries, on the loader

if rank == 0:
    gen = torch.Generator().manual_seed(0)
    true_w = torch.randn(FEATURES, 1, generator=gen)
    t0 = time.perf_counter()
    for i in range(BATCHES):
        x = torch.randn(BATCH, FEATURES, generator=gen)
        y = x @ true_w + 0.01 * torch.randn(BATCH, 1, generator=gen)
        with inbox[consumers[i % len(consumers)]].transaction() as tx:
            tx.put_object(i)
            tx.put_tensor(x)  # kept by reference until the block exits
            tx.put_tensor(y)
    for r in consumers:
        inbox[r].put_object(None)  # the sentinel: no more batches
    loaded = time.perf_counter() - t0
    summaries = sorted((reports.get_object(timeout=60)
                        for _ in consumers), key=lambda s: s["rank"])
    for s in summaries:
        print(f"rank {s['rank']}: {s['steps']} steps, loss "
              f"{s['first']:.3f} -> {s['last']:.4f}", flush=True)
    steps = sum(s["steps"] for s in summaries)
    assert steps == BATCHES, summaries
    assert all(s["last"] < s["first"] for s in summaries), summaries
    print(f"pipeline ok: {BATCHES} batches loaded in {loaded * 1e3:.1f} ms "
          f"for {len(consumers)} consumers", flush=True)
else:
    torch.manual_seed(rank)
    model = torch.nn.Linear(FEATURES, 1, bias=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses, last = [], -1
    while True:
        i = inbox[rank].get_object(timeout=60)
        if i is None:
            break
        assert i > last  # one sender: its order is kept
        x = inbox[rank].get_tensor()  # same transaction: here already
        y = inbox[rank].get_tensor()
        last = i
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    reports.put_object({"rank": rank, "steps": len(losses),
                        "first": losses[0], "last": losses[-1]})

comm.barrier()
if torchrun:
    dist.destroy_process_group()
else:
    comm.finalize()
