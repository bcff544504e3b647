// Drawing one call. Everything that ranks must agree on comes from the
// shared generator, always in the same order, so the sequence is a pure
// function of the seed; only the buffer kind (shared heap or malloc, which
// ranks may mix) comes from the rank's own generator.
#include "soak.h"

// Relative frequency of each kind: all-reduce dominates real workloads.
static const int kind_weight[SOAK_NKINDS] = {
    [SOAK_ALL_REDUCE]     = 4,
    [SOAK_REDUCE]         = 1,
    [SOAK_BROADCAST]      = 2,
    [SOAK_ALL_GATHER]     = 2,
    [SOAK_REDUCE_SCATTER] = 2,
    [SOAK_ALL_TO_ALL]     = 2,
    [SOAK_GATHER]         = 1,
    [SOAK_SCATTER]        = 1,
    [SOAK_BARRIER]        = 1,
    [SOAK_RING]           = 2,
};

static const char *const kind_names[SOAK_NKINDS] = {
    [SOAK_ALL_REDUCE]     = "all_reduce",
    [SOAK_REDUCE]         = "reduce",
    [SOAK_BROADCAST]      = "broadcast",
    [SOAK_ALL_GATHER]     = "all_gather",
    [SOAK_REDUCE_SCATTER] = "reduce_scatter",
    [SOAK_ALL_TO_ALL]     = "all_to_all",
    [SOAK_GATHER]         = "gather",
    [SOAK_SCATTER]        = "scatter",
    [SOAK_BARRIER]        = "barrier",
    [SOAK_RING]           = "sendrecv_ring",
};

static const char *const bucket_names[SOAK_NBUCKETS] = {
    "0",
    "<=64B",
    "<=1K",
    "<=16K",
    "<=256K",
    ">256K",
};

const char *
soak_kind_name(soak_kind kind)
{
    return kind_names[kind];
}

const char *
soak_bucket_name(int bucket)
{
    return bucket_names[bucket];
}

int
soak_bucket(size_t bytes)
{
    int    b     = 1;
    size_t limit = 64;

    if (bytes == 0) {
        return 0;
    }
    while (b < SOAK_NBUCKETS - 1 && bytes > limit) {
        b++;
        limit *= 16;
    }
    return b;
}

// 0 for a blocking step, else the number of non-blocking calls issued
// together (at most `left`).
int
soak_draw_batch(soak_ctx *c, uint64_t left)
{
    int n;

    if (soak_rng_below(&c->shared, 10) < 7) {
        return 0;
    }
    n = 1 + (int) soak_rng_below(&c->shared, SOAK_SLOTS);
    return (uint64_t) n > left ? (int) left : n;
}

static soak_kind
draw_kind(soak_rng *r)
{
    int total = 0, k, pick;

    for (k = 0; k < SOAK_NKINDS; k++) {
        total += kind_weight[k];
    }
    pick = (int) soak_rng_below(r, (uint64_t) total);
    for (k = 0; pick >= kind_weight[k]; k++) {
        pick -= kind_weight[k];
    }
    return (soak_kind) k;
}

// Bytes of the largest buffer: 2^k with k = floor(u^2 * (bits + 1)),
// then uniform within [2^k, 2^(k+1)). Squaring u skews toward small
// messages, which dominate real traffic, while still reaching max.
static size_t
draw_bytes(soak_rng *r, size_t max)
{
    int    bits = 0;
    double u    = soak_rng_unit(r);
    size_t lo, b;

    while (bits < 62 && ((size_t) 2 << bits) <= max) {
        bits++;
    }
    lo = (size_t) 1 << (int) (u * u * (bits + 1));
    b  = lo + soak_rng_below(r, lo);
    return b > max ? max : b;
}

static size_t
kind_blocks(soak_kind kind, int n)
{
    switch (kind) {
        case SOAK_ALL_GATHER:
        case SOAK_REDUCE_SCATTER:
        case SOAK_ALL_TO_ALL:
        case SOAK_GATHER:
        case SOAK_SCATTER:
            return (size_t) n;
        default:
            return 1;
    }
}

static int
is_reduction(soak_kind kind)
{
    return kind == SOAK_ALL_REDUCE || kind == SOAK_REDUCE
        || kind == SOAK_REDUCE_SCATTER;
}

