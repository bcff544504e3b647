// shoal-stall: many tiny calls, timing each, to catch a rank that
// sleeps while its operation could proceed (a missed wake-up shows as a
// call of about the engine's sleep cap, 100 ms, on every rank at once).
//
// Every rank draws the same sequence from one seed: blocking scatter,
// gather and broadcast, a ring (irecv, a while of computing, isend, then
// waits) and two non-blocking collectives, computing, then waits; in the
// last two the progress thread drives while the caller computes, and
// both drive once it waits. Each rank prints its calls over --slow-ms
// (50); rank 0 prints the totals. With --idle-ms N it measures instead
// the CPU rank 0 uses while it waits: its receive is pending for N ms
// with only the progress thread driving it, then N ms more with the
// caller waiting too. --fail-over-ms N makes a call slower than N ms (a
// stall, not a missed wake-up: those cost about 100 ms) fail the run.
// make soak runs it over TCP on 4 ranks:
//   SHOAL_TRANSPORT=tcp build/tools/shoalrun -n 4 build/tools/shoal-stall
//      --calls 20000 --seed 1 --fail-over-ms 2000
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "shoal.h"

enum { K_SCATTER, K_GATHER, K_BCAST, K_RING, K_IPAIR, K_N };

static const char *const kind_names[K_N]
    = { "scatter", "gather", "broadcast", "ring", "ipair" };

typedef struct repro {
    shoal_comm *comm;
    int         rank, n;
    uint64_t    rng;
    int32_t     in[64 * 16], out[64 * 16];
} repro;

static uint64_t
next_rand(repro *r)
{
    uint64_t x = (r->rng += 0x9e3779b97f4a7c15ull);
    x          = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x          = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static double
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static void
compute(double us)
{
    double end = now_ms() + us / 1e3;
    while (now_ms() < end) { }
}

// The receive is posted first and the caller computes a while, so the
// progress thread drives it (and sleeps) before the caller waits too.
static int
ring(repro *r, size_t count, int tag, double us)
{
    shoal_request *send, *recv;
    int next = (r->rank + 1) % r->n, prev = (r->rank + r->n - 1) % r->n;
    int st
        = shoal_irecv(r->comm, r->out, count, SHOAL_INT32, prev, tag, &recv);

    if (st != SHOAL_OK) {
        return st;
    }
    compute(us);
    st = shoal_isend(r->comm, r->in, count, SHOAL_INT32, next, tag, &send);
    int st2 = shoal_wait(recv, -1);
    shoal_request_free(recv);
    if (st == SHOAL_OK) {
        st = shoal_wait(send, -1);
        shoal_request_free(send);
    }
    return st != SHOAL_OK ? st : st2;
}

// Two non-blocking collectives in flight, a while of computing, then
// waits.
static int
ipair(repro *r, size_t count, int root, double us)
{
    shoal_request *a, *b;
    int            st
        = shoal_iscatter(r->comm, r->in, r->out, count, SHOAL_INT32, root, &a);

    if (st != SHOAL_OK) {
        return st;
    }
    st = shoal_ibroadcast(
        r->comm, r->out + 512, count, SHOAL_INT32, (root + 1) % r->n, &b);
    compute(us);
    int st1 = shoal_wait(a, -1);
    shoal_request_free(a);
    if (st == SHOAL_OK) {
        st = shoal_wait(b, -1);
        shoal_request_free(b);
    }
    return st1 != SHOAL_OK ? st1 : st;
}

static int
one_call(repro *r, int kind, size_t count, int root, int tag, double us)
{
    switch (kind) {
        case K_SCATTER:
            return shoal_scatter(
                r->comm, r->in, r->out, count, SHOAL_INT32, root);
        case K_GATHER:
            return shoal_gather(
                r->comm, r->in, r->out, count, SHOAL_INT32, root);
        case K_BCAST:
            return shoal_broadcast(r->comm, r->out, count, SHOAL_INT32, root);
        case K_RING:
            return ring(r, count, tag, us);
        default:
            return ipair(r, count, root, us);
    }
}

static void
sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

static double
cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru); // every thread, the progress thread too
    return (double) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3
        + (double) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

