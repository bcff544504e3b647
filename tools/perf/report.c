// Tables in nccl-tests' format (rank 0 prints).
//
// The standard columns come first, with nccl-tests' widths, so scripts
// written for nccl-tests read them unchanged; shoal-perf's extra columns
// (busbw relative to memcpy, min, p90 and max times) follow on the right.
#include <stdio.h>

#include "perf.h"

void
perf_format_us(char *out, size_t len, double seconds)
{
    double us = seconds * 1e6;

    if (us > 10000.0) {
        snprintf(out, len, "%7.0f", us);
    } else if (us > 100.0) {
        snprintf(out, len, "%7.1f", us);
    } else {
        snprintf(out, len, "%7.2f", us);
    }
}

void
perf_half_bandwidth(perf_half *h, size_t bytes, double bus_factor)
{
    h->algbw = h->t.median > 0 ? (double) bytes / 1e9 / h->t.median : 0.0;
    h->busbw = h->algbw * bus_factor;
}

void
perf_print_run_header(const perf_ctx *c)
{
    const perf_opts *o = c->o;

    int v = shoal_version();

    printf("# shoal-perf: nccl-tests style benchmark of libshoal %d.%d.%d\n",
        v / 10000, v / 100 % 100, v % 100);
    printf("# nranks %d minBytes %zu maxBytes %zu step: %g(factor) warmup "
           "iters: %d iters: %d validation: %d datatype: %s redop: %s "
           "root: %d\n",
        c->nranks, o->minbytes, o->maxbytes, o->stepfactor, o->warmup,
        o->iters, o->check ? 1 : 0, shoal_dtype_name(o->dtype),
        perf_redop_name(o->redop), o->root);
    if (o->iter_bytes > 0) {
        printf("# iterations: %d per size up to %zu B, then as many as fit "
               "%zu B (iterations x size), at least %d\n",
            o->iters, o->iter_bytes / (size_t) o->iters, o->iter_bytes,
            o->min_iters);
    }
    if (c->shoal_buffers) {
        printf("# buffers: shoal_alloc (the communicator's shared heap: "
               "zero-copy path), pre-touched\n");
    } else {
        printf("# buffers: malloc (private anonymous pages), pre-touched\n");
    }
    if (o->cold) {
        printf("# cache-cold: each iteration's buffers lie past %zu MiB "
               "(twice the last-level\n# cache) of earlier ones' memory; "
               "the memcpy baseline stays warm\n",
            2 * perf_llc_bytes(o) >> 20);
    }
    printf("#\n");
    printf("# Method: one iteration = shoal_barrier, then every rank times "
           "the operation\n"
           "# alone (and checks its result after another shoal_barrier); "
           "afterwards rank 0\n# takes, per iteration, the maximum "
           "over ranks. time =\n"
           "# median over iterations of that maximum (min, p90 and max in "
           "extra columns).\n"
           "# algbw = size / time, 1 GB = 1e9 B; busbw = algbw x factor "
           "(nccl-tests):\n"
           "# allreduce 2(n-1)/n; allgather, reducescatter, alltoall, "
           "gather, scatter\n"
           "# (n-1)/n, their size being the total of every rank's block; "
           "reduce, broadcast,\n"
           "# sendrecv 1. #wrong = elements differing from the expected "
           "result (every rank\n"
           "# computes every rank's input; reductions are exact by choice "
           "of the inputs),\n"
           "# summed over ranks and timed iterations (N/A: not checked or "
           "not applicable).\n");
}

void
perf_print_table_header(const char *op, const char *notes)
{
    printf("#\n# %s\n", op);
    if (notes != NULL && notes[0] != '\0') {
        printf("%s", notes);
    }
    printf("#%62s%-35s%-10s%s\n", "", "out-of-place", "in-place",
        "            extra columns");
    printf("#       size         count      type   redop    root     time   "
           "algbw   busbw #wrong     time   algbw   busbw #wrong  "
           "vs_memcpy  oop_min  oop_p90  oop_max   ip_min   ip_p90   "
           "ip_max\n");
    printf("#        (B)    (elements)                               (us)  "
           "(GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)        "
           "  (ratio)     (us)     (us)     (us)     (us)     (us)     "
           "(us)\n");
}

static void
print_half(const perf_half *h)
{
    char t[32], w[32];

    if (!h->valid) {
        printf("  %7s  %6s  %6s  %5s", "N/A", "N/A", "N/A", "N/A");
        return;
    }
    perf_format_us(t, sizeof(t), h->t.median);
    if (h->wrong < 0) {
        snprintf(w, sizeof(w), "N/A");
    } else {
        snprintf(w, sizeof(w), "%.0f", h->wrong);
    }
    printf("  %7s  %6.2f  %6.2f  %5s", t, h->algbw, h->busbw, w);
}

static void
print_extra_times(const perf_half *h)
{
    char a[32], b[32], m[32];

    if (!h->valid) {
        printf("  %7s  %7s  %7s", "N/A", "N/A", "N/A");
        return;
    }
    perf_format_us(a, sizeof(a), h->t.min);
    perf_format_us(b, sizeof(b), h->t.p90);
    perf_format_us(m, sizeof(m), h->t.max);
    printf("  %7s  %7s  %7s", a, b, m);
}

void
perf_print_row(const perf_row *r)
{
    printf("%12zu  %12zu  %8s  %6s  %6d", r->bytes, r->count, r->type,
        r->redop, r->root);
    print_half(&r->oop);
    print_half(&r->ip);
    if (r->vs_memcpy < 0) {
        printf("  %9s", "N/A");
    } else {
        printf("  %9.3f", r->vs_memcpy);
    }
    print_extra_times(&r->oop);
    print_extra_times(&r->ip);
    printf("\n");
    fflush(stdout);
}

void
perf_print_table_footer(
    const char *op, double wrong, double bw_sum, int bw_count)
{
    (void) op;
    printf("# Out of bounds values : %.0f %s\n", wrong,
        wrong != 0 ? "FAILED" : "OK");
    if (bw_count > 0) {
        printf("# Avg bus bandwidth    : %g \n", bw_sum / bw_count);
    } else {
        printf("# Avg bus bandwidth    : N/A \n");
    }
    printf("#\n");
    fflush(stdout);
}
