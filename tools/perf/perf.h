// shoal-perf: an nccl-tests style benchmark of libshoal's public API.
//
// Files, one job each:
//   main.c             communicator, run order, exit status
//   options.c          command line (nccl-tests flags) and usage
//   sizes.c            the list of message sizes
//   buffers.c          pre-touched buffers: private pages or shoal_alloc
//   pattern.c          data patterns per dtype: fill and count wrong elements
//   timing.c           clock, per-iteration max over ranks, median/min/p90
//   measure.c          the loop: fill, barrier, time, check
//   report.c           nccl-tests formatted tables
//   memcpy_baseline.c  memcpy bandwidth measured in the same run
//   reference.c        reduction inputs and the expected reduction, per dtype
//   bench_coll.c       the table loop shared by the collectives below
//   bench_reduce.c     allreduce, reduce, reducescatter
//   bench_move.c       allgather, alltoall, gather, scatter
//   bench_sendrecv.c   ring exchange and ping-pong half round trip
//   bench_broadcast.c  broadcast, in-place and out-of-place
//   bench_barrier.c    barrier
// Beside them: compare.sh (shoal against Open MPI in one run) and
// mpi/mpi_bench.c, which compare.sh builds with mpicc (in a subfolder so
// that CMake's perf/*.c glob leaves it out of shoal-perf).
//
// Timing method, shared by every table: one iteration is a barrier, then
// each rank times the operation alone (and checks it after another
// barrier, see measure.c); afterwards (untimed) rank 0 takes
// the maximum over ranks of each iteration, and reports the median over
// iterations of those maxima (min, p90 and max in extra columns).
#ifndef SHOAL_PERF_H
#define SHOAL_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "shoal.h"

// Bits of perf_opts.ops, in the order the tables are printed.
enum {
    PERF_OP_ALLREDUCE     = 1 << 0,
    PERF_OP_REDUCE        = 1 << 1,
    PERF_OP_ALLGATHER     = 1 << 2,
    PERF_OP_REDUCESCATTER = 1 << 3,
    PERF_OP_ALLTOALL      = 1 << 4,
    PERF_OP_GATHER        = 1 << 5,
    PERF_OP_SCATTER       = 1 << 6,
    PERF_OP_BROADCAST     = 1 << 7,
    PERF_OP_SENDRECV      = 1 << 8,
    PERF_OP_BARRIER       = 1 << 9,
    PERF_OP_PUT           = 1 << 10,
    PERF_OP_QUEUE         = 1 << 11,
    PERF_OP_ALL           = (1 << 12) - 1
};

// Where the benchmark buffers come from (-a/--alloc).
enum { PERF_ALLOC_MALLOC = 0, PERF_ALLOC_SHOAL = 1 };

typedef struct perf_opts {
    int           ops; // PERF_OP_* bits
    size_t        minbytes, maxbytes;
    double        stepfactor;
    int           iters, warmup;
    size_t        iter_bytes; // > 0: fewer iterations for big sizes
    int           min_iters; // ... but at least this many
    int           check; // verify data every timed iteration
    shoal_dtype   dtype;
    shoal_op_kind redop;
    int           root;
    int           alloc; // PERF_ALLOC_*
    int           cold; // --cold: rotate buffers past the last-level cache
    size_t        cache_bytes; // --cache: that cache's size (0: detect)
} perf_opts;

// Result of parsing the command line.
enum { PERF_PARSE_OK = 0, PERF_PARSE_HELP = 1, PERF_PARSE_ERROR = 2 };

// Fills *o from argv. On PERF_PARSE_ERROR writes a one-line reason into
// err. Does not print.
int perf_parse_options(
    perf_opts *o, int argc, char **argv, char *err, size_t errlen);
void perf_usage(const char *prog, const char *err);

// Name of a reduce op as -O takes it ("sum"), of an allocation mode.
const char *perf_redop_name(shoal_op_kind op);
const char *perf_alloc_name(int alloc);

// Timed iterations at `bytes`: o->iters, or with o->iter_bytes set, as many
// as fit iter_bytes (iterations x bytes), but at least o->min_iters and at
// most o->iters. Equal on every rank (depends on the options and size only).
int perf_iters_for(const perf_opts *o, size_t bytes);
// Warm-up iterations at `bytes`: o->warmup, scaled down in proportion when
// --iter_bytes shrinks the timed ones (at least 1 if o->warmup > 0).
int perf_warmup_for(const perf_opts *o, size_t bytes);

// The message sizes: minbytes, then times stepfactor, up to maxbytes, each
// rounded down to whole elements of `esize` bytes.
typedef struct perf_sizes {
    size_t *bytes;
    int     n;
} perf_sizes;

int  perf_sizes_make(perf_sizes *s, const perf_opts *o, size_t esize);
void perf_sizes_free(perf_sizes *s);

// Page-aligned private buffer whose pages are touched (written) before
// use, so no page fault lands inside a timed region.
void *perf_buffer_alloc(size_t bytes);
void  perf_buffer_free(void *buf, size_t bytes);

