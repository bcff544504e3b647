// shoal-soak: a long run of mixed collectives under shoalrun. Every rank
// draws the same sequence of operations from one seeded generator (so they
// agree on kind, size, dtype, op and root without talking), computes for a
// random while between calls, checks every result exactly, and watches its
// own RSS and descriptor count for growth. Rank 0 pools every rank's
// latencies and prints them per (kind, size bucket).
#ifndef SHOAL_SOAK_H
#define SHOAL_SOAK_H

#include <stddef.h>
#include <stdint.h>

#include "shoal.h"

// Non-blocking operations are issued in batches of up to this many, each
// in its own buffers, so requests overlap.
#define SOAK_SLOTS 3

// Bytes past every receive region that must survive the call.
#define SOAK_CANARY 64

// Wrong results printed per rank; the rest are only counted.
#define SOAK_MAX_REPORTS 10

typedef enum soak_kind {
    SOAK_ALL_REDUCE,
    SOAK_REDUCE,
    SOAK_BROADCAST,
    SOAK_ALL_GATHER,
    SOAK_REDUCE_SCATTER,
    SOAK_ALL_TO_ALL,
    SOAK_GATHER,
    SOAK_SCATTER,
    SOAK_BARRIER,
    SOAK_RING, // isend to rank + 1, receive from rank - 1
    SOAK_NKINDS
} soak_kind;

// Size buckets by the largest buffer a call touches on one rank.
#define SOAK_NBUCKETS 6

// Table rows: kind x {blocking, non-blocking} x bucket.
#define SOAK_NCELLS (SOAK_NKINDS * 2 * SOAK_NBUCKETS)

// How a reduction's inputs are made so that its result has a closed form.
typedef enum soak_model {
    SOAK_MODEL_NONE, // data movement: byte patterns
    SOAK_MODEL_ARITH, // b(i) + e[rank] + c: SUM, AVG, MIN, MAX, PREMUL_SUM
    SOAK_MODEL_PROD, // 1 or 2, exactly m ranks give 2 at every element
    SOAK_MODEL_BITS, // h(i) combined with a per-rank mask
} soak_model;

typedef struct soak_opts {
    uint64_t calls;
    uint64_t seed;
    uint64_t warmup; // calls before the baseline sample
    uint64_t sample_every;
    size_t   max_bytes;
    int      compute_us; // busy work between calls: 0 .. compute_us
    int      heap; // also use buffers from shoal_alloc (zero-copy paths)
    double   max_ratio; // > 0: fail when max > max_ratio x median
    double   slow_ratio; // calls above slow_ratio x median are counted
} soak_opts;

typedef struct soak_rng {
    uint64_t s;
} soak_rng;

typedef struct soak_op {
    uint64_t        seq; // call index, the same on every rank
    soak_kind       kind;
    int             async;
    int             inplace;
    int             heap; // this rank's buffers come from shoal_alloc
    shoal_dtype     dt;
    size_t          esize;
    uint64_t        width; // mask of an element's value bits
    shoal_reduce_op op;
    size_t          count; // elements per block
    size_t          blocks; // blocks in the largest buffer
    int             root;
    uint64_t        key; // seeds this call's data

    // Reduction model (see soak_model).
    soak_model    model;
    shoal_op_kind eff; // the op the model computes (bool ops map to bits)
    int64_t       range; // b(i) in [0, range)
    int64_t       offset; // c
    int64_t       e_self; // this rank's e
    int           prod_m; // ranks giving 2 at each element
    int           prod_p; // this rank's position in the 2-pattern
    uint64_t      mask_self, mask_and, mask_or, mask_xor;

    unsigned char *sbuf, *rbuf; // this call's slot
    const void    *in;
    void          *out;
    size_t         rbytes; // bytes written from rbuf on (canary after)
    shoal_request *req[2];
    uint64_t       blocked_ns; // time spent inside shoal calls
} soak_op;

// Resource samples, in bytes. "private" is resident minus shared pages:
// the process's own memory, where a leak shows. Shared pages are the
// communicator's shared memory (and libraries), which grow as this rank
// first touches pages of peers' buffers and are bounded by the mapping,
// whose size the virtual size follows.
typedef struct soak_stats {
    int64_t rss_warm, rss_end;
    int64_t priv_warm, priv_end, priv_max;
    int64_t vsz_warm, vsz_end;
    int64_t fd_warm, fd_end, fd_min, fd_max;
    int64_t wrong;
} soak_stats;

#define SOAK_STAT_WORDS (sizeof(soak_stats) / sizeof(int64_t))

typedef struct soak_ctx {
    shoal_comm    *comm;
    int            rank, n;
    soak_opts      opt;
    soak_rng       shared; // same stream on every rank
    soak_rng       local; // this rank's own choices
    int           *perm; // n entries, scratch for draws
    size_t         buf_bytes; // each slot buffer, canary excluded
    unsigned char *mem[SOAK_SLOTS][2][2]; // [slot][heap][send, recv]
    float         *lat; // microseconds, one per call
    uint16_t      *cell; // table row of each call
    soak_stats     st;
    int            warmed; // the baseline sample is taken
    uint64_t       shown; // progress lines printed (one per tenth)
    int            reports;
} soak_ctx;

// rng.c
uint64_t soak_mix64(uint64_t x);
uint64_t soak_rng_next(soak_rng *r);
uint64_t soak_rng_below(soak_rng *r, uint64_t n);
double   soak_rng_unit(soak_rng *r);
uint64_t soak_now_ns(void);

// draw.c: one call's parameters (shared draws first, then local ones).
void soak_draw(soak_ctx *c, soak_op *o, uint64_t seq, int async, int slot);
int  soak_draw_batch(soak_ctx *c, uint64_t left);
int  soak_bucket(size_t bytes);
const char *soak_bucket_name(int bucket);
const char *soak_kind_name(soak_kind kind);

// data.c: inputs and their exact expected results.
void     soak_pattern_fill(void *buf, size_t bytes, uint64_t key);
int64_t  soak_pattern_check(const void *buf, size_t bytes, uint64_t key);
uint64_t soak_pattern_key(const soak_op *o, int src, int dst);
void     soak_reduce_fill(
        const soak_op *o, void *buf, size_t first, size_t count, int nranks);
int64_t soak_reduce_check(const soak_op *o, const void *buf, size_t first,
    size_t count, int nranks, char *why, size_t why_len);

// exec.c: buffers, inputs, the call itself and its check.
void soak_prepare(soak_ctx *c, soak_op *o);
int  soak_issue(soak_ctx *c, soak_op *o);
int  soak_complete(soak_ctx *c, soak_op *o);
void soak_verify(soak_ctx *c, soak_op *o);

// report.c
int     soak_memory(int64_t *vsz, int64_t *rss, int64_t *priv);
int64_t soak_fd_count(void);
void    soak_sample(soak_ctx *c, int baseline);
int     soak_report(soak_ctx *c, double wall_s);

#endif // SHOAL_SOAK_H
