"""The rank side of test_compile_op.py: `python compile_op_ranks.py SCENARIO
[ARGS]` on every rank of a torchrun-style job (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT). Each scenario checks element by element and
prints "ok SCENARIO" at the end; any failure raises."""

import os
import random
import sys

import torch
import torch.distributed as dist
from torch.distributed.tensor import (DeviceMesh, DTensor, Partial,
                                      Replicate, Shard, distribute_tensor)

import shoal

RANK = int(os.environ["RANK"])
SIZE = int(os.environ["WORLD_SIZE"])


def init():
    dist.init_process_group("shoal")
    return dist.group.WORLD


def global_input(shape, rank, dtype=torch.float32):
    """Rank r's view of the global tensor: distinct per rank and element."""
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(n, dtype=torch.float64).reshape(shape) +
            1000 * rank).to(dtype)


def box(t, offset, shape):
    return t[tuple(slice(o, o + s) for o, s in zip(offset, shape))]


def check_equal(got, want, what):
    if not torch.equal(got, want):
        bad = (got != want).nonzero()[:5].tolist()
        raise AssertionError(f"rank {RANK} {what}: differs at {bad}:\n"
                             f"got {got}\nwant {want}")


# ---- the spec's 8 examples ---------------------------------------------------

def example_specs(k, r, n):
    """(shape, inputs, outputs, reduction) of example k for rank r."""
    if k == 1:  # rank 0 sends a 2x4 tensor; every other rank receives it
        return ([2, 4], [{"offset": [0, 0], "shape": [2, 4]}] if r == 0
                else None, None if r == 0 else
                [{"offset": [0, 0], "shape": [2, 4]}], None)
    if k == 2:  # scatter from rank 0
        shape = [(n - 1) * 2, 4]
        return (shape, [{"offset": [0, 0], "shape": shape}] if r == 0
                else None, None if r == 0 else
                [{"offset": [(r - 1) * 2, 0], "shape": [2, 4]}], None)
    if k == 3:  # gather into rank 0
        shape = [(n - 1) * 2, 4]
        return (shape, None if r == 0 else
                [{"offset": [(r - 1) * 2, 0], "shape": [2, 4]}],
                [{"offset": [0, 0], "shape": shape}] if r == 0 else None,
                None)
    if k == 4:  # all-gather
        return ([n * 2, 4], [{"offset": [r * 2, 0], "shape": [2, 4]}],
                [{"offset": [0, 0], "shape": [n * 2, 4]}], None)
    if k == 5:  # reduce-scatter
        return ([n * 2, 4], [{"offset": [0, 0], "shape": [n * 2, 4]}],
                [{"offset": [r * 2, 0], "shape": [2, 4]}], "sum")
    if k == 6:  # ring
        return ([n * 2, 4], [{"offset": [(r + 1) % n * 2, 0],
                              "shape": [2, 4]}],
                [{"offset": [r * 2, 0], "shape": [2, 4]}], None)
    if k == 7:  # all-reduce
        return ([4, 8], [{"offset": [0, 0], "shape": [4, 8]}],
                [{"offset": [0, 0], "shape": [4, 8]}], "sum")
    raise ValueError(k)


def expected_output(k, spec_of, n, r, out_box):
    """The reference for rank r's output box: last covering input wins
    (highest rank, then last listed), or the sum over covering inputs."""
    shape, _, _, reduction = spec_of(0)
    want = torch.zeros(out_box["shape"])
    count = torch.zeros(out_box["shape"])
    for s in range(n):
        _, ins, _, _ = spec_of(s)
        g = global_input(shape, s)
        for b in ins or []:
            mask = torch.zeros(shape, dtype=torch.bool)
            box(mask, b["offset"], b["shape"]).fill_(True)
            m = box(mask, out_box["offset"], out_box["shape"])
            v = box(g, out_box["offset"], out_box["shape"])
            if reduction == "sum":
                want = torch.where(m, want + v, want)
            else:
                want = torch.where(m, v, want)
            count += m
    assert (count > 0).all()
    return want