// The benchmark buffers c->sbuf and c->rbuf (c->cap bytes each), from
// perf_buffer_alloc or, with -a shoal, from shoal_alloc (touched the same
// way). Collective when shoal_alloc is used only in that every rank calls
// it; returns SHOAL_OK or a status it has reported.
//
// Cache-cold mode (--cold): each buffer is a window into a region of
// c->cap plus twice the last-level cache; iteration k of size i moves the
// window k slots of size i's bytes (a page at least) along it, so the
// memory an operation touches was last touched two caches' worth of
// iterations ago (an operation larger than the cache is cold anyway).
struct perf_ctx;
int  perf_buffers_setup(struct perf_ctx *c);
void perf_buffers_teardown(struct perf_ctx *c);
// Points c->sbuf and c->rbuf at iteration `it`'s slot for size `index`
// (cold mode; otherwise nothing).
void perf_buffers_rotate(struct perf_ctx *c, int index, int it);
// Bytes of the last-level cache: --cache, else sysconf's, else 32 MiB.
size_t perf_llc_bytes(const perf_opts *o);

// A data pattern: element i holds tile[i % PERF_PATTERN_TILE], the tile
// being pseudo-random values drawn from `seed` and encoded in the dtype.
// The tile length is prime, so a chunk landing at a wrong offset (the
// library's chunks are powers of two) never looks right.
#define PERF_PATTERN_TILE 4099
typedef struct perf_pattern {
    shoal_dtype dtype;
    size_t      esize;
    // Tile elements computed: a pattern used for fewer elements than the
    // tile computes only those (the reduction references run every
    // iteration, for every rank: at full length they would be the
    // benchmark's main work for small messages).
    size_t        len;
    unsigned char tile[PERF_PATTERN_TILE * 8];
} perf_pattern;

// Seeds for patterns: different for every (what, src, size, iteration),
// so data left over from an earlier iteration is counted as wrong.
uint32_t perf_seed(
    uint32_t what, uint32_t src, uint32_t size_index, uint32_t iteration);
void perf_pattern_make(perf_pattern *p, shoal_dtype dtype, uint32_t seed);
void perf_pattern_fill(const perf_pattern *p, void *buf, size_t count);
// Number of elements of buf that differ from the pattern.
size_t perf_pattern_check(
    const perf_pattern *p, const void *buf, size_t count);
// The same for elements first .. first+count-1 of the pattern: buf[0] is
// compared with element `first` (a block cut out of a longer buffer).
size_t perf_pattern_check_at(
    const perf_pattern *p, const void *buf, size_t first, size_t count);

// Reductions (reference.c). The input of rank r is a pattern like
// perf_pattern_make's, but with values chosen so that reducing `nranks`
// of them with `op` is exact in the dtype, in any order: for the floating
// types, integers small enough for the significand (AVG inputs multiples
// of nranks, so the mean is exact too); for the integer types, full
// random bits (their arithmetic wraps, which is exact). Every rank can
// thus compute the bitwise exact expected result of any reduction.
// Only the first `count` elements (at most the tile) are computed: the
// pattern serves buffers of at most `count` elements.
void perf_pattern_make_reduce(perf_pattern *p, shoal_dtype dtype,
    shoal_op_kind op, int nranks, uint32_t seed, size_t count);
// acc = acc op in, element by element over the tiles (in's length), as
// shoal.h defines the ops (AVG accumulates the sum). The first input is
// copied: first = 1.
void perf_pattern_combine(
    perf_pattern *acc, const perf_pattern *in, shoal_op_kind op, int first);
// After combining k inputs: AVG divides the sum by k (integer types
// rounding toward zero); other ops leave acc as it is.
void perf_pattern_finish(perf_pattern *acc, shoal_op_kind op, int k);
// 0 if `op` is defined on `dtype` (shoal.h's rules), else -1.
int perf_redop_valid(shoal_dtype dtype, shoal_op_kind op);

// Monotonic clock in seconds.
double perf_now(void);

// Order statistics over iterations, in seconds.
typedef struct perf_stats {
    double median, min, p90, max;
} perf_stats;

// Shared state of one run.
typedef struct perf_ctx {
    shoal_comm      *comm;
    int              rank, nranks;
    const perf_opts *o;
    perf_sizes       sizes;
    size_t           esize; // bytes per element of o->dtype
    size_t           cap; // bytes of each buffer
    void            *sbuf, *rbuf;
    int              shoal_buffers; // sbuf/rbuf came from shoal_alloc
    unsigned char   *sbase, *rbase; // cold mode: the regions they move in
    size_t           region; // cold mode: bytes of each region
    double          *times; // o->iters entries, scratch
    double          *memcpy_gbps; // per size index; filled by the baseline
    double           wrong_total; // summed over every table (rank 0)
} perf_ctx;

// Collective over the communicator: every rank passes its `n`
// per-iteration times and its count of wrong elements; rank 0 gets the
// statistics of the per-iteration maximum over ranks in *st and the sum of
// wrong counts in *wrong (other ranks: untouched). Uses point-to-point
// messages to rank 0; call it outside timed regions.
int perf_collect(const perf_ctx *c, const double *times, int n,
    double wrong_local, perf_stats *st, double *wrong);

