// oneccl_bench: the Intel oneCCL side of tools/perf/compare.sh.
//
// Built by compare.sh with g++ against the oneCCL wheels that
// tools/perf/oneccl/install.sh puts into a virtual environment (not by
// CMake: it lives in a subfolder, and is C++ because oneCCL's API is). It
// times the operations of mpi_bench (tools/perf/mpi/mpi_bench.c) that
// oneCCL's CPU API has, with the same method: per iteration ccl::barrier,
// then every rank times the operation alone (the call and the wait on its
// event); afterwards the per-iteration maximum over ranks (a oneCCL
// allreduce, max) and the median, min, p90 and max over iterations.
//   pingpong       ranks 0 <-> 1, PINGPONG_BATCH ccl::send/ccl::recv round
//                  trips per sample (each call waited), time = sample /
//                  (2 x batch); sizes <= 64 KiB
//   sendrecv       rank r receives from r-1 and sends to r+1 at once
//                  (ccl::recv, ccl::send, then both events waited)
//   allreduce      ccl::allreduce, float32, sum
//   reduce         ccl::reduce to rank 0, float32, sum
//   allgather      ccl::allgather
//   reducescatter  ccl::reduce_scatter, float32, sum
//   alltoall       ccl::alltoall
//   scatter        ccl::scatter from rank 0
//   bcast          ccl::broadcast from rank 0 (bytes, in place)
// oneCCL has no gather, and no one-sided windows in its CPU API.
// Sizes, data, checks, iteration counts and the output follow mpi_bench:
// for allgather, reducescatter, alltoall and scatter the size is the total
// of every rank's block, rounded down to whole float blocks; the rest move
// `size` bytes per rank. Float tiles of PATTERN_TILE small integers,
// different for every (op, source, iteration), so that sums are exact;
// receivers count wrong elements (pingpong, sendrecv, bcast: wrong
// bytes). Every operation but
// bcast is out of place, between page-aligned buffers touched first.
//
// Ranks: the program starts them itself (no MPI needed): with -N n it
// forks n processes; rank 0 creates oneCCL's main key-value store
// (ccl::create_main_kvs) and hands its address to the others through a
// pipe each. The parent waits for all of them and exits non-zero if one
// failed (killing the rest). Transport defaults, each kept if already set
// in the environment: CCL_ATL_TRANSPORT=ofi, FI_PROVIDER=shm,
// CCL_ATL_SHM=1, CCL_KVS_IFACE=lo, CCL_WORKER_OFFLOAD=0 (with oneCCL's
// worker threads each call costs milliseconds on a small machine),
// CCL_LOG_LEVEL=error; every rank also gets CCL_LOCAL_RANK and
// CCL_LOCAL_SIZE (all ranks are on this host).
//
// Output (rank 0), one line per size: "op bytes median_us min_us p90_us
// max_us wrong", after '#' comment lines.
//
//   oneccl_bench [-N NRANKS] [-o OP[,OP...]|all] [-b MIN] [-e MAX]
//                [-f FACTOR] [-n ITERS] [-w WARMUP] [-B BYTES]
//                [-m MIN_ITERS]
#include <oneapi/ccl.hpp>

#include <algorithm>
#include <cinttypes>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../mix.h"

