// The collectives with a reduction: allreduce, reduce, reducescatter.
//
// Rank r's input is perf_pattern_make_reduce's pattern for r (values whose
// reduction is exact), different for every (collective, half, size,
// iteration). Every rank computes the expected result from all ranks'
// patterns (perf_pattern_combine in rank order) and compares bitwise.
//
//   allreduce      count elements; busbw factor 2(n-1)/n.
//                  out-of-place shoal_all_reduce(sbuf, rbuf); in-place
//                  shoal_all_reduce(rbuf, rbuf).
//   reduce         to -r root; busbw factor 1. Only the root compares
//                  (every rank builds the expected result: reduce_verify).
//                  out-of-place (sbuf, rbuf) on every rank (rbuf ignored
//                  off the root); in-place (rbuf, rbuf).
//   reducescatter  size = n blocks of count elements (the send buffer);
//                  rank r gets the reduction of block r; factor (n-1)/n.
//                  out-of-place (sbuf, rbuf); in-place (rbuf, rbuf + r
//                  blocks).
#include "perf.h"

enum { WHAT_ALLREDUCE = 10, WHAT_REDUCE = 11, WHAT_REDUCESCATTER = 13 };

static uint32_t
what_of(const perf_coll_arg *a, uint32_t base)
{
    return base + 16u * (uint32_t) a->in_place;
}

static unsigned char *
block(const perf_ctx *c, void *buf, size_t count, int r)
{
    return (unsigned char *) buf + (size_t) r * count * c->esize;
}

// a->pat = rank src's input.
static void
input_of(
    perf_ctx *c, perf_coll_arg *a, uint32_t base, int src, int index, int it)
{
    // Reduce-scatter's input is n blocks (rank r checks block r); the
    // others' is one. Only what the call sends: a reduce's root builds
    // every rank's input to check, alone, while the others wait for it in
    // the next barrier; n times more than that kept them waiting past the
    // spin at 16 ranks (1.4 ms at 1 KiB), so that they slept and the next
    // call paid their wake-ups (40-55 us medians against 2.8-3.0 unchecked).
    size_t elems
        = a->count * (size_t) (base == WHAT_REDUCESCATTER ? c->nranks : 1);

    perf_pattern_make_reduce(&a->pat, c->o->dtype, c->o->redop, c->nranks,
        perf_seed(
            what_of(a, base), (uint32_t) src, (uint32_t) index, (uint32_t) it),
        elems);
}

// a->exp = the reduction of every rank's input.
static void
expected(perf_ctx *c, perf_coll_arg *a, uint32_t base, int index, int it)
{
    for (int r = 0; r < c->nranks; r++) {
        input_of(c, a, base, r, index, it);
        perf_pattern_combine(&a->exp, &a->pat, c->o->redop, r == 0);
    }
    perf_pattern_finish(&a->exp, c->o->redop, c->nranks);
}

static shoal_reduce_op
redop(const perf_ctx *c)
{
    return SHOAL_REDUCE_OP(c->o->redop);
}

// --- allreduce -------------------------------------------------------------

static double
factor_allreduce(int n)
{
    return n > 0 ? 2.0 * (n - 1) / n : 0.0;
}

static void
allreduce_prepare(perf_ctx *c, void *arg, int index, int it)
{
    perf_coll_arg *a = arg;

    input_of(c, a, WHAT_ALLREDUCE, c->rank, index, it);
    perf_pattern_fill(&a->pat, a->in_place ? c->rbuf : c->sbuf, a->count);
}

static int
allreduce_run(perf_ctx *c, void *arg, int index)
{
    perf_coll_arg *a  = arg;
    const void    *in = a->in_place ? c->rbuf : c->sbuf;
    int            rc;

    (void) index;
    rc = shoal_all_reduce(
        c->comm, in, c->rbuf, a->count, c->o->dtype, redop(c));
    return rc == SHOAL_OK ? rc : perf_fail(c, "shoal_all_reduce", rc);
}

static size_t
allreduce_verify(perf_ctx *c, void *arg, int index, int it)
{
    perf_coll_arg *a = arg;

    expected(c, a, WHAT_ALLREDUCE, index, it);
    return perf_pattern_check(&a->exp, c->rbuf, a->count);
}

static const perf_coll coll_allreduce = {
    .name          = "allreduce",
    .op_bit        = PERF_OP_ALLREDUCE,
    .notes         = "# out-of-place: shoal_all_reduce(sbuf, rbuf); in-place: "
                     "shoal_all_reduce(rbuf, rbuf).\n"
                     "# busbw = algbw x 2(n-1)/n. vs_memcpy = out-of-place busbw / "
                     "memcpy GB/s.\n",
    .size_is_total = 0,
    .has_in_place  = 1,
    .has_redop     = 1,
    .has_root      = 0,
    .bus_factor    = factor_allreduce,
    .ops           = { .prepare = allreduce_prepare,
                  .run          = allreduce_run,
                  .verify       = allreduce_verify,
                  .divisor      = 1.0 },
};

