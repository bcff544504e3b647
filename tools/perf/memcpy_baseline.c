// memcpy baseline, measured in the same run and with the same method as
// the operations: after a barrier every rank copies `size` bytes between
// its two private buffers at the same time, so the ranks share memory
// bandwidth exactly as they do during a collective. Bandwidth counts bytes
// copied (size / time), not memory traffic (about twice that).
#include <stdio.h>
#include <string.h>

#include "perf.h"

// Small copies are repeated so that one sample is long enough for the
// clock: about this many bytes per sample, at most MEMCPY_MAX_REPS copies.
#define MEMCPY_SAMPLE_BYTES (64 * 1024)
#define MEMCPY_MAX_REPS     1000

static size_t
repeats_for(size_t bytes)
{
    size_t reps = bytes == 0 ? MEMCPY_MAX_REPS : MEMCPY_SAMPLE_BYTES / bytes;

    if (reps < 1) {
        reps = 1;
    }
    return reps > MEMCPY_MAX_REPS ? MEMCPY_MAX_REPS : reps;
}

// Times one sample of `reps` copies; returns seconds per copy.
static double
time_copies(void *dst, const void *src, size_t bytes, size_t reps)
{
    double t0 = perf_now();

    for (size_t i = 0; i < reps; i++) {
        memcpy(dst, src, bytes);
        // Keep the compiler from merging or dropping repeated copies.
        __asm__ volatile("" : : "r"(dst) : "memory");
    }
    return (perf_now() - t0) / (double) reps;
}

// Copies of small buffers take nanoseconds: one more digit than nccl-tests.
static void
format_us(char *out, size_t len, double seconds)
{
    if (seconds < 10e-6) {
        snprintf(out, len, "%8.3f", seconds * 1e6);
    } else {
        perf_format_us(out, len, seconds);
    }
}

static int
measure_size(
    perf_ctx *c, void *dst, const void *src, int index, perf_stats *st)
{
    size_t bytes = c->sizes.bytes[index];
    size_t reps  = repeats_for(bytes);
    double wrong;
    int    iters  = perf_iters_for(c->o, bytes);
    int    warmup = perf_warmup_for(c->o, bytes);
    int    total  = warmup + iters;

    for (int it = 0; it < total; it++) {
        int st_b = shoal_barrier(c->comm);
        if (st_b != SHOAL_OK) {
            return perf_fail(c, "shoal_barrier", st_b);
        }
        double t = time_copies(dst, src, bytes, reps);
        if (it >= warmup) {
            c->times[it - warmup] = t;
        }
    }
    return perf_collect(c, c->times, iters, 0.0, st, &wrong);
}

static int
baseline_table(perf_ctx *c, void *dst, const void *src)
{
    if (c->rank == 0) {
        printf("#\n# memcpy baseline (all ranks copying at once)\n"
               "# After a barrier every rank memcpy()s `size` bytes between "
               "two private\n"
               "# page-aligned buffers at the same time; a sample under "
               "%d KiB repeats the\n"
               "# copy (up to %dx) and divides. Same median-of-max method "
               "as below.\n"
               "# GB/s = size / time: bytes copied once (memory traffic is "
               "about twice that).\n",
            MEMCPY_SAMPLE_BYTES / 1024, MEMCPY_MAX_REPS);
        printf("#       size      time       min       p90      GB/s\n"
               "#        (B)      (us)      (us)      (us)\n");
    }
    for (int i = 0; i < c->sizes.n; i++) {
        perf_stats st;
        int        rc = measure_size(c, dst, src, i, &st);
        if (rc != SHOAL_OK) {
            return rc;
        }
        if (c->rank != 0) {
            continue;
        }
        size_t bytes = c->sizes.bytes[i];
        double gbps  = st.median > 0 ? (double) bytes / 1e9 / st.median : 0.0;
        char   a[32], b[32], d[32];
        c->memcpy_gbps[i] = gbps;
        format_us(a, sizeof(a), st.median);
        format_us(b, sizeof(b), st.min);
        format_us(d, sizeof(d), st.p90);
        printf("%12zu  %8s  %8s  %8s  %8.2f\n", bytes, a, b, d, gbps);
    }
    if (c->rank == 0) {
        fflush(stdout);
    }
    return SHOAL_OK;
}

int
perf_memcpy_baseline(perf_ctx *c)
{
    void *src = c->sbuf, *dst = c->rbuf;
    int   rc = SHOAL_OK;

    // The baseline is always private memory: with -a shoal the benchmark
    // buffers are shared memory, which must not set its own yardstick.
    if (c->shoal_buffers) {
        src = perf_buffer_alloc(c->cap);
        dst = perf_buffer_alloc(c->cap);
        if (src == NULL || dst == NULL) {
            fprintf(stderr,
                "shoal-perf: rank %d: cannot allocate the memcpy "
                "baseline's buffers\n",
                c->rank);
            rc = SHOAL_ENOMEM;
        }
    }
    if (rc == SHOAL_OK) {
        rc = baseline_table(c, dst, src);
    }
    if (c->shoal_buffers) {
        perf_buffer_free(src, c->cap);
        perf_buffer_free(dst, c->cap);
    }
    return rc;
}