// Rank 0 posts a receive that rank 1 satisfies only after 2 x ms: for ms
// the progress thread alone drives it, then rank 0 waits for it too. The
// CPU rank 0 spends meanwhile is the cost of waiting.
static int
idle(repro *r, long ms)
{
    shoal_request *recv;
    int            st = SHOAL_OK;

    if (r->rank == 1) {
        sleep_ms(2 * ms);
        st = shoal_send(r->comm, r->in, 1, SHOAL_INT32, 0, 1);
    } else if (r->rank == 0) {
        st = shoal_irecv(r->comm, r->out, 1, SHOAL_INT32, 1, 1, &recv);
        if (st != SHOAL_OK) {
            return st;
        }
        double c0 = cpu_ms(), t0 = now_ms();
        sleep_ms(ms);
        double c1 = cpu_ms(), t1 = now_ms();
        st = shoal_wait(recv, -1);
        shoal_request_free(recv);
        printf("rank 0: cpu %.2f ms over %.0f ms with a receive pending, "
               "%.2f ms over %.0f ms waiting for it\n",
            c1 - c0, t1 - t0, cpu_ms() - c1, now_ms() - t1);
    }
    return st != SHOAL_OK ? st : shoal_barrier(r->comm);
}

int
main(int argc, char **argv)
{
    repro  r     = { 0 };
    long   calls = 20000, slow_ms = 50, idle_ms = 0, fail_ms = 0;
    double worst = 0;
    long   slow  = 0;

    r.rng = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--calls") == 0) {
            calls = atol(argv[i + 1]);
        } else if (strcmp(argv[i], "--seed") == 0) {
            r.rng = strtoull(argv[i + 1], NULL, 0);
        } else if (strcmp(argv[i], "--idle-ms") == 0) {
            idle_ms = atol(argv[i + 1]);
        } else if (strcmp(argv[i], "--slow-ms") == 0) {
            slow_ms = atol(argv[i + 1]);
        } else if (strcmp(argv[i], "--fail-over-ms") == 0) {
            fail_ms = atol(argv[i + 1]);
        } else {
            fprintf(stderr, "shoal-stall: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (shoal_comm_create(&r.comm, NULL) != SHOAL_OK) {
        fprintf(stderr, "%s\n", shoal_last_error());
        return 1;
    }
    r.rank = shoal_comm_rank(r.comm);
    r.n    = shoal_comm_size(r.comm);
    if (idle_ms > 0) {
        int st = r.n > 1 ? idle(&r, idle_ms) : SHOAL_EINVAL;
        if (st != SHOAL_OK) {
            fprintf(stderr, "rank %d: %s\n", r.rank, shoal_last_error());
        }
        shoal_comm_destroy(r.comm);
        return st != SHOAL_OK;
    }
    for (long c = 0; c < calls; c++) {
        uint64_t x     = next_rand(&r);
        int      kind  = (int) (x % K_N);
        size_t   count = 1 + (size_t) ((x >> 8) % 16); // up to 64 bytes
        int      root  = (int) ((x >> 16) % (uint64_t) r.n);
        compute((double) ((x >> 24) % 200));
        double t0 = now_ms();
        int    st = one_call(&r, kind, count, root, (int) (c & 0xffff),
               (double) ((x >> 40) % 300));
        double ms = now_ms() - t0;
        if (st != SHOAL_OK) {
            fprintf(stderr, "rank %d call %ld: %s\n", r.rank, c,
                shoal_last_error());
            return 1;
        }
        if (ms > worst) {
            worst = ms;
        }
        if (ms > (double) slow_ms) {
            slow++;
            printf("rank %d: call %ld (%s, %zu B) took %.1f ms\n", r.rank, c,
                kind_names[kind], count * 4, ms);
        }
    }
    double stats[2] = { (double) slow, worst }, all[2 * 64];
    if (r.n <= 64
        && shoal_gather(r.comm, stats, all, 2, SHOAL_FLOAT64, 0) == SHOAL_OK
        && r.rank == 0) {
        double total = 0, max = 0;
        for (int p = 0; p < r.n; p++) {
            total += all[2 * p];
            max = all[2 * p + 1] > max ? all[2 * p + 1] : max;
        }
        printf("shoal-stall: %ld calls on %d ranks: %.0f calls over %ld ms "
               "(all ranks), worst %.1f ms\n",
            calls, r.n, total, slow_ms, max);
    }
    shoal_comm_destroy(r.comm);
    if (fail_ms > 0 && worst > (double) fail_ms) {
        fprintf(stderr,
            "shoal-stall: rank %d: a call took %.1f ms, over the %ld ms "
            "allowed (--fail-over-ms)\n",
            r.rank, worst, fail_ms);
        return 1;
    }
    return 0;
}
