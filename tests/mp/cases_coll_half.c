// float16 and bfloat16 reductions, bit for bit: shoal.h promises that the
// 16-bit types accumulate in float32 and round once, and shared memory
// accumulates in rank order, so every transport must give exactly
//     round(x_0 op x_1 op ... op x_{n-1}) (float32, left to right)
// which this case computes itself for every output element. all_reduce,
// reduce and reduce_scatter, each at a small and a large size (so that
// both the latency and the bandwidth algorithms run), SUM, AVG and
// PREMUL_SUM, in place and out of place, on two kinds of inputs:
//   ties: one rank holds a large even value, the others 1 (or 0), so the
//     exact sum is a 16-bit value but most partial sums lie halfway
//     between two: rounding a partial to the 16-bit type changes the
//     result;
//   wide: random values over many binades, whose float32 sums round, so
//     that another order of the same float32 additions may give other
//     bits.
// Over TCP (mp_tcp_test.c) the partials of a ring or of recursive
// doubling would be rounded at every hop.
#include <string.h>

#include "mptest.h"
#include "ref.h"

enum { HALF_TIES = 0, HALF_WIDE, HALF_NPATTERNS };

enum { HALF_ALL_REDUCE = 0, HALF_REDUCE, HALF_REDUCE_SCATTER };

typedef struct half_call {
    int    coll;
    size_t count; // whole (all_reduce, reduce) or per rank
} half_call;

// Small (recursive doubling, flat) and large (ring) for each collective,
// at the default 64 KiB threshold across hosts.
static const half_call half_calls[] = {
    { HALF_ALL_REDUCE, 777 },
    { HALF_ALL_REDUCE, 300007 },
    { HALF_REDUCE, 777 },
    { HALF_REDUCE, 300007 },
    { HALF_REDUCE_SCATTER, 301 },
    { HALF_REDUCE_SCATTER, 40001 },
};

// A 16-bit value from sign, unbiased exponent and mantissa bits.
static uint16_t
half_make(shoal_dtype dt, int neg, int e, unsigned man)
{
    unsigned sign = neg ? 0x8000u : 0;

    if (dt == SHOAL_BFLOAT16) {
        return (uint16_t) (sign | (unsigned) (e + 127) << 7 | (man & 0x7fu));
    }
    return (uint16_t) (sign | (unsigned) (e + 15) << 10 | (man & 0x3ffu));
}

// Element i of rank q's input.
static uint16_t
half_input(shoal_dtype dt, int pattern, int n, int q, size_t i)
{
    if (pattern == HALF_WIDE) {
        uint64_t h  = ref_mix(i * 0x9e3779b97f4a7c15ull + (uint64_t) q + 1);
        int      lo = dt == SHOAL_BFLOAT16 ? -20 : -14;
        int e = lo + (int) (h % (uint64_t) (dt == SHOAL_BFLOAT16 ? 41 : 27));
        return half_make(dt, (int) (h >> 20) & 1, e, (unsigned) (h >> 32));
    }
    // From `base` on, 16-bit values are 2 apart: base + odd is a tie. The
    // count of ones stays even, so the exact sum is a 16-bit value.
    double base = dt == SHOAL_BFLOAT16 ? 256 : 2048;
    int    big  = (int) (i % (size_t) n);
    int    zero = n % 2 == 0 ? (big + 1) % n : -1;
    double v = q == big ? base + 2.0 * (double) (i % 61) : q == zero ? 0 : 1;
    return (uint16_t) ref_from_double(dt, (i / (size_t) n) % 2 ? -v : v);
}

// What shared memory computes for element i: float32 in rank order, the
// scalar multiplied into each input, AVG divided in float32, one
// rounding.
static uint16_t
half_expected(shoal_dtype dt, shoal_reduce_op op, int pattern, int n, size_t i)
{
    float s   = (float) op.scalar;
    float acc = 0;

    for (int q = 0; q < n; q++) {
        float x = (float) ref_to_double(dt, half_input(dt, pattern, n, q, i));
        if (op.kind == SHOAL_PREMUL_SUM) {
            x = x * s;
        }
        acc = q == 0 ? x : acc + x;
    }
    if (op.kind == SHOAL_AVG) {
        acc = acc / (float) n;
    }
    return (uint16_t) ref_from_double(dt, (double) acc);
}

typedef struct half_run {
    shoal_dtype     dt;
    shoal_reduce_op op;
    int             pattern, in_place, root;
    half_call       call;
} half_run;

static const char *
half_coll_name(int coll)
{
    return coll == HALF_ALL_REDUCE ? "all_reduce"
        : coll == HALF_REDUCE      ? "reduce"
                                   : "reduce_scatter";
}

// Runs the call; `buf` holds this rank's input (all of it, or the whole
// send buffer of reduce_scatter), `out` room for the result.
static int
half_call_run(
    shoal_comm *comm, const half_run *h, uint16_t *buf, uint16_t *out)
{
    int    rank = shoal_comm_rank(comm);
    size_t c    = h->call.count;

    switch (h->call.coll) {
        case HALF_ALL_REDUCE:
            return shoal_all_reduce(
                comm, buf, h->in_place ? buf : out, c, h->dt, h->op);
        case HALF_REDUCE:
            return shoal_reduce(comm, buf,
                h->in_place && rank == h->root ? buf : out, c, h->dt, h->op,
                h->root);
    }
    return shoal_reduce_scatter(comm, buf,
        h->in_place ? buf + (size_t) rank * c : out, c, h->dt, h->op);
}