def scenario_examples(group):
    n = SIZE
    for k in range(1, 8):
        def spec_of(r, k=k):
            return example_specs(k, r, n)
        shape, ins, outs, reduction = spec_of(RANK)
        op = shoal.compile_op(group, shape=shape, dtype=torch.float32,
                              inputs=ins, outputs=outs, reduction=reduction)
        g = global_input(shape, RANK)
        in_t = [box(g, b["offset"], b["shape"]).clone() for b in ins or []]
        for run in range(2):  # one compiled op runs many times
            out_t = [torch.full(b["shape"], -1.0) for b in outs or []]
            fut = op(in_t, out_t)
            fut.wait()
            for b, t in zip(outs or [], out_t):
                check_equal(t, expected_output(k, spec_of, n, RANK, b),
                            f"example {k} run {run}")
    # Example 8: DTensor redistribution Shard(0) -> Shard(1).
    mesh = DeviceMesh("cpu", torch.arange(n))
    full = global_input([2 * n, 4 * n], 0)
    src = distribute_tensor(full, mesh, [Shard(0)])
    dst = distribute_tensor(torch.empty(2 * n, 4 * n), mesh, [Shard(1)])
    op = shoal.compile_op(group, inputs=[src], outputs=[dst])
    op([src.to_local()], [dst.to_local()])  # dropped Future: waits
    check_equal(dst.to_local(), box(full, [0, 4 * RANK], [2 * n, 4]),
                "example 8")


# ---- randomized property test ------------------------------------------------

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32,
          torch.int64, torch.float16, torch.bfloat16, torch.float32,
          torch.float64]
REDUCTIONS = [None, "sum", "prod", "min", "max", "avg"]


def random_box(rng, shape, inside=None):
    off, ext = [], []
    for d, s in enumerate(shape):
        lo0, length = (inside[0][d], inside[1][d]) if inside else (0, s)
        lo = lo0 + rng.randrange(length) if length > 0 else lo0
        off.append(lo)
        ext.append(1 + rng.randrange(lo0 + length - lo))
    return off, ext


def random_job(seed, n):
    rng = random.Random(seed)
    ndim = rng.randint(1, 4)
    shape = [rng.randint(1, 9 if ndim <= 2 else 5) for _ in range(ndim)]
    reduction = rng.choice(REDUCTIONS)
    dtypes = [d for d in DTYPES if not (reduction == "avg" and d ==
                                        torch.bool)]
    dtype = rng.choice(dtypes)
    ins = [[random_box(rng, shape) for _ in range(rng.randrange(3))]
           for _ in range(n)]
    if not any(ins):
        ins[0] = [([0] * ndim, list(shape))]
    flat = [b for boxes in ins for b in boxes]
    outs = [[random_box(rng, shape, rng.choice(flat))
             for _ in range(rng.randrange(3))] for _ in range(n)]
    layouts = [[rng.randrange(3) for _ in range(8)] for _ in range(n)]
    return shape, dtype, reduction, ins, outs, layouts


def values(seed, r, i, shape, dtype, reduction):
    gen = torch.Generator().manual_seed(seed * 1000 + r * 10 + i)
    lo, hi = (-2, 3) if reduction == "prod" else (-50, 51)
    if dtype == torch.uint8:
        lo, hi = 0, hi
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    return torch.randint(lo, hi, shape, generator=gen).to(dtype)


def with_layout(t, layout):
    """t's values in a tensor of another layout: 0 contiguous, 1 every
    other element of a wider tensor, 2 transposed storage."""
    if layout == 1 and t.dim() > 0:
        wide = torch.zeros(*t.shape[:-1], t.shape[-1] * 2, dtype=t.dtype)
        view = wide[..., ::2]
        view.copy_(t)
        return view
    if layout == 2 and t.dim() > 1:
        return t.t().contiguous().t() if t.dim() == 2 else \
            t.permute(*reversed(range(t.dim()))).contiguous().permute(
                *reversed(range(t.dim())))
    return t.clone()


def combine(reduction, acc, v, count):
    if reduction is None:
        return v
    if acc.dtype == torch.bool:
        return {"sum": acc | v, "max": acc | v, "prod": acc & v,
                "min": acc & v}[reduction]
    if reduction in ("sum", "avg"):
        return acc + v
    if reduction == "prod":
        return acc * v
    return torch.minimum(acc, v) if reduction == "min" else \
        torch.maximum(acc, v)


