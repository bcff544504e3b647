// The collectives that move data without reducing it: allgather,
// alltoall, gather, scatter. For all four, size = the total of every
// rank's block (nccl-tests), each block has count = size / n / element
// elements, and busbw = algbw x (n-1)/n.
//
//   allgather  rank r's block is pattern(r); every rank checks all n
//              blocks of rbuf. out-of-place shoal_all_gather(sbuf, rbuf);
//              in-place (rbuf + r blocks, rbuf).
//   alltoall   block p of rank r's sbuf is pattern(r -> p); rank p checks
//              that block r of its rbuf holds it. out-of-place only (shoal
//              forbids overlapping buffers).
//   gather     to -r root; only the root checks its n blocks.
//              out-of-place (sbuf, rbuf) on every rank; in-place (rbuf + r
//              blocks, rbuf) on every rank (rbuf is ignored off the root).
//   scatter    from -r root, whose block p is pattern(p); every rank checks
//              its block. out-of-place (sbuf, rbuf); in-place (rbuf, rbuf
//              + r blocks).
// Patterns differ for every (collective, half, source, size, iteration),
// so a block left over from an earlier iteration or landing in the wrong
// place counts as wrong.
#include "perf.h"

enum {
    WHAT_ALLGATHER = 12,
    WHAT_ALLTOALL  = 14,
    WHAT_GATHER    = 15,
    WHAT_SCATTER   = 17
};

static unsigned char *
block(const perf_ctx *c, void *buf, size_t count, int r)
{
    return (unsigned char *) buf + (size_t) r * count * c->esize;
}

// a->pat = the block that `src` contributes (for alltoall: sends to dst).
static void
pattern_of(perf_ctx *c, perf_coll_arg *a, uint32_t base, int src, int dst,
    int index, int it)
{
    uint32_t id = ((uint32_t) src << 16) ^ (uint32_t) dst;

    perf_pattern_make(&a->pat, c->o->dtype,
        perf_seed(base + 16u * (uint32_t) a->in_place, id, (uint32_t) index,
            (uint32_t) it));
}

static double
factor_n1_n(int n)
{
    return n > 0 ? (double) (n - 1) / n : 0.0;
}

// Checks the n blocks of buf, block p against src p's pattern.
static size_t
check_blocks(
    perf_ctx *c, perf_coll_arg *a, uint32_t base, void *buf, int index, int it)
{
    size_t wrong = 0;

    for (int p = 0; p < c->nranks; p++) {
        pattern_of(
            c, a, base, p, base == WHAT_ALLTOALL ? c->rank : 0, index, it);
        wrong += perf_pattern_check(
            &a->pat, block(c, buf, a->count, p), a->count);
    }
    return wrong;
}

// --- allgather -------------------------------------------------------------

static void *
allgather_in(perf_ctx *c, const perf_coll_arg *a)
{
    return a->in_place ? block(c, c->rbuf, a->count, c->rank) : c->sbuf;
}

static void
allgather_prepare(perf_ctx *c, void *arg, int index, int it)
{
    perf_coll_arg *a = arg;

    pattern_of(c, a, WHAT_ALLGATHER, c->rank, 0, index, it);
    perf_pattern_fill(&a->pat, allgather_in(c, a), a->count);
}

static int
allgather_run(perf_ctx *c, void *arg, int index)
{
    perf_coll_arg *a = arg;
    int            rc;

    (void) index;
    rc = shoal_all_gather(
        c->comm, allgather_in(c, a), c->rbuf, a->count, c->o->dtype);
    return rc == SHOAL_OK ? rc : perf_fail(c, "shoal_all_gather", rc);
}

static size_t
allgather_verify(perf_ctx *c, void *arg, int index, int it)
{
    return check_blocks(c, arg, WHAT_ALLGATHER, c->rbuf, index, it);
}

static const perf_coll coll_allgather = {
    .name          = "allgather",
    .op_bit        = PERF_OP_ALLGATHER,
    .notes         = "# size = the receive buffer (n blocks). out-of-place: "
                     "shoal_all_gather(sbuf, rbuf);\n"
                     "# in-place: (rbuf + r blocks, rbuf). busbw = algbw x (n-1)/n. "
                     "vs_memcpy =\n"
                     "# out-of-place busbw / memcpy GB/s.\n",
    .size_is_total = 1,
    .has_in_place  = 1,
    .has_redop     = 0,
    .has_root      = 0,
    .bus_factor    = factor_n1_n,
    .ops           = { .prepare = allgather_prepare,
                  .run          = allgather_run,
                  .verify       = allgather_verify,
                  .divisor      = 1.0 },
};

int
perf_bench_allgather(perf_ctx *c)
{
    return perf_bench_coll(c, &coll_allgather);
}

// --- alltoall --------------------------------------------------------------

static void
alltoall_prepare(perf_ctx *c, void *arg, int index, int it)
{
    perf_coll_arg *a = arg;

    for (int p = 0; p < c->nranks; p++) {
        pattern_of(c, a, WHAT_ALLTOALL, c->rank, p, index, it);
        perf_pattern_fill(&a->pat, block(c, c->sbuf, a->count, p), a->count);
    }
}

static int
alltoall_run(perf_ctx *c, void *arg, int index)
{
    perf_coll_arg *a = arg;
    int            rc;

    (void) index;
    rc = shoal_all_to_all(c->comm, c->sbuf, c->rbuf, a->count, c->o->dtype);
    return rc == SHOAL_OK ? rc : perf_fail(c, "shoal_all_to_all", rc);
}

