// Clock and statistics: per-iteration maximum over ranks, then order
// statistics over iterations.
//
// Every rank keeps its own per-iteration times during a measurement; only
// afterwards does each rank send them to rank 0 in one message, so nothing
// but the operation itself is inside a timed region.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "perf.h"

// Tag of the result messages; benchmark payloads use small tags.
#define TIMING_TAG 7001

double
perf_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return (x > y) - (x < y);
}

static void
order_stats(double *v, int n, perf_stats *st)
{
    qsort(v, (size_t) n, sizeof(*v), cmp_double);
    st->min    = v[0];
    st->max    = v[n - 1];
    st->median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    // Nearest rank: the smallest value with at least 90% at or below it.
    int k   = (9 * n + 9) / 10 - 1;
    st->p90 = v[k < 0 ? 0 : k];
}

int
perf_collect(const perf_ctx *c, const double *times, int n, double wrong_local,
    perf_stats *st, double *wrong)
{
    size_t  len = (size_t) n + 1;
    double *msg = malloc(2 * len * sizeof(*msg));
    double *acc = msg + len;
    int     rc  = SHOAL_OK;

    if (msg == NULL) {
        fprintf(stderr, "shoal-perf: rank %d: out of memory\n", c->rank);
        return SHOAL_ENOMEM;
    }
    if (c->rank != 0) {
        for (int i = 0; i < n; i++) {
            msg[i] = times[i];
        }
        msg[n] = wrong_local;
        rc     = shoal_send(c->comm, msg, len, SHOAL_FLOAT64, 0, TIMING_TAG);
        if (rc != SHOAL_OK) {
            rc = perf_fail(c, "shoal_send(results)", rc);
        }
        free(msg);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        acc[i] = times[i];
    }
    acc[n] = wrong_local;
    for (int r = 1; r < c->nranks && rc == SHOAL_OK; r++) {
        rc = shoal_recv(c->comm, msg, len, SHOAL_FLOAT64, r, TIMING_TAG);
        if (rc != SHOAL_OK) {
            rc = perf_fail(c, "shoal_recv(results)", rc);
            break;
        }
        for (int i = 0; i < n; i++) {
            acc[i] = msg[i] > acc[i] ? msg[i] : acc[i];
        }
        acc[n] += msg[n];
    }
    if (rc == SHOAL_OK) {
        *wrong = acc[n];
        order_stats(acc, n, st);
    }
    free(msg);
    return rc;
}
