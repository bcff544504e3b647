// mpi_bench: the Open MPI side of tools/perf/compare.sh.
//
// Built by compare.sh with mpicc (not by CMake: it lives in a subfolder so
// that the tools/perf/*.c glob of shoal-perf does not pick it up). It times
// the same operations as shoal-perf, with the same method: per iteration
// MPI_Barrier, then every rank times the operation alone (and checks its
// result after another MPI_Barrier, so that no rank's check runs inside a
// peer's timed operation on a shared CPU); afterwards rank 0 takes the
// per-iteration maximum over ranks and prints the median (min, p90 and
// max too) over iterations.
//   pingpong       ranks 0 <-> 1, PINGPONG_BATCH blocking MPI_Send/MPI_Recv
//                  round trips per sample, time = sample / (2 x batch);
//                  sizes <= 64 KiB
//   sendrecv       rank r sends to r+1 and receives from r-1 (MPI_Irecv,
//                  MPI_Isend, MPI_Waitall)
//   bcast          MPI_Bcast from rank 0
//   allreduce      MPI_Allreduce, MPI_FLOAT, MPI_SUM
//   reduce         MPI_Reduce to rank 0, MPI_FLOAT, MPI_SUM
//   allgather      MPI_Allgather
//   reducescatter  MPI_Reduce_scatter_block, MPI_FLOAT, MPI_SUM
//   alltoall       MPI_Alltoall
//   gather         MPI_Gather to rank 0
//   scatter        MPI_Scatter from rank 0
//   put            one-sided, as osu_put_bw notifies: rank r MPI_Puts
//                  `size` bytes into rank r+1's window (MPI_Win_allocate,
//                  one passive epoch: MPI_Win_lock_all), MPI_Win_flush,
//                  then a zero-byte MPI_Send to r+1; it receives r-1's
//                  notification; the data is then in its window
//   putpingpong    ranks 0 <-> 1, PINGPONG_BATCH round trips of put +
//                  flush + notification each way (osu_put_latency with a
//                  notification); sizes <= 64 KiB
// Sizes follow shoal-perf (nccl-tests): for allgather, reducescatter,
// alltoall, gather and scatter the size is the total of every rank's
// block, rounded down to whole float blocks; the rest move `size` bytes
// per rank (allreduce and reduce: size / 4 floats). Every operation is
// out of place, between page-aligned buffers touched first.
//
// Data: float tiles of PATTERN_TILE (a prime) values repeated, different
// for every (op, source, iteration), small integers so that sums are exact;
// receivers count wrong elements against the expectation (pingpong,
// sendrecv and bcast count wrong bytes).
//
// Iterations: -n per size, or with -B BYTES as many as fit BYTES
// (iterations x size) but at least -m (shoal-perf's --iter_bytes and
// --min_iters, same formula).
//
// Output (rank 0), one line per size: "op bytes median_us min_us p90_us
// max_us wrong", after '#' comment lines.
//
//   mpirun -np 2 mpi_bench [-o OP[,OP...]|all] [-b MIN] [-e MAX]
//                          [-f FACTOR] [-n ITERS] [-w WARMUP] [-B BYTES]
//                          [-m MIN_ITERS]
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../mix.h"

#define PINGPONG_BATCH 100
#define PINGPONG_MAX   (64 * 1024)
#define PATTERN_TILE   4099

enum {
    OP_PINGPONG      = 1 << 0,
    OP_SENDRECV      = 1 << 1,
    OP_BCAST         = 1 << 2,
    OP_ALLREDUCE     = 1 << 3,
    OP_REDUCE        = 1 << 4,
    OP_ALLGATHER     = 1 << 5,
    OP_REDUCESCATTER = 1 << 6,
    OP_ALLTOALL      = 1 << 7,
    OP_GATHER        = 1 << 8,
    OP_SCATTER       = 1 << 9,
    OP_PUT           = 1 << 10,
    OP_PUTPINGPONG   = 1 << 11,
    OP_ALL           = (1 << 12) - 1
};

static const char *const op_names[] = { "pingpong", "sendrecv", "bcast",
    "allreduce", "reduce", "allgather", "reducescatter", "alltoall", "gather",
    "scatter", "put", "putpingpong" };