int
perf_bench_allreduce(perf_ctx *c)
{
    return perf_bench_coll(c, &coll_allreduce);
}

// --- reduce ----------------------------------------------------------------

static double
factor_one(int n)
{
    (void) n;
    return 1.0;
}

static void
reduce_prepare(perf_ctx *c, void *arg, int index, int it)
{
    perf_coll_arg *a = arg;

    input_of(c, a, WHAT_REDUCE, c->rank, index, it);
    perf_pattern_fill(&a->pat, a->in_place ? c->rbuf : c->sbuf, a->count);
}

static int
reduce_run(perf_ctx *c, void *arg, int index)
{
    perf_coll_arg *a  = arg;
    const void    *in = a->in_place ? c->rbuf : c->sbuf;
    int            rc;

    (void) index;
    rc = shoal_reduce(
        c->comm, in, c->rbuf, a->count, c->o->dtype, redop(c), c->o->root);
    return rc == SHOAL_OK ? rc : perf_fail(c, "shoal_reduce", rc);
}

static size_t
reduce_verify(perf_ctx *c, void *arg, int index, int it)
{
    perf_coll_arg *a = arg;

    // Every rank builds the expected result, though only the root
    // compares: a root checking alone kept the others waiting in the next
    // barrier past their spin (16 ranks, 16 KiB: 1 ms), and the timed
    // call after it paid their wake-ups. Built everywhere, the check takes
    // the same time on every rank, as allreduce's does.
    expected(c, a, WHAT_REDUCE, index, it);
    if (c->rank != c->o->root) {
        return 0;
    }
    return perf_pattern_check(&a->exp, c->rbuf, a->count);
}

static const perf_coll coll_reduce = {
    .name          = "reduce",
    .op_bit        = PERF_OP_REDUCE,
    .notes         = "# out-of-place: shoal_reduce(sbuf, rbuf) on every rank; "
                     "in-place: shoal_reduce(rbuf,\n"
                     "# rbuf). Only the root checks. busbw = algbw. vs_memcpy = "
                     "out-of-place busbw /\n"
                     "# memcpy GB/s.\n",
    .size_is_total = 0,
    .has_in_place  = 1,
    .has_redop     = 1,
    .has_root      = 1,
    .bus_factor    = factor_one,
    .ops           = { .prepare = reduce_prepare,
                  .run          = reduce_run,
                  .verify       = reduce_verify,
                  .divisor      = 1.0 },
};

int
perf_bench_reduce(perf_ctx *c)
{
    return perf_bench_coll(c, &coll_reduce);
}

// --- reducescatter ---------------------------------------------------------

static double
factor_n1_n(int n)
{
    return n > 0 ? (double) (n - 1) / n : 0.0;
}

static void
reducescatter_prepare(perf_ctx *c, void *arg, int index, int it)
{
    perf_coll_arg *a = arg;

    input_of(c, a, WHAT_REDUCESCATTER, c->rank, index, it);
    perf_pattern_fill(&a->pat, a->in_place ? c->rbuf : c->sbuf,
        a->count * (size_t) c->nranks);
}

static void *
reducescatter_out(perf_ctx *c, const perf_coll_arg *a)
{
    return a->in_place ? block(c, c->rbuf, a->count, c->rank) : c->rbuf;
}

static int
reducescatter_run(perf_ctx *c, void *arg, int index)
{
    perf_coll_arg *a  = arg;
    const void    *in = a->in_place ? c->rbuf : c->sbuf;
    int            rc;

    (void) index;
    rc = shoal_reduce_scatter(
        c->comm, in, reducescatter_out(c, a), a->count, c->o->dtype, redop(c));
    return rc == SHOAL_OK ? rc : perf_fail(c, "shoal_reduce_scatter", rc);
}

static size_t
reducescatter_verify(perf_ctx *c, void *arg, int index, int it)
{
    perf_coll_arg *a = arg;

    expected(c, a, WHAT_REDUCESCATTER, index, it);
    return perf_pattern_check_at(&a->exp, reducescatter_out(c, a),
        (size_t) c->rank * a->count, a->count);
}

static const perf_coll coll_reducescatter = {
    .name   = "reducescatter",
    .op_bit = PERF_OP_REDUCESCATTER,
    .notes  = "# size = every rank's send buffer (n blocks); rank r gets the "
              "reduction of block r.\n"
              "# out-of-place: shoal_reduce_scatter(sbuf, rbuf); in-place: "
              "(rbuf, rbuf + r blocks).\n"
              "# busbw = algbw x (n-1)/n. vs_memcpy = out-of-place busbw / "
              "memcpy GB/s.\n",
    .size_is_total = 1,
    .has_in_place  = 1,
    .has_redop     = 1,
    .has_root      = 0,
    .bus_factor    = factor_n1_n,
    .ops           = { .prepare = reducescatter_prepare,
                  .run          = reducescatter_run,
                  .verify       = reducescatter_verify,
                  .divisor      = 1.0 },
};

int
perf_bench_reducescatter(perf_ctx *c)
{
    return perf_bench_coll(c, &coll_reducescatter);
}
