// queue: items through shoal queues (shoal_queue_*), two tables.
//
// Exchange (main table): each rank has a queue located on itself; rank r
// puts `size` bytes into rank r+1's queue as a tensor and takes the item
// rank r-1 put into its own. busbw = algbw, compared with the memcpy
// baseline (every rank copying at once). An item crosses in two copies:
// the sender's into the location's ring, the location's out of the ring
// into the item, which the application then owns (no third copy).
//
// Half round trip (second table, sizes up to 64 KiB): rank 0 puts into
// rank 1's queue, rank 1 takes the item and puts it back into rank 0's,
// PINGPONG_BATCH times per sample; time = sample / (2 x batch).
#include <stdio.h>
#include <stdlib.h>

#include "perf.h"

#define PINGPONG_BATCH 100
#define PINGPONG_MAX   (64 * 1024)

enum { WHAT_QUEUE = 5, WHAT_QUEUE_PINGPONG = 6 };

typedef struct {
    perf_pattern      pat;
    shoal_queue     **queues; // one per rank, located there
    shoal_queue_item *last; // the item taken, checked by verify
} queue_bench;

static size_t
count_of(const perf_ctx *c, int index)
{
    return c->sizes.bytes[index] / c->esize;
}

static int
put_items(perf_ctx *c, queue_bench *b, int dst, const void *buf, size_t n)
{
    int64_t shape[1] = { (int64_t) n };

    return shoal_queue_put(b->queues[dst], SHOAL_QUEUE_TENSOR, buf,
        n * c->esize, c->o->dtype, 1, shape, 0, -1);
}

static int
take(perf_ctx *c, queue_bench *b)
{
    shoal_queue_item_free(b->last);
    b->last = NULL;
    return shoal_queue_get(b->queues[c->rank], -1, &b->last);
}

// Checks the last item against the pattern and frees it.
static size_t
check_last(perf_ctx *c, queue_bench *b, size_t count)
{
    size_t wrong = count;

    if (b->last != NULL
        && shoal_queue_item_bytes(b->last) == count * c->esize) {
        wrong = perf_pattern_check(
            &b->pat, shoal_queue_item_data(b->last), count);
    }
    shoal_queue_item_free(b->last);
    b->last = NULL;
    return wrong;
}

// --- exchange --------------------------------------------------------------

static void
exchange_prepare(perf_ctx *c, void *arg, int index, int it)
{
    queue_bench *b = arg;

    perf_pattern_make(&b->pat, c->o->dtype,
        perf_seed(
            WHAT_QUEUE, (uint32_t) c->rank, (uint32_t) index, (uint32_t) it));
    perf_pattern_fill(&b->pat, c->sbuf, count_of(c, index));
}

static int
exchange_run(perf_ctx *c, void *arg, int index)
{
    queue_bench *b  = arg;
    int          rc = put_items(
                 c, b, (c->rank + 1) % c->nranks, c->sbuf, count_of(c, index));

    if (rc == SHOAL_OK) {
        rc = take(c, b);
    }
    return rc == SHOAL_OK ? rc : perf_fail(c, "queue exchange", rc);
}

static size_t
exchange_verify(perf_ctx *c, void *arg, int index, int it)
{
    queue_bench *b    = arg;
    int          left = (c->rank + c->nranks - 1) % c->nranks;

    perf_pattern_make(&b->pat, c->o->dtype,
        perf_seed(
            WHAT_QUEUE, (uint32_t) left, (uint32_t) index, (uint32_t) it));
    return check_last(c, b, count_of(c, index));
}

static const perf_measure_ops exchange_ops = {
    .prepare = exchange_prepare,
    .run     = exchange_run,
    .verify  = exchange_verify,
    .divisor = 1.0,
};

// --- half round trip -------------------------------------------------------

static void
pingpong_prepare(perf_ctx *c, void *arg, int index, int it)
{
    queue_bench *b = arg;

    perf_pattern_make(&b->pat, c->o->dtype,
        perf_seed(WHAT_QUEUE_PINGPONG, 0, (uint32_t) index, (uint32_t) it));
    if (c->rank == 0) {
        perf_pattern_fill(&b->pat, c->sbuf, count_of(c, index));
    }
}

static int
pingpong_run(perf_ctx *c, void *arg, int index)
{
    queue_bench *b     = arg;
    size_t       count = count_of(c, index);
    int          rc    = SHOAL_OK;

    for (int k = 0; k < PINGPONG_BATCH && rc == SHOAL_OK; k++) {
        if (c->rank == 0) {
            rc = put_items(c, b, 1, c->sbuf, count);
            if (rc == SHOAL_OK) {
                rc = take(c, b);
            }
        } else if (c->rank == 1) {
            rc = take(c, b);
            if (rc == SHOAL_OK) {
                rc = put_items(c, b, 0, shoal_queue_item_data(b->last), count);
            }
        }
    }
    return rc == SHOAL_OK ? rc : perf_fail(c, "queue ping-pong", rc);
}

static size_t
pingpong_verify(perf_ctx *c, void *arg, int index, int it)
{
    queue_bench *b = arg;

    (void) it;
    return c->rank > 1 ? 0 : check_last(c, b, count_of(c, index));
}

static const perf_measure_ops pingpong_ops = {
    .prepare = pingpong_prepare,
    .run     = pingpong_run,
    .verify  = pingpong_verify,
    .divisor = 2.0 * PINGPONG_BATCH,
};

static void
pingpong_describe(void)
{
    printf("#\n# queue half round trip (ranks 0 <-> 1)\n"
           "# One sample: after a barrier rank 0 puts `size` bytes into the "
           "queue on rank 1;\n"
           "# rank 1 takes the item and puts it into the queue on rank 0, "
           "which takes it;\n"
           "# %d times; time = sample / %d, then median over iterations of "
           "the max over ranks.\n",
        PINGPONG_BATCH, 2 * PINGPONG_BATCH);
}

static int
open_queues(perf_ctx *c, queue_bench *b)
{
    b->queues = calloc((size_t) c->nranks, sizeof(*b->queues));
    if (b->queues == NULL) {
        return perf_fail(c, "queue create", SHOAL_ENOMEM);
    }
    for (int r = 0; r < c->nranks; r++) {
        int rc = shoal_queue_create(c->comm, &r, 1, 0, &b->queues[r]);
        if (rc != SHOAL_OK) {
            return perf_fail(c, "queue create", rc);
        }
    }
    return SHOAL_OK;
}

int
perf_bench_queue(perf_ctx *c)
{
    queue_bench b = { 0 };
    int         rc;

    if (c->nranks < 2) {
        if (c->rank == 0) {
            printf("#\n# queue: skipped, it needs at least 2 ranks\n#\n");
        }
        return SHOAL_OK;
    }
    rc = open_queues(c, &b);
    if (rc == SHOAL_OK) {
        rc = perf_exchange_table(c, "queue",
            "# Rank r puts into the queue on rank r+1 and takes from its "
            "own (shoal_queue_put,\n"
            "# _get): two copies, into the location's ring and out of it. "
            "in-place: N/A.\n"
            "# vs_memcpy = busbw / memcpy GB/s at that size.\n",
            &exchange_ops, &b);
    }
    if (rc == SHOAL_OK) {
        if (c->rank == 0) {
            pingpong_describe();
        }
        rc = perf_round_trip_table(c, &pingpong_ops, &b, PINGPONG_MAX);
    }
    for (int r = 0; b.queues != NULL && r < c->nranks; r++) {
        shoal_queue_free(b.queues[r]);
    }
    free(b.queues);
    shoal_queue_item_free(b.last);
    return rc;
}