typedef struct bench {
    int            rank, nranks;
    int            ops;
    size_t         minb, maxb;
    double         factor;
    int            iters, warmup, min_iters;
    size_t         iter_bytes;
    unsigned char *sbuf, *rbuf;
    size_t         cold_cache; // -C: cache-cold over this cache (0: warm)
    unsigned char *sbase, *rbase; // cold: the regions sbuf, rbuf move in
    size_t         region;
    double        *times, *maxes;
    float          tile[PATTERN_TILE], exp[PATTERN_TILE];
    MPI_Win        win; // put: over `winbuf` (maxb bytes)
    unsigned char *winbuf;
} bench;

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static size_t
parse_size(const char *s)
{
    char  *end;
    double v = strtod(s, &end);

    switch (*end) {
        case 'K':
        case 'k':
            v *= 1024.0;
            break;
        case 'M':
        case 'm':
            v *= 1024.0 * 1024.0;
            break;
        case 'G':
        case 'g':
            v *= 1024.0 * 1024.0 * 1024.0;
            break;
        default:
            break;
    }
    return (size_t) v;
}

static int
parse_ops(const char *s)
{
    int bits = 0;

    while (*s != '\0') {
        size_t len   = strcspn(s, ",");
        int    found = 0;
        if (len == 3 && strncmp(s, "all", 3) == 0) {
            bits |= OP_ALL;
            found = 1;
        }
        for (size_t i = 0; i < sizeof(op_names) / sizeof(*op_names); i++) {
            if (strlen(op_names[i]) == len
                && strncmp(s, op_names[i], len) == 0) {
                bits |= 1 << i;
                found = 1;
            }
        }
        if (!found) {
            return -1;
        }
        s += len;
        s += *s == ',';
    }
    return bits;
}

static void *
alloc_touched(size_t bytes)
{
    size_t page = (size_t) sysconf(_SC_PAGESIZE);
    size_t len  = (bytes + page) / page * page;
    void  *p    = mmap(
            NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        return NULL;
    }
    memset(p, 0xa5, len);
    return p;
}

// Cache-cold (-C CACHE): iteration `it` of a size of `bytes` uses the
// it-th slot (bytes rounded up to pages) of regions of maxb plus twice
// the cache, so its memory was last touched two caches' worth of
// iterations ago; shoal-perf --cold does the same.
static void
rotate(bench *b, size_t bytes, int it)
{
    size_t page   = (size_t) sysconf(_SC_PAGESIZE);
    size_t stride = (bytes + page - 1) / page * page;

    if (b->cold_cache == 0) {
        return;
    }
    stride     = stride == 0 ? page : stride;
    size_t off = (size_t) it % ((b->region - b->maxb) / stride + 1) * stride;
    b->sbuf    = b->sbase + off;
    b->rbuf    = b->rbase + off;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return (x > y) - (x < y);
}

// Timed iterations at `bytes` (shoal-perf's perf_iters_for).
static int
iters_for(const bench *b, size_t bytes)
{
    if (b->iter_bytes == 0 || bytes == 0
        || bytes <= b->iter_bytes / (size_t) b->iters) {
        return b->iters;
    }
    size_t n = b->iter_bytes / bytes;
    if (n < (size_t) b->min_iters) {
        n = (size_t) b->min_iters;
    }
    return n < (size_t) b->iters ? (int) n : b->iters;
}

// Warm-up iterations at `bytes` (shoal-perf's perf_warmup_for): scaled
// down with the timed ones, at least 1.
static int
warmup_for(const bench *b, size_t bytes)
{
    int iters = iters_for(b, bytes);

    if (b->warmup == 0 || iters == b->iters) {
        return b->warmup;
    }
    return (int) (((long long) b->warmup * iters + b->iters - 1) / b->iters);
}

// --- byte patterns (pingpong, sendrecv, bcast)
// -------------------------------

static void
make_tile(unsigned char *tile, int it)
{
    uint32_t x = 0x9e3779b9u * (uint32_t) (it + 1);

    for (int i = 0; i < PATTERN_TILE; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        tile[i] = (unsigned char) x;
    }
}

static void
fill(unsigned char *buf, size_t bytes, int it)
{
    unsigned char tile[PATTERN_TILE];

    make_tile(tile, it);
    for (size_t i = 0; i < bytes; i += PATTERN_TILE) {
        size_t n = bytes - i < PATTERN_TILE ? bytes - i : PATTERN_TILE;
        memcpy(buf + i, tile, n);
    }
}