static size_t
alltoall_verify(perf_ctx *c, void *arg, int index, int it)
{
    return check_blocks(c, arg, WHAT_ALLTOALL, c->rbuf, index, it);
}

static const perf_coll coll_alltoall = {
    .name   = "alltoall",
    .op_bit = PERF_OP_ALLTOALL,
    .notes  = "# size = each rank's send (and receive) buffer of n blocks. "
              "out-of-place:\n"
              "# shoal_all_to_all(sbuf, rbuf); in-place: N/A (shoal forbids "
              "overlapping buffers).\n"
              "# busbw = algbw x (n-1)/n. vs_memcpy = out-of-place busbw / "
              "memcpy GB/s.\n",
    .size_is_total = 1,
    .has_in_place  = 0,
    .has_redop     = 0,
    .has_root      = 0,
    .bus_factor    = factor_n1_n,
    .ops           = { .prepare = alltoall_prepare,
                  .run          = alltoall_run,
                  .verify       = alltoall_verify,
                  .divisor      = 1.0 },
};

int
perf_bench_alltoall(perf_ctx *c)
{
    return perf_bench_coll(c, &coll_alltoall);
}

// --- gather ----------------------------------------------------------------

static void
gather_prepare(perf_ctx *c, void *arg, int index, int it)
{
    perf_coll_arg *a = arg;

    pattern_of(c, a, WHAT_GATHER, c->rank, 0, index, it);
    perf_pattern_fill(&a->pat, allgather_in(c, a), a->count);
}

static int
gather_run(perf_ctx *c, void *arg, int index)
{
    perf_coll_arg *a = arg;
    int            rc;

    (void) index;
    rc = shoal_gather(c->comm, allgather_in(c, a), c->rbuf, a->count,
        c->o->dtype, c->o->root);
    return rc == SHOAL_OK ? rc : perf_fail(c, "shoal_gather", rc);
}

static size_t
gather_verify(perf_ctx *c, void *arg, int index, int it)
{
    if (c->rank != c->o->root) {
        return 0;
    }
    return check_blocks(c, arg, WHAT_GATHER, c->rbuf, index, it);
}

static const perf_coll coll_gather = {
    .name   = "gather",
    .op_bit = PERF_OP_GATHER,
    .notes  = "# size = the root's receive buffer (n blocks). out-of-place: "
              "shoal_gather(sbuf,\n"
              "# rbuf); in-place: (rbuf + r blocks, rbuf). Only the root "
              "checks. busbw = algbw x\n"
              "# (n-1)/n. vs_memcpy = out-of-place busbw / memcpy GB/s.\n",
    .size_is_total = 1,
    .has_in_place  = 1,
    .has_redop     = 0,
    .has_root      = 1,
    .bus_factor    = factor_n1_n,
    .ops           = { .prepare = gather_prepare,
                  .run          = gather_run,
                  .verify       = gather_verify,
                  .divisor      = 1.0 },
};

int
perf_bench_gather(perf_ctx *c)
{
    return perf_bench_coll(c, &coll_gather);
}

// --- scatter ---------------------------------------------------------------

static void *
scatter_out(perf_ctx *c, const perf_coll_arg *a)
{
    return a->in_place ? block(c, c->rbuf, a->count, c->rank) : c->rbuf;
}

static void
scatter_prepare(perf_ctx *c, void *arg, int index, int it)
{
    perf_coll_arg *a = arg;

    if (c->rank != c->o->root) {
        return;
    }
    for (int p = 0; p < c->nranks; p++) {
        pattern_of(c, a, WHAT_SCATTER, p, 0, index, it);
        perf_pattern_fill(&a->pat,
            block(c, a->in_place ? c->rbuf : c->sbuf, a->count, p), a->count);
    }
}

static int
scatter_run(perf_ctx *c, void *arg, int index)
{
    perf_coll_arg *a  = arg;
    const void    *in = a->in_place ? c->rbuf : c->sbuf;
    int            rc;

    (void) index;
    rc = shoal_scatter(
        c->comm, in, scatter_out(c, a), a->count, c->o->dtype, c->o->root);
    return rc == SHOAL_OK ? rc : perf_fail(c, "shoal_scatter", rc);
}

static size_t
scatter_verify(perf_ctx *c, void *arg, int index, int it)
{
    perf_coll_arg *a = arg;

    pattern_of(c, a, WHAT_SCATTER, c->rank, 0, index, it);
    return perf_pattern_check(&a->pat, scatter_out(c, a), a->count);
}

static const perf_coll coll_scatter = {
    .name   = "scatter",
    .op_bit = PERF_OP_SCATTER,
    .notes  = "# size = the root's send buffer (n blocks). out-of-place: "
              "shoal_scatter(sbuf, rbuf);\n"
              "# in-place: (rbuf, rbuf + r blocks). Every rank checks its "
              "block. busbw = algbw x\n"
              "# (n-1)/n. vs_memcpy = out-of-place busbw / memcpy GB/s.\n",
    .size_is_total = 1,
    .has_in_place  = 1,
    .has_redop     = 0,
    .has_root      = 1,
    .bus_factor    = factor_n1_n,
    .ops           = { .prepare = scatter_prepare,
                  .run          = scatter_run,
                  .verify       = scatter_verify,
                  .divisor      = 1.0 },
};

int
perf_bench_scatter(perf_ctx *c)
{
    return perf_bench_coll(c, &coll_scatter);
}