// Compares the result with half_expected; prints the first difference.
static int
half_check(shoal_comm *comm, const half_run *h, const uint16_t *got)
{
    int    rank = shoal_comm_rank(comm), n = shoal_comm_size(comm);
    size_t c = h->call.count, first = 0, wrong = 0;

    if (h->call.coll == HALF_REDUCE && rank != h->root) {
        return 0;
    }
    first = h->call.coll == HALF_REDUCE_SCATTER ? (size_t) rank * c : 0;
    for (size_t j = 0; j < c; j++) {
        uint16_t want = half_expected(h->dt, h->op, h->pattern, n, first + j);
        if (got[j] != want && wrong++ == 0) {
            char gs[64], ws[64];
            ref_format(h->dt, got[j], gs, sizeof(gs));
            ref_format(h->dt, want, ws, sizeof(ws));
            fprintf(stderr,
                "rank %d: %s %s %s count %zu (%s, %s, root %d): element %zu "
                "is %s, want %s\n",
                rank, half_coll_name(h->call.coll), shoal_dtype_name(h->dt),
                shoal_op_name(h->op.kind), c,
                h->pattern == HALF_TIES ? "ties" : "wide",
                h->in_place ? "in place" : "out of place", h->root, first + j,
                gs, ws);
        }
    }
    if (wrong > 0) {
        fprintf(
            stderr, "rank %d: %zu of %zu elements wrong\n", rank, wrong, c);
    }
    return wrong > 0;
}

// One call: fills the input, runs, checks. Returns 1 if wrong, -1 on an
// error (the ranks may be out of step).
static int
half_one(shoal_comm *comm, const half_run *h, uint16_t *buf, uint16_t *out)
{
    int    rank = shoal_comm_rank(comm), n = shoal_comm_size(comm);
    size_t c     = h->call.count;
    size_t total = h->call.coll == HALF_REDUCE_SCATTER ? c * (size_t) n : c;

    for (size_t i = 0; i < total; i++) {
        buf[i] = half_input(h->dt, h->pattern, n, rank, i);
    }
    memset(out, 0xff, c * sizeof(*out));
    int st = half_call_run(comm, h, buf, out);
    if (st != SHOAL_OK) {
        fprintf(stderr, "rank %d: %s: %s: %s\n", rank,
            half_coll_name(h->call.coll), shoal_status_name(st),
            shoal_last_error());
        return -1;
    }
    int in_out
        = h->in_place && (h->call.coll != HALF_REDUCE || rank == h->root);
    const uint16_t *got = !in_out             ? out
        : h->call.coll == HALF_REDUCE_SCATTER ? buf + (size_t) rank * c
                                              : buf;
    return half_check(comm, h, got);
}

int
mp_case_coll_half(shoal_comm *comm, int argc, char **argv)
{
    static const shoal_dtype dts[] = { SHOAL_FLOAT16, SHOAL_BFLOAT16 };
    const shoal_reduce_op    ops[]
        = { SHOAL_REDUCE_OP(SHOAL_SUM), SHOAL_REDUCE_OP(SHOAL_AVG),
              SHOAL_PREMUL_SUM_OP(0.5), SHOAL_PREMUL_SUM_OP(1.0 / 3.0) };
    int    n     = shoal_comm_size(comm);
    size_t max   = 0;
    long   calls = 0, wrong = 0;
    (void) argc;
    (void) argv;

    MP_OK(shoal_comm_set_timeout(comm, 120000));
    for (size_t k = 0; k < sizeof(half_calls) / sizeof(half_calls[0]); k++) {
        size_t t = half_calls[k].count * (size_t) n;
        max      = t > max ? t : max;
    }
    uint16_t *buf = malloc(max * sizeof(*buf));
    uint16_t *out = malloc(max * sizeof(*out));
    MP_CHECK(buf != NULL && out != NULL);
    for (size_t d = 0; d < 2; d++) {
        for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
            for (int p = 0; p < HALF_NPATTERNS; p++) {
                for (size_t k = 0;
                     k < sizeof(half_calls) / sizeof(half_calls[0]); k++) {
                    half_run h  = { .dt = dts[d],
                         .op            = ops[o],
                         .pattern       = p,
                         .in_place      = (int) ((k + o) % 2),
                         .root          = (int) (k + o) % n,
                         .call          = half_calls[k] };
                    int      rc = half_one(comm, &h, buf, out);
                    if (rc < 0) {
                        free(buf);
                        free(out);
                        return 1;
                    }
                    calls++;
                    wrong += rc;
                }
            }
        }
    }
    free(buf);
    free(out);
    printf("rank %d: %ld float16/bfloat16 reductions, %ld wrong\n",
        shoal_comm_rank(comm), calls, wrong);
    return wrong > 0;
}