def reference(shape, dtype, reduction, ins_all, data, out_box):
    """Rank 0's reference: every input gathered, combined in (rank, input)
    order, in float32 for the half types as shoal does."""
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else \
        dtype
    want = torch.zeros(out_box[1], dtype=work)
    seen = torch.zeros(out_box[1], dtype=torch.int64)
    for r, boxes in enumerate(ins_all):
        for i, (off, ext) in enumerate(boxes):
            full = torch.zeros(shape, dtype=work)
            mask = torch.zeros(shape, dtype=torch.bool)
            box(full, off, ext).copy_(data[r][i].to(work))
            box(mask, off, ext).fill_(True)
            m = box(mask, *out_box)
            v = box(full, *out_box)
            first = m & (seen == 0)
            later = m & (seen > 0)
            want = torch.where(first, v, want)
            want = torch.where(later, combine(reduction, want, v, seen),
                               want)
            seen += m
    if reduction == "avg":
        if work.is_floating_point:
            want = want / seen.to(work)
        else:
            want = torch.div(want, seen, rounding_mode="trunc").to(work)
    return want.to(dtype)


def scenario_random(group, jobs="30", first="1"):
    for seed in range(int(first), int(first) + int(jobs)):
        shape, dtype, reduction, ins, outs, layouts = random_job(seed, SIZE)
        mine_in = [values(seed, RANK, i, b[1], dtype, reduction)
                   for i, b in enumerate(ins[RANK])]
        op = shoal.compile_op(
            group, shape=shape, dtype=dtype, reduction=reduction,
            inputs=[{"offset": o, "shape": s} for o, s in ins[RANK]],
            outputs=[{"offset": o, "shape": s} for o, s in outs[RANK]])
        in_t = [with_layout(t, layouts[RANK][i])
                for i, t in enumerate(mine_in)]
        out_t = [with_layout(torch.zeros(s, dtype=dtype),
                             layouts[RANK][4 + i])
                 for i, (_, s) in enumerate(outs[RANK])]
        op(in_t, out_t).wait()
        # The reference gathers everything into rank 0.
        gathered = [None] * SIZE if RANK == 0 else None
        dist.gather_object((mine_in, [t.clone() for t in out_t]), gathered,
                           dst=0)
        if RANK == 0:
            data = [g[0] for g in gathered]
            for r in range(SIZE):
                for o, ob in enumerate(outs[r]):
                    want = reference(shape, dtype, reduction, ins, data, ob)
                    check_equal(gathered[r][1][o], want,
                                f"seed {seed} rank {r} outputs[{o}] "
                                f"({dtype}, {reduction})")


# ---- DTensor redistributions -------------------------------------------------

def meshes():
    yield "1d", DeviceMesh("cpu", torch.arange(SIZE)), 1
    if SIZE == 4:
        yield "2d", DeviceMesh("cpu", torch.arange(4).reshape(2, 2)), 2


CASES = [
    ("shard0->shard1", [Shard(0)], [Shard(1)]),
    ("shard->replicate", [Shard(0)], [Replicate()]),
    ("replicate->shard", [Replicate()], [Shard(1)]),
    ("partial->replicate", [Partial()], [Replicate()]),
    ("partial->shard", [Partial()], [Shard(0)]),
]


def placements_for(p, ndim):
    if ndim == 1:
        return p
    # 2-D mesh: the case's placement on mesh dim 0, something else on 1.
    other = {"Shard": Shard(1) if p[0] == Shard(0) else Shard(0)}
    return [p[0], other.get(type(p[0]).__name__, Replicate())]


def partial_source(mesh, placements):
    """Partial along mesh dim 0 (replicated along dim 1, if any): the
    partial values sum to arange(70) * (1 + 2 + ...)."""
    coord = mesh.get_coordinate()
    local = torch.arange(70.0).reshape(7, 10) * (coord[0] + 1)
    return DTensor.from_local(local, mesh, placements, run_check=False)


def scenario_dtensor(group):
    for mesh_name, mesh, mdim in meshes():
        for name, src_p, dst_p in CASES:
            src_p = placements_for(src_p, mdim)
            dst_p = placements_for(dst_p, mdim)
            if isinstance(src_p[0], Partial):
                src = partial_source(mesh, src_p)
            else:  # 7 x 10: uneven shards on purpose
                src = distribute_tensor(global_input([7, 10], 0), mesh,
                                        src_p)
            want = src.redistribute(mesh, dst_p).to_local()
            # The output spec is a meta DTensor (no data).
            meta = DTensor.from_local(
                torch.empty(want.shape, device="meta"), mesh, dst_p,
                run_check=False, shape=src.shape, stride=src.stride())
            red = "sum" if isinstance(src_p[0], Partial) else None
            op = shoal.compile_op(group, inputs=[src], outputs=[meta],
                                  reduction=red)
            out = torch.full(want.shape, -1.0)
            op([src.to_local()], [out]).wait()
            check_equal(out, want, f"{mesh_name} {name} {src_p}->{dst_p}")


