// mpi_bench: the Open MPI side of tools/perf/compare.sh.
//
// Built by compare.sh with mpicc (not by CMake: it lives in a subfolder so
// that the tools/perf/*.c glob of shoal-perf does not pick it up). It times
// the same operations as shoal-perf, with the same method: per iteration
// MPI_Barrier, then every rank times the operation alone; afterwards rank
// 0 takes the per-iteration maximum over ranks and prints the median (min
// and p90 too) over iterations.
//   pingpong  ranks 0 <-> 1, PINGPONG_BATCH blocking MPI_Send/MPI_Recv round
//             trips per sample, time = sample / (2 x batch); sizes <= 64 KiB
//   sendrecv  rank r sends to r+1 and receives from r-1 (MPI_Irecv,
//             MPI_Isend, MPI_Waitall)
//   bcast     MPI_Bcast from rank 0
// Data: MPI_BYTE buffers, page-aligned and touched first; the root's data
// changes every iteration and receivers count wrong bytes.
//
// Output (rank 0), one line per size: "op bytes median_us min_us p90_us
// wrong", after '#' comment lines.
//
//   mpirun -np 2 mpi_bench [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS]
//                          [-w WARMUP]
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PINGPONG_BATCH 100
#define PINGPONG_MAX   (64 * 1024)

typedef struct bench {
    int            rank, nranks;
    size_t         minb, maxb;
    double         factor;
    int            iters, warmup;
    unsigned char *sbuf, *rbuf;
    double        *times, *maxes;
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

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return (x > y) - (x < y);
}

// Iteration `it`'s data: a tile of PATTERN_TILE (prime) pseudo-random
// bytes repeated, as shoal-perf does, so filling and checking go at memcpy
// speed and the data differs every iteration.
#define PATTERN_TILE 4099

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

// Gathers the per-iteration maxima on rank 0 and prints one line.
static void
report(bench *b, const char *op, size_t bytes, double wrong)
{
    double total = 0;

    MPI_Reduce(
        b->times, b->maxes, b->iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&wrong, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (b->rank != 0) {
        return;
    }
    qsort(b->maxes, (size_t) b->iters, sizeof(double), cmp_double);
    int    n   = b->iters;
    double med = n % 2 ? b->maxes[n / 2]
                       : 0.5 * (b->maxes[n / 2 - 1] + b->maxes[n / 2]);
    int    k   = (9 * n + 9) / 10 - 1;
    printf("%s %zu %.4f %.4f %.4f %.0f\n", op, bytes, med * 1e6,
        b->maxes[0] * 1e6, b->maxes[k] * 1e6, total);
    fflush(stdout);
}

static void
bench_pingpong(bench *b, size_t bytes)
{
    double wrong = 0;

    for (int it = 0; it < b->warmup + b->iters; it++) {
        int timed = it >= b->warmup;
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
            b->times[it - b->warmup] = b->rank <= 1 ? t : 0.0;
            if (b->rank <= 1) {
                wrong += count_wrong(b->rbuf, bytes, it);
            }
        }
    }
    report(b, "pingpong", bytes, wrong);
}

static void
bench_sendrecv(bench *b, size_t bytes)
{
    int    next  = (b->rank + 1) % b->nranks;
    int    prev  = (b->rank + b->nranks - 1) % b->nranks;
    double wrong = 0;

    for (int it = 0; it < b->warmup + b->iters; it++) {
        int         timed = it >= b->warmup;
        MPI_Request req[2];
        if (timed) {
            fill(b->sbuf, bytes, it * 1000 + b->rank);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        MPI_Irecv(
            b->rbuf, (int) bytes, MPI_BYTE, prev, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(
            b->sbuf, (int) bytes, MPI_BYTE, next, 1, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        double t = now() - t0;
        if (timed) {
            b->times[it - b->warmup] = t;
            wrong += count_wrong(b->rbuf, bytes, it * 1000 + prev);
        }
    }
    report(b, "sendrecv", bytes, wrong);
}

static void
bench_bcast(bench *b, size_t bytes)
{
    double wrong = 0;

    for (int it = 0; it < b->warmup + b->iters; it++) {
        int timed = it >= b->warmup;
        if (timed && b->rank == 0) {
            fill(b->rbuf, bytes, it);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        MPI_Bcast(b->rbuf, (int) bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        double t = now() - t0;
        if (timed) {
            b->times[it - b->warmup] = t;
            wrong += count_wrong(b->rbuf, bytes, it);
        }
    }
    report(b, "bcast", bytes, wrong);
}

static int
parse_args(bench *b, int argc, char **argv)
{
    int opt;

    b->minb   = 8;
    b->maxb   = 64u << 20;
    b->factor = 2.0;
    b->iters  = 20;
    b->warmup = 5;
    while ((opt = getopt(argc, argv, "b:e:f:n:w:")) != -1) {
        switch (opt) {
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
            default:
                return -1;
        }
    }
    if (b->minb < 1 || b->factor <= 1.0 || b->iters < 1 || b->warmup < 0
        || b->maxb > (size_t) 1 << 30) {
        return -1;
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
                "usage: mpirun -np N (N >= 2) mpi_bench [-b MIN] [-e MAX] "
                "[-f FACTOR] [-n ITERS] [-w WARMUP]\n");
        }
        MPI_Finalize();
        return 2;
    }
    b.sbuf  = alloc_touched(b.maxb);
    b.rbuf  = alloc_touched(b.maxb);
    b.times = calloc((size_t) b.iters, sizeof(double));
    b.maxes = calloc((size_t) b.iters, sizeof(double));
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
        printf("# op bytes median_us min_us p90_us wrong\n");
    }
    for (double s = (double) b.minb; s <= (double) b.maxb; s *= b.factor) {
        if ((size_t) s <= PINGPONG_MAX) {
            bench_pingpong(&b, (size_t) s);
        }
    }
    for (double s = (double) b.minb; s <= (double) b.maxb; s *= b.factor) {
        bench_sendrecv(&b, (size_t) s);
    }
    for (double s = (double) b.minb; s <= (double) b.maxb; s *= b.factor) {
        bench_bcast(&b, (size_t) s);
    }
    MPI_Finalize();
    return 0;
}