static double
count_wrong(const unsigned char *buf, size_t bytes, int it)
{
    unsigned char tile[PATTERN_TILE];
    double        wrong = 0;

    make_tile(tile, it);
    for (size_t i = 0; i < bytes; i += PATTERN_TILE) {
        size_t n = bytes - i < PATTERN_TILE ? bytes - i : PATTERN_TILE;
        if (memcmp(buf + i, tile, n) == 0) {
            continue;
        }
        for (size_t j = 0; j < n; j++) {
            wrong += buf[i + j] != tile[j];
        }
    }
    return wrong;
}

// --- float patterns (the collectives)
// ----------------------------------------

// Integers in [-1024, 1023]: sums of up to 8192 ranks stay exact.
static void
make_ftile(float *tile, int op, int src, int it)
{
    uint32_t seed
        = perf_mix32(perf_mix32((uint32_t) op * 0x9e3779b9u + (uint32_t) src)
            ^ ((uint32_t) it * 0x27d4eb2fu));

    for (int i = 0; i < PATTERN_TILE; i++) {
        tile[i]
            = (float) ((int) (perf_mix32(seed ^ (uint32_t) i) & 2047u) - 1024);
    }
}

static void
ffill(float *buf, size_t count, const float *tile)
{
    for (size_t i = 0; i < count; i += PATTERN_TILE) {
        size_t n = count - i < PATTERN_TILE ? count - i : PATTERN_TILE;
        memcpy(buf + i, tile, n * sizeof(float));
    }
}

// Wrong elements of buf[0..count) against elements first.. of the tile.
static double
fcheck(const float *buf, size_t count, size_t first, const float *tile)
{
    double wrong = 0;
    size_t k     = first % PATTERN_TILE;

    for (size_t i = 0; i < count;) {
        size_t n = PATTERN_TILE - k < count - i ? PATTERN_TILE - k : count - i;
        if (memcmp(buf + i, tile + k, n * sizeof(float)) != 0) {
            for (size_t j = 0; j < n; j++) {
                wrong += buf[i + j] != tile[k + j];
            }
        }
        i += n;
        k = 0;
    }
    return wrong;
}

// b->exp = the sum over ranks of their tiles for (op, it).
static void
expected_sum(bench *b, int op, int it)
{
    for (int r = 0; r < b->nranks; r++) {
        make_ftile(b->tile, op, r, it);
        for (int i = 0; i < PATTERN_TILE; i++) {
            b->exp[i] = r == 0 ? b->tile[i] : b->exp[i] + b->tile[i];
        }
    }
}

// --- measurement
// -------------------------------------------------------------

