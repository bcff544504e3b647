// Reductions: inputs whose reduction is exact, and the expected result.
//
// Every rank can generate every rank's input (the seed names the rank), so
// each rank computes the expected result of a reduction on its own and
// compares it bitwise with what the library delivered. For that to be
// fair the result must not depend on rounding or on the order in which an
// algorithm combines the inputs, so the inputs of the floating types are
// integers small enough that every partial result is exact:
//
//   sum        |v| <= 2^M / n             (M: significand bits, n: ranks)
//   avg        v = n * w, |w| <= 2^M / n^2 (the mean w-sum is exact)
//   prod       1 <= |v| <= 2^floor(M / n)
//   min, max   |v| < 2^M
//
// with a random sign and never -0. The integer types take full random bits:
// their sum and product wrap, which is exact in any order; bool is 0 or 1.
// The ops follow shoal.h: bool sum = or, prod = and, min = and, max = or;
// avg on integers divides the wrapped sum rounding toward zero.
#include <math.h>
#include <string.h>

#include "mix.h"
#include "perf.h"

static int
is_float(shoal_dtype dt)
{
    return dt == SHOAL_FLOAT16 || dt == SHOAL_BFLOAT16 || dt == SHOAL_FLOAT32
        || dt == SHOAL_FLOAT64;
}

static int
is_signed_int(shoal_dtype dt)
{
    return dt == SHOAL_INT8 || dt == SHOAL_INT16 || dt == SHOAL_INT32
        || dt == SHOAL_INT64;
}

// Significand bits, the implicit one included.
static int
significand_bits(shoal_dtype dt)
{
    switch (dt) {
        case SHOAL_FLOAT16:
            return 11;
        case SHOAL_BFLOAT16:
            return 8;
        case SHOAL_FLOAT32:
            return 24;
        default:
            return 53;
    }
}

// --- float16 / bfloat16 ----------------------------------------------------

static double
half_to_double(uint16_t h)
{
    int      sign = h >> 15, e = (h >> 10) & 0x1f;
    unsigned m = h & 0x3ffu;
    double   v;

    if (e == 0) {
        v = ldexp((double) m, -24);
    } else if (e == 31) {
        v = m != 0 ? NAN : INFINITY;
    } else {
        v = ldexp((double) (m | 0x400u), e - 25);
    }
    return sign ? -v : v;
}

// Exact for the values this file produces (integers of at most 11
// significant bits, |v| <= 65504); truncates anything else.
static uint16_t
half_of_double(double v)
{
    uint16_t sign = signbit(v) ? 0x8000u : 0;
    int      e;
    double   f;

    v = fabs(v);
    if (v == 0) {
        return sign;
    }
    if (v > 65504.0) {
        return (uint16_t) (sign | 0x7c00u);
    }
    f = frexp(v, &e); // v = f * 2^e, 0.5 <= f < 1
    if (e - 1 < -14) {
        return (uint16_t) (sign | (uint16_t) ldexp(v, 24));
    }
    unsigned m = (unsigned) ldexp(f, 11); // 1.xxx with 10 fraction bits
    return (uint16_t) (sign | (uint16_t) ((unsigned) (e - 1 + 15) << 10)
        | (uint16_t) (m & 0x3ffu));
}

static double
bf16_to_double(uint16_t b)
{
    uint32_t bits = (uint32_t) b << 16;
    float    f;

    memcpy(&f, &bits, sizeof(f));
    return f;
}

// Exact for values with at most 8 significant bits (truncates others).
static uint16_t
bf16_of_double(double v)
{
    float    f = (float) v;
    uint32_t bits;

    memcpy(&bits, &f, sizeof(bits));
    return (uint16_t) (bits >> 16);
}

// --- element access
// ----------------------------------------------------------