namespace
{

constexpr int PATTERN_TILE = 4099;

constexpr int PINGPONG_BATCH = 100;
constexpr int PINGPONG_MAX   = 64 * 1024;

enum : int {
    OP_PINGPONG      = 1 << 0,
    OP_SENDRECV      = 1 << 1,
    OP_BCAST         = 1 << 2,
    OP_ALLREDUCE     = 1 << 3,
    OP_REDUCE        = 1 << 4,
    OP_ALLGATHER     = 1 << 5,
    OP_REDUCESCATTER = 1 << 6,
    OP_ALLTOALL      = 1 << 7,
    OP_SCATTER       = 1 << 9,
    OP_ALL = OP_PINGPONG | OP_SENDRECV | OP_BCAST | OP_ALLREDUCE | OP_REDUCE
        | OP_ALLGATHER | OP_REDUCESCATTER | OP_ALLTOALL | OP_SCATTER
};

// mpi_bench's op numbers (the bit index), so that seeds match its data.
struct op_name {
    const char *name;
    int         bit;
};
const op_name op_names[] = { { "pingpong", OP_PINGPONG },
    { "sendrecv", OP_SENDRECV }, { "bcast", OP_BCAST },
    { "allreduce", OP_ALLREDUCE }, { "reduce", OP_REDUCE },
    { "allgather", OP_ALLGATHER }, { "reducescatter", OP_REDUCESCATTER },
    { "alltoall", OP_ALLTOALL }, { "scatter", OP_SCATTER } };

struct bench {
    int                 rank = 0, nranks = 0;
    int                 ops        = OP_ALL;
    size_t              minb       = 8;
    size_t              maxb       = 64u << 20;
    double              factor     = 2.0;
    int                 iters      = 20;
    int                 warmup     = 5;
    int                 min_iters  = 5;
    size_t              iter_bytes = 0;
    unsigned char      *sbuf = nullptr, *rbuf = nullptr;
    std::vector<double> times, maxes;
    float               tile[PATTERN_TILE], exp[PATTERN_TILE];
    ccl::communicator  *comm = nullptr;
};

double
now()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

size_t
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

// A comma list of op names ("all": every op); -1 for an unknown name.
// mpi_bench's names that oneCCL lacks (gather, put, putpingpong) are
// refused too: compare.sh asks only for the others.
int
parse_ops(const char *s)
{
    int bits = 0;

    while (*s != '\0') {
        size_t len   = strcspn(s, ",");
        bool   found = false;
        if (len == 3 && strncmp(s, "all", 3) == 0) {
            bits |= OP_ALL;
            found = true;
        }
        for (const op_name &o : op_names) {
            if (strlen(o.name) == len && strncmp(s, o.name, len) == 0) {
                bits |= o.bit;
                found = true;
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

unsigned char *
alloc_touched(size_t bytes)
{
    size_t page = (size_t) sysconf(_SC_PAGESIZE);
    size_t len  = (bytes + page) / page * page;
    void  *p    = mmap(nullptr, len, PROT_READ | PROT_WRITE,
            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        return nullptr;
    }
    memset(p, 0xa5, len);
    return static_cast<unsigned char *>(p);
}

// Timed iterations at `bytes` (shoal-perf's perf_iters_for).
int
iters_for(const bench &b, size_t bytes)
{
    if (b.iter_bytes == 0 || bytes == 0
        || bytes <= b.iter_bytes / (size_t) b.iters) {
        return b.iters;
    }
    size_t n = b.iter_bytes / bytes;
    if (n < (size_t) b.min_iters) {
        n = (size_t) b.min_iters;
    }
    return n < (size_t) b.iters ? (int) n : b.iters;
}

// Warm-up iterations at `bytes` (shoal-perf's perf_warmup_for).
int
warmup_for(const bench &b, size_t bytes)
{
    int iters = iters_for(b, bytes);

    if (b.warmup == 0 || iters == b.iters) {
        return b.warmup;
    }
    return (int) (((long long) b.warmup * iters + b.iters - 1) / b.iters);
}

// --- byte patterns (bcast) ----------------------------------------------

void
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

void
fill(unsigned char *buf, size_t bytes, int it)
{
    unsigned char tile[PATTERN_TILE];

    make_tile(tile, it);
    for (size_t i = 0; i < bytes; i += PATTERN_TILE) {
        size_t n = std::min(bytes - i, (size_t) PATTERN_TILE);
        memcpy(buf + i, tile, n);
    }
}

double
count_wrong(const unsigned char *buf, size_t bytes, int it)
{
    unsigned char tile[PATTERN_TILE];
    double        wrong = 0;

    make_tile(tile, it);
    for (size_t i = 0; i < bytes; i += PATTERN_TILE) {
        size_t n = std::min(bytes - i, (size_t) PATTERN_TILE);
        if (memcmp(buf + i, tile, n) == 0) {
            continue;
        }
        for (size_t j = 0; j < n; j++) {
            wrong += buf[i + j] != tile[j];
        }
    }
    return wrong;
}

// --- float patterns (the collectives) -----------------------------------

// Integers in [-1024, 1023]: sums of up to 8192 ranks stay exact.
void
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

void
ffill(float *buf, size_t count, const float *tile)
{
    for (size_t i = 0; i < count; i += PATTERN_TILE) {
        size_t n = std::min(count - i, (size_t) PATTERN_TILE);
        memcpy(buf + i, tile, n * sizeof(float));
    }
}

// Wrong elements of buf[0..count) against elements first.. of the tile.
double
fcheck(const float *buf, size_t count, size_t first, const float *tile)
{
    double wrong = 0;
    size_t k     = first % PATTERN_TILE;

    for (size_t i = 0; i < count;) {
        size_t n = std::min((size_t) PATTERN_TILE - k, count - i);
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

// b.exp = the sum over ranks of their tiles for (op, it).
void
expected_sum(bench &b, int op, int it)
{
    for (int r = 0; r < b.nranks; r++) {
        make_ftile(b.tile, op, r, it);
        for (int i = 0; i < PATTERN_TILE; i++) {
            b.exp[i] = r == 0 ? b.tile[i] : b.exp[i] + b.tile[i];
        }
    }
}

float *
fblock(unsigned char *buf, size_t count, int r)
{
    return reinterpret_cast<float *>(buf) + (size_t) r * count;
}

// --- measurement ----------------------------------------------------------

// Per-iteration maxima over ranks and the wrong elements of all ranks; rank
// 0 prints one line.
void
report(bench &b, const char *op, size_t bytes, int iters, double wrong)
{
    double total = 0;

    ccl::allreduce(b.times.data(), b.maxes.data(), (size_t) iters,
        ccl::datatype::float64, ccl::reduction::max, *b.comm)
        .wait();
    ccl::allreduce(&wrong, &total, 1, ccl::datatype::float64,
        ccl::reduction::sum, *b.comm)
        .wait();
    if (b.rank != 0) {
        return;
    }
    std::sort(b.maxes.begin(), b.maxes.begin() + iters);
    int    n = iters;
    double med
        = n % 2 ? b.maxes[n / 2] : 0.5 * (b.maxes[n / 2 - 1] + b.maxes[n / 2]);
    int k = (9 * n + 9) / 10 - 1;
    printf("%s %zu %.4f %.4f %.4f %.4f %.0f\n", op, bytes, med * 1e6,
        b.maxes[0] * 1e6, b.maxes[k] * 1e6, b.maxes[n - 1] * 1e6, total);
    fflush(stdout);
}

// One collective of the generic loop: counts are floats per rank's block.
struct coll {
    const char *name;
    int         op;
    bool        total; // size = n blocks
    void (*prepare)(bench &b, size_t count, int it);
    void (*run)(bench &b, size_t count);
    double (*verify)(bench &b, size_t count, int it);
};

void
run_coll(bench &b, const coll &k, size_t size)
{
    size_t blocks = k.total ? (size_t) b.nranks : 1;
    size_t count  = size / sizeof(float) / blocks;
    size_t bytes  = count * blocks * sizeof(float);
    int    iters  = iters_for(b, size);
    int    warmup = warmup_for(b, size);
    double wrong  = 0;

    for (int it = 0; it < warmup + iters; it++) {
        bool timed = it >= warmup;
        if (timed) {
            k.prepare(b, count, it);
        }
        ccl::barrier(*b.comm).wait();
        double t0 = now();
        k.run(b, count);
        double t = now() - t0;
        if (timed) {
            b.times[it - warmup] = t;
            ccl::barrier(*b.comm).wait(); // no check inside a peer's timing
            wrong += k.verify(b, count, it);
        }
    }
    report(b, k.name, bytes, iters, wrong);
}

// allreduce, reduce, reducescatter: rank r's input is its tile.
void
prep_own(bench &b, size_t count, int it, int op, size_t blocks)
{
    make_ftile(b.tile, op, b.rank, it);
    ffill(reinterpret_cast<float *>(b.sbuf), count * blocks, b.tile);
}

void
allreduce_prep(bench &b, size_t count, int it)
{
    prep_own(b, count, it, OP_ALLREDUCE, 1);
}

void
allreduce_run(bench &b, size_t count)
{
    ccl::allreduce(b.sbuf, b.rbuf, count, ccl::datatype::float32,
        ccl::reduction::sum, *b.comm)
        .wait();
}

double
allreduce_verify(bench &b, size_t count, int it)
{
    expected_sum(b, OP_ALLREDUCE, it);
    return fcheck(reinterpret_cast<float *>(b.rbuf), count, 0, b.exp);
}

void
reduce_prep(bench &b, size_t count, int it)
{
    prep_own(b, count, it, OP_REDUCE, 1);
}

void
reduce_run(bench &b, size_t count)
{
    ccl::reduce(b.sbuf, b.rbuf, count, ccl::datatype::float32,
        ccl::reduction::sum, 0, *b.comm)
        .wait();
}

double
reduce_verify(bench &b, size_t count, int it)
{
    if (b.rank != 0) {
        return 0;
    }
    expected_sum(b, OP_REDUCE, it);
    return fcheck(reinterpret_cast<float *>(b.rbuf), count, 0, b.exp);
}

void
reducescatter_prep(bench &b, size_t count, int it)
{
    prep_own(b, count, it, OP_REDUCESCATTER, (size_t) b.nranks);
}

void
reducescatter_run(bench &b, size_t count)
{
    ccl::reduce_scatter(b.sbuf, b.rbuf, count, ccl::datatype::float32,
        ccl::reduction::sum, *b.comm)
        .wait();
}

double
reducescatter_verify(bench &b, size_t count, int it)
{
    expected_sum(b, OP_REDUCESCATTER, it);
    return fcheck(reinterpret_cast<float *>(b.rbuf), count,
        (size_t) b.rank * count, b.exp);
}

void
allgather_prep(bench &b, size_t count, int it)
{
    prep_own(b, count, it, OP_ALLGATHER, 1);
}

void
allgather_run(bench &b, size_t count)
{
    ccl::allgather(b.sbuf, b.rbuf, count, ccl::datatype::float32, *b.comm)
        .wait();
}

double
check_blocks(bench &b, size_t count, int op, int dst, int it)
{
    double wrong = 0;

    for (int p = 0; p < b.nranks; p++) {
        make_ftile(b.tile, op, dst < 0 ? p : p * 65536 + dst, it);
        wrong += fcheck(fblock(b.rbuf, count, p), count, 0, b.tile);
    }
    return wrong;
}

double
allgather_verify(bench &b, size_t count, int it)
{
    return check_blocks(b, count, OP_ALLGATHER, -1, it);
}

// alltoall: block p of rank r is tile (r -> p).
void
alltoall_prep(bench &b, size_t count, int it)
{
    for (int p = 0; p < b.nranks; p++) {
        make_ftile(b.tile, OP_ALLTOALL, b.rank * 65536 + p, it);
        ffill(fblock(b.sbuf, count, p), count, b.tile);
    }
}

void
alltoall_run(bench &b, size_t count)
{
    ccl::alltoall(b.sbuf, b.rbuf, count, ccl::datatype::float32, *b.comm)
        .wait();
}

double
alltoall_verify(bench &b, size_t count, int it)
{
    return check_blocks(b, count, OP_ALLTOALL, b.rank, it);
}

// scatter: the root's block p is tile p.
void
scatter_prep(bench &b, size_t count, int it)
{
    if (b.rank != 0) {
        return;
    }
    for (int p = 0; p < b.nranks; p++) {
        make_ftile(b.tile, OP_SCATTER, p, it);
        ffill(fblock(b.sbuf, count, p), count, b.tile);
    }
}

void
scatter_run(bench &b, size_t count)
{
    ccl::scatter(b.sbuf, b.rbuf, count, ccl::datatype::float32, 0, *b.comm)
        .wait();
}

double
scatter_verify(bench &b, size_t count, int it)
{
    make_ftile(b.tile, OP_SCATTER, b.rank, it);
    return fcheck(reinterpret_cast<float *>(b.rbuf), count, 0, b.tile);
}

const coll colls[] = {
    { "allreduce", OP_ALLREDUCE, false, allreduce_prep, allreduce_run,
        allreduce_verify },
    { "reduce", OP_REDUCE, false, reduce_prep, reduce_run, reduce_verify },
    { "allgather", OP_ALLGATHER, true, allgather_prep, allgather_run,
        allgather_verify },
    { "reducescatter", OP_REDUCESCATTER, true, reducescatter_prep,
        reducescatter_run, reducescatter_verify },
    { "alltoall", OP_ALLTOALL, true, alltoall_prep, alltoall_run,
        alltoall_verify },
    { "scatter", OP_SCATTER, true, scatter_prep, scatter_run, scatter_verify },
};

// --- point-to-point -------------------------------------------------------

void
bench_pingpong(bench &b, size_t bytes)
{
    double wrong  = 0;
    int    iters  = iters_for(b, bytes);
    int    warmup = warmup_for(b, bytes);

    for (int it = 0; it < warmup + iters; it++) {
        bool timed = it >= warmup;
        if (timed && b.rank == 0) {
            fill(b.sbuf, bytes, it);
        }
        ccl::barrier(*b.comm).wait();
        double t0 = now();
        for (int k = 0; k < PINGPONG_BATCH; k++) {
            if (b.rank == 0) {
                ccl::send(b.sbuf, bytes, ccl::datatype::uint8, 1, *b.comm)
                    .wait();
                ccl::recv(b.rbuf, bytes, ccl::datatype::uint8, 1, *b.comm)
                    .wait();
            } else if (b.rank == 1) {
                ccl::recv(b.rbuf, bytes, ccl::datatype::uint8, 0, *b.comm)
                    .wait();
                ccl::send(b.rbuf, bytes, ccl::datatype::uint8, 0, *b.comm)
                    .wait();
            }
        }
        double t = (now() - t0) / (2.0 * PINGPONG_BATCH);
        if (timed) {
            b.times[it - warmup] = b.rank <= 1 ? t : 0.0;
            if (b.rank <= 1) {
                wrong += count_wrong(b.rbuf, bytes, it);
            }
        }
    }
    report(b, "pingpong", bytes, iters, wrong);
}

void
bench_sendrecv(bench &b, size_t bytes)
{
    int    next   = (b.rank + 1) % b.nranks;
    int    prev   = (b.rank + b.nranks - 1) % b.nranks;
    double wrong  = 0;
    int    iters  = iters_for(b, bytes);
    int    warmup = warmup_for(b, bytes);

    for (int it = 0; it < warmup + iters; it++) {
        bool timed = it >= warmup;
        if (timed) {
            fill(b.sbuf, bytes, it * 1000 + b.rank);
        }
        ccl::barrier(*b.comm).wait();
        double     t0 = now();
        ccl::event r
            = ccl::recv(b.rbuf, bytes, ccl::datatype::uint8, prev, *b.comm);
        ccl::event s
            = ccl::send(b.sbuf, bytes, ccl::datatype::uint8, next, *b.comm);
        r.wait();
        s.wait();
        double t = now() - t0;
        if (timed) {
            b.times[it - warmup] = t;
            wrong += count_wrong(b.rbuf, bytes, it * 1000 + prev);
        }
    }
    report(b, "sendrecv", bytes, iters, wrong);
}

void
bench_bcast(bench &b, size_t bytes)
{
    double wrong  = 0;
    int    iters  = iters_for(b, bytes);
    int    warmup = warmup_for(b, bytes);

    for (int it = 0; it < warmup + iters; it++) {
        bool timed = it >= warmup;
        if (timed && b.rank == 0) {
            fill(b.rbuf, bytes, it);
        }
        ccl::barrier(*b.comm).wait();
        double t0 = now();
        ccl::broadcast(b.rbuf, bytes, ccl::datatype::uint8, 0, *b.comm).wait();
        double t = now() - t0;
        if (timed) {
            b.times[it - warmup] = t;
            wrong += count_wrong(b.rbuf, bytes, it);
        }
    }
    report(b, "bcast", bytes, iters, wrong);
}

int
parse_args(bench &b, int &nranks, int argc, char **argv)
{
    int opt;

    nranks = 2;
    while ((opt = getopt(argc, argv, "N:o:b:e:f:n:w:B:m:")) != -1) {
        switch (opt) {
            case 'N':
                nranks = atoi(optarg);
                break;
            case 'o':
                b.ops = parse_ops(optarg);
                break;
            case 'b':
                b.minb = parse_size(optarg);
                break;
            case 'e':
                b.maxb = parse_size(optarg);
                break;
            case 'f':
                b.factor = atof(optarg);
                break;
            case 'n':
                b.iters = atoi(optarg);
                break;
            case 'w':
                b.warmup = atoi(optarg);
                break;
            case 'B':
                b.iter_bytes = parse_size(optarg);
                break;
            case 'm':
                b.min_iters = atoi(optarg);
                break;
            default:
                return -1;
        }
    }
    if (nranks < 2 || b.ops <= 0 || b.minb < 1 || b.factor <= 1.0
        || b.iters < 1 || b.warmup < 0 || b.min_iters < 1
        || b.maxb > (size_t) 1 << 30 || optind != argc) {
        return -1;
    }
    b.min_iters = std::min(b.min_iters, b.iters);
    return 0;
}

// Reads exactly `len` bytes; false at end of file or on an error.
bool
read_all(int fd, void *buf, size_t len)
{
    auto *p = static_cast<char *>(buf);

    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n <= 0) {
            return false;
        }
        p += n;
        len -= (size_t) n;
    }
    return true;
}

// One rank: `pipes[r]` carries the main KVS address from rank 0 to rank r.
int
run_rank(bench &b, const std::vector<int> &wfds, int rfd)
{
    ccl::init();
    ccl::shared_ptr_class<ccl::kvs> kvs;
    ccl::kvs::address_type          addr;
    if (b.rank == 0) {
        kvs  = ccl::create_main_kvs();
        addr = kvs->get_address();
        for (int fd : wfds) {
            if (write(fd, addr.data(), addr.size()) != (ssize_t) addr.size()) {
                perror("oneccl_bench: write");
                return 1;
            }
            close(fd);
        }
    } else {
        if (!read_all(rfd, addr.data(), addr.size())) {
            fprintf(stderr, "oneccl_bench: rank %d: no KVS address\n", b.rank);
            return 1;
        }
        close(rfd);
        kvs = ccl::create_kvs(addr);
    }
    ccl::communicator comm = ccl::create_communicator(b.nranks, b.rank, kvs);
    b.comm                 = &comm;

    b.sbuf = alloc_touched(b.maxb);
    b.rbuf = alloc_touched(b.maxb);
    b.times.assign((size_t) b.iters, 0.0);
    b.maxes.assign((size_t) b.iters, 0.0);
    if (b.sbuf == nullptr || b.rbuf == nullptr) {
        fprintf(stderr, "oneccl_bench: out of memory\n");
        return 1;
    }
    if (b.rank == 0) {
        ccl::library_version v = ccl::get_library_version();
        printf("# oneccl_bench: %d ranks, oneCCL %s,", b.nranks, v.full);
        for (const char *e : { "CCL_ATL_TRANSPORT", "FI_PROVIDER",
                 "CCL_ATL_SHM", "CCL_KVS_IFACE", "CCL_WORKER_OFFLOAD" }) {
            const char *val = getenv(e);
            printf(" %s=%s", e, val != nullptr ? val : "");
        }
        printf("\n# op bytes median_us min_us p90_us max_us wrong\n");
        fflush(stdout);
    }
    for (double s = (double) b.minb; s <= (double) b.maxb; s *= b.factor) {
        if ((b.ops & OP_PINGPONG) && (size_t) s <= PINGPONG_MAX) {
            bench_pingpong(b, (size_t) s);
        }
    }
    for (double s = (double) b.minb; s <= (double) b.maxb; s *= b.factor) {
        if (b.ops & OP_SENDRECV) {
            bench_sendrecv(b, (size_t) s);
        }
    }
    for (double s = (double) b.minb; s <= (double) b.maxb; s *= b.factor) {
        if (b.ops & OP_BCAST) {
            bench_bcast(b, (size_t) s);
        }
    }
    for (const coll &k : colls) {
        if (!(b.ops & k.op)) {
            continue;
        }
        for (double s = (double) b.minb; s <= (double) b.maxb; s *= b.factor) {
            run_coll(b, k, (size_t) s);
        }
    }
    ccl::barrier(comm).wait();
    b.comm = nullptr;
    return 0;
}

} // namespace

int
main(int argc, char **argv)
{
    bench b;
    int   nranks;

    if (parse_args(b, nranks, argc, argv) != 0) {
        fprintf(stderr,
            "usage: oneccl_bench [-N NRANKS (>= 2)] [-o OP[,OP...]|all] "
            "[-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] "
            "[-B ITER_BYTES] [-m MIN_ITERS]\n"
            "  OP: pingpong sendrecv bcast allreduce reduce allgather "
            "reducescatter alltoall scatter\n");
        return 2;
    }
    setenv("CCL_ATL_TRANSPORT", "ofi", 0);
    setenv("FI_PROVIDER", "shm", 0);
    setenv("CCL_ATL_SHM", "1", 0);
    setenv("CCL_KVS_IFACE", "lo", 0);
    setenv("CCL_WORKER_OFFLOAD", "0", 0);
    setenv("CCL_LOG_LEVEL", "error", 0);
    b.nranks = nranks;

    // pipes[r] (r >= 1): rank 0 writes the KVS address, rank r reads it.
    std::vector<int> rfd((size_t) nranks, -1), wfd((size_t) nranks, -1);
    for (int r = 1; r < nranks; r++) {
        int p[2];
        if (pipe(p) != 0) {
            perror("oneccl_bench: pipe");
            return 1;
        }
        rfd[(size_t) r] = p[0];
        wfd[(size_t) r] = p[1];
    }
    fflush(stdout);
    std::vector<pid_t> pids((size_t) nranks, -1);
    pid_t              parent = getpid();
    for (int r = 0; r < nranks; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("oneccl_bench: fork");
            for (int q = 0; q < r; q++) {
                kill(pids[(size_t) q], SIGKILL);
            }
            return 1;
        }
        if (pid == 0) {
            // A rank outlives no killed parent (compare.sh's timeout).
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) {
                _exit(1);
            }
            std::vector<int> mine;
            for (int q = 1; q < nranks; q++) {
                if (r == 0) {
                    mine.push_back(wfd[(size_t) q]);
                } else {
                    close(wfd[(size_t) q]);
                }
                if (q != r) {
                    close(rfd[(size_t) q]);
                }
            }
            b.rank = r;
            setenv("CCL_LOCAL_RANK", std::to_string(r).c_str(), 1);
            setenv("CCL_LOCAL_SIZE", std::to_string(nranks).c_str(), 1);
            int rc;
            try {
                rc = run_rank(b, mine, rfd[(size_t) r]);
            } catch (const std::exception &e) {
                fprintf(stderr, "oneccl_bench: rank %d: %s\n", r, e.what());
                rc = 1;
            }
            fflush(stdout);
            fflush(stderr);
            _exit(rc);
        }
        pids[(size_t) r] = pid;
    }
    for (int r = 1; r < nranks; r++) {
        close(rfd[(size_t) r]);
        close(wfd[(size_t) r]);
    }
    // The first rank to fail takes the others down: they would wait for
    // it forever.
    int rc   = 0;
    int left = nranks;
    while (left > 0) {
        int   st;
        pid_t pid = wait(&st);
        if (pid < 0) {
            break;
        }
        left--;
        int r
            = (int) (std::find(pids.begin(), pids.end(), pid) - pids.begin());
        if (r >= nranks) {
            continue;
        }
        pids[(size_t) r] = -1;
        bool ok          = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        if (!ok && rc == 0) {
            if (WIFSIGNALED(st)) {
                fprintf(stderr, "oneccl_bench: rank %d killed by signal %d\n",
                    r, WTERMSIG(st));
            } else {
                fprintf(stderr, "oneccl_bench: rank %d exited with %d\n", r,
                    WEXITSTATUS(st));
            }
            rc = 1;
            for (pid_t p : pids) {
                if (p > 0) {
                    kill(p, SIGKILL);
                }
            }
        }
    }
    return rc;
}