# ---- errors and semantics ------------------------------------------------------

def expect_error(fn, needle):
    try:
        fn()
    except shoal.InvalidArgumentError as e:
        assert needle in str(e), (needle, str(e))
        return str(e)
    raise AssertionError(f"rank {RANK}: no error (wanted {needle!r})")


def scenario_errors(group):
    last = SIZE - 1
    g = [{"offset": [0, 0], "shape": [4, 4]}]

    def compile_with(**kw):
        args = dict(shape=[4, 4], dtype=torch.float32, inputs=g, outputs=g)
        args.update(kw)
        return shoal.compile_op(group, **args)

    expect_error(lambda: compile_with(
        shape=[4, 5] if RANK == last else [4, 4]),
        "ranks disagree on the global shape")
    expect_error(lambda: compile_with(
        dtype=torch.int32 if RANK == last else torch.float32),
        "ranks disagree on the dtype")
    expect_error(lambda: compile_with(
        outputs=[{"offset": [2, 0], "shape": [4, 4]}] if RANK == last
        else g), f"rank {last}'s outputs[0] (offset [2, 0], shape [4, 4]) "
        "lies outside the global shape [4, 4]")
    expect_error(lambda: compile_with(
        inputs=[{"offset": [0, 0], "shape": [2, 4]}]),
        "elements [2:4, 0:4] of rank 0's outputs[0]")
    expect_error(lambda: compile_with(
        inputs=[{"offset": [0], "shape": [4, 4]}] if RANK == last else g),
        f"rank {last}: inputs[0] has offset [0] and shape [4, 4], but the "
        "global shape has 2 dimensions")
    expect_error(lambda: compile_with(
        inputs=[{"offset": ["a", 0], "shape": [4, 4]}] if RANK == last
        else g), "must be a list of integers")
    expect_error(lambda: compile_with(reduction="median"),
                 "unknown reduction 'median'")
    # Whatever one rank's arguments raise, every rank fails together.
    expect_error(lambda: compile_with(inputs=5 if RANK == last else g),
                 f"rank {last}: TypeError")
    expect_error(lambda: compile_with(
        inputs=[{"offset": [2 ** 63, 0], "shape": [4, 4]}] if RANK == last
        else g), f"rank {last}: ")
    expect_error(lambda: compile_with(
        inputs=[{"offset": [0, 0], "shape": [2 ** 40, 2 ** 40]}]
        if RANK == last else g), "lies outside")
    mesh = DeviceMesh("cpu", torch.arange(SIZE))
    part = DTensor.from_local(torch.ones(4, 4), mesh, [Partial()],
                              run_check=False)
    expect_error(lambda: shoal.compile_op(group, inputs=[part],
                                          outputs=g),
                 "is Partial(sum) on mesh dimension 0: pass reduction='sum'")
    # Bad tensors on one rank: every rank raises, nothing is sent.
    op = compile_with(reduction="sum")
    a = torch.full((4, 4), float(RANK))
    b = torch.zeros(4, 4)
    expect_error(lambda: op([torch.zeros(3, 4) if RANK == last else a],
                            [b]), "nothing was sent")
    expect_error(lambda: op([a.to(torch.float64) if RANK == 0 else a], [b]),
                 "nothing was sent")
    expect_error(lambda: op([a, a], [b]), "2 input tensors given, the op "
                 "was compiled with 1")
    expect_error(lambda: op(["not a tensor"] if RANK == 0 else [a], [b]),
                 "nothing was sent")
    # The op and the group still work.
    op([a], [b]).wait()
    check_equal(b, torch.full((4, 4), float(sum(range(SIZE)))), "after")
    t = torch.ones(2)
    dist.all_reduce(t)
    assert t.tolist() == [SIZE, SIZE]