static int
is_float(shoal_dtype dt)
{
    return dt == SHOAL_FLOAT16 || dt == SHOAL_BFLOAT16 || dt == SHOAL_FLOAT32
        || dt == SHOAL_FLOAT64;
}

static shoal_op_kind
draw_op_kind(soak_rng *r, shoal_dtype dt)
{
    static const shoal_op_kind int_ops[] = { SHOAL_SUM, SHOAL_PROD, SHOAL_MIN,
        SHOAL_MAX, SHOAL_BAND, SHOAL_BOR, SHOAL_BXOR, SHOAL_AVG };
    static const shoal_op_kind float_ops[] = { SHOAL_SUM, SHOAL_PROD,
        SHOAL_MIN, SHOAL_MAX, SHOAL_AVG, SHOAL_PREMUL_SUM };

    if (is_float(dt)) {
        return float_ops[soak_rng_below(r, 6)];
    }
    // bool takes every integer op but AVG
    return int_ops[soak_rng_below(r, dt == SHOAL_BOOL ? 7 : 8)];
}

// Which model computes (dt, op), and the op it computes: on bool SUM and
// MAX are or, PROD and MIN are and (shoal.h).
static void
pick_model(soak_op *o)
{
    shoal_op_kind k = o->op.kind;

    o->eff = k;
    if (o->dt == SHOAL_BOOL) {
        o->model = SOAK_MODEL_BITS;
        if (k == SHOAL_SUM || k == SHOAL_MAX) {
            o->eff = SHOAL_BOR;
        } else if (k == SHOAL_PROD || k == SHOAL_MIN) {
            o->eff = SHOAL_BAND;
        }
    } else if (k == SHOAL_BAND || k == SHOAL_BOR || k == SHOAL_BXOR) {
        o->model = SOAK_MODEL_BITS;
    } else if (k == SHOAL_PROD) {
        o->model = SOAK_MODEL_PROD;
    } else {
        o->model = SOAK_MODEL_ARITH;
    }
}

// Largest b(i) range keeping an ARITH result exact, or 0 when none does.
// Half types must represent the result exactly (bf16 integers up to 256,
// fp16 up to 2048); 8-bit MIN/MAX inputs must not wrap. Integer sums may
// wrap: shoal.h defines them modulo the width.
static int64_t
arith_range(const soak_op *o, int n)
{
    int64_t spread = 2 * (int64_t) (n - 1), limit, r = 64;
    int     sum = o->op.kind == SHOAL_SUM || o->op.kind == SHOAL_PREMUL_SUM;

    if (o->dt == SHOAL_FLOAT16 || o->dt == SHOAL_BFLOAT16) {
        limit = o->dt == SHOAL_FLOAT16 ? 2048 : 256;
        if (sum) {
            limit /= (int64_t) n * (o->op.kind == SHOAL_PREMUL_SUM ? 2 : 1);
        }
        r = limit - spread + 1 < r ? limit - spread + 1 : r;
    } else if (o->dt == SHOAL_INT8 || o->dt == SHOAL_UINT8) {
        limit = o->dt == SHOAL_INT8 ? 128 : 255;
        r     = limit - spread - 2 < r ? limit - spread - 2 : r;
    }
    return r > 0 ? r : 0;
}

static int
signed_values(shoal_dtype dt)
{
    return dt == SHOAL_INT8 || dt == SHOAL_INT16 || dt == SHOAL_INT32
        || dt == SHOAL_INT64 || dt == SHOAL_FLOAT32 || dt == SHOAL_FLOAT64;
}

// A random permutation of the ranks; every rank draws all of it.
static int
draw_position(soak_ctx *c)
{
    int i, j, t;

    for (i = 0; i < c->n; i++) {
        c->perm[i] = i;
    }
    for (i = c->n - 1; i > 0; i--) {
        j          = (int) soak_rng_below(&c->shared, (uint64_t) i + 1);
        t          = c->perm[i];
        c->perm[i] = c->perm[j];
        c->perm[j] = t;
    }
    return c->perm[c->rank];
}

