// Resource samples, and the final report: every rank's latencies pooled on
// rank 0 per (kind, size bucket), each rank's RSS and descriptors, and the
// verdict every rank agrees on.
//
// Flat means, comparing the end with the baseline taken after the warm-up:
// private RSS (resident minus shared pages) at most max(8 MiB, 5% of the
// baseline) higher, virtual size at most 256 MiB larger (four malloc
// arenas), and exactly as many
// open descriptors. Growth within that is allocator noise; a leak per call
// exceeds it within a few thousand calls. Shared resident pages are
// reported, not judged: they are the communicator's shared memory, which
// grows as this rank first touches pages of its peers' buffers (the
// zero-copy paths read them in place) and is bounded by the mapping, which
// the virtual size watches.
#include <dirent.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "soak.h"

#define RSS_SLACK_BYTES (8ll << 20)
#define RSS_SLACK_PCT   5
// glibc reserves 64 MiB of address space for each malloc arena, made the
// first time a thread contends for malloc, which may come late.
#define VSZ_SLACK_BYTES (256ll << 20)
#define WORST_SHOWN     10

// Virtual size, resident and private resident bytes from statm.
int
soak_memory(int64_t *vsz, int64_t *rss, int64_t *priv)
{
    FILE   *f    = fopen("/proc/self/statm", "r");
    long    v[3] = { 0, 0, 0 };
    int64_t page = sysconf(_SC_PAGESIZE);
    int     got;

    if (f == NULL) {
        return -1;
    }
    got = fscanf(f, "%ld %ld %ld", &v[0], &v[1], &v[2]);
    fclose(f);
    *vsz  = (int64_t) v[0] * page;
    *rss  = (int64_t) v[1] * page;
    *priv = (int64_t) (v[1] - v[2]) * page;
    return got == 3 ? 0 : -1;
}

// Open descriptors, not counting the one reading the directory.
int64_t
soak_fd_count(void)
{
    DIR           *d = opendir("/proc/self/fd");
    struct dirent *e;
    int64_t        n = 0;

    if (d == NULL) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d)) {
            n++;
        }
    }
    closedir(d);
    return n;
}

void
soak_sample(soak_ctx *c, int baseline)
{
    soak_stats *s   = &c->st;
    int64_t     vsz = -1, rss = -1, priv = -1, fds = soak_fd_count();

#ifdef __GLIBC__
    // Hand freed heap pages back first, so that private RSS counts memory
    // in use rather than the allocator's high-water mark, which creeps up
    // for a long time as rare large sizes come along.
    malloc_trim(0);
#endif
    soak_memory(&vsz, &rss, &priv);
    if (baseline) {
        *s        = (soak_stats) { .rss_warm = rss,
                   .priv_warm                = priv,
                   .priv_max                 = priv,
                   .vsz_warm                 = vsz,
                   .fd_warm                  = fds,
                   .fd_min                   = fds,
                   .fd_max                   = fds,
                   .wrong                    = s->wrong };
        c->warmed = 1;
    }
    s->rss_end  = rss;
    s->priv_end = priv;
    s->vsz_end  = vsz;
    s->fd_end   = fds;
    s->priv_max = priv > s->priv_max ? priv : s->priv_max;
    s->fd_min   = fds < s->fd_min ? fds : s->fd_min;
    s->fd_max   = fds > s->fd_max ? fds : s->fd_max;
}

static int64_t
priv_limit(const soak_stats *s)
{
    int64_t pct = s->priv_warm / 100 * RSS_SLACK_PCT;

    return pct > RSS_SLACK_BYTES ? pct : RSS_SLACK_BYTES;
}

static int
stats_fail(const soak_stats *s)
{
    return s->wrong != 0 || s->priv_end - s->priv_warm > priv_limit(s)
        || s->vsz_end - s->vsz_warm > VSZ_SLACK_BYTES
        || s->fd_end != s->fd_warm || s->priv_warm < 0 || s->fd_warm < 0;
}

// ---------------------------------------------------------------------------
// Latency table (rank 0)
// ---------------------------------------------------------------------------

typedef struct cell_stats {
    size_t count, slow;
    float *v; // sorted samples
    double median;
} cell_stats;

typedef struct worst_call {
    double   ratio, us;
    uint64_t seq;
    int      rank, cell;
} worst_call;

static int
cmp_float(const void *a, const void *b)
{
    float x = *(const float *) a, y = *(const float *) b;

    return (x > y) - (x < y);
}

static double
quantile(const cell_stats *s, double q)
{
    size_t k = (size_t) (q * (double) s->count + 0.999999);

    return s->v[k == 0 ? 0 : k - 1];
}