def scenario_semantics(group):
    # find_process_group: by torch's group name and the comm's name.
    assert shoal.find_process_group(group.group_name) is group
    assert shoal.find_process_group("no such group") is None
    sub = shoal.new_comm("shoal", "cpu", name="dup")
    sub2 = shoal.new_comm("shoal", "cpu", name="dup")
    expect_error(lambda: shoal.find_process_group("dup"),
                 "2 live groups are named 'dup'")
    sub2.finalize()
    del sub2
    assert shoal.find_process_group("dup") is sub
    # A Comm works as the group; its op raises once it is finalized.
    g = [{"offset": [0], "shape": [8]}]
    op = shoal.compile_op(sub, shape=[8], dtype=torch.int64, inputs=g,
                          outputs=g, reduction="max")
    x = torch.arange(8) * RANK
    y = torch.zeros(8, dtype=torch.int64)
    f = op([x], [y])
    while not f.done():
        pass
    f.wait()
    check_equal(y, torch.arange(8) * (SIZE - 1), "max")
    # A second call finishes the first run if its Future is still out.
    f1 = op([x * 2], [y])
    f2 = op([x * 3], [y])
    f1.wait()
    f2.wait()
    check_equal(y, torch.arange(8) * 3 * (SIZE - 1), "second run")
    assert op.bytes[0] >= 0 and "plan #" in op.describe()
    sub.finalize()
    try:
        op([x], [y])
    except shoal.ShoalError as e:
        assert "finalized" in str(e), e
    else:
        raise AssertionError("op on a finalized communicator ran")


# ---- several tensors (tensor_id) ----------------------------------------------

def split(total, r, n):
    """Rank r's [lo, hi) of `total` split unevenly over n ranks."""
    base, extra = divmod(total, n)
    lo = r * base + min(r, extra)
    return lo, lo + base + (r < extra)


def fill(shape, rank, dtype, salt=0):
    """Distinct small values per rank and element, exact in every dtype."""
    n = 1
    for d in shape:
        n *= d
    v = (torch.arange(n, dtype=torch.int64) * 3 + 17 * rank + salt) % 251
    v = v.reshape(shape)
    return (v % 2 == 0) if dtype == torch.bool else v.to(dtype)


def region(offset, shape, tid):
    return {"offset": offset, "shape": shape, "tensor_id": tid}


def gather_layer(group, dtype):
    """A weight [2n + 1, 3] and a bias [n + 2] (int tensor_id 7), each rank
    owning uneven rows of both in full-size tensors, gathered in place in
    one run. Ranks list the ids in different orders, interleaved, and
    only rank 0 gives the shapes."""
    n, r = SIZE, RANK
    wshape, bshape = [2 * n + 1, 3], [n + 2]
    wlo, whi = split(wshape[0], r, n)
    blo, bhi = split(bshape[0], r, n)
    mid = (wlo + whi) // 2
    w_parts = [region([wlo, 0], [mid - wlo, 3], "weight"),
               region([mid, 0], [whi - mid, 3], "weight")]
    b_part = region([blo], [bhi - blo], 7)
    ins = ([b_part] + w_parts if r % 2 else
           [w_parts[0], b_part, w_parts[1]])
    outs = [region([0, 0], wshape, "weight"), region([0], bshape, 7)]
    outs = outs[::-1] if r % 2 else outs
    shape = {"weight": wshape, 7: bshape} if r == 0 else None
    op = shoal.compile_op(group, shape=shape, dtype=dtype, inputs=ins,
                          outputs=outs)
    order = (("7", "weight"), ("7", "weight")) if r % 2 else \
        (("weight", "7"), ("weight", "7"))
    assert op.tensor_ids == order, op.tensor_ids
    want_w = torch.cat([fill([split(wshape[0], q, n)[1] -
                              split(wshape[0], q, n)[0], 3], q, dtype)
                        for q in range(n)])
    want_b = torch.cat([fill([split(bshape[0], q, n)[1] -
                              split(bshape[0], q, n)[0]], q, dtype, 5)
                        for q in range(n)])
    for run in range(2):
        # Rank 1 keeps its weight transposed in memory.
        w = torch.empty(3, wshape[0], dtype=dtype).t() if r == 1 else \
            torch.empty(wshape, dtype=dtype)
        b = torch.empty(bshape, dtype=dtype)
        w.fill_(True if dtype == torch.bool else 99)
        b.fill_(True if dtype == torch.bool else 99)
        w[wlo:whi] = fill([whi - wlo, 3], r, dtype)
        b[blo:bhi] = fill([bhi - blo], r, dtype, 5)
        pair = [b, w] if r % 2 else [w, b]
        op(pair, pair).wait()
        check_equal(w, want_w, f"{dtype} weight run {run}")
        check_equal(b, want_b, f"{dtype} bias run {run}")


