// shoal-soak: see soak.h. Usage (under shoalrun):
//   shoal-soak [--calls N] [--seed S] [--warmup N] [--sample-every N]
//              [--max-bytes B] [--compute-us U] [--heap 0|1]
//              [--max-ratio R]
// Exit status 0 when every result was right, RSS and descriptors stayed
// flat and (with --max-ratio) no call took over R times its median.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "soak.h"

static void
usage(void)
{
    fprintf(stderr,
        "usage: shoalrun -n N shoal-soak [options]\n"
        "  --calls N         operations in all (100000)\n"
        "  --seed S          the sequence's seed, the same on every rank (1)\n"
        "  --warmup N        calls before the baseline RSS/fd sample\n"
        "                    (min(1000, calls/2))\n"
        "  --sample-every N  RSS/fd sample interval in calls (1000)\n"
        "  --max-bytes B     largest buffer of one call in bytes (4194304)\n"
        "  --compute-us U    busy work between calls: 0..U us (200)\n"
        "  --heap 0|1        half the calls in shoal_alloc buffers (1)\n"
        "  --max-ratio R     fail when a call takes over R x the median of\n"
        "                    its (kind, size bucket) (default: report "
        "only)\n");
}

static int
parse_u64(const char *s, uint64_t *out)
{
    char *end;

    errno = 0;
    *out  = strtoull(s, &end, 0);
    return errno != 0 || end == s || *end != '\0' || s[0] == '-' ? -1 : 0;
}

static int
parse_option(soak_opts *o, const char *name, const char *v)
{
    uint64_t x;
    char    *end;

    if (strcmp(name, "--max-ratio") == 0) {
        o->max_ratio = strtod(v, &end);
        return *end != '\0' || !(o->max_ratio > 0) ? -1 : 0;
    }
    if (parse_u64(v, &x) != 0) {
        return -1;
    }
    if (strcmp(name, "--calls") == 0 && x > 0 && x < (1ull << 31)) {
        o->calls = x;
    } else if (strcmp(name, "--seed") == 0) {
        o->seed = x;
    } else if (strcmp(name, "--warmup") == 0) {
        o->warmup = x;
    } else if (strcmp(name, "--sample-every") == 0 && x > 0) {
        o->sample_every = x;
    } else if (strcmp(name, "--max-bytes") == 0 && x >= 8 && x <= (1u << 30)) {
        o->max_bytes = (size_t) x;
    } else if (strcmp(name, "--compute-us") == 0 && x <= 1000000) {
        o->compute_us = (int) x;
    } else if (strcmp(name, "--heap") == 0 && x <= 1) {
        o->heap = (int) x;
    } else {
        return -1;
    }
    return 0;
}

static int
parse_args(int argc, char **argv, soak_opts *o)
{
    int i;

    *o = (soak_opts) { .calls = 100000,
        .seed                 = 1,
        .warmup               = UINT64_MAX,
        .sample_every         = 1000,
        .max_bytes            = 4u << 20,
        .compute_us           = 200,
        .heap                 = 1,
        .slow_ratio           = 100 };
    for (i = 1; i < argc; i++) {
        if (i + 1 >= argc || parse_option(o, argv[i], argv[i + 1]) != 0) {
            fprintf(stderr, "shoal-soak: bad argument '%s'\n", argv[i]);
            usage();
            return -1;
        }
        i++;
    }
    if (o->warmup == UINT64_MAX) {
        o->warmup = o->calls / 2 < 1000 ? o->calls / 2 : 1000;
    }
    if (o->warmup >= o->calls) {
        o->warmup = o->calls - 1;
    }
    if (o->max_ratio > 0) {
        o->slow_ratio = o->max_ratio;
    }
    return 0;
}

// ---------------------------------------------------------------------------
// Setup
// ---------------------------------------------------------------------------

// Every buffer is allocated and touched once, up front, so that the RSS
// the run watches is the library's, not ours. The fill is not zero: the
// compiler may turn malloc + memset(0) into calloc, which touches nothing.
static void
touch(void *p, size_t bytes)
{
    memset(p, 0x5a, bytes);
}

static int
alloc_buffers(soak_ctx *c)
{
    size_t bytes = c->buf_bytes + SOAK_CANARY;
    int    s, k, heap_ok = c->opt.heap;

    for (s = 0; s < SOAK_SLOTS; s++) {
        for (k = 0; k < 2; k++) {
            void *p = NULL;

            c->mem[s][0][k] = malloc(bytes);
            if (c->mem[s][0][k] == NULL) {
                return -1;
            }
            touch(c->mem[s][0][k], bytes);
            if (heap_ok && shoal_alloc(c->comm, bytes, &p) != SHOAL_OK) {
                heap_ok = 0; // this transport has no shared heap
            }
            c->mem[s][1][k] = heap_ok ? p : NULL;
            if (p != NULL) {
                touch(p, bytes);
            }
        }
    }
    for (s = 0; !heap_ok && s < SOAK_SLOTS; s++) {
        for (k = 0; k < 2; k++) {
            shoal_free(c->comm, c->mem[s][1][k]);
            c->mem[s][1][k] = NULL;
        }
    }
    return 0;
}

static void
free_buffers(soak_ctx *c)
{
    int s, k;

    for (s = 0; s < SOAK_SLOTS; s++) {
        for (k = 0; k < 2; k++) {
            free(c->mem[s][0][k]);
            shoal_free(c->comm, c->mem[s][1][k]);
        }
    }
}