// Gathers the per-iteration maxima on rank 0 and prints one line.
static void
report(bench *b, const char *op, size_t bytes, int iters, double wrong)
{
    double total = 0;

    MPI_Reduce(
        b->times, b->maxes, iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&wrong, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (b->rank != 0) {
        return;
    }
    qsort(b->maxes, (size_t) iters, sizeof(double), cmp_double);
    int    n   = iters;
    double med = n % 2 ? b->maxes[n / 2]
                       : 0.5 * (b->maxes[n / 2 - 1] + b->maxes[n / 2]);
    int    k   = (9 * n + 9) / 10 - 1;
    printf("%s %zu %.4f %.4f %.4f %.4f %.0f\n", op, bytes, med * 1e6,
        b->maxes[0] * 1e6, b->maxes[k] * 1e6, b->maxes[n - 1] * 1e6, total);
    fflush(stdout);
}

// One collective of the generic loop: counts are floats per rank's block.
typedef struct coll {
    const char *name;
    int         op;
    int         total; // size = n blocks
    void (*prepare)(bench *b, size_t count, int it);
    void (*run)(bench *b, size_t count);
    double (*verify)(bench *b, size_t count, int it);
} coll;

static void
run_coll(bench *b, const coll *k, size_t size)
{
    size_t blocks = k->total ? (size_t) b->nranks : 1;
    size_t count  = size / sizeof(float) / blocks;
    size_t bytes  = count * blocks * sizeof(float);
    int    iters  = iters_for(b, size);
    int    warmup = warmup_for(b, size);
    double wrong  = 0;

    for (int it = 0; it < warmup + iters; it++) {
        rotate(b, bytes, it);
        int timed = it >= warmup;
        if (timed) {
            k->prepare(b, count, it);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        k->run(b, count);
        double t = now() - t0;
        if (timed) {
            b->times[it - warmup] = t;
            MPI_Barrier(MPI_COMM_WORLD); // no check inside a peer's timing
            wrong += k->verify(b, count, it);
        }
    }
    report(b, k->name, bytes, iters, wrong);
}

static float *
fblock(unsigned char *buf, size_t count, int r)
{
    return (float *) buf + (size_t) r * count;
}

// allreduce, reduce, reducescatter: rank r's input is its tile.
static void
prep_own(bench *b, size_t count, int it, int op, size_t blocks)
{
    make_ftile(b->tile, op, b->rank, it);
    ffill((float *) b->sbuf, count * blocks, b->tile);
}

static void
allreduce_prep(bench *b, size_t count, int it)
{
    prep_own(b, count, it, OP_ALLREDUCE, 1);
}

static void
allreduce_run(bench *b, size_t count)
{
    MPI_Allreduce(
        b->sbuf, b->rbuf, (int) count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static double
allreduce_verify(bench *b, size_t count, int it)
{
    expected_sum(b, OP_ALLREDUCE, it);
    return fcheck((float *) b->rbuf, count, 0, b->exp);
}

static void
reduce_prep(bench *b, size_t count, int it)
{
    prep_own(b, count, it, OP_REDUCE, 1);
}

static void
reduce_run(bench *b, size_t count)
{
    MPI_Reduce(
        b->sbuf, b->rbuf, (int) count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
}

static double
reduce_verify(bench *b, size_t count, int it)
{
    if (b->rank != 0) {
        return 0;
    }
    expected_sum(b, OP_REDUCE, it);
    return fcheck((float *) b->rbuf, count, 0, b->exp);
}

static void
reducescatter_prep(bench *b, size_t count, int it)
{
    prep_own(b, count, it, OP_REDUCESCATTER, (size_t) b->nranks);
}

static void
reducescatter_run(bench *b, size_t count)
{
    MPI_Reduce_scatter_block(
        b->sbuf, b->rbuf, (int) count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static double
reducescatter_verify(bench *b, size_t count, int it)
{
    expected_sum(b, OP_REDUCESCATTER, it);
    return fcheck((float *) b->rbuf, count, (size_t) b->rank * count, b->exp);
}

// allgather, gather: rank r's block is its tile.
static void
allgather_prep(bench *b, size_t count, int it)
{
    prep_own(b, count, it, OP_ALLGATHER, 1);
}

static void
allgather_run(bench *b, size_t count)
{
    MPI_Allgather(b->sbuf, (int) count, MPI_FLOAT, b->rbuf, (int) count,
        MPI_FLOAT, MPI_COMM_WORLD);
}

static double
check_blocks(bench *b, size_t count, int op, int dst, int it)
{
    double wrong = 0;

    for (int p = 0; p < b->nranks; p++) {
        make_ftile(b->tile, op, dst < 0 ? p : p * 65536 + dst, it);
        wrong += fcheck(fblock(b->rbuf, count, p), count, 0, b->tile);
    }
    return wrong;
}

static double
allgather_verify(bench *b, size_t count, int it)
{
    return check_blocks(b, count, OP_ALLGATHER, -1, it);
}

static void
gather_prep(bench *b, size_t count, int it)
{
    prep_own(b, count, it, OP_GATHER, 1);
}

static void
gather_run(bench *b, size_t count)
{
    MPI_Gather(b->sbuf, (int) count, MPI_FLOAT, b->rbuf, (int) count,
        MPI_FLOAT, 0, MPI_COMM_WORLD);
}

static double
gather_verify(bench *b, size_t count, int it)
{
    return b->rank == 0 ? check_blocks(b, count, OP_GATHER, -1, it) : 0;
}

// alltoall: block p of rank r is tile (r -> p).
static void
alltoall_prep(bench *b, size_t count, int it)
{
    for (int p = 0; p < b->nranks; p++) {
        make_ftile(b->tile, OP_ALLTOALL, b->rank * 65536 + p, it);
        ffill(fblock(b->sbuf, count, p), count, b->tile);
    }
}

static void
alltoall_run(bench *b, size_t count)
{
    MPI_Alltoall(b->sbuf, (int) count, MPI_FLOAT, b->rbuf, (int) count,
        MPI_FLOAT, MPI_COMM_WORLD);
}

static double
alltoall_verify(bench *b, size_t count, int it)
{
    return check_blocks(b, count, OP_ALLTOALL, b->rank, it);
}

// scatter: the root's block p is tile p.
static void
scatter_prep(bench *b, size_t count, int it)
{
    if (b->rank != 0) {
        return;
    }
    for (int p = 0; p < b->nranks; p++) {
        make_ftile(b->tile, OP_SCATTER, p, it);
        ffill(fblock(b->sbuf, count, p), count, b->tile);
    }
}

static void
scatter_run(bench *b, size_t count)
{
    MPI_Scatter(b->sbuf, (int) count, MPI_FLOAT, b->rbuf, (int) count,
        MPI_FLOAT, 0, MPI_COMM_WORLD);
}

static double
scatter_verify(bench *b, size_t count, int it)
{
    make_ftile(b->tile, OP_SCATTER, b->rank, it);
    return fcheck((float *) b->rbuf, count, 0, b->tile);
}

static const coll colls[] = {
    { "allreduce", OP_ALLREDUCE, 0, allreduce_prep, allreduce_run,
        allreduce_verify },
    { "reduce", OP_REDUCE, 0, reduce_prep, reduce_run, reduce_verify },
    { "allgather", OP_ALLGATHER, 1, allgather_prep, allgather_run,
        allgather_verify },
    { "reducescatter", OP_REDUCESCATTER, 1, reducescatter_prep,
        reducescatter_run, reducescatter_verify },
    { "alltoall", OP_ALLTOALL, 1, alltoall_prep, alltoall_run,
        alltoall_verify },
    { "gather", OP_GATHER, 1, gather_prep, gather_run, gather_verify },
    { "scatter", OP_SCATTER, 1, scatter_prep, scatter_run, scatter_verify },
};

// --- point-to-point and broadcast
// --------------------------------------------

static void
bench_pingpong(bench *b, size_t bytes)
{
    double wrong  = 0;
    int    iters  = iters_for(b, bytes);
    int    warmup = warmup_for(b, bytes);

    for (int it = 0; it < warmup + iters; it++) {
        rotate(b, bytes, it);
        int timed = it >= warmup;
        if (timed && b->rank == 0) {
            fill(b->sbuf, bytes, it);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        for (int k = 0; k < PINGPONG_BATCH; k++) {
            if (b->rank == 0) {
                MPI_Send(b->sbuf, (int) bytes, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
                MPI_Recv(b->rbuf, (int) bytes, MPI_BYTE, 1, 2, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE);
            } else if (b->rank == 1) {
                MPI_Recv(b->rbuf, (int) bytes, MPI_BYTE, 0, 2, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE);
                MPI_Send(b->rbuf, (int) bytes, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
            }
        }
        double t = (now() - t0) / (2.0 * PINGPONG_BATCH);
        if (timed) {
            b->times[it - warmup] = b->rank <= 1 ? t : 0.0;
            if (b->rank <= 1) {
                wrong += count_wrong(b->rbuf, bytes, it);
            }
        }
    }
    report(b, "pingpong", bytes, iters, wrong);
}

static void
bench_sendrecv(bench *b, size_t bytes)
{
    int    next   = (b->rank + 1) % b->nranks;
    int    prev   = (b->rank + b->nranks - 1) % b->nranks;
    double wrong  = 0;
    int    iters  = iters_for(b, bytes);
    int    warmup = warmup_for(b, bytes);

    for (int it = 0; it < warmup + iters; it++) {
        rotate(b, bytes, it);
        int         timed = it >= warmup;
        MPI_Request req[2];
        MPI_Status  st[2]; // not MPI_STATUSES_IGNORE: gcc misreads MPICH's
        if (timed) {
            fill(b->sbuf, bytes, it * 1000 + b->rank);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        MPI_Irecv(
            b->rbuf, (int) bytes, MPI_BYTE, prev, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(
            b->sbuf, (int) bytes, MPI_BYTE, next, 1, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, st);
        double t = now() - t0;
        if (timed) {
            b->times[it - warmup] = t;
            MPI_Barrier(MPI_COMM_WORLD); // no check inside a peer's timing
            wrong += count_wrong(b->rbuf, bytes, it * 1000 + prev);
        }
    }
    report(b, "sendrecv", bytes, iters, wrong);
}

// --- one-sided ------------------------------------------------------------

// A put of `bytes` into `dst`'s window, completed at the target, then the
// notification (a zero-byte message on tag 3).
static void
put_notify(bench *b, const void *src, size_t bytes, int dst)
{
    MPI_Put(src, (int) bytes, MPI_BYTE, dst, 0, (int) bytes, MPI_BYTE, b->win);
    MPI_Win_flush(dst, b->win);
    MPI_Send(NULL, 0, MPI_BYTE, dst, 3, MPI_COMM_WORLD);
}

static void
wait_notify(int src)
{
    MPI_Recv(NULL, 0, MPI_BYTE, src, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void
bench_put(bench *b, size_t bytes)
{
    int    next   = (b->rank + 1) % b->nranks;
    int    prev   = (b->rank + b->nranks - 1) % b->nranks;
    double wrong  = 0;
    int    iters  = iters_for(b, bytes);
    int    warmup = warmup_for(b, bytes);

    for (int it = 0; it < warmup + iters; it++) {
        rotate(b, bytes, it);
        int timed = it >= warmup;
        if (timed) {
            fill(b->sbuf, bytes, it * 1000 + b->rank);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        put_notify(b, b->sbuf, bytes, next);
        wait_notify(prev);
        double t = now() - t0;
        if (timed) {
            b->times[it - warmup] = t;
            MPI_Barrier(MPI_COMM_WORLD); // no check inside a peer's timing
            wrong += count_wrong(b->winbuf, bytes, it * 1000 + prev);
        }
    }
    report(b, "put", bytes, iters, wrong);
}

static void
bench_putpingpong(bench *b, size_t bytes)
{
    double wrong  = 0;
    int    iters  = iters_for(b, bytes);
    int    warmup = warmup_for(b, bytes);

    for (int it = 0; it < warmup + iters; it++) {
        rotate(b, bytes, it);
        int timed = it >= warmup;
        if (timed && b->rank == 0) {
            fill(b->sbuf, bytes, it);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        for (int k = 0; k < PINGPONG_BATCH; k++) {
            if (b->rank == 0) {
                put_notify(b, b->sbuf, bytes, 1);
                wait_notify(1);
            } else if (b->rank == 1) {
                wait_notify(0);
                put_notify(b, b->winbuf, bytes, 0);
            }
        }
        double t = (now() - t0) / (2.0 * PINGPONG_BATCH);
        if (timed) {
            b->times[it - warmup] = b->rank <= 1 ? t : 0.0;
            if (b->rank <= 1) {
                wrong += count_wrong(b->winbuf, bytes, it);
            }
        }
    }
    report(b, "putpingpong", bytes, iters, wrong);
}

static void
bench_bcast(bench *b, size_t bytes)
{
    double wrong  = 0;
    int    iters  = iters_for(b, bytes);
    int    warmup = warmup_for(b, bytes);

    for (int it = 0; it < warmup + iters; it++) {
        rotate(b, bytes, it);
        int timed = it >= warmup;
        if (timed && b->rank == 0) {
            fill(b->rbuf, bytes, it);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        MPI_Bcast(b->rbuf, (int) bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        double t = now() - t0;
        if (timed) {
            b->times[it - warmup] = t;
            wrong += count_wrong(b->rbuf, bytes, it);
        }
    }
    report(b, "bcast", bytes, iters, wrong);
}

static int
parse_args(bench *b, int argc, char **argv)
{
    int opt;

    b->ops        = OP_ALL;
    b->minb       = 8;
    b->maxb       = 64u << 20;
    b->factor     = 2.0;
    b->iters      = 20;
    b->warmup     = 5;
    b->iter_bytes = 0;
    b->min_iters  = 5;
    b->cold_cache = 0;
    while ((opt = getopt(argc, argv, "o:b:e:f:n:w:B:m:C:")) != -1) {
        switch (opt) {
            case 'o':
                b->ops = parse_ops(optarg);
                break;
            case 'b':
                b->minb = parse_size(optarg);
                break;
            case 'e':
                b->maxb = parse_size(optarg);
                break;
            case 'f':
                b->factor = atof(optarg);
                break;
            case 'n':
                b->iters = atoi(optarg);
                break;
            case 'w':
                b->warmup = atoi(optarg);
                break;
            case 'B':
                b->iter_bytes = parse_size(optarg);
                break;
            case 'm':
                b->min_iters = atoi(optarg);
                break;
            case 'C':
                b->cold_cache = parse_size(optarg);
                break;
            default:
                return -1;
        }
    }
    if (b->ops <= 0 || b->minb < 1 || b->factor <= 1.0 || b->iters < 1
        || b->warmup < 0 || b->min_iters < 1 || b->maxb > (size_t) 1 << 30) {
        return -1;
    }
    if (b->min_iters > b->iters) {
        b->min_iters = b->iters;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    bench b;
    int   version, subversion;
    char  lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int   len;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.nranks);
    if (parse_args(&b, argc, argv) != 0 || b.nranks < 2) {
        if (b.rank == 0) {
            fprintf(stderr,
                "usage: mpirun -np N (N >= 2) mpi_bench [-o OP[,OP...]|all] "
                "[-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] "
                "[-B ITER_BYTES] [-m MIN_ITERS] [-C CACHE_BYTES: cold]\n");
        }
        MPI_Finalize();
        return 2;
    }
    b.region = b.maxb + 2 * b.cold_cache;
    b.sbuf = b.sbase = alloc_touched(b.region);
    b.rbuf = b.rbase = alloc_touched(b.region);
    b.times          = calloc((size_t) b.iters, sizeof(double));
    b.maxes          = calloc((size_t) b.iters, sizeof(double));
    if (b.sbuf == NULL || b.rbuf == NULL || b.times == NULL
        || b.maxes == NULL) {
        fprintf(stderr, "mpi_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Get_version(&version, &subversion);
    MPI_Get_library_version(lib, &len);
    if (b.rank == 0) {
        printf("# mpi_bench: %d ranks, MPI %d.%d, %.*s\n", b.nranks, version,
            subversion, (int) strcspn(lib, "\n"), lib);
        if (b.cold_cache > 0) {
            printf("# cache-cold: each iteration's buffers lie past %zu MiB "
                   "of earlier ones' memory\n",
                2 * b.cold_cache >> 20);
        }
        printf("# op bytes median_us min_us p90_us max_us wrong\n");
    }
    for (double s = (double) b.minb; s <= (double) b.maxb; s *= b.factor) {
        if ((b.ops & OP_PINGPONG) && (size_t) s <= PINGPONG_MAX) {
            bench_pingpong(&b, (size_t) s);
        }
    }
    for (double s = (double) b.minb; s <= (double) b.maxb; s *= b.factor) {
        if (b.ops & OP_SENDRECV) {
            bench_sendrecv(&b, (size_t) s);
        }
    }
    for (double s = (double) b.minb; s <= (double) b.maxb; s *= b.factor) {
        if (b.ops & OP_BCAST) {
            bench_bcast(&b, (size_t) s);
        }
    }
    if (b.ops & (OP_PUT | OP_PUTPINGPONG)) {
        MPI_Win_allocate((MPI_Aint) b.maxb, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
            &b.winbuf, &b.win);
        memset(b.winbuf, 0, b.maxb);
        MPI_Win_lock_all(0, b.win);
        for (double s = (double) b.minb; s <= (double) b.maxb; s *= b.factor) {
            if (b.ops & OP_PUT) {
                bench_put(&b, (size_t) s);
            }
        }
        for (double s = (double) b.minb; s <= (double) b.maxb; s *= b.factor) {
            if ((b.ops & OP_PUTPINGPONG) && (size_t) s <= PINGPONG_MAX) {
                bench_putpingpong(&b, (size_t) s);
            }
        }
        MPI_Win_unlock_all(b.win);
        MPI_Win_free(&b.win);
    }
    for (size_t i = 0; i < sizeof(colls) / sizeof(*colls); i++) {
        if (!(b.ops & colls[i].op)) {
            continue;
        }
        for (double s = (double) b.minb; s <= (double) b.maxb; s *= b.factor) {
            run_coll(&b, &colls[i], (size_t) s);
        }
    }
    MPI_Finalize();
    return 0;
}