// What one benchmark does in the shared measurement loop (measure.c).
typedef struct perf_measure_ops {
    // Untimed, before the barrier of a checked iteration: fill send data.
    void (*prepare)(perf_ctx *c, void *arg, int index, int iteration);
    // Timed: the operation. Returns SHOAL_OK or a status it has reported.
    int (*run)(perf_ctx *c, void *arg, int index);
    // Untimed, after a checked iteration: wrong elements on this rank.
    // NULL: nothing to check.
    size_t (*verify)(perf_ctx *c, void *arg, int index, int iteration);
    // The timed interval is divided by this (operations per sample).
    double divisor;
} perf_measure_ops;

// Runs o->warmup + perf_iters_for(size) iterations of `m` for size
// `index`; rank 0 gets the statistics and the wrong count summed over ranks
// and iterations.
int perf_measure(perf_ctx *c, const perf_measure_ops *m, void *arg, int index,
    perf_stats *st, double *wrong);

// One half (out-of-place or in-place) of a table row.
typedef struct perf_half {
    int        valid; // 0: print N/A
    perf_stats t;
    double     algbw, busbw; // GB/s from t.median
    double     wrong; // < 0: not checked
} perf_half;

typedef struct perf_row {
    size_t      bytes, count;
    const char *type, *redop;
    int         root;
    perf_half   oop, ip;
    double      vs_memcpy; // < 0: N/A
} perf_row;

// Table printing; rank 0 only (callers check).
void perf_print_run_header(const perf_ctx *c);
void perf_print_table_header(const char *op, const char *notes);
void perf_print_row(const perf_row *r);
void perf_print_table_footer(
    const char *op, double wrong, double bw_sum, int bw_count);
// Fills algbw/busbw of h from its median for `bytes` per rank and the
// bus factor of the operation.
void perf_half_bandwidth(perf_half *h, size_t bytes, double bus_factor);

// The point-to-point benchmarks' tables (pair_tables.c), every rank
// calling: the ring exchange of `m` at every size, under `op`'s header
// with `notes`; and the half round trip's rows (after the caller's
// description) for sizes up to max_bytes.
int perf_exchange_table(perf_ctx *c, const char *op, const char *notes,
    const perf_measure_ops *m, void *arg);
int perf_round_trip_table(
    perf_ctx *c, const perf_measure_ops *m, void *arg, size_t max_bytes);

// A collective measured by the shared table loop of bench_coll.c. Sizes
// follow nccl-tests: for the collectives with size_is_total, `size` is the
// total (every rank's block together: allgather's receive buffer,
// reducescatter's send buffer, alltoall's buffers, gather's and scatter's
// root buffer) and each rank's block has size / nranks bytes; otherwise
// `size` is the buffer of one rank.
typedef struct perf_coll perf_coll;

// State of one half (out-of-place or in-place) of a row, passed as `arg`
// to the perf_measure_ops of a perf_coll.
typedef struct perf_coll_arg {
    const perf_coll *k;
    int              in_place;
    size_t           count; // elements per block (per rank)
    perf_pattern     pat, exp; // scratch: a rank's data, an expected result
} perf_coll_arg;

struct perf_coll {
    const char *name; // as -o takes it
    int         op_bit; // PERF_OP_*
    const char *notes; // printed under the title
    int         size_is_total;
    int         has_in_place;
    int         has_redop;
    int         has_root;
    double (*bus_factor)(int nranks);
    perf_measure_ops ops; // arg: perf_coll_arg
};

// Runs the table of `k` over every size; collective. Returns SHOAL_OK, a
// status it has reported.
int perf_bench_coll(perf_ctx *c, const perf_coll *k);

// Bytes of `size` rounded the way `k` counts elements (size_is_total:
// whole blocks of nranks); elements per block in *count.
size_t perf_coll_bytes(
    const perf_ctx *c, const perf_coll *k, size_t size, size_t *count);

// Formats a time in microseconds the way nccl-tests does (7 columns).
void perf_format_us(char *out, size_t len, double seconds);

// Benchmarks. Each is collective over the communicator and prints on rank
// 0. They return 0, or a negative shoal status after printing the error.
int perf_memcpy_baseline(perf_ctx *c);
int perf_bench_allreduce(perf_ctx *c);
int perf_bench_reduce(perf_ctx *c);
int perf_bench_reducescatter(perf_ctx *c);
int perf_bench_allgather(perf_ctx *c);
int perf_bench_alltoall(perf_ctx *c);
int perf_bench_gather(perf_ctx *c);
int perf_bench_scatter(perf_ctx *c);
int perf_bench_sendrecv(perf_ctx *c);
int perf_bench_broadcast(perf_ctx *c);
int perf_bench_barrier(perf_ctx *c);
int perf_bench_put(perf_ctx *c);
int perf_bench_queue(perf_ctx *c);

// Reports a failed shoal call on stderr (with the library's detail) and
// returns st.
int perf_fail(const perf_ctx *c, const char *what, int st);

#endif // SHOAL_PERF_H