// Splits the pooled samples (all[rank * calls + seq]) into sorted cells.
static float *
build_cells(const soak_ctx *c, const float *all, cell_stats *cells)
{
    uint64_t seq, calls = c->opt.calls;
    size_t   total = 0;
    float   *pool;
    int      r, k;

    for (seq = c->opt.warmup; seq < calls; seq++) {
        cells[c->cell[seq]].count += (size_t) c->n;
    }
    pool
        = malloc(((calls - c->opt.warmup) * (size_t) c->n + 1) * sizeof *pool);
    if (pool == NULL) {
        return NULL;
    }
    for (k = 0; k < SOAK_NCELLS; k++) {
        cells[k].v = pool + total;
        total += cells[k].count;
        cells[k].count = 0;
    }
    for (seq = c->opt.warmup; seq < calls; seq++) {
        cell_stats *s = &cells[c->cell[seq]];

        for (r = 0; r < c->n; r++) {
            s->v[s->count++] = all[(size_t) r * calls + seq];
        }
    }
    for (k = 0; k < SOAK_NCELLS; k++) {
        qsort(cells[k].v, cells[k].count, sizeof(float), cmp_float);
        cells[k].median
            = cells[k].count ? cells[k].v[(cells[k].count - 1) / 2] : 0;
    }
    return pool;
}

static void
row_name(int cell, char *buf, size_t len)
{
    int row = cell / SOAK_NBUCKETS;

    snprintf(buf, len, "%s%s", row % 2 ? "i" : "",
        soak_kind_name((soak_kind) (row / 2)));
}

// Prints the table; returns the largest max/median.
static double
print_table(const soak_ctx *c, cell_stats *cells)
{
    double worst = 0;
    char   name[32];
    int    k;

    printf("%-16s %-7s %8s %10s %10s %10s %11s %9s %7s\n", "kind", "bucket",
        "count", "median_us", "p90_us", "p99_us", "max_us", "max/med", "slow");
    for (k = 0; k < SOAK_NCELLS; k++) {
        cell_stats *s   = &cells[k];
        double      med = s->median > 0 ? s->median : 1e-3, mx, ratio;
        size_t      i;

        if (s->count == 0) {
            continue;
        }
        mx    = s->v[s->count - 1];
        ratio = mx / med;
        for (i = 0; i < s->count; i++) {
            s->slow += s->v[i] > c->opt.slow_ratio * med;
        }
        worst = ratio > worst ? ratio : worst;
        row_name(k, name, sizeof name);
        printf("%-16s %-7s %8zu %10.1f %10.1f %10.1f %11.1f %9.1f %7zu\n",
            name, soak_bucket_name(k % SOAK_NBUCKETS), s->count, s->median,
            quantile(s, 0.90), quantile(s, 0.99), mx, ratio, s->slow);
    }
    return worst;
}

static void
keep_worst(worst_call *w, worst_call x)
{
    int i = WORST_SHOWN - 1;

    if (x.ratio <= w[i].ratio) {
        return;
    }
    for (; i > 0 && w[i - 1].ratio < x.ratio; i--) {
        w[i] = w[i - 1];
    }
    w[i] = x;
}

static void
print_worst(const soak_ctx *c, const float *all, const cell_stats *cells)
{
    worst_call w[WORST_SHOWN] = { { 0 } };
    uint64_t   seq;
    char       name[32];
    int        r, i;

    for (seq = c->opt.warmup; seq < c->opt.calls; seq++) {
        const cell_stats *s   = &cells[c->cell[seq]];
        double            med = s->median > 0 ? s->median : 1e-3;

        for (r = 0; r < c->n; r++) {
            double us = all[(size_t) r * c->opt.calls + seq];

            keep_worst(w, (worst_call) { us / med, us, seq, r, c->cell[seq] });
        }
    }
    printf("slowest calls relative to their median:\n");
    for (i = 0; i < WORST_SHOWN && w[i].ratio > 0; i++) {
        row_name(w[i].cell, name, sizeof name);
        printf("  call %8" PRIu64 " rank %3d %-16s %-7s %11.1f us %8.1fx\n",
            w[i].seq, w[i].rank, name,
            soak_bucket_name(w[i].cell % SOAK_NBUCKETS), w[i].us, w[i].ratio);
    }
}

// Rank 0's half of the report; returns 1 when --max-ratio is exceeded.
static int
print_latency(const soak_ctx *c, const float *all)
{
    cell_stats cells[SOAK_NCELLS];
    float     *pool;
    double     worst;

    memset(cells, 0, sizeof cells);
    if ((pool = build_cells(c, all, cells)) == NULL) {
        fprintf(stderr, "shoal-soak: out of memory for the table\n");
        return 1;
    }
    printf("latency per call (us, time inside shoal; non-blocking: issue + "
           "wait), all ranks pooled, calls %" PRIu64 "..%" PRIu64
           "; slow = over %.0fx the median\n",
        c->opt.warmup, c->opt.calls - 1, c->opt.slow_ratio);
    worst = print_table(c, cells);
    print_worst(c, all, cells);
    free(pool);
    printf("largest max/median: %.1f", worst);
    if (c->opt.max_ratio > 0 && worst > c->opt.max_ratio) {
        printf(" > --max-ratio %.0f: FAIL\n", c->opt.max_ratio);
        return 1;
    }
    printf("%s\n", c->opt.max_ratio > 0 ? " (within --max-ratio)" : "");
    return 0;
}