def sum_three(group, dtype):
    """A 0-d, a 1-d and a 3-d tensor summed over the ranks into parts of
    each rank's full-size outputs (rank 0's 3-d one transposed in memory);
    elements outside the parts keep their values. With 3 ranks or more the
    last takes no part."""
    n, r = SIZE, RANK
    idle = n >= 3 and r == n - 1
    takers = n - 1 if n >= 3 else n
    shapes = {"s": [], "v": [5], "c": [2, 3, 4]}
    if idle:
        op = shoal.compile_op(group, dtype=dtype, reduction="sum")
        assert op.tensor_ids == ((), ())
        op([], []).wait()
        return
    ins = [shoal.TensorRegion([0] * len(sh), sh, "cpu", tid)
           for tid, sh in shapes.items()]
    outs = [region([r % 2, 0, 1], [1, 3, 2], "c"),
            region([r % 5], [5 - r % 5], "v"), region([], [], "s")]
    op = shoal.compile_op(group, dtype=dtype, reduction="sum", inputs=ins,
                          outputs=outs)
    c = torch.full([4, 3, 2], -7, dtype=dtype).permute(2, 1, 0) if r == 0 \
        else torch.full([2, 3, 4], -7, dtype=dtype)
    v = torch.full([5], -7, dtype=dtype)
    s0 = torch.full([], -7, dtype=dtype)
    op([fill(sh, r, dtype, k) for k, sh in enumerate(shapes.values())],
       [c, v, s0]).wait()
    total = {tid: sum(fill(sh, q, dtype, k) for q in range(takers))
             for k, (tid, sh) in enumerate(shapes.items())}
    check_equal(s0, total["s"], f"{dtype} scalar")
    want_v = torch.full([5], -7, dtype=dtype)
    want_v[r % 5:] = total["v"][r % 5:]
    check_equal(v, want_v, f"{dtype} v")
    want_c = torch.full([2, 3, 4], -7, dtype=dtype)
    want_c[r % 2, :, 1:3] = total["c"][r % 2, :, 1:3]
    check_equal(c, want_c, f"{dtype} c")


def scenario_tensors(group):
    for dtype in (torch.float32, torch.int64, torch.bfloat16, torch.uint8,
                  torch.bool):
        gather_layer(group, dtype)
    for dtype in (torch.float64, torch.int32):
        sum_three(group, dtype)
    # Regions without a tensor_id (TensorRegions too) keep the one-tensor
    # form: a local tensor per box.
    n, r = SIZE, RANK
    op = shoal.compile_op(
        group, shape=[2 * n, 3], dtype=torch.float32,
        inputs=[shoal.TensorRegion([2 * r, 0], [2, 3])],
        outputs=[{"offset": [0, 0], "shape": [2 * n, 3], "device": "cpu"}])
    full = global_input([2 * n, 3], 0)
    out = torch.zeros(2 * n, 3)
    op([box(full, [2 * r, 0], [2, 3]).clone()], [out]).wait()
    check_equal(out, full, "one tensor")


