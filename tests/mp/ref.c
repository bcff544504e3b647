// Reference for the collective tests (see ref.h): input generators, the
// expected result of every reduction, half-type conversions.
#include "ref.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

int
ref_is_float(shoal_dtype dt)
{
    return dt == SHOAL_FLOAT16 || dt == SHOAL_BFLOAT16 || dt == SHOAL_FLOAT32
        || dt == SHOAL_FLOAT64;
}

int
ref_is_signed(shoal_dtype dt)
{
    return dt == SHOAL_INT8 || dt == SHOAL_INT16 || dt == SHOAL_INT32
        || dt == SHOAL_INT64;
}

uint64_t
ref_mask(shoal_dtype dt)
{
    size_t bits = shoal_dtype_size(dt) * 8;

    return bits >= 64 ? ~(uint64_t) 0 : ((uint64_t) 1 << bits) - 1;
}

// ---------------------------------------------------------------------------
// Half types
// ---------------------------------------------------------------------------

// Round to nearest, ties to even, of 0 <= x < 2^52 (adding and taking off
// 2^52 rounds in the default rounding mode; no libm, which shoal_mptest
// does not link).
static double
ref_rint(double x)
{
    volatile double big = 0x1p52;
    volatile double t   = x + big;
    return t - big;
}

// Rounds x (round to nearest, ties to even) to a binary format with p
// significand bits (the implicit one included), normal exponents emin..emax
// and ebits exponent bits; returns its bit pattern.
static uint64_t
ref_round_format(double x, int p, int emin, int emax, int ebits)
{
    uint64_t sign = signbit(x) ? (uint64_t) 1 << (p - 1 + ebits) : 0;
    uint64_t inf  = (((uint64_t) 1 << ebits) - 1) << (p - 1);
    double   a    = fabs(x);
    int      e;

    if (isnan(x)) {
        return inf | ((uint64_t) 1 << (p - 2)); // quiet NaN
    }
    if (isinf(a)) {
        return sign | inf;
    }
    if (a == 0) {
        return sign;
    }
    frexp(a, &e); // a in [2^(e-1), 2^e)
    e -= 1;
    if (e < emin) {
        e = emin; // subnormal: fixed quantum 2^(emin - p + 1)
    }
    double r = ref_rint(ldexp(a, p - 1 - e)); // significand, scaled
    if (r >= ldexp(1.0, p)) { // rounded up to the next binade
        r = ldexp(1.0, p - 1);
        e++;
    }
    if (e > emax) {
        return sign | inf;
    }
    uint64_t m = (uint64_t) r, hidden = (uint64_t) 1 << (p - 1);
    if (m < hidden) {
        return sign | m; // subnormal (e == emin)
    }
    return sign | ((uint64_t) (e + emax) << (p - 1)) | (m - hidden);
}

uint16_t
ref_round_half(double x, int bf16)
{
    return bf16 ? (uint16_t) ref_round_format(x, 8, -126, 127, 8)
                : (uint16_t) ref_round_format(x, 11, -14, 15, 5);
}

// Fast paths for values that are exactly floats (every generated input
// and most results): one rounding from the float is one rounding from x.
static uint32_t
ref_float_bits(float f)
{
    uint32_t u;

    memcpy(&u, &f, 4);
    return u;
}

uint16_t
ref_d_to_f16(double x)
{
    float f = (float) x;

    if ((double) f != x) {
        return ref_round_half(x, 0); // also NaN
    }
    uint32_t u = ref_float_bits(f), a = u & 0x7fffffffu;
    uint16_t s = (uint16_t) ((u >> 16) & 0x8000u);
    if (a >= 0x477ff000u) { // >= 65520 (or inf): rounds to infinity
        return s | 0x7c00u;
    }
    if (a < 0x38800000u) { // below 2^-14: subnormal, quantum 2^-24
        return ref_round_half(x, 0);
    }
    a -= (uint32_t) (127 - 15) << 23; // rebias the exponent
    a += 0xfffu + ((a >> 13) & 1u); // round to nearest even at bit 13
    return s | (uint16_t) (a >> 13);
}