// ---------------------------------------------------------------------------
// Resources
// ---------------------------------------------------------------------------

static double
mib(int64_t bytes)
{
    return (double) bytes / 1048576.0;
}

static void
print_resources(const soak_ctx *c, const int64_t *all)
{
    int r;

    printf("%-4s %9s %9s %9s %8s %8s | %9s %9s %8s | %5s %6s %6s %6s | "
           "%6s\n",
        "rank", "priv_warm", "priv_end", "priv_max", "growth", "limit",
        "rss_warm", "rss_end", "vsz_grow", "fd_w", "fd_end", "fd_min",
        "fd_max", "wrong");
    for (r = 0; r < c->n; r++) {
        const soak_stats *s
            = (const soak_stats *) (all + (size_t) r * SOAK_STAT_WORDS);

        printf("%-4d %8.1fM %8.1fM %8.1fM %7.1fM %7.1fM | %8.1fM %8.1fM "
               "%7.1fM | %5" PRId64 " %6" PRId64 " %6" PRId64 " %6" PRId64
               " | %6" PRId64 "%s\n",
            r, mib(s->priv_warm), mib(s->priv_end), mib(s->priv_max),
            mib(s->priv_end - s->priv_warm), mib(priv_limit(s)),
            mib(s->rss_warm), mib(s->rss_end), mib(s->vsz_end - s->vsz_warm),
            s->fd_warm, s->fd_end, s->fd_min, s->fd_max, s->wrong,
            stats_fail(s) ? "  FAIL" : "");
    }
}

static const char *
transport_name(void)
{
    const char *t = getenv("SHOAL_TRANSPORT");

    return t != NULL && *t != '\0' ? t : "auto";
}

// Gathers everything on rank 0, prints it there, and returns the verdict
// every rank agrees on: 0 pass, 1 fail.
static int
gather_and_print(soak_ctx *c, double wall_s, int *fail)
{
    float   *lat_all = NULL;
    int64_t *st_all  = NULL;
    int      st;

    if (c->rank == 0) {
        lat_all = malloc(c->opt.calls * (size_t) c->n * sizeof *lat_all);
        st_all  = malloc((size_t) c->n * sizeof(soak_stats));
        if (lat_all == NULL || st_all == NULL) {
            free(lat_all);
            free(st_all);
            return SHOAL_ENOMEM;
        }
    }
    st = shoal_gather(
        c->comm, c->lat, lat_all, c->opt.calls, SHOAL_FLOAT32, 0);
    if (st == SHOAL_OK) {
        st = shoal_gather(
            c->comm, &c->st, st_all, SOAK_STAT_WORDS, SHOAL_INT64, 0);
    }
    if (st == SHOAL_OK && c->rank == 0) {
        printf("\nshoal-soak: %d ranks, transport %s, %" PRIu64
               " calls, seed %" PRIu64 ", warm-up %" PRIu64
               " calls, wall %.1f s (%.0f calls/s)\n",
            c->n, transport_name(), c->opt.calls, c->opt.seed, c->opt.warmup,
            wall_s, (double) c->opt.calls / wall_s);
        print_resources(c, st_all);
        *fail |= print_latency(c, lat_all);
    }
    free(lat_all);
    free(st_all);
    return st;
}

int
soak_report(soak_ctx *c, double wall_s)
{
    int32_t fail = stats_fail(&c->st), any = 1;
    int     st;

    _Static_assert(sizeof(soak_stats) == SOAK_STAT_WORDS * sizeof(int64_t),
        "soak_stats is gathered as int64 words");
    st = gather_and_print(c, wall_s, &fail);
    if (st == SHOAL_OK) {
        st = shoal_all_reduce(
            c->comm, &fail, &any, 1, SHOAL_INT32, SHOAL_REDUCE_OP(SHOAL_MAX));
    }
    if (st != SHOAL_OK) {
        fprintf(stderr, "shoal-soak: rank %d: report: %s\n", c->rank,
            shoal_last_error());
        return 1;
    }
    if (c->rank == 0) {
        printf("shoal-soak: %s\n", any ? "FAIL" : "PASS");
        fflush(stdout);
    }
    return any ? 1 : 0;
}