static int
setup(soak_ctx *c)
{
    size_t least;

    c->rank     = shoal_comm_rank(c->comm);
    c->n        = shoal_comm_size(c->comm);
    c->shared.s = c->opt.seed;
    c->local.s
        = soak_mix64(c->opt.seed ^ (0x5eed0000ull + (uint64_t) c->rank));
    least        = 8 * (size_t) c->n;
    c->buf_bytes = c->opt.max_bytes > least ? c->opt.max_bytes : least;
    c->perm      = calloc((size_t) c->n, sizeof *c->perm);
    c->lat       = calloc(c->opt.calls, sizeof *c->lat);
    c->cell      = calloc(c->opt.calls, sizeof *c->cell);
    if (c->perm == NULL || c->lat == NULL || c->cell == NULL
        || alloc_buffers(c) != 0) {
        fprintf(stderr, "shoal-soak: rank %d: out of memory\n", c->rank);
        return -1;
    }
    // written once per call: touched now, not during the run
    touch(c->lat, c->opt.calls * sizeof *c->lat);
    touch(c->cell, c->opt.calls * sizeof *c->cell);
    return 0;
}

// ---------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------

// Application work between calls: ranks arrive at each call at different
// times, as they do in real jobs.
static void
compute(soak_ctx *c)
{
    uint64_t us  = soak_rng_below(&c->local, (uint64_t) c->opt.compute_us + 1);
    uint64_t end = soak_now_ns() + us * 1000;

    while (soak_now_ns() < end) { }
}

static int
fail_call(soak_ctx *c, const soak_op *o, int st)
{
    fprintf(stderr,
        "shoal-soak: rank %d call %" PRIu64 " %s%s dtype %s count %zu "
        "root %d: %s: %s (seed %" PRIu64 ")\n",
        c->rank, o->seq, o->async ? "i" : "", soak_kind_name(o->kind),
        shoal_dtype_name(o->dt), o->count, o->root, shoal_status_name(st),
        shoal_last_error(), c->opt.seed);
    return -1;
}

static void
record(soak_ctx *c, const soak_op *o)
{
    size_t bytes = o->count * o->esize * o->blocks;
    int    row   = (int) o->kind * 2 + o->async;

    c->lat[o->seq]  = (float) ((double) o->blocked_ns / 1e3);
    c->cell[o->seq] = (uint16_t) (row * SOAK_NBUCKETS + soak_bucket(bytes));
}

// One step: a blocking call, or a batch of non-blocking ones issued
// together, computed over, then waited for in order. Returns the number
// of calls made, or -1.
static int
step(soak_ctx *c, uint64_t seq)
{
    soak_op ops[SOAK_SLOTS];
    int     batch = soak_draw_batch(c, c->opt.calls - seq), n, i, st;

    n = batch == 0 ? 1 : batch;
    for (i = 0; i < n; i++) {
        soak_draw(c, &ops[i], seq + (uint64_t) i, batch != 0, i);
        soak_prepare(c, &ops[i]);
    }
    if (batch == 0) {
        compute(c);
    }
    for (i = 0; i < n; i++) {
        if ((st = soak_issue(c, &ops[i])) < 0) {
            return fail_call(c, &ops[i], st);
        }
    }
    if (batch != 0) {
        compute(c); // overlaps the calls in flight
    }
    for (i = 0; i < n; i++) {
        if ((st = soak_complete(c, &ops[i])) < 0) {
            return fail_call(c, &ops[i], st);
        }
        record(c, &ops[i]);
        soak_verify(c, &ops[i]);
    }
    return n;
}

static void
progress(soak_ctx *c, uint64_t done, uint64_t t0)
{
    uint64_t tenth = c->opt.calls / 10;
    int64_t  vsz = 0, rss = 0, priv = 0;

    if (c->rank != 0 || tenth == 0 || done / tenth <= c->shown) {
        return;
    }
    c->shown = done / tenth;
    soak_memory(&vsz, &rss, &priv);
    printf("shoal-soak: %" PRIu64 "/%" PRIu64 " calls, %.1f s; rank 0: rss "
           "%.1f MiB (private %.1f), vsz %.1f MiB, %" PRId64 " fds\n",
        done, c->opt.calls, (double) (soak_now_ns() - t0) / 1e9,
        (double) rss / 1048576.0, (double) priv / 1048576.0,
        (double) vsz / 1048576.0, soak_fd_count());
    fflush(stdout);
}

static int
run(soak_ctx *c, double *wall_s)
{
    uint64_t seq = 0, next_sample = c->opt.warmup, t0 = soak_now_ns();
    int      n;

    while (seq < c->opt.calls) {
        if ((n = step(c, seq)) < 0) {
            return -1;
        }
        seq += (uint64_t) n;
        if (seq >= next_sample) {
            soak_sample(c, !c->warmed);
            next_sample = seq + c->opt.sample_every;
        }
        progress(c, seq, t0);
    }
    soak_sample(c, 0);
    *wall_s = (double) (soak_now_ns() - t0) / 1e9;
    return 0;
}

int
main(int argc, char **argv)
{
    soak_ctx c      = { 0 };
    double   wall_s = 0;
    int      rc;

    if (parse_args(argc, argv, &c.opt) != 0) {
        return 2;
    }
    if (shoal_comm_create(&c.comm, NULL) != SHOAL_OK) {
        fprintf(stderr, "shoal-soak: %s\n", shoal_last_error());
        return 1;
    }
    if (setup(&c) != 0 || run(&c, &wall_s) != 0) {
        shoal_comm_abort(c.comm, "shoal-soak failed");
        shoal_comm_destroy(c.comm);
        return 1;
    }
    rc = soak_report(&c, wall_s);
    free_buffers(&c);
    if (shoal_comm_destroy(c.comm) != SHOAL_OK) {
        fprintf(stderr, "shoal-soak: destroy: %s\n", shoal_last_error());
        rc = 1;
    }
    free(c.perm);
    free(c.lat);
    free(c.cell);
    return rc;
}
