// put: one-sided puts into a window (shoal_window_*), two tables.
//
// Exchange (main table): every rank's receive buffer is registered as a
// window; rank r puts `size` bytes into rank r+1's window, signals it, and
// waits for rank r-1's signal (then r-1's data is in its buffer). busbw =
// algbw, compared with the memcpy baseline (every rank copying at once).
// With -a shoal the windows are shoal_alloc memory, which the origin
// writes in place; with malloc memory the put is a single copy through
// the kernel.
//
// Half round trip (second table, sizes up to 64 KiB): rank 0 puts into
// rank 1's window and signals it; rank 1 waits for the signal, puts the
// same bytes back and signals; PINGPONG_BATCH times per sample; time =
// sample / (2 x batch). OSU's osu_put_latency measures the same with
// MPI_Put, a flush and a notification.
#include <stdio.h>

#include "perf.h"

#define PINGPONG_BATCH 100
#define PINGPONG_MAX   (64 * 1024)

enum { WHAT_PUT = 3, WHAT_PUT_PINGPONG = 4 };

typedef struct {
    perf_pattern  pat;
    shoal_window *win;
} put_bench;

static size_t
count_of(const perf_ctx *c, int index)
{
    return c->sizes.bytes[index] / c->esize;
}

static int
right_of(const perf_ctx *c)
{
    return (c->rank + 1) % c->nranks;
}

// --- exchange --------------------------------------------------------------

static void
exchange_prepare(perf_ctx *c, void *arg, int index, int it)
{
    put_bench *b = arg;

    perf_pattern_make(&b->pat, c->o->dtype,
        perf_seed(
            WHAT_PUT, (uint32_t) c->rank, (uint32_t) index, (uint32_t) it));
    perf_pattern_fill(&b->pat, c->sbuf, count_of(c, index));
}

static int
exchange_run(perf_ctx *c, void *arg, int index)
{
    put_bench *b    = arg;
    int        left = (c->rank + c->nranks - 1) % c->nranks;
    int        rc;

    rc = shoal_window_put(
        b->win, c->sbuf, count_of(c, index), c->o->dtype, right_of(c), 0);
    if (rc == SHOAL_OK) {
        rc = shoal_window_signal(b->win, right_of(c));
    }
    if (rc == SHOAL_OK) {
        rc = shoal_window_wait_signal(b->win, left);
    }
    return rc == SHOAL_OK ? rc : perf_fail(c, "window put exchange", rc);
}

static size_t
exchange_verify(perf_ctx *c, void *arg, int index, int it)
{
    put_bench *b    = arg;
    int        left = (c->rank + c->nranks - 1) % c->nranks;

    perf_pattern_make(&b->pat, c->o->dtype,
        perf_seed(WHAT_PUT, (uint32_t) left, (uint32_t) index, (uint32_t) it));
    return perf_pattern_check(&b->pat, c->rbuf, count_of(c, index));
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
    put_bench *b = arg;

    if (c->rank == 0) {
        perf_pattern_make(&b->pat, c->o->dtype,
            perf_seed(WHAT_PUT_PINGPONG, 0, (uint32_t) index, (uint32_t) it));
        perf_pattern_fill(&b->pat, c->sbuf, count_of(c, index));
    }
}

static int
pingpong_run(perf_ctx *c, void *arg, int index)
{
    put_bench  *b     = arg;
    size_t      count = count_of(c, index);
    shoal_dtype dt    = c->o->dtype;
    int         rc    = SHOAL_OK;

    for (int k = 0; k < PINGPONG_BATCH && rc == SHOAL_OK; k++) {
        if (c->rank == 0) {
            rc = shoal_window_put(b->win, c->sbuf, count, dt, 1, 0);
            if (rc == SHOAL_OK) {
                rc = shoal_window_signal(b->win, 1);
            }
            if (rc == SHOAL_OK) {
                rc = shoal_window_wait_signal(b->win, 1);
            }
        } else if (c->rank == 1) {
            rc = shoal_window_wait_signal(b->win, 0);
            if (rc == SHOAL_OK) {
                rc = shoal_window_put(b->win, c->rbuf, count, dt, 0, 0);
            }
            if (rc == SHOAL_OK) {
                rc = shoal_window_signal(b->win, 0);
            }
        }
    }
    return rc == SHOAL_OK ? rc : perf_fail(c, "window put ping-pong", rc);
}

static size_t
pingpong_verify(perf_ctx *c, void *arg, int index, int it)
{
    put_bench *b = arg;

    if (c->rank > 1) {
        return 0;
    }
    perf_pattern_make(&b->pat, c->o->dtype,
        perf_seed(WHAT_PUT_PINGPONG, 0, (uint32_t) index, (uint32_t) it));
    return perf_pattern_check(&b->pat, c->rbuf, count_of(c, index));
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
    printf("#\n# put half round trip (ranks 0 <-> 1)\n"
           "# One sample: after a barrier rank 0 puts `size` bytes into rank "
           "1's window and\n"
           "# signals it; rank 1 waits for the signal, puts them back and "
           "signals; %d times;\n"
           "# time = sample / %d, then median over iterations of the max "
           "over ranks.\n",
        PINGPONG_BATCH, 2 * PINGPONG_BATCH);
}

int
perf_bench_put(perf_ctx *c)
{
    put_bench b;
    int       rc;

    if (c->nranks < 2) {
        if (c->rank == 0) {
            printf("#\n# put: skipped, it needs at least 2 ranks\n#\n");
        }
        return SHOAL_OK;
    }
    rc = shoal_window_create(c->comm, &b.win);
    if (rc == SHOAL_OK) {
        rc = shoal_window_register(
            b.win, c->rbuf, c->cap / c->esize, c->o->dtype);
    }
    if (rc != SHOAL_OK) {
        shoal_window_free(b.win);
        return perf_fail(c, "window register", rc);
    }
    rc = perf_exchange_table(c, "put",
        "# Rank r puts into rank r+1's window, signals it, and waits for "
        "rank r-1's\n"
        "# signal (shoal_window_put, _signal, _wait_signal). in-place: "
        "N/A. vs_memcpy =\n"
        "# busbw / memcpy GB/s at that size.\n",
        &exchange_ops, &b);
    if (rc == SHOAL_OK) {
        if (c->rank == 0) {
            pingpong_describe();
        }
        rc = perf_round_trip_table(c, &pingpong_ops, &b, PINGPONG_MAX);
    }
    if (rc == SHOAL_OK) {
        rc = shoal_window_deregister(b.win);
    }
    shoal_window_free(b.win);
    return rc;
}