static double
load_float(shoal_dtype dt, const unsigned char *src)
{
    switch (dt) {
        case SHOAL_FLOAT16: {
            uint16_t h;
            memcpy(&h, src, 2);
            return half_to_double(h);
        }
        case SHOAL_BFLOAT16: {
            uint16_t b;
            memcpy(&b, src, 2);
            return bf16_to_double(b);
        }
        case SHOAL_FLOAT32: {
            float f;
            memcpy(&f, src, 4);
            return f;
        }
        default: {
            double d;
            memcpy(&d, src, 8);
            return d;
        }
    }
}

static void
store_float(shoal_dtype dt, unsigned char *dst, double v)
{
    switch (dt) {
        case SHOAL_FLOAT16: {
            uint16_t h = half_of_double(v);
            memcpy(dst, &h, 2);
            break;
        }
        case SHOAL_BFLOAT16: {
            uint16_t b = bf16_of_double(v);
            memcpy(dst, &b, 2);
            break;
        }
        case SHOAL_FLOAT32: {
            float f = (float) v;
            memcpy(dst, &f, 4);
            break;
        }
        default:
            memcpy(dst, &v, 8);
            break;
    }
}

// The element's bits, zero-extended (little-endian hosts: the low bytes).
static uint64_t
load_bits(size_t esize, const unsigned char *src)
{
    uint64_t v = 0;

    memcpy(&v, src, esize);
    return v;
}

static void
store_bits(size_t esize, unsigned char *dst, uint64_t v)
{
    memcpy(dst, &v, esize);
}

static int64_t
sign_extend(uint64_t v, size_t esize)
{
    if (esize >= 8) {
        return (int64_t) v;
    }
    unsigned shift = (unsigned) (64 - 8 * esize);
    return (int64_t) (v << shift) >> shift;
}

static uint64_t
width_mask(size_t esize)
{
    return esize >= 8 ? ~(uint64_t) 0 : ((uint64_t) 1 << (8 * esize)) - 1;
}

// --- inputs ----------------------------------------------------------------

// An integer in [-bound, bound] (bound < 2^62) from 64 random bits.
static double
uniform_signed(uint64_t rnd, uint64_t bound)
{
    return (double) (int64_t) (rnd % (2 * bound + 1)) - (double) bound;
}

static double
float_input(shoal_dtype dt, shoal_op_kind op, int nranks, uint64_t rnd)
{
    int      m = significand_bits(dt);
    uint64_t full
        = m >= 62 ? (uint64_t) 1 << 62 : (uint64_t) 1 << m; // 2^M, capped
    uint64_t n = (uint64_t) (nranks > 0 ? nranks : 1);

    switch (op) {
        case SHOAL_SUM:
            return uniform_signed(rnd, full / n);
        case SHOAL_AVG:
            return (double) n * uniform_signed(rnd, full / n / n);
        case SHOAL_PROD: {
            int      b    = m / (int) n;
            uint64_t span = (uint64_t) 1 << (b > 62 ? 62 : b);
            double   mag  = (double) (1 + rnd % span);
            return (rnd >> 63) ? -mag : mag;
        }
        default: // min, max
            return uniform_signed(rnd, full - 1);
    }
}

void
perf_pattern_make_reduce(perf_pattern *p, shoal_dtype dtype, shoal_op_kind op,
    int nranks, uint32_t seed, size_t count)
{
    p->dtype = dtype;
    p->esize = shoal_dtype_size(dtype);
    p->len   = count < PERF_PATTERN_TILE ? count : PERF_PATTERN_TILE;
    for (uint32_t i = 0; i < p->len; i++) {
        uint32_t       r   = perf_mix32(seed ^ (i * 0x9e3779b9u));
        uint64_t       rnd = ((uint64_t) perf_mix32(r + seed) << 32) | r;
        unsigned char *dst = p->tile + (size_t) i * p->esize;
        if (dtype == SHOAL_BOOL) {
            dst[0] = (unsigned char) (r & 1u);
        } else if (is_float(dtype)) {
            store_float(dtype, dst, float_input(dtype, op, nranks, rnd));
        } else {
            store_bits(p->esize, dst, rnd);
        }
    }
}