uint16_t
ref_d_to_bf16(double x)
{
    float f = (float) x;

    if ((double) f != x || isnan(x)) {
        return ref_round_half(x, 1);
    }
    uint32_t u = ref_float_bits(f);
    return (uint16_t) ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

double
ref_f16_to_d(uint16_t h)
{
    uint32_t s = (uint32_t) (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu, u;
    float    f;

    if (e == 0) { // subnormal or zero: m * 2^-24, exact
        f = (float) m * 0x1p-24f;
        return s ? -(double) f : (double) f;
    }
    u = e == 31 ? s | 0x7f800000u | (m << 13)
                : s | ((e + 127 - 15) << 23) | (m << 13);
    memcpy(&f, &u, 4);
    return f;
}

double
ref_bf16_to_d(uint16_t h)
{
    uint32_t u = (uint32_t) h << 16;
    float    f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

// ---------------------------------------------------------------------------
// Elements
// ---------------------------------------------------------------------------

uint64_t
ref_get(shoal_dtype dt, const void *buf, size_t i)
{
    const unsigned char *p = (const unsigned char *) buf;
    uint8_t              u8;
    uint16_t             u16;
    uint32_t             u32;
    uint64_t             u64;

    switch (shoal_dtype_size(dt)) {
        case 1:
            memcpy(&u8, p + i, 1);
            return u8;
        case 2:
            memcpy(&u16, p + i * 2, 2);
            return u16;
        case 4:
            memcpy(&u32, p + i * 4, 4);
            return u32;
        default:
            memcpy(&u64, p + i * 8, 8);
            return u64;
    }
}

void
ref_put(shoal_dtype dt, void *buf, size_t i, uint64_t bits)
{
    unsigned char *p   = (unsigned char *) buf;
    uint8_t        u8  = (uint8_t) bits;
    uint16_t       u16 = (uint16_t) bits;
    uint32_t       u32 = (uint32_t) bits;

    switch (shoal_dtype_size(dt)) {
        case 1:
            memcpy(p + i, &u8, 1);
            break;
        case 2:
            memcpy(p + i * 2, &u16, 2);
            break;
        case 4:
            memcpy(p + i * 4, &u32, 4);
            break;
        default:
            memcpy(p + i * 8, &bits, 8);
    }
}

double
ref_to_double(shoal_dtype dt, uint64_t bits)
{
    float    f;
    double   d;
    uint32_t u32 = (uint32_t) bits;

    switch (dt) {
        case SHOAL_FLOAT16:
            return ref_f16_to_d((uint16_t) bits);
        case SHOAL_BFLOAT16:
            return ref_bf16_to_d((uint16_t) bits);
        case SHOAL_FLOAT32:
            memcpy(&f, &u32, 4);
            return f;
        case SHOAL_FLOAT64:
            memcpy(&d, &bits, 8);
            return d;
        default:
            if (ref_is_signed(dt)) {
                int sh = 64 - (int) shoal_dtype_size(dt) * 8;
                return (double) ((int64_t) (bits << sh) >> sh);
            }
            return (double) bits;
    }
}

uint64_t
ref_from_double(shoal_dtype dt, double x)
{
    float    f;
    uint32_t u32;
    uint64_t u64;

    switch (dt) {
        case SHOAL_FLOAT16:
            return ref_d_to_f16(x);
        case SHOAL_BFLOAT16:
            return ref_d_to_bf16(x);
        case SHOAL_FLOAT32:
            f = (float) x;
            memcpy(&u32, &f, 4);
            return u32;
        default:
            memcpy(&u64, &x, 8);
            return u64;
    }
}

void
ref_format(shoal_dtype dt, uint64_t bits, char *buf, size_t len)
{
    if (ref_is_float(dt)) {
        snprintf(
            buf, len, "%.9g (0x%" PRIx64 ")", ref_to_double(dt, bits), bits);
    } else if (ref_is_signed(dt)) {
        snprintf(
            buf, len, "%.0f (0x%" PRIx64 ")", ref_to_double(dt, bits), bits);
    } else {
        snprintf(buf, len, "%" PRIu64 " (0x%" PRIx64 ")", bits, bits);
    }
}

int
ref_pair_valid(shoal_dtype dt, shoal_op_kind op)
{
    switch (op) {
        case SHOAL_SUM:
        case SHOAL_PROD:
        case SHOAL_MIN:
        case SHOAL_MAX:
            return 1;
        case SHOAL_AVG:
            return dt != SHOAL_BOOL;
        case SHOAL_BAND:
        case SHOAL_BOR:
        case SHOAL_BXOR:
            return !ref_is_float(dt);
        case SHOAL_PREMUL_SUM:
            return ref_is_float(dt);
        default:
            return 0;
    }
}

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------

uint64_t
ref_mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t
ref_hash_bytes(const void *buf, size_t bytes)
{
    const unsigned char *p = (const unsigned char *) buf;
    uint64_t             h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < bytes; i++) {
        h = (h ^ p[i]) * 0x100000001b3ull;
    }
    return h;
}

ref_class
ref_class_of(int op_kind)
{
    switch (op_kind) {
        case SHOAL_SUM:
        case SHOAL_AVG:
        case SHOAL_PREMUL_SUM:
            return REF_SUM;
        case SHOAL_PROD:
            return REF_PROD;
        case SHOAL_MIN:
        case SHOAL_MAX:
            return REF_MINMAX;
        case SHOAL_BAND:
        case SHOAL_BOR:
        case SHOAL_BXOR:
            return REF_BITS;
        default:
            return REF_MOVE;
    }
}

uint64_t
ref_key(uint64_t seed, ref_class cls, int rank)
{
    return ref_mix(ref_mix(seed * 0x100000001b3ull + (uint64_t) cls)
        ^ ((uint64_t) rank * 0x2545f4914f6cdd1dull));
}

// Uniform in [0, 1) from the top 53 bits.
static double
ref_unit(uint64_t h)
{
    return (double) (h >> 11) * 0x1p-53;
}

// Floating value of class cls from hash h (not yet rounded to dt).
static double
ref_gen_float(shoal_dtype dt, ref_class cls, uint64_t h, size_t idx)
{
    int half = dt == SHOAL_FLOAT16 || dt == SHOAL_BFLOAT16;
    int sign = (h >> 62) & 1;

    switch (cls) {
        case REF_SUM:
            // float16: 11 significant bits, so that sums of a few need
            // more than float16 has and "round once" differs from
            // rounding every partial sum; bfloat16: 7 bits.
            if (dt == SHOAL_FLOAT16) {
                return (double) ((int) (h % 2049) - 1024) / 64.0;
            }
            if (half || idx % 4 == 0) {
                return (double) ((int) (h % 129) - 64) / 8.0;
            }
            return ref_unit(h) * 8.0 - 4.0;
        case REF_PROD:
            if (half) {
                double v = 1.0 + (double) ((int) (h % 17) - 8) / 64.0;
                return sign ? -v : v;
            }
            return (sign ? -1.0 : 1.0) * (1.0 + (ref_unit(h) - 0.5) / 4.0);
        case REF_SPECIAL:
            switch ((h >> 40) % 16) {
                case 0:
                    return NAN;
                case 1:
                    return INFINITY;
                case 2:
                    return -INFINITY;
                default:
                    break;
            }
            // fall through
        default: // REF_MINMAX: distinct non-zero values
            if (half) {
                return (double) (2 * (int) (h % 128) - 127) / 16.0;
            }
            double v = ref_unit(h) * 8.0 - 4.0;
            return (dt == SHOAL_FLOAT32 ? (float) v : v) == 0 ? 0.5 : v;
    }
}

uint64_t
ref_gen(shoal_dtype dt, ref_class cls, uint64_t key, size_t idx)
{
    uint64_t h = ref_mix(key + (uint64_t) idx * 0x9e3779b97f4a7c15ull);

    if (dt == SHOAL_BOOL) {
        // Biased per index so that and/or results are not constant.
        switch (idx % 3) {
            case 0:
                return (h >> 33) & 1;
            case 1:
                return (h >> 33) % 8 != 0;
            default:
                return (h >> 33) % 8 == 0;
        }
    }
    if (cls == REF_MOVE || cls == REF_BITS || cls == REF_MINMAX
        || cls == REF_SPECIAL) {
        if (!ref_is_float(dt) || cls == REF_MOVE) {
            return h & ref_mask(dt);
        }
    }
    if (!ref_is_float(dt)) {
        if (idx % 2 == 0) {
            return h & ref_mask(dt);
        }
        int64_t v = cls == REF_PROD ? (int64_t) (h % 7) - 3
                                    : (int64_t) (h % 201) - 100;
        return (uint64_t) v & ref_mask(dt);
    }
    return ref_from_double(dt, ref_gen_float(dt, cls, h, idx));
}

void
ref_fill(shoal_dtype dt, ref_class cls, uint64_t key, size_t idx0, void *buf,
    size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ref_put(dt, buf, i, ref_gen(dt, cls, key, idx0 + i));
    }
}

// ---------------------------------------------------------------------------
// Expected reductions
// ---------------------------------------------------------------------------

static void
ref_reduce_int(shoal_dtype dt, shoal_op_kind op, int n, const uint64_t *keys,
    ref_class cls, size_t idx, ref_expect *out)
{
    uint64_t mask = ref_mask(dt);
    int      sh   = 64 - (int) shoal_dtype_size(dt) * 8;
    int      sgn  = ref_is_signed(dt);
    uint64_t acc  = 0;

    if (dt == SHOAL_BOOL) { // logical: inputs are 0 or 1
        switch (op) {
            case SHOAL_SUM:
            case SHOAL_MAX:
                op = SHOAL_BOR;
                break;
            case SHOAL_PROD:
            case SHOAL_MIN:
                op = SHOAL_BAND;
                break;
            default:
                break;
        }
    }
    for (int r = 0; r < n; r++) {
        uint64_t v = ref_gen(dt, cls, keys[r], idx);
        if (r == 0) {
            acc = v;
            continue;
        }
        switch (op) {
            case SHOAL_SUM:
            case SHOAL_AVG:
                acc += v;
                break;
            case SHOAL_PROD:
                acc *= v;
                break;
            case SHOAL_MIN:
            case SHOAL_MAX: {
                int less = sgn ? (int64_t) (v << sh) < (int64_t) (acc << sh)
                               : v < acc;
                if (less == (op == SHOAL_MIN)) {
                    acc = v;
                }
                break;
            }
            case SHOAL_BAND:
                acc &= v;
                break;
            case SHOAL_BOR:
                acc |= v;
                break;
            default: // BXOR
                acc ^= v;
                break;
        }
        acc &= mask;
    }
    if (op == SHOAL_AVG) {
        acc &= mask;
        if (sgn) {
            acc = (uint64_t) (((int64_t) (acc << sh) >> sh) / n);
        } else {
            acc /= (uint64_t) n;
        }
    }
    out->bits = acc & mask;
}

// A scalar whose products with multiples of 1/8 in [-8, 8] are exact in
// every half type, so that half-type sums have one right answer.
static int
ref_scalar_dyadic(double s)
{
    return fabs(s) <= 2.0 && s * 64.0 == (double) (long long) (s * 64.0);
}

static double
ref_eps(shoal_dtype dt)
{
    switch (dt) {
        case SHOAL_FLOAT16:
            return 0x1p-10;
        case SHOAL_BFLOAT16:
            return 0x1p-7;
        case SHOAL_FLOAT32:
            return 0x1p-23;
        default:
            return 0x1p-52;
    }
}

void
ref_reduce(shoal_dtype dt, shoal_reduce_op op, ref_class cls, int n,
    const uint64_t *keys, size_t idx, ref_expect *out)
{
    memset(out, 0, sizeof(*out));
    if (!ref_is_float(dt)) {
        ref_reduce_int(dt, op.kind, n, keys, cls, idx, out);
        return;
    }
    double acc = 0, s = 0;
    int    nan = 0;
    for (int r = 0; r < n; r++) {
        double x = ref_to_double(dt, ref_gen(dt, cls, keys[r], idx));
        nan |= isnan(x);
        switch (op.kind) {
            case SHOAL_PROD:
                acc = r == 0 ? x : acc * x;
                break;
            case SHOAL_MIN:
                acc = r == 0 || x < acc ? x : acc;
                break;
            case SHOAL_MAX:
                acc = r == 0 || x > acc ? x : acc;
                break;
            case SHOAL_PREMUL_SUM:
                x *= op.scalar;
                // fall through
            default: // SUM, AVG (starting from x keeps the sign of -0)
                acc = r == 0 ? x : acc + x;
                s += fabs(x);
                break;
        }
    }
    int half = dt == SHOAL_FLOAT16 || dt == SHOAL_BFLOAT16;
    switch (op.kind) {
        case SHOAL_MIN:
        case SHOAL_MAX:
            acc        = nan ? NAN : acc;
            out->exact = 1;
            break;
        case SHOAL_PROD:
            s = fabs(acc);
            break;
        case SHOAL_AVG:
            acc /= n;
            s /= n;
            break;
        case SHOAL_PREMUL_SUM:
            out->exact = half && ref_scalar_dyadic(op.scalar);
            break;
        default:
            out->exact = half;
            break;
    }
    double eps_acc = dt == SHOAL_FLOAT64 ? 0x1p-52 : 0x1p-23;
    out->value     = acc;
    out->bits      = ref_from_double(dt, acc);
    out->tol       = (n + 2) * eps_acc * s + ref_eps(dt) * fabs(acc);
    // Across hosts, float16/bfloat16 partial results travel between ranks
    // in their own type, so every step rounds (as in Gloo and NCCL), not
    // only the last: one rounding per rank.
    if (half && ref_step_rounding() && op.kind != SHOAL_MIN
        && op.kind != SHOAL_MAX) {
        out->exact = 0;
        out->tol += n * ref_eps(dt) * s;
    }
}

int
ref_step_rounding(void)
{
    const char *t = getenv("SHOAL_TRANSPORT"), *h = getenv("SHOAL_TEST_NET");

    return (t != NULL && strcmp(t, "tcp") == 0) || (h != NULL && h[0] == '1');
}

int
ref_check(shoal_dtype dt, uint64_t got, const ref_expect *e)
{
    got &= ref_mask(dt);
    if (!ref_is_float(dt)) {
        return got == e->bits;
    }
    double g = ref_to_double(dt, got);
    if (isnan(e->value)) {
        return isnan(g);
    }
    if (e->exact) { // bitwise, except that -0 equals +0
        return g == ref_to_double(dt, e->bits);
    }
    if (isinf(e->value)) {
        return g == e->value;
    }
    return fabs(g - e->value) <= e->tol;
}

// ---------------------------------------------------------------------------
// Uneven counts
// ---------------------------------------------------------------------------

void
ref_v_counts(uint64_t seed, int n, size_t base, size_t *counts)
{
    for (int r = 0; r < n; r++) {
        uint64_t h = ref_mix(seed ^ 0x76636f756e7473ull ^ (uint64_t) r << 32);
        counts[r]  = base == 0 || h % 4 == 0
             ? 0
             : (size_t) (h % (base + base / 2 + 2));
    }
    if (base > 0) {
        counts[seed % (uint64_t) n]       = 0;
        counts[(seed + 1) % (uint64_t) n] = base;
    }
}

size_t
ref_a2a_count(uint64_t seed, int r, int p, int n, size_t base)
{
    uint64_t h = ref_mix(
        seed ^ 0x6132617600ull ^ (uint64_t) r << 40 ^ (uint64_t) p << 20);

    if (base == 0) {
        return 0;
    }
    if (seed % 3 == 0 && r == (int) (seed % (uint64_t) n)) {
        return 0; // this rank sends nothing
    }
    if (seed % 3 == 1 && p == (int) ((seed + 1) % (uint64_t) n)) {
        return 0; // this rank receives nothing
    }
    return h % 5 == 0 ? 0 : (size_t) (h % (base + base / 2 + 2));
}
