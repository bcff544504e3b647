// Inputs whose results are known exactly, without the other ranks' data.
//
// Data movement carries byte patterns keyed by (call, source, target), so a
// block that lands in the wrong place, or is stale from an earlier call,
// does not match. Reductions use small integers (exact in every dtype,
// halves included) built so that the reduction over all ranks has a closed
// form per element:
//   ARITH  x_r(i) = b(i) + e_r + c, e_r = 2 * pos(r) for a random
//          permutation pos, so sum e = n(n-1), min e = 0, max e = 2(n-1);
//   PROD   x_r(i) = 2 when (i + pos(r)) mod n < m, else 1: product 2^m;
//   BITS   x_r(i) = h(i) ^ mask_r (BXOR), h(i) | mask_r (BAND), h(i) &
//          mask_r (BOR), reducing to h combined with the masks' reduction.
// b(i) and h(i) depend on the element index, so misplaced elements show.
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "soak.h"

uint64_t
soak_pattern_key(const soak_op *o, int src, int dst)
{
    return soak_mix64(o->key ^ soak_mix64(((uint64_t) src << 32) | dst));
}

// Word j of a pattern: key + j golden-ratio steps through an invertible
// xorshift-multiply, so words differ along a block and between keys, at a
// cost per word close to a copy's (splitmix64 per word made checking the
// soak's main cost).
static uint64_t
pattern_word(uint64_t key, size_t j)
{
    uint64_t x = key + (uint64_t) j * 0x9e3779b97f4a7c15ull;

    return (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull;
}

void
soak_pattern_fill(void *buf, size_t bytes, uint64_t key)
{
    unsigned char *p     = buf;
    size_t         words = bytes / 8, j;
    uint64_t       w;

    for (j = 0; j < words; j++) {
        w = pattern_word(key, j);
        memcpy(p + 8 * j, &w, 8);
    }
    if (bytes % 8) {
        w = pattern_word(key, words);
        memcpy(p + 8 * words, &w, bytes % 8);
    }
}

// Offset of the first byte that differs from the pattern, or -1.
int64_t
soak_pattern_check(const void *buf, size_t bytes, uint64_t key)
{
    const unsigned char *p     = buf;
    size_t               words = bytes / 8, j, k, len;
    uint64_t             w, have;

    for (j = 0; j <= words; j++) {
        len  = j < words ? 8 : bytes % 8;
        w    = pattern_word(key, j);
        have = w;
        memcpy(&have, p + 8 * j, len);
        if (have != w) {
            for (k = 0; p[8 * j + k] == ((unsigned char *) &w)[k]; k++) { }
            return (int64_t) (8 * j + k);
        }
    }
    return -1;
}

// ---------------------------------------------------------------------------
// Elements
// ---------------------------------------------------------------------------

static int
is_float(shoal_dtype dt)
{
    return dt == SHOAL_FLOAT16 || dt == SHOAL_BFLOAT16 || dt == SHOAL_FLOAT32
        || dt == SHOAL_FLOAT64;
}

// Only exactly representable values are ever stored (normal or zero), so
// these conversions are bit moves, not roundings.
static uint16_t
f16_bits(double v)
{
    float    f = (float) v;
    uint32_t u;
    uint16_t sign;

    memcpy(&u, &f, 4);
    sign = (uint16_t) ((u >> 16) & 0x8000);
    if ((u & 0x7fffffff) == 0) {
        return sign;
    }
    return (uint16_t) (sign | ((((u >> 23) & 0xff) - 127 + 15) << 10)
        | ((u >> 13) & 0x3ff));
}

static double
f16_value(uint16_t h)
{
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
    float    f;
    double   v;

    if (e != 0 && e != 31) { // normal: move the fields into a float
        u = ((uint32_t) (h & 0x8000) << 16) | ((e - 15 + 127) << 23)
            | (m << 13);
        memcpy(&f, &u, 4);
        return f;
    }
    v = e == 0 ? ldexp(m, -24) : m ? NAN : INFINITY;
    return (h & 0x8000) ? -v : v;
}

static uint16_t
bf16_bits(double v)
{
    float    f = (float) v;
    uint32_t u;

    memcpy(&u, &f, 4);
    return (uint16_t) (u >> 16);
}

static double
bf16_value(uint16_t h)
{
    uint32_t u = (uint32_t) h << 16;
    float    f;

    memcpy(&f, &u, 4);
    return f;
}

// By element size: shoal_dtype_size is a library call, too slow per
// element.
static void
put_bits(size_t esize, void *buf, size_t i, uint64_t v)
{
    switch (esize) {
        case 1:
            ((uint8_t *) buf)[i] = (uint8_t) v;
            break;
        case 2:
            ((uint16_t *) buf)[i] = (uint16_t) v;
            break;
        case 4:
            ((uint32_t *) buf)[i] = (uint32_t) v;
            break;
        default:
            ((uint64_t *) buf)[i] = v;
            break;
    }
}

static uint64_t
get_bits(size_t esize, const void *buf, size_t i)
{
    switch (esize) {
        case 1:
            return ((const uint8_t *) buf)[i];
        case 2:
            return ((const uint16_t *) buf)[i];
        case 4:
            return ((const uint32_t *) buf)[i];
        default:
            return ((const uint64_t *) buf)[i];
    }
}

static void
put_float(shoal_dtype dt, void *buf, size_t i, double v)
{
    switch (dt) {
        case SHOAL_FLOAT16:
            ((uint16_t *) buf)[i] = f16_bits(v);
            break;
        case SHOAL_BFLOAT16:
            ((uint16_t *) buf)[i] = bf16_bits(v);
            break;
        case SHOAL_FLOAT32:
            ((float *) buf)[i] = (float) v;
            break;
        default:
            ((double *) buf)[i] = v;
            break;
    }
}

static double
get_float(shoal_dtype dt, const void *buf, size_t i)
{
    switch (dt) {
        case SHOAL_FLOAT16:
            return f16_value(((const uint16_t *) buf)[i]);
        case SHOAL_BFLOAT16:
            return bf16_value(((const uint16_t *) buf)[i]);
        case SHOAL_FLOAT32:
            return ((const float *) buf)[i];
        default:
            return ((const double *) buf)[i];
    }
}

// An integer value, as a float dtype's number or an integer dtype's bits.
static void
put_value(const soak_op *o, void *buf, size_t i, int64_t v)
{
    if (is_float(o->dt)) {
        put_float(o->dt, buf, i, (double) v);
    } else {
        put_bits(o->esize, buf, i, (uint64_t) v);
    }
}

// ---------------------------------------------------------------------------
// Reduction inputs and results
// ---------------------------------------------------------------------------

static int64_t
arith_base(const soak_op *o, size_t i)
{
    uint64_t h = (uint64_t) i * 0x9e3779b97f4a7c15ull + o->key;

    // (h >> 32) * range >> 32: uniform in [0, range) without a division
    return (int64_t) (((h >> 32) * (uint64_t) o->range) >> 32) + o->offset;
}

static uint64_t
bits_base(const soak_op *o, size_t i)
{
    return pattern_word(o->key, i);
}

static int
prod_two(const soak_op *o, size_t i, int pos, int n)
{
    return (int) ((i + (size_t) pos) % (size_t) n) < o->prod_m;
}

static uint64_t
bits_input(const soak_op *o, size_t i)
{
    uint64_t h = bits_base(o, i);

    switch (o->eff) {
        case SHOAL_BAND:
            return h | o->mask_self;
        case SHOAL_BOR:
            return h & o->mask_self;
        default:
            return h ^ o->mask_self;
    }
}

void
soak_reduce_fill(
    const soak_op *o, void *buf, size_t first, size_t count, int nranks)
{
    size_t j;

    for (j = 0; j < count; j++) {
        size_t i = first + j;

        switch (o->model) {
            case SOAK_MODEL_ARITH:
                put_value(o, buf, j, arith_base(o, i) + o->e_self);
                break;
            case SOAK_MODEL_PROD:
                put_value(
                    o, buf, j, prod_two(o, i, o->prod_p, nranks) ? 2 : 1);
                break;
            default:
                put_bits(o->esize, buf, j, bits_input(o, i) & o->width);
                break;
        }
    }
}

// Wraps an integer to the dtype's width and reads it back as its signed or
// unsigned value (integer sums wrap, then AVG divides).
static int64_t
wrap_int(shoal_dtype dt, int64_t v)
{
    switch (dt) {
        case SHOAL_INT8:
            return (int8_t) v;
        case SHOAL_UINT8:
            return (uint8_t) v;
        case SHOAL_INT16:
            return (int16_t) v;
        case SHOAL_INT32:
            return (int32_t) v;
        default:
            return v;
    }
}

// Expected ARITH result, as a double for floats and an integer otherwise.
static int64_t
arith_expect(const soak_op *o, size_t i, int n, double *fv)
{
    int64_t b = arith_base(o, i), sum = n * b + (int64_t) n * (n - 1);

    *fv = (double) sum;
    switch (o->op.kind) {
        case SHOAL_MIN:
            *fv = (double) b;
            return b;
        case SHOAL_MAX:
            *fv = (double) (b + 2 * (n - 1));
            return b + 2 * (n - 1);
        case SHOAL_AVG:
            *fv = (double) (b + n - 1);
            return wrap_int(o->dt, sum) / n;
        case SHOAL_PREMUL_SUM:
            *fv = o->op.scalar * (double) sum;
            return sum;
        default:
            return sum;
    }
}

static uint64_t
bits_expect(const soak_op *o, size_t i, int n)
{
    uint64_t h = bits_base(o, i);

    switch (o->eff) {
        case SHOAL_BAND:
            return h | o->mask_and;
        case SHOAL_BOR:
            return h & o->mask_or;
        default:
            return ((n & 1) ? h : 0) ^ o->mask_xor;
    }
}

// Compares element j (global index i); 0 when right, else describes it.
static int
check_elem(const soak_op *o, const void *buf, size_t j, size_t i, int n,
    char *why, size_t why_len)
{
    double   fv = 0, got;
    uint64_t want, have;

    if (o->model == SOAK_MODEL_ARITH) {
        want = (uint64_t) arith_expect(o, i, n, &fv);
    } else if (o->model == SOAK_MODEL_PROD) {
        want = 1ull << o->prod_m;
        fv   = (double) want;
    } else {
        want = bits_expect(o, i, n);
    }
    if (is_float(o->dt) && o->model != SOAK_MODEL_BITS) {
        got = get_float(o->dt, buf, j);
        if (got == fv) {
            return 0;
        }
        if (why_len != 0) { // only the first is described
            snprintf(why, why_len, "element %zu: got %.17g, want %.17g", i,
                got, fv);
        }
        return 1;
    }
    have = get_bits(o->esize, buf, j);
    if (((have ^ want) & o->width) == 0) {
        return 0;
    }
    if (why_len != 0) {
        snprintf(why, why_len,
            "element %zu: got 0x%" PRIx64 ", want 0x%" PRIx64, i, have,
            want & o->width);
    }
    return 1;
}

// Number of wrong elements among `count` results (global indices first
// ...); `why` describes the first.
int64_t
soak_reduce_check(const soak_op *o, const void *buf, size_t first,
    size_t count, int nranks, char *why, size_t why_len)
{
    int64_t wrong = 0;
    size_t  j;

    for (j = 0; j < count; j++) {
        if (check_elem(
                o, buf, j, first + j, nranks, why, wrong ? 0 : why_len)) {
            wrong++;
        }
    }
    return wrong;
}