static void
draw_arith(soak_ctx *c, soak_op *o)
{
    o->range = arith_range(o, c->n);
    if (o->range == 0) { // too many ranks for this dtype: a wider one
        o->dt    = is_float(o->dt) ? SHOAL_FLOAT32 : SHOAL_INT32;
        o->range = 64;
    }
    o->offset = 0;
    if (signed_values(o->dt)) {
        o->offset = -(int64_t) soak_rng_below(
            &c->shared, (uint64_t) (o->range + 2 * (c->n - 1)));
    }
    if (o->op.kind == SHOAL_PREMUL_SUM) {
        o->op.scalar = soak_rng_below(&c->shared, 2) ? 2.0 : 0.5;
    }
    o->e_self = 2 * (int64_t) draw_position(c);
}

static void
draw_bits(soak_ctx *c, soak_op *o)
{
    int      r;
    uint64_t m;

    o->mask_and = ~0ull;
    o->mask_or  = 0;
    o->mask_xor = 0;
    for (r = 0; r < c->n; r++) {
        m = soak_rng_next(&c->shared);
        o->mask_and &= m;
        o->mask_or |= m;
        o->mask_xor ^= m;
        if (r == c->rank) {
            o->mask_self = m;
        }
    }
}

static void
draw_reduction(soak_ctx *c, soak_op *o)
{
    int most = c->n < 12 ? c->n : 12;

    o->dt = (shoal_dtype) soak_rng_below(&c->shared, SHOAL_DTYPE_COUNT);
    o->op = SHOAL_REDUCE_OP(draw_op_kind(&c->shared, o->dt));
    if (o->op.kind == SHOAL_AVG && (c->n & (c->n - 1)) != 0
        && (o->dt == SHOAL_FLOAT32 || o->dt == SHOAL_FLOAT64)) {
        // sum / n may be computed as sum * (1 / n), one rounding off the
        // exact mean; only a power-of-two n keeps both exact.
        o->op.kind = SHOAL_SUM;
    }
    pick_model(o);
    if (o->model == SOAK_MODEL_ARITH) {
        draw_arith(c, o);
    } else if (o->model == SOAK_MODEL_PROD) {
        o->prod_m = (int) soak_rng_below(&c->shared, (uint64_t) most + 1);
        o->prod_p = draw_position(c);
    } else {
        draw_bits(c, o);
    }
}

// During the warm-up half the calls take the largest size, so that the
// library's scratch buffers and the allocator reach their high-water marks
// before the baseline sample rather than creeping up through the run as
// rare large sizes come along.
static void
draw_sizes(soak_ctx *c, soak_op *o)
{
    int    big = o->seq < c->opt.warmup && soak_rng_below(&c->shared, 2);
    size_t bytes
        = big ? c->opt.max_bytes : draw_bytes(&c->shared, c->opt.max_bytes);

    o->esize = shoal_dtype_size(o->dt);
    o->width = o->esize >= 8 ? ~0ull : (1ull << (8 * o->esize)) - 1;
    if (o->dt == SHOAL_BOOL) {
        o->width = 1;
    }
    o->blocks = kind_blocks(o->kind, c->n);
    o->count  = bytes / (o->esize * o->blocks);
    if (o->count == 0) {
        o->count = 1;
    }
    if (o->kind == SOAK_BARRIER) {
        o->count = 0;
    }
}

void
soak_draw(soak_ctx *c, soak_op *o, uint64_t seq, int async, int slot)
{
    *o      = (soak_op) { .seq = seq, .async = async };
    o->kind = draw_kind(&c->shared);
    if (o->kind == SOAK_RING && c->n == 1) { // no send to oneself
        o->kind = SOAK_BARRIER;
    }
    o->key   = soak_rng_next(&c->shared);
    o->root  = (int) soak_rng_below(&c->shared, (uint64_t) c->n);
    o->model = SOAK_MODEL_NONE;
    if (is_reduction(o->kind)) {
        draw_reduction(c, o);
    } else {
        o->dt = (shoal_dtype) soak_rng_below(&c->shared, SHOAL_DTYPE_COUNT);
    }
    draw_sizes(c, o);
    o->inplace = soak_rng_below(&c->shared, 4) == 0;
    o->heap    = c->mem[slot][1][0] != NULL && soak_rng_below(&c->local, 2);
    o->sbuf    = c->mem[slot][o->heap][0];
    o->rbuf    = c->mem[slot][o->heap][1];
}
