// sendrecv: the nccl-tests exchange, and the ping-pong half round trip.
//
// Exchange (main table): rank r sends `size` bytes to rank r+1 and receives
// as many from rank r-1 (mod n) at the same time: shoal_irecv, shoal_isend,
// then shoal_wait on both. busbw = algbw. There is no in-place form: shoal
// forbids receiving into a buffer that a pending send still reads, so the
// in-place columns say N/A.
//
// Half round trip (second table, sizes up to 64 KiB): rank 0 sends to rank
// 1, which sends the message straight back, PINGPONG_BATCH times per sample
// with blocking shoal_send/shoal_recv; time = sample / (2 x batch) on each
// of the two ranks. Other ranks only join the barriers.
#include <stdio.h>

#include "perf.h"

#define SENDRECV_TAG   1
#define PINGPONG_TAG   2
#define PINGPONG_BATCH 100
#define PINGPONG_MAX   (64 * 1024)

enum { WHAT_EXCHANGE = 1, WHAT_PINGPONG = 2 };

static size_t
count_of(const perf_ctx *c, int index)
{
    return c->sizes.bytes[index] / c->esize;
}

// --- exchange --------------------------------------------------------------

static void
exchange_prepare(perf_ctx *c, void *arg, int index, int it)
{
    perf_pattern *p = arg;

    perf_pattern_make(p, c->o->dtype,
        perf_seed(WHAT_EXCHANGE, (uint32_t) c->rank, (uint32_t) index,
            (uint32_t) it));
    perf_pattern_fill(p, c->sbuf, count_of(c, index));
}

static int
exchange_run(perf_ctx *c, void *arg, int index)
{
    shoal_request *rr = NULL, *sr = NULL;
    size_t         count = count_of(c, index);
    int            next  = (c->rank + 1) % c->nranks;
    int            prev  = (c->rank + c->nranks - 1) % c->nranks;
    int            rc;

    (void) arg;
    rc = shoal_irecv(
        c->comm, c->rbuf, count, c->o->dtype, prev, SENDRECV_TAG, &rr);
    if (rc < 0) {
        return perf_fail(c, "shoal_irecv", rc);
    }
    rc = shoal_isend(
        c->comm, c->sbuf, count, c->o->dtype, next, SENDRECV_TAG, &sr);
    if (rc < 0) {
        shoal_request_free(rr);
        return perf_fail(c, "shoal_isend", rc);
    }
    rc = shoal_wait(rr, -1);
    if (rc == SHOAL_OK) {
        rc = shoal_wait(sr, -1);
    }
    shoal_request_free(rr);
    shoal_request_free(sr);
    return rc == SHOAL_OK ? rc : perf_fail(c, "shoal_wait(sendrecv)", rc);
}

static size_t
exchange_verify(perf_ctx *c, void *arg, int index, int it)
{
    perf_pattern *p    = arg;
    int           prev = (c->rank + c->nranks - 1) % c->nranks;

    perf_pattern_make(p, c->o->dtype,
        perf_seed(
            WHAT_EXCHANGE, (uint32_t) prev, (uint32_t) index, (uint32_t) it));
    return perf_pattern_check(p, c->rbuf, count_of(c, index));
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
    perf_pattern *p = arg;

    if (c->rank == 0) {
        perf_pattern_make(p, c->o->dtype,
            perf_seed(WHAT_PINGPONG, 0, (uint32_t) index, (uint32_t) it));
        perf_pattern_fill(p, c->sbuf, count_of(c, index));
    }
}

static int
pingpong_run(perf_ctx *c, void *arg, int index)
{
    size_t      count = count_of(c, index);
    shoal_dtype dt    = c->o->dtype;
    int         rc    = SHOAL_OK;

    (void) arg;
    for (int k = 0; k < PINGPONG_BATCH && rc == SHOAL_OK; k++) {
        if (c->rank == 0) {
            rc = shoal_send(c->comm, c->sbuf, count, dt, 1, PINGPONG_TAG);
            if (rc == SHOAL_OK) {
                rc = shoal_recv(c->comm, c->rbuf, count, dt, 1, PINGPONG_TAG);
            }
        } else if (c->rank == 1) {
            rc = shoal_recv(c->comm, c->rbuf, count, dt, 0, PINGPONG_TAG);
            if (rc == SHOAL_OK) {
                rc = shoal_send(c->comm, c->rbuf, count, dt, 0, PINGPONG_TAG);
            }
        }
    }
    return rc == SHOAL_OK ? rc : perf_fail(c, "ping-pong", rc);
}

static size_t
pingpong_verify(perf_ctx *c, void *arg, int index, int it)
{
    perf_pattern *p = arg;

    if (c->rank > 1) {
        return 0;
    }
    perf_pattern_make(p, c->o->dtype,
        perf_seed(WHAT_PINGPONG, 0, (uint32_t) index, (uint32_t) it));
    return perf_pattern_check(p, c->rbuf, count_of(c, index));
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
    printf("#\n# sendrecv half round trip (ranks 0 <-> 1)\n"
           "# One sample: after a barrier rank 0 sends `size` bytes to "
           "rank 1, which sends\n"
           "# them back, %d times (blocking shoal_send/shoal_recv); "
           "time = sample / %d on\n"
           "# each of the two ranks, then median over iterations of the "
           "max.\n",
        PINGPONG_BATCH, 2 * PINGPONG_BATCH);
}

int
perf_bench_sendrecv(perf_ctx *c)
{
    perf_pattern pat;
    int          rc;

    if (c->nranks < 2) {
        if (c->rank == 0) {
            printf("#\n# sendrecv: skipped, it needs at least 2 ranks "
                   "(shoal does not send to oneself)\n#\n");
        }
        return SHOAL_OK;
    }
    rc = perf_exchange_table(c, "sendrecv",
        "# Rank r sends to rank r+1 and receives from rank r-1 at once "
        "(irecv + isend,\n"
        "# wait both). in-place: N/A (shoal forbids receiving into a "
        "buffer a pending\n"
        "# send still reads). vs_memcpy = out-of-place busbw / memcpy "
        "GB/s at that size.\n",
        &exchange_ops, &pat);
    if (rc == SHOAL_OK) {
        if (c->rank == 0) {
            pingpong_describe();
        }
        rc = perf_round_trip_table(c, &pingpong_ops, &pat, PINGPONG_MAX);
    }
    return rc;
}