def scenario_tensor_errors(group):
    last = SIZE - 1
    w = region([0, 0], [4, 3], "w")
    b = region([0], [4], "b")

    def compile_with(ins, outs, **kw):
        return shoal.compile_op(group, dtype=torch.float32, inputs=ins,
                                outputs=outs, **kw)

    # Output elements of "b" only a "w" input covers at those coordinates.
    expect_error(lambda: compile_with(
        [w, region([0], [2], "b")], [b] if RANK == last else None),
        f"elements [2:4] of rank {last}'s outputs[0] (tensor 'b', global "
        "box [0:4]) are in no rank's inputs of that tensor")
    expect_error(lambda: compile_with(
        [region([0], [4], "w")] if RANK == last else [w], None),
        "ranks disagree on the number of dimensions of tensor 'w': rank 0 "
        f"gives it 2, rank {last} gives it 1")
    expect_error(lambda: compile_with(
        [w], None, shape={"w": [4, 3] if RANK == 0 else [5, 3]}),
        "ranks disagree on the shape of tensor 'w': rank 0 passed [4, 3], "
        "rank 1 passed [5, 3]")
    expect_error(lambda: compile_with(
        [w], None, shape={"w": [3, 3]}),
        "rank 0's inputs[0] (tensor 'w', offset [0, 0], shape [4, 3]) lies "
        "outside the global shape [3, 3]")
    expect_error(lambda: compile_with(
        [w, {"offset": [0], "shape": [4]}] if RANK == last else [w], None),
        f"rank {last}: inputs[0] has a tensor_id and inputs[1] has none")
    expect_error(lambda: compile_with(
        [region([0], [4], 2.5)] if RANK == last else [w], None),
        f"rank {last}: inputs[0]['tensor_id'] must be a str or an int")
    expect_error(lambda: compile_with([w], None, shape=[4, 3]),
                 "with tensor_ids, shape must be None")
    expect_error(lambda: compile_with(
        [dict(w, device="cuda:0")] if RANK == last else [w], None),
        f"rank {last}: inputs[0] is on device 'cuda:0'")
    # Tensors at call time: one per tensor_id, each all of its tensor.
    op = compile_with([w, b], [b, w], reduction="sum")
    tw, tb = torch.ones(4, 3), torch.ones(4)
    ow, ob = torch.zeros(4, 3), torch.zeros(4)
    expect_error(lambda: op([tw] if RANK == last else [tw, tb], [ob, ow]),
                 "1 input tensors given, the op was compiled with 2: one "
                 "per tensor_id of this rank's inputs, in the order they "
                 "first appear ('w', 'b')" if RANK == last else
                 f"rank {last} passed bad tensors")
    expect_error(lambda: op([tw, tb], [ob, ow.double()] if RANK == 0
                            else [ob, ow]),
                 "output[1] (tensor_id 'w', all of it) is float64, the op "
                 "moves float32" if RANK == 0 else
                 "rank 0 passed bad tensors")
    expect_error(lambda: op([tw[:2], tb], [ob, ow]),
                 "input[0] (tensor_id 'w', all of it) has shape (2, 3), the "
                 "op expects (4, 3)")
    # The op and the group still work.
    op([tw, tb], [ob, ow]).wait()
    check_equal(ow, torch.full((4, 3), float(SIZE)), "after errors")
    check_equal(ob, torch.full((4,), float(SIZE)), "after errors")
    t = torch.ones(2)
    dist.all_reduce(t)
    assert t.tolist() == [SIZE, SIZE]


def scenario_groups(group):
    """find_process_group finds torch's groups by group_desc and by group
    name, from torch's own registry (dist.new_group creates them through
    torch's _new_process_group_helper and shoal's creator)."""
    world = dist.group.WORLD
    sub = dist.new_group(list(range(SIZE)), group_desc="layers")
    own = dist.new_group(list(range(SIZE)), group_desc="torch-made")
    pair = dist.new_group([0, 1], group_desc="pair")
    twin = dist.new_group(list(range(SIZE)), group_desc="layers")
    expect_error(lambda: shoal.find_process_group("layers"),
                 "2 live groups are named 'layers'")
    assert shoal.find_process_group(twin.group_name) is twin
    assert shoal.find_process_group(sub.group_name) is sub
    assert shoal.find_process_group("torch-made") is own
    assert shoal.find_process_group(own.group_name) is own
    assert shoal.find_process_group("default_pg") is world
    if RANK in (0, 1):
        assert shoal.find_process_group("pair") is pair
    else:
        assert shoal.find_process_group("pair") is None
    # compile_op takes the description.
    g = [{"offset": [0], "shape": [4]}]
    op = shoal.compile_op("torch-made", shape=[4], dtype=torch.int64,
                          inputs=g, outputs=g, reduction="sum")
    y = torch.zeros(4, dtype=torch.int64)
    op([torch.arange(4) + RANK], [y]).wait()
    check_equal(y, torch.arange(4) * SIZE + sum(range(SIZE)), "by desc")


def main():
    group = init()
    name, args = sys.argv[1], sys.argv[2:]
    globals()[f"scenario_{name}"](group, *args)
    dist.barrier()
    dist.destroy_process_group()
    print(f"ok {name}")


if __name__ == "__main__":
    main()