// --- the ops
// -----------------------------------------------------------------

static void
combine_float(shoal_dtype dt, shoal_op_kind op, unsigned char *acc,
    const unsigned char *in)
{
    double a = load_float(dt, acc), b = load_float(dt, in), r;

    switch (op) {
        case SHOAL_PROD:
            r = a * b;
            break;
        case SHOAL_MIN:
            r = isnan(a) || isnan(b) ? NAN : (b < a ? b : a);
            break;
        case SHOAL_MAX:
            r = isnan(a) || isnan(b) ? NAN : (b > a ? b : a);
            break;
        default: // sum, avg
            r = a + b;
            break;
    }
    store_float(dt, acc, r);
}

static void
combine_int(shoal_dtype dt, shoal_op_kind op, size_t esize, unsigned char *acc,
    const unsigned char *in)
{
    uint64_t a = load_bits(esize, acc), b = load_bits(esize, in), r;
    int      less, greater;

    if (is_signed_int(dt)) {
        less    = sign_extend(b, esize) < sign_extend(a, esize);
        greater = sign_extend(b, esize) > sign_extend(a, esize);
    } else {
        less    = b < a;
        greater = b > a;
    }
    switch (op) {
        case SHOAL_PROD:
            r = a * b;
            break;
        case SHOAL_MIN:
            r = less ? b : a;
            break;
        case SHOAL_MAX:
            r = greater ? b : a;
            break;
        default: // sum, avg
            r = a + b;
            break;
    }
    store_bits(esize, acc, r & width_mask(esize));
}

void
perf_pattern_combine(
    perf_pattern *acc, const perf_pattern *in, shoal_op_kind op, int first)
{
    size_t esize = in->esize;

    if (first) {
        acc->dtype = in->dtype;
        acc->esize = esize;
        acc->len   = in->len;
        memcpy(acc->tile, in->tile, in->len * esize);
        return;
    }
    for (size_t i = 0; i < in->len; i++) {
        unsigned char       *a = acc->tile + i * esize;
        const unsigned char *b = in->tile + i * esize;
        if (in->dtype == SHOAL_BOOL) {
            // sum and max are or, prod and min are and.
            a[0] = (op == SHOAL_SUM || op == SHOAL_MAX) ? (a[0] | b[0])
                                                        : (a[0] & b[0]);
        } else if (is_float(in->dtype)) {
            combine_float(in->dtype, op, a, b);
        } else {
            combine_int(in->dtype, op, esize, a, b);
        }
    }
}

void
perf_pattern_finish(perf_pattern *acc, shoal_op_kind op, int k)
{
    size_t esize = acc->esize;

    if (op != SHOAL_AVG || k <= 0 || acc->dtype == SHOAL_BOOL) {
        return;
    }
    for (size_t i = 0; i < acc->len; i++) {
        unsigned char *a = acc->tile + i * esize;
        if (is_float(acc->dtype)) {
            store_float(acc->dtype, a, load_float(acc->dtype, a) / k);
        } else if (is_signed_int(acc->dtype)) {
            int64_t v = sign_extend(load_bits(esize, a), esize) / k;
            store_bits(esize, a, (uint64_t) v & width_mask(esize));
        } else {
            store_bits(esize, a, load_bits(esize, a) / (uint64_t) k);
        }
    }
}

int
perf_redop_valid(shoal_dtype dtype, shoal_op_kind op)
{
    switch (op) {
        case SHOAL_SUM:
        case SHOAL_PROD:
        case SHOAL_MIN:
        case SHOAL_MAX:
            return 0;
        case SHOAL_AVG:
            return dtype == SHOAL_BOOL ? -1 : 0;
        default:
            return -1; // not offered by -O
    }
}
