// Reduction kernels: the dtype/op check and its messages; every vector
// kernel against the portable code, bit for bit, at every SIMD level the
// CPU has (k in {1,2,3,8}, odd and zero lengths, in place on the first and
// the last input, nothing written past the end); the portable code against
// an independent per-element reference computed in double / long long;
// edge cases (wrap-around, AVG rounding toward zero, bool normalisation,
// NaN, infinities, signed zeros, subnormals, rounding ties of the 16-bit
// floats); and SHOAL_SIMD.
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/kernels/reduce_impl.h"
#include "base/error.h"
#include "test.h"

#define KMAX  8
#define NMAX  4099
#define GUARD 64 // elements after the end of `out` that must stay untouched

static const int    test_ks[] = { 1, 2, 3, 8 };
static const size_t test_ns[] = { 0, 1, 7, 15, 16, 17, 31, 33, 1023, 4099 };
static const double test_scalars[] = { 0.3, -2.5, 1.0 / 3.0, 1e-3 };

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static void
rng_seed(uint64_t seed)
{
    rng_state = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    if (rng_state == 0) {
        rng_state = 1;
    }
}

static uint64_t
rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static int
is_float(int dt)
{
    return dt == SHOAL_FLOAT16 || dt == SHOAL_BFLOAT16 || dt == SHOAL_FLOAT32
        || dt == SHOAL_FLOAT64;
}

static int
valid_pair(int dt, int kind)
{
    int st = shi_reduce_check(dt, SHOAL_REDUCE_OP((shoal_op_kind) kind));
    shi_error_clear();
    return st == SHOAL_OK;
}

static shoal_reduce_op
make_op(int kind, double scalar)
{
    shoal_reduce_op op = SHOAL_REDUCE_OP((shoal_op_kind) kind);
    op.scalar          = scalar;
    return op;
}

// The levels this CPU can run.
static int
levels(int *out)
{
    int n = 0;

    for (int l = 0; l < SHI_SIMD_COUNT; l++) {
        if (shi_reduce_simd_supported(l)) {
            out[n++] = l;
        }
    }
    return n;
}

static void
use_level(int level)
{
    CHECK(shi_reduce_set_simd(level) == level);
    CHECK(strcmp(shi_reduce_simd_level(), shi_reduce_simd_name(level)) == 0);
}

static uint64_t
load_bits(int dt, const void *p, size_t i)
{
    size_t   es = shoal_dtype_size(dt);
    uint64_t v  = 0;

    memcpy(&v, (const char *) p + i * es, es);
    return v;
}

// Special values, as bit patterns: NaNs of several signs and payloads (one
// signalling), infinities, zeros, subnormals, extremes.
static const uint16_t special_f16[] = { 0x7e00, 0xfe00, 0x7c01, 0x7d23, 0x7c00,
    0xfc00, 0x0000, 0x8000, 0x0001, 0x83ff, 0x0400, 0x7bff, 0x8001 };
static const uint16_t special_bf16[] = { 0x7fc0, 0xffc0, 0x7f81, 0x7fa3,
    0x7f80, 0xff80, 0x0000, 0x8000, 0x0001, 0x807f, 0x0080, 0x7f7f, 0x8001 };
static const uint32_t special_f32[]  = { 0x7fc00000, 0xffc00000, 0x7f800001,
     0x7fd23456, 0x7f800000, 0xff800000, 0x00000000, 0x80000000, 0x00000001,
     0x807fffff, 0x00800000, 0x7f7fffff, 0x80000001 };
static const uint64_t special_f64[]  = { 0x7ff8000000000000ull,
     0xfff8000000000000ull, 0x7ff0000000000001ull, 0x7ff4123456789abcull,
     0x7ff0000000000000ull, 0xfff0000000000000ull, 0x0000000000000000ull,
     0x8000000000000000ull, 0x0000000000000001ull, 0x800fffffffffffffull,
     0x0010000000000000ull, 0x7fefffffffffffffull, 0x8000000000000001ull };
#define NSPECIAL 13

// A random moderate float: +-[1, 2) * 2^[-emax, emax].
static float
rnd_float(int emax)
{
    float m = 1.0f + (float) (rng() % (1u << 23)) * 0x1p-23f;
    int   e = (int) (rng() % (uint64_t) (2 * emax + 1)) - emax;
    return (rng() & 1 ? -1.0f : 1.0f) * ldexpf(m, e);
}

static void
fill(int dt, void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned r = (unsigned) (rng() % 100);
        uint64_t v;
        switch (dt) {
            case SHOAL_BOOL: // mostly 0/1, sometimes another true byte
                v = r < 55 ? 0 : r < 90 ? 1 : (rng() % 255) + 1;
                break;
            case SHOAL_FLOAT16:
                v = r < 5    ? special_f16[rng() % NSPECIAL]
                    : r < 15 ? rng() & 0xffff
                             : shi_f32_to_f16(rnd_float(8));
                break;
            case SHOAL_BFLOAT16:
                v = r < 5    ? special_bf16[rng() % NSPECIAL]
                    : r < 15 ? rng() & 0xffff
                             : shi_f32_to_bf16(rnd_float(20));
                break;
            case SHOAL_FLOAT32:
                v = r < 5 ? special_f32[rng() % NSPECIAL]
                          : shi_f32_bits(rnd_float(20));
                break;
            case SHOAL_FLOAT64: {
                double d = (double) rnd_float(40)
                    + (double) (rng() % 1024) * 0x1p-40;
                memcpy(&v, &d, 8);
                if (r < 5) {
                    v = special_f64[rng() % NSPECIAL];
                }
                break;
            }
            default: { // integers: random bits, or an extreme
                size_t   es    = shoal_dtype_size(dt);
                uint64_t sign  = 1ull << (8 * es - 1);
                uint64_t ext[] = { sign, sign - 1, 0, ~0ull, 1, sign + 1 };
                v              = r < 10 ? ext[rng() % 6] : rng();
                if (r >= 10 && r < 30) { // small, so sums stay small
                    v = (uint64_t) ((int64_t) (rng() % 200) - 100);
                }
                break;
            }
        }
        memcpy(
            (char *) p + i * shoal_dtype_size(dt), &v, shoal_dtype_size(dt));
    }
}

// ---------------------------------------------------------------------------
// Vector kernels against the portable code
// ---------------------------------------------------------------------------

static void
compare(int dt, int kind, int level, int k, size_t n, const char *what,
    const void *got, const void *want)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t g = load_bits(dt, got, i), w = load_bits(dt, want, i);
        CHECK_MSG(g == w,
            "%s %s %s k=%d n=%zu (%s): element %zu is 0x%llx, the "
            "scalar code gives 0x%llx",
            shoal_dtype_name(dt), shoal_op_name(kind),
            shi_reduce_simd_name(level), k, n, what, i, (unsigned long long) g,
            (unsigned long long) w);
    }
}

static void
check_guard(int dt, int kind, int level, int k, size_t n, const char *out)
{
    size_t es = shoal_dtype_size(dt);

    for (size_t b = n * es; b < (n + GUARD) * es; b++) {
        CHECK_MSG((unsigned char) out[b] == 0xa5,
            "%s %s %s k=%d n=%zu: byte %zu past the end was written",
            shoal_dtype_name(dt), shoal_op_name(kind),
            shi_reduce_simd_name(level), k, n, b - n * es);
    }
}

// One (dtype, op, level, k, n): out of place, in place on in[0] and on
// in[k-1], each equal to shi_reduce_scalar.
static void
simd_case(int dt, int kind, int level, int k, size_t n, double scalar)
{
    size_t          es = shoal_dtype_size(dt);
    void           *in[KMAX];
    const void     *cin[KMAX];
    char           *want = malloc((n + 1) * es);
    char           *out  = malloc((n + GUARD) * es);
    char           *tmp  = malloc(n * es + 1);
    shoal_reduce_op op   = make_op(kind, scalar);

    CHECK(want && out && tmp);
    for (int j = 0; j < k; j++) {
        in[j] = malloc(n * es + 1); // exact size: ASan sees overreads
        CHECK(in[j]);
        fill(dt, in[j], n);
        cin[j] = in[j];
    }
    shi_reduce_scalar(dt, op, want, cin, k, n);

    memset(out, 0xa5, (n + GUARD) * es);
    shi_reduce(dt, op, out, cin, k, n);
    compare(dt, kind, level, k, n, "out of place", out, want);
    check_guard(dt, kind, level, k, n, out);

    for (int which = 0; which < 2; which++) {
        int         j = which == 0 ? 0 : k - 1;
        const void *saved;
        memcpy(tmp, in[j], n * es);
        saved  = cin[j];
        cin[j] = tmp;
        shi_reduce(dt, op, tmp, cin, k, n);
        cin[j] = saved;
        compare(dt, kind, level, k, n,
            which == 0 ? "in place on in[0]" : "in place on in[k-1]", tmp,
            want);
    }
    for (int j = 0; j < k; j++) {
        free(in[j]);
    }
    free(want);
    free(out);
    free(tmp);
}

static void
simd_matches_scalar(int dt)
{
    int lv[SHI_SIMD_COUNT], nlv = levels(lv);

    for (int l = 0; l < nlv; l++) {
        use_level(lv[l]);
        for (int kind = 0; kind < SHOAL_OP_COUNT; kind++) {
            if (!valid_pair(dt, kind)) {
                continue;
            }
            for (size_t ki = 0; ki < sizeof(test_ks) / sizeof(*test_ks);
                 ki++) {
                for (size_t ni = 0; ni < sizeof(test_ns) / sizeof(*test_ns);
                     ni++) {
                    rng_seed(((uint64_t) dt << 32) ^ ((uint64_t) kind << 24)
                        ^ (ki << 16) ^ ni);
                    simd_case(dt, kind, lv[l], test_ks[ki], test_ns[ni],
                        test_scalars[ni % 4]);
                }
            }
        }
    }
}

TEST(reduce_simd_matches_scalar_bool)
{
    simd_matches_scalar(SHOAL_BOOL);
}

TEST(reduce_simd_matches_scalar_uint8)
{
    simd_matches_scalar(SHOAL_UINT8);
}

TEST(reduce_simd_matches_scalar_int8)
{
    simd_matches_scalar(SHOAL_INT8);
}

TEST(reduce_simd_matches_scalar_int16)
{
    simd_matches_scalar(SHOAL_INT16);
}

TEST(reduce_simd_matches_scalar_int32)
{
    simd_matches_scalar(SHOAL_INT32);
}

TEST(reduce_simd_matches_scalar_int64)
{
    simd_matches_scalar(SHOAL_INT64);
}

TEST(reduce_simd_matches_scalar_float16)
{
    simd_matches_scalar(SHOAL_FLOAT16);
}

TEST(reduce_simd_matches_scalar_bfloat16)
{
    simd_matches_scalar(SHOAL_BFLOAT16);
}

TEST(reduce_simd_matches_scalar_float32)
{
    simd_matches_scalar(SHOAL_FLOAT32);
}

TEST(reduce_simd_matches_scalar_float64)
{
    simd_matches_scalar(SHOAL_FLOAT64);
}

// ---------------------------------------------------------------------------
// The portable code against an independent reference, element by element
// ---------------------------------------------------------------------------

// Integer element as a long long (sign- or zero-extended).
static long long
ref_int(int dt, const void *p, size_t i)
{
    switch (dt) {
        case SHOAL_UINT8:
            return ((const uint8_t *) p)[i];
        case SHOAL_INT8:
            return ((const int8_t *) p)[i];
        case SHOAL_INT16:
            return ((const int16_t *) p)[i];
        case SHOAL_INT32:
            return ((const int32_t *) p)[i];
        default:
            return ((const int64_t *) p)[i];
    }
}

// v modulo 2^bits of the dtype, as that dtype's value.
static long long
ref_wrap(int dt, unsigned long long v)
{
    int bits = 8 * (int) shoal_dtype_size(dt);

    if (bits < 64) {
        v &= (1ull << bits) - 1;
        if (dt != SHOAL_UINT8 && (v >> (bits - 1)) != 0) {
            return (long long) v - (1ll << bits);
        }
        return (long long) v;
    }
    long long s;
    memcpy(&s, &v, sizeof(s));
    return s;
}

static long long
ref_int_reduce(int dt, int kind, const void *const *in, int k, size_t i)
{
    unsigned long long acc = (unsigned long long) ref_int(dt, in[0], i);
    long long          mm  = ref_int(dt, in[0], i);

    for (int j = 1; j < k; j++) {
        long long x = ref_int(dt, in[j], i);
        switch (kind) {
            case SHOAL_PROD:
                acc *= (unsigned long long) x;
                break;
            case SHOAL_MIN:
                mm = x < mm ? x : mm;
                break;
            case SHOAL_MAX:
                mm = x > mm ? x : mm;
                break;
            case SHOAL_BAND:
                acc &= (unsigned long long) x;
                break;
            case SHOAL_BOR:
                acc |= (unsigned long long) x;
                break;
            case SHOAL_BXOR:
                acc ^= (unsigned long long) x;
                break;
            default:
                acc += (unsigned long long) x;
                break;
        }
    }
    if (kind == SHOAL_MIN || kind == SHOAL_MAX) {
        return mm;
    }
    if (kind == SHOAL_AVG) {
        return ref_wrap(dt, acc) / k; // C division truncates toward zero
    }
    return ref_wrap(dt, acc);
}

static int
ref_bool_reduce(int kind, const void *const *in, int k, size_t i)
{
    int any = 0, all = 1, odd = 0;

    for (int j = 0; j < k; j++) {
        int t = ((const uint8_t *) in[j])[i] != 0;
        any |= t;
        all &= t;
        odd ^= t;
    }
    switch (kind) {
        case SHOAL_PROD:
        case SHOAL_MIN:
        case SHOAL_BAND:
            return all;
        case SHOAL_BXOR:
            return odd;
        default:
            return any;
    }
}

// A 16/32/64-bit float element as a double, decoded by hand (not with the
// library's converters).
static double
ref_float(int dt, const void *p, size_t i)
{
    uint64_t b = load_bits(dt, p, i);

    switch (dt) {
        case SHOAL_FLOAT16: {
            int    s = (int) (b >> 15), e = (int) ((b >> 10) & 31);
            int    m = (int) (b & 1023);
            double v = e == 31 ? (m ? NAN : INFINITY)
                : e == 0       ? ldexp(m, -24)
                               : ldexp(m + 1024, e - 25);
            return s ? -v : v;
        }
        case SHOAL_BFLOAT16: {
            uint32_t u = (uint32_t) b << 16;
            float    f;
            memcpy(&f, &u, 4);
            return f;
        }
        case SHOAL_FLOAT32: {
            uint32_t u = (uint32_t) b;
            float    f;
            memcpy(&f, &u, 4);
            return f;
        }
        default: {
            double d;
            memcpy(&d, &b, 8);
            return d;
        }
    }
}

// Rounds to the accumulator: float32 (exact through double: double has
// more than 2 * 24 + 2 bits, so rounding twice is rounding once).
static double
ref_acc(int dt, double v)
{
    return dt == SHOAL_FLOAT64 ? v : (double) (float) v;
}

// The reference result as a double (NaN: any NaN).
static double
ref_float_reduce(
    int dt, shoal_reduce_op op, const void *const *in, int k, size_t i)
{
    double s   = dt == SHOAL_FLOAT64 ? op.scalar : (double) (float) op.scalar;
    double acc = ref_float(dt, in[0], i);
    int    nan = isnan(acc);

    if (op.kind == SHOAL_PREMUL_SUM) {
        acc = ref_acc(dt, acc * s);
    }
    for (int j = 1; j < k; j++) {
        double x = ref_float(dt, in[j], i);
        nan |= isnan(x);
        switch (op.kind) {
            case SHOAL_PROD:
                acc = ref_acc(dt, acc * x);
                break;
            case SHOAL_MIN:
                acc = x < acc ? x : acc;
                break;
            case SHOAL_MAX:
                acc = x > acc ? x : acc;
                break;
            case SHOAL_PREMUL_SUM:
                acc = ref_acc(dt, acc + ref_acc(dt, x * s));
                break;
            default:
                acc = ref_acc(dt, acc + x);
                break;
        }
    }
    if (op.kind == SHOAL_AVG) {
        acc = ref_acc(dt, acc / k);
    }
    if ((op.kind == SHOAL_MIN || op.kind == SHOAL_MAX) && nan) {
        return NAN;
    }
    return acc;
}

// bfloat16 nearest to f (not NaN), ties to even, by comparing distances to
// the two neighbours.
static uint16_t
ref_to_bf16(float f)
{
    uint32_t u  = shi_f32_bits(f);
    uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
    if (u == lo) {
        return (uint16_t) (lo >> 16);
    }
    double dlo = fabs((double) shi_f32_from_bits(lo));
    double dhi = (hi & 0x7fffffffu) == 0x7f800000u
        ? ldexp(1.0, 128) // one step past the largest finite
        : fabs((double) shi_f32_from_bits(hi));
    double v   = fabs((double) f);
    if (v - dlo < dhi - v) {
        return (uint16_t) (lo >> 16);
    }
    if (v - dlo > dhi - v) {
        return (uint16_t) (hi >> 16);
    }
    return (uint16_t) (((lo >> 16) & 1) ? hi >> 16 : lo >> 16);
}

// float16 nearest to v (not NaN), ties to even: a binary search over the
// finite magnitudes, whose bit patterns are in increasing order.
static uint16_t
ref_to_f16(double v)
{
    double   a    = fabs(v);
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    uint16_t lo = 0, hi = 0x7bff;

    if (a >= 65520.0) { // halfway to 65536 and up: infinity
        return sign | 0x7c00;
    }
    while (lo < hi) {
        uint16_t mid = (uint16_t) ((lo + hi + 1) / 2);
        if (ref_float(SHOAL_FLOAT16, &mid, 0) <= a) {
            lo = mid;
        } else {
            hi = (uint16_t) (mid - 1);
        }
    }
    uint16_t up = (uint16_t) (lo + 1);
    double   d0 = a - ref_float(SHOAL_FLOAT16, &lo, 0);
    double   d1
        = (lo == 0x7bff ? 65536.0 : ref_float(SHOAL_FLOAT16, &up, 0)) - a;
    if (d0 < d1 || (d0 == d1 && (lo & 1) == 0)) {
        return sign | lo;
    }
    return sign | up;
}

// The reference double encoded in the dtype.
static uint64_t
ref_encode(int dt, double v)
{
    switch (dt) {
        case SHOAL_FLOAT16:
            return ref_to_f16(v);
        case SHOAL_BFLOAT16:
            return ref_to_bf16((float) v);
        case SHOAL_FLOAT32:
            return shi_f32_bits((float) v);
        default: {
            uint64_t u;
            memcpy(&u, &v, 8);
            return u;
        }
    }
}

static uint64_t
canonical_nan(int dt)
{
    switch (dt) {
        case SHOAL_FLOAT16:
            return 0x7e00;
        case SHOAL_BFLOAT16:
            return 0x7fc0;
        case SHOAL_FLOAT32:
            return 0x7fc00000;
        default:
            return 0x7ff8000000000000ull;
    }
}

static void
reference_case(int dt, int kind, int k, size_t n, double scalar)
{
    size_t          es = shoal_dtype_size(dt);
    void           *in[KMAX];
    const void     *cin[KMAX];
    char           *out = malloc(n * es + 1);
    shoal_reduce_op op  = make_op(kind, scalar);

    CHECK(out);
    for (int j = 0; j < k; j++) {
        in[j] = malloc(n * es + 1);
        CHECK(in[j]);
        fill(dt, in[j], n);
        cin[j] = in[j];
    }
    shi_reduce_scalar(dt, op, out, cin, k, n);
    for (size_t i = 0; i < n; i++) {
        uint64_t got = load_bits(dt, out, i);
        if (dt == SHOAL_BOOL) {
            int want = ref_bool_reduce(kind, cin, k, i);
            CHECK_MSG(got == (uint64_t) want,
                "bool %s k=%d element %zu: %llu, want %d", shoal_op_name(kind),
                k, i, (unsigned long long) got, want);
        } else if (!is_float(dt)) {
            long long want = ref_int_reduce(dt, kind, cin, k, i);
            long long g    = ref_int(dt, out, i);
            CHECK_MSG(g == want, "%s %s k=%d element %zu: %lld, want %lld",
                shoal_dtype_name(dt), shoal_op_name(kind), k, i, g, want);
        } else {
            double want = ref_float_reduce(dt, op, cin, k, i);
            if (isnan(want)) {
                CHECK_MSG(got == canonical_nan(dt),
                    "%s %s k=%d element %zu: 0x%llx, want the "
                    "canonical NaN",
                    shoal_dtype_name(dt), shoal_op_name(kind), k, i,
                    (unsigned long long) got);
            } else if (kind == SHOAL_MIN || kind == SHOAL_MAX) {
                // Equal values (either zero) are fine.
                double g = ref_float(dt, out, i);
                CHECK_MSG(g == want, "%s %s k=%d element %zu: %g, want %g",
                    shoal_dtype_name(dt), shoal_op_name(kind), k, i, g, want);
            } else {
                uint64_t w = ref_encode(dt, want);
                CHECK_MSG(got == w,
                    "%s %s k=%d element %zu: 0x%llx (%g), want 0x%llx "
                    "(%.17g)",
                    shoal_dtype_name(dt), shoal_op_name(kind), k, i,
                    (unsigned long long) got, ref_float(dt, out, i),
                    (unsigned long long) w, want);
            }
        }
    }
    for (int j = 0; j < k; j++) {
        free(in[j]);
    }
    free(out);
}

static void
scalar_matches_reference(int dt)
{
    static const size_t ns[] = { 1, 17, 1023 };

    for (int kind = 0; kind < SHOAL_OP_COUNT; kind++) {
        if (!valid_pair(dt, kind)) {
            continue;
        }
        for (size_t ki = 0; ki < sizeof(test_ks) / sizeof(*test_ks); ki++) {
            for (size_t ni = 0; ni < sizeof(ns) / sizeof(*ns); ni++) {
                rng_seed(0xabcdefull ^ ((uint64_t) dt << 32)
                    ^ ((uint64_t) kind << 24) ^ (ki << 16) ^ ni);
                reference_case(dt, kind, test_ks[ki], ns[ni],
                    test_scalars[(ki + ni) % 4]);
            }
        }
    }
}

TEST(reduce_scalar_matches_reference_bool)
{
    scalar_matches_reference(SHOAL_BOOL);
}

TEST(reduce_scalar_matches_reference_ints)
{
    scalar_matches_reference(SHOAL_UINT8);
    scalar_matches_reference(SHOAL_INT8);
    scalar_matches_reference(SHOAL_INT16);
    scalar_matches_reference(SHOAL_INT32);
    scalar_matches_reference(SHOAL_INT64);
}

TEST(reduce_scalar_matches_reference_floats)
{
    scalar_matches_reference(SHOAL_FLOAT16);
    scalar_matches_reference(SHOAL_BFLOAT16);
    scalar_matches_reference(SHOAL_FLOAT32);
    scalar_matches_reference(SHOAL_FLOAT64);
}

// Many inputs: k = 1024 (and an odd 333) on a few lengths, every level.
TEST(reduce_many_inputs)
{
    static const int dts[] = { SHOAL_FLOAT32, SHOAL_BFLOAT16, SHOAL_FLOAT16,
        SHOAL_FLOAT64, SHOAL_INT32, SHOAL_UINT8, SHOAL_BOOL };
    static const int kinds[]
        = { SHOAL_SUM, SHOAL_MAX, SHOAL_AVG, SHOAL_PREMUL_SUM, SHOAL_BXOR };
    static const int    bigk[] = { 333, 1024 };
    static const size_t ns[]   = { 5, 100 };
    int                 lv[SHI_SIMD_COUNT], nlv = levels(lv);
    void               *in[1024];
    const void         *cin[1024];
    char                want[100 * 8], out[100 * 8];

    for (size_t d = 0; d < sizeof(dts) / sizeof(*dts); d++) {
        int    dt = dts[d];
        size_t es = shoal_dtype_size(dt);
        for (size_t o = 0; o < sizeof(kinds) / sizeof(*kinds); o++) {
            if (!valid_pair(dt, kinds[o])) {
                continue;
            }
            shoal_reduce_op op = make_op(kinds[o], 0.01);
            for (int bk = 0; bk < 2; bk++) {
                for (int ni = 0; ni < 2; ni++) {
                    int    k = bigk[bk];
                    size_t n = ns[ni];
                    rng_seed((uint64_t) (dt * 100 + kinds[o] * 10 + bk));
                    for (int j = 0; j < k; j++) {
                        in[j] = malloc(n * es);
                        CHECK(in[j]);
                        fill(dt, in[j], n);
                        cin[j] = in[j];
                    }
                    shi_reduce_scalar(dt, op, want, cin, k, n);
                    for (int l = 0; l < nlv; l++) {
                        use_level(lv[l]);
                        shi_reduce(dt, op, out, cin, k, n);
                        compare(dt, kinds[o], lv[l], k, n, "many inputs", out,
                            want);
                    }
                    for (int j = 0; j < k; j++) {
                        free(in[j]);
                    }
                }
            }
        }
    }
}

// The division of integer AVG (floating point where exact) against C's
// integer division, for extreme sums and k up to 2^31 - 1.
TEST(reduce_int_div_exact)
{
    static const int ks[] = { 1, 2, 3, 5, 7, 8, 9, 10, 100, 333, 1000, 1023,
        1024, 1025, 65535, 65536, 1 << 20, 0x7fffffff };
    enum { N = 4096 };
    static int32_t a32[N], b32[N];
    static int16_t a16[N], b16[N];
    static int8_t  a8[N], b8[N];
    static uint8_t au8[N], bu8[N];

    rng_seed(99);
    for (size_t i = 0; i < N; i++) {
        uint64_t r = rng();
        a32[i]     = (int32_t) (uint32_t) r;
        if (i < 64) { // near the extremes and near multiples of small k
            a32[i] = i % 2 ? INT32_MIN + (int32_t) (i / 2)
                           : INT32_MAX - (int32_t) (i / 2);
        }
        a16[i] = (int16_t) (uint16_t) (r >> 32);
        a8[i]  = (int8_t) (uint8_t) (r >> 48);
        au8[i] = (uint8_t) (r >> 56);
    }
    a16[0] = INT16_MIN;
    a16[1] = INT16_MAX;
    a8[0]  = INT8_MIN;
    a8[1]  = INT8_MAX;
    for (size_t ki = 0; ki < sizeof(ks) / sizeof(*ks); ki++) {
        int k = ks[ki];
        memcpy(b32, a32, sizeof(a32));
        memcpy(b16, a16, sizeof(a16));
        memcpy(b8, a8, sizeof(a8));
        memcpy(bu8, au8, sizeof(au8));
        shi_reduce_int_div(SHOAL_INT32, b32, k, 0, N);
        shi_reduce_int_div(SHOAL_INT16, b16, k, 0, N);
        shi_reduce_int_div(SHOAL_INT8, b8, k, 0, N);
        shi_reduce_int_div(SHOAL_UINT8, bu8, k, 0, N);
        for (size_t i = 0; i < N; i++) {
            CHECK_MSG(b32[i] == a32[i] / k, "int32 %d / %d: %d", (int) a32[i],
                k, (int) b32[i]);
            CHECK_MSG(b16[i] == a16[i] / k, "int16 %d / %d: %d", (int) a16[i],
                k, (int) b16[i]);
            CHECK_MSG(b8[i] == a8[i] / k, "int8 %d / %d: %d", (int) a8[i], k,
                (int) b8[i]);
            CHECK_MSG(bu8[i] == au8[i] / k, "uint8 %d / %d: %d", (int) au8[i],
                k, (int) bu8[i]);
        }
    }
}

// ---------------------------------------------------------------------------
// Edge cases, at every level (n = 40: vector body and tail)
// ---------------------------------------------------------------------------

#define EDGE_N 40

// Reduces k single values, each broadcast to EDGE_N elements, at every
// level, and checks every element's bits against `want`.
static void
edge(int dt, shoal_reduce_op op, int k, const uint64_t *vals, uint64_t want)
{
    size_t      es = shoal_dtype_size(dt);
    char        buf[KMAX][EDGE_N * 8], out[EDGE_N * 8];
    const void *in[KMAX];
    int         lv[SHI_SIMD_COUNT], nlv = levels(lv);

    for (int j = 0; j < k; j++) {
        for (size_t i = 0; i < EDGE_N; i++) {
            memcpy(buf[j] + i * es, &vals[j], es);
        }
        in[j] = buf[j];
    }
    for (int l = 0; l < nlv; l++) {
        use_level(lv[l]);
        shi_reduce(dt, op, out, in, k, EDGE_N);
        for (size_t i = 0; i < EDGE_N; i++) {
            uint64_t g = load_bits(dt, out, i);
            CHECK_MSG(g == want,
                "%s %s %s k=%d element %zu: 0x%llx, want 0x%llx",
                shoal_dtype_name(dt), shoal_op_name(op.kind),
                shi_reduce_simd_name(lv[l]), k, i, (unsigned long long) g,
                (unsigned long long) want);
        }
    }
}

#define U64(x) ((uint64_t) (x))
#define EDGE2(dt, kind, a, b, want)                                           \
    do {                                                                      \
        uint64_t v_[2] = { U64(a), U64(b) };                                  \
        edge(dt, SHOAL_REDUCE_OP(kind), 2, v_, U64(want));                    \
    } while (0)
#define EDGE3(dt, kind, a, b, c, want)                                        \
    do {                                                                      \
        uint64_t v_[3] = { U64(a), U64(b), U64(c) };                          \
        edge(dt, SHOAL_REDUCE_OP(kind), 3, v_, U64(want));                    \
    } while (0)

static uint64_t
i32(int32_t v)
{
    return (uint32_t) v;
}

static uint64_t
i8(int8_t v)
{
    return (uint8_t) v;
}

TEST(reduce_int_wraps)
{
    EDGE2(SHOAL_INT32, SHOAL_SUM, i32(INT32_MAX), i32(1), i32(INT32_MIN));
    EDGE2(SHOAL_INT32, SHOAL_SUM, i32(INT32_MIN), i32(-1), i32(INT32_MAX));
    EDGE2(SHOAL_INT32, SHOAL_PROD, i32(INT32_MIN), i32(-1), i32(INT32_MIN));
    EDGE2(SHOAL_INT32, SHOAL_PROD, i32(65536), i32(65536), 0);
    EDGE2(SHOAL_INT32, SHOAL_MIN, i32(INT32_MIN), i32(INT32_MAX),
        i32(INT32_MIN));
    EDGE2(SHOAL_INT32, SHOAL_MAX, i32(INT32_MIN), i32(INT32_MAX),
        i32(INT32_MAX));
    EDGE2(SHOAL_INT64, SHOAL_SUM, INT64_MAX, 1, U64(INT64_MIN));
    EDGE2(SHOAL_INT64, SHOAL_PROD, INT64_MIN, U64(-1), U64(INT64_MIN));
    EDGE2(SHOAL_INT64, SHOAL_MIN, U64(-5), 3, U64(-5));
    EDGE2(SHOAL_INT64, SHOAL_MAX, U64(INT64_MIN), U64(-1), U64(-1));
    EDGE2(SHOAL_INT8, SHOAL_SUM, i8(127), i8(1), i8(-128));
    EDGE2(SHOAL_INT8, SHOAL_MIN, i8(-128), i8(127), i8(-128));
    EDGE2(SHOAL_UINT8, SHOAL_SUM, 255, 1, 0);
    EDGE2(SHOAL_UINT8, SHOAL_PROD, 16, 16, 0);
    EDGE2(SHOAL_UINT8, SHOAL_MAX, 200, 100, 200); // unsigned compare
    EDGE2(SHOAL_INT16, SHOAL_PROD, 0x8000, 0xffff, 0x8000);
    EDGE2(SHOAL_INT16, SHOAL_PROD, 0xffff, 0xffff, 1);
    EDGE2(SHOAL_INT16, SHOAL_SUM, 0x7fff, 1, 0x8000);
}

TEST(reduce_int_avg_rounds_toward_zero)
{
    EDGE2(SHOAL_INT32, SHOAL_AVG, i32(-3), i32(-4), i32(-3));
    EDGE2(SHOAL_INT32, SHOAL_AVG, i32(3), i32(4), i32(3));
    EDGE3(SHOAL_INT32, SHOAL_AVG, i32(-7), 0, 0, i32(-2));
    EDGE3(SHOAL_INT32, SHOAL_AVG, i32(-9), 0, 0, i32(-3));
    // The sum wraps first: INT32_MAX + 1 = INT32_MIN, / 2.
    EDGE2(SHOAL_INT32, SHOAL_AVG, i32(INT32_MAX), i32(1), i32(-1073741824));
    EDGE2(SHOAL_INT8, SHOAL_AVG, i8(100), i8(100), i8(-28));
    EDGE2(SHOAL_INT8, SHOAL_AVG, i8(-5), i8(0), i8(-2));
    EDGE2(SHOAL_UINT8, SHOAL_AVG, 200, 100, 22); // (300 mod 256) / 2
    EDGE3(SHOAL_INT16, SHOAL_AVG, 0xffff, 0xffff, 0, 0); // -2 / 3
    EDGE3(SHOAL_INT64, SHOAL_AVG, U64(-10), U64(-1), 0, U64(-3));
}

TEST(reduce_bool_normalises)
{
    // Any nonzero byte is true; results are 0 or 1.
    EDGE2(SHOAL_BOOL, SHOAL_SUM, 2, 0, 1);
    EDGE2(SHOAL_BOOL, SHOAL_SUM, 0, 0, 0);
    EDGE2(SHOAL_BOOL, SHOAL_MAX, 0x80, 0, 1);
    EDGE2(SHOAL_BOOL, SHOAL_BOR, 0, 0xff, 1);
    EDGE2(SHOAL_BOOL, SHOAL_PROD, 2, 4, 1); // 2 & 4 would be 0
    EDGE2(SHOAL_BOOL, SHOAL_PROD, 1, 0, 0);
    EDGE2(SHOAL_BOOL, SHOAL_MIN, 0xff, 1, 1);
    EDGE2(SHOAL_BOOL, SHOAL_BAND, 2, 1, 1);
    EDGE2(SHOAL_BOOL, SHOAL_BXOR, 2, 1, 0);
    EDGE3(SHOAL_BOOL, SHOAL_BXOR, 2, 0x80, 1, 1);
    uint64_t one[1] = { 0x40 };
    edge(SHOAL_BOOL, SHOAL_REDUCE_OP(SHOAL_SUM), 1, one, 1);
}

TEST(reduce_float_specials)
{
    const uint32_t nan = 0x7fc00000, mnan = 0xffc00000, snan = 0x7f800001;
    const uint32_t inf = 0x7f800000, minf = 0xff800000;
    const uint32_t pz = 0, nz = 0x80000000, one = 0x3f800000;

    // NaN anywhere: the canonical NaN, for every op.
    for (int kind = 0; kind < SHOAL_OP_COUNT; kind++) {
        if (!valid_pair(SHOAL_FLOAT32, kind)) {
            continue;
        }
        EDGE3(SHOAL_FLOAT32, kind, one, snan, one, nan);
        EDGE3(SHOAL_FLOAT32, kind, mnan, one, one, nan);
        EDGE3(SHOAL_FLOAT32, kind, one, one, 0x7fd23456, nan);
        EDGE2(SHOAL_FLOAT64, kind, 0x3ff0000000000000ull,
            0xfff8000000000001ull, 0x7ff8000000000000ull);
        EDGE2(SHOAL_FLOAT16, kind, 0x3c00, 0x7c01, 0x7e00);
        EDGE2(SHOAL_BFLOAT16, kind, 0xffc1, 0x3f80, 0x7fc0);
    }
    EDGE2(SHOAL_FLOAT32, SHOAL_SUM, inf, minf, nan);
    EDGE2(SHOAL_FLOAT32, SHOAL_PROD, inf, pz, nan);
    EDGE2(SHOAL_FLOAT32, SHOAL_MIN, inf, minf, minf);
    EDGE2(SHOAL_FLOAT32, SHOAL_MAX, minf, one, one);
    EDGE2(SHOAL_FLOAT32, SHOAL_SUM, 0x7f7fffff, 0x7f7fffff, inf);
    // Signed zeros: sums as IEEE says; MIN/MAX keep the earlier input.
    EDGE2(SHOAL_FLOAT32, SHOAL_SUM, nz, nz, nz);
    EDGE2(SHOAL_FLOAT32, SHOAL_SUM, nz, pz, pz);
    EDGE2(SHOAL_FLOAT32, SHOAL_MIN, nz, pz, nz);
    EDGE2(SHOAL_FLOAT32, SHOAL_MIN, pz, nz, pz);
    EDGE2(SHOAL_FLOAT32, SHOAL_MAX, nz, pz, nz);
    EDGE2(SHOAL_FLOAT64, SHOAL_MIN, 0x8000000000000000ull, 0, U64(1) << 63);
    EDGE2(SHOAL_FLOAT16, SHOAL_MAX, 0x8000, 0x0000, 0x8000);
    EDGE2(SHOAL_BFLOAT16, SHOAL_MIN, 0x0000, 0x8000, 0x0000);
    // Subnormals are kept, not flushed.
    EDGE2(SHOAL_FLOAT32, SHOAL_SUM, 1, 1, 2);
    EDGE2(SHOAL_FLOAT32, SHOAL_SUM, 0x00400000, 0x00400000, 0x00800000);
    EDGE2(SHOAL_FLOAT64, SHOAL_SUM, 1, 1, 2);
    EDGE2(SHOAL_FLOAT16, SHOAL_SUM, 0x0001, 0x0001, 0x0002);
    EDGE2(SHOAL_FLOAT16, SHOAL_SUM, 0x03ff, 0x0001, 0x0400);
    EDGE2(SHOAL_BFLOAT16, SHOAL_SUM, 0x0001, 0x0001, 0x0002);
    EDGE2(SHOAL_BFLOAT16, SHOAL_MAX, 0x0001, 0x8001, 0x0001);
    // Rounding of the 16-bit floats: once, to nearest, ties to even.
    // bfloat16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even is 1.
    EDGE2(SHOAL_BFLOAT16, SHOAL_SUM, 0x3f80, 0x3b80, 0x3f80);
    // 1 + 3 * 2^-8: tie between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6.
    EDGE2(SHOAL_BFLOAT16, SHOAL_SUM, 0x3f81, 0x3b80, 0x3f82);
    // Accumulate in float32, round once: 1 + 2^-9 + 2^-9 = 1 + 2^-8 -> 1.
    EDGE3(SHOAL_BFLOAT16, SHOAL_SUM, 0x3f80, 0x3b00, 0x3b00, 0x3f80);
    // ... and 1 + 2^-9 + 2^-9 + 2^-9 + 2^-9 = 1 + 2^-7 exactly.
    {
        uint64_t v[5] = { 0x3f80, 0x3b00, 0x3b00, 0x3b00, 0x3b00 };
        edge(SHOAL_BFLOAT16, SHOAL_REDUCE_OP(SHOAL_SUM), 5, v, 0x3f81);
    }
    // float16: 2048 + 1 is a tie between 2048 and 2050: even is 2048;
    // 2050 + 1 rounds to 2052.
    EDGE2(SHOAL_FLOAT16, SHOAL_SUM, 0x6800, 0x3c00, 0x6800);
    EDGE2(SHOAL_FLOAT16, SHOAL_SUM, 0x6801, 0x3c00, 0x6802);
    // Overflow to infinity: 65504 + 16 (tie, rounds to even: infinity).
    EDGE2(SHOAL_FLOAT16, SHOAL_SUM, 0x7bff, 0x4c00, 0x7c00);
    EDGE2(SHOAL_FLOAT16, SHOAL_SUM, 0x7bff, 0x4b00, 0x7bff);
    EDGE2(SHOAL_BFLOAT16, SHOAL_SUM, 0x7f7f, 0x7f7f, 0x7f80);
    // float16 accumulates in float32: 65504 + 65504 - 65504 = 65504.
    EDGE3(SHOAL_FLOAT16, SHOAL_SUM, 0x7bff, 0x7bff, 0xfbff, 0x7bff);
    // AVG divides the float32 sum: (65504 + 65504) / 2 = 65504.
    EDGE2(SHOAL_FLOAT16, SHOAL_AVG, 0x7bff, 0x7bff, 0x7bff);
    EDGE3(SHOAL_FLOAT32, SHOAL_AVG, one, one, 0x40000000, 0x3faaaaab);
    // PREMUL_SUM: every input times (float) scalar, then the sum.
    {
        uint64_t        v[2] = { one, 0x40000000 };
        shoal_reduce_op op   = SHOAL_PREMUL_SUM_OP(0.5);
        edge(SHOAL_FLOAT32, op, 2, v, 0x3fc00000); // 0.5 + 1.0
        op.scalar = 0.1; // (float) 0.1 * 1 + (float) 0.1 * 2
        edge(SHOAL_FLOAT32, op, 2, v, shi_f32_bits(0.1f * 1.0f + 0.1f * 2.0f));
        uint64_t h[2] = { 0x3c00, 0x4000 }; // float16 1 and 2
        op.scalar     = 0.5;
        edge(SHOAL_FLOAT16, op, 2, h, 0x3e00);
    }
}

// ---------------------------------------------------------------------------
// Conversions of the 16-bit floats, and the kernels on every bit pattern
// ---------------------------------------------------------------------------

TEST(reduce_half_conversions)
{
    for (uint32_t h = 0; h < 65536; h++) {
        uint16_t hh   = (uint16_t) h;
        float    f    = shi_f16_to_f32(hh);
        double   want = ref_float(SHOAL_FLOAT16, &hh, 0);
        if (isnan(want)) {
            CHECK_MSG(isnan(f) && (shi_f32_bits(f) & 0x400000u),
                "f16 0x%04x: not a quiet NaN", h);
            CHECK(shi_f32_to_f16(f) == (hh | 0x200));
        } else {
            CHECK_MSG((double) f == want && !signbit(f) == !signbit(want),
                "f16 0x%04x: %g, want %g", h, (double) f, want);
            CHECK_MSG(shi_f32_to_f16(f) == hh, "f16 0x%04x round trip", h);
        }
    }
    // float32 -> float16 against the compiler's _Float16, on random bit
    // patterns and around every float16 boundary.
    rng_seed(7);
    for (int i = 0; i < 2000000; i++) {
        uint32_t u = (uint32_t) rng();
        if (i & 1) { // near a float16 value: +- a few float32 ulps
            uint32_t h = (uint32_t) rng() & 0x7fff;
            if (((h >> 10) & 31) == 31) {
                continue;
            }
            u = shi_f32_bits(shi_f16_to_f32((uint16_t) h))
                + (uint32_t) ((int) (rng() % 8193) - 4096);
            u |= (uint32_t) (rng() & 1) << 31;
        }
        float f = shi_f32_from_bits(u);
        if (isnan(f)) {
            continue;
        }
        uint16_t want = ref_to_f16(f);
        CHECK_MSG(shi_f32_to_f16(f) == want, "f32 0x%08x: 0x%04x, want 0x%04x",
            u, shi_f32_to_f16(f), want);
#ifdef __FLT16_MANT_DIG__
        _Float16 c = (_Float16) f; // and the compiler's conversion
        memcpy(&want, &c, 2);
        CHECK_MSG(shi_f32_to_f16(f) == want,
            "f32 0x%08x: 0x%04x, _Float16 gives 0x%04x", u, shi_f32_to_f16(f),
            want);
#endif
        CHECK_MSG(shi_f32_to_bf16(f) == ref_to_bf16(f),
            "bf16 of f32 0x%08x: 0x%04x, want 0x%04x", u, shi_f32_to_bf16(f),
            ref_to_bf16(f));
    }
}

TEST(reduce_half_every_pattern)
{
    // k = 1 SUM and MAX over all 65536 patterns: every non-NaN comes back
    // unchanged, every NaN as the canonical one; k = 2 SUM against the
    // scalar code, every pattern against a shuffled partner.
    static uint16_t a[65536], b[65536], out[65536], want[65536];
    int             lv[SHI_SIMD_COUNT], nlv = levels(lv);
    const int       dts[] = { SHOAL_FLOAT16, SHOAL_BFLOAT16 };

    rng_seed(11);
    for (uint32_t i = 0; i < 65536; i++) {
        a[i] = (uint16_t) i;
        b[i] = (uint16_t) rng();
    }
    for (int d = 0; d < 2; d++) {
        int dt = dts[d];
        for (int l = 0; l < nlv; l++) {
            use_level(lv[l]);
            for (int kind = SHOAL_SUM; kind <= SHOAL_MAX; kind++) {
                const void *in1[1] = { a };
                shi_reduce(dt, SHOAL_REDUCE_OP(kind), out, in1, 1, 65536);
                for (uint32_t i = 0; i < 65536; i++) {
                    double   v = ref_float(dt, a, i);
                    uint16_t w = isnan(v) ? (uint16_t) canonical_nan(dt)
                                          : (uint16_t) i;
                    CHECK_MSG(out[i] == w, "%s %s 0x%04x: 0x%04x",
                        shoal_dtype_name(dt), shoal_op_name(kind), i, out[i]);
                }
                const void *in2[2] = { a, b };
                shi_reduce_scalar(
                    dt, SHOAL_REDUCE_OP(kind), want, in2, 2, 65536);
                shi_reduce(dt, SHOAL_REDUCE_OP(kind), out, in2, 2, 65536);
                compare(dt, kind, lv[l], 2, 65536, "all patterns", out, want);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The check
// ---------------------------------------------------------------------------

static void
check_rejects(int dt, shoal_reduce_op op, const char *const *words)
{
    shi_error_clear();
    CHECK_ST(shi_reduce_check(dt, op), SHOAL_EINVAL);
    for (int i = 0; words[i] != NULL; i++) {
        CHECK_MSG(strstr(shi_error_text(), words[i]) != NULL,
            "message '%s' does not name '%s'", shi_error_text(), words[i]);
    }
}

TEST(reduce_check_rejects_bad_pairs)
{
    const char *band_f32[] = { "band", "float32", "integer", NULL };
    const char *bxor_f16[] = { "bxor", "float16", NULL };
    const char *premul[]   = { "premul_sum", "int32", "float", NULL };
    const char *premul_b[] = { "premul_sum", "bool", NULL };
    const char *avg_bool[] = { "avg", "bool", NULL };
    const char *dtype99[]  = { "dtype", "99", NULL };
    const char *dtypeneg[] = { "dtype", "-1", NULL };
    const char *op42[]     = { "op", "42", "sum", NULL };
    const char *opneg[]    = { "op", "-1", NULL };

    check_rejects(SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_BAND), band_f32);
    check_rejects(SHOAL_FLOAT16, SHOAL_REDUCE_OP(SHOAL_BXOR), bxor_f16);
    check_rejects(SHOAL_INT32, SHOAL_PREMUL_SUM_OP(2.0), premul);
    check_rejects(SHOAL_BOOL, SHOAL_PREMUL_SUM_OP(2.0), premul_b);
    check_rejects(SHOAL_BOOL, SHOAL_REDUCE_OP(SHOAL_AVG), avg_bool);
    check_rejects(99, SHOAL_REDUCE_OP(SHOAL_SUM), dtype99);
    check_rejects(-1, SHOAL_REDUCE_OP(SHOAL_SUM), dtypeneg);
    check_rejects(SHOAL_FLOAT32, SHOAL_REDUCE_OP((shoal_op_kind) 42), op42);
    check_rejects(SHOAL_INT8, SHOAL_REDUCE_OP((shoal_op_kind) -1), opneg);
}

TEST(reduce_check_accepts_exactly_the_documented_pairs)
{
    int n = 0;

    for (int dt = 0; dt < SHOAL_DTYPE_COUNT; dt++) {
        for (int kind = 0; kind < SHOAL_OP_COUNT; kind++) {
            int bitwise = kind == SHOAL_BAND || kind == SHOAL_BOR
                || kind == SHOAL_BXOR;
            int want = 1;
            if (bitwise && is_float(dt)) {
                want = 0;
            }
            if (kind == SHOAL_PREMUL_SUM && !is_float(dt)) {
                want = 0;
            }
            if (kind == SHOAL_AVG && dt == SHOAL_BOOL) {
                want = 0;
            }
            CHECK_MSG(valid_pair(dt, kind) == want, "%s %s: %s",
                shoal_dtype_name(dt), shoal_op_name(kind),
                want ? "rejected" : "accepted");
            n += want;
        }
    }
    // 4 floats x 6 ops, 5 integers x 8 ops, bool x 7 ops.
    CHECK(n == 24 + 40 + 7);
}

// ---------------------------------------------------------------------------
// SHOAL_SIMD (each test is a fresh process: the level is chosen on first
// use)
// ---------------------------------------------------------------------------

static int
best_level(void)
{
    int lv[SHI_SIMD_COUNT];
    int n = levels(lv);
    return lv[n - 1];
}

TEST(reduce_simd_env_scalar)
{
    setenv("SHOAL_SIMD", "scalar", 1);
    CHECK(strcmp(shi_reduce_simd_level(), "scalar") == 0);
}

TEST(reduce_simd_env_avx2)
{
    if (!shi_reduce_simd_supported(SHI_SIMD_AVX2)) {
        SKIP("no AVX2 + F16C");
    }
    setenv("SHOAL_SIMD", "avx2", 1);
    CHECK(strcmp(shi_reduce_simd_level(), "avx2") == 0);
}

TEST(reduce_simd_env_default_and_bad_value)
{
    setenv("SHOAL_SIMD", "sse9", 1); // warns, then takes the best
    CHECK(strcmp(shi_reduce_simd_level(), shi_reduce_simd_name(best_level()))
        == 0);
}

TEST(reduce_simd_env_unsupported_falls_back)
{
    if (shi_reduce_simd_supported(SHI_SIMD_AVX512)) {
        SKIP("this CPU has AVX-512: nothing to fall back from");
    }
    setenv("SHOAL_SIMD", "avx512", 1);
    CHECK(strcmp(shi_reduce_simd_level(), shi_reduce_simd_name(best_level()))
        == 0);
}

// Threads racing to the first use all see one level, and a bad SHOAL_SIMD
// warns once (reduce_simd_env_warns_once runs this test as a child).
static void *
first_use_thread(void *arg)
{
    float       a[37] = { 1 }, b[37] = { 2 }, out[37];
    const void *in[2] = { a, b };

    for (int i = 0; i < 100; i++) {
        shi_reduce(SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_SUM), out, in, 2, 37);
        CHECK(out[0] == 3.0f);
    }
    *(const char **) arg = shi_reduce_simd_level();
    return NULL;
}

TEST(reduce_simd_first_use_threads)
{
    pthread_t   th[4];
    const char *seen[4];

    for (int i = 0; i < 4; i++) {
        CHECK(pthread_create(&th[i], NULL, first_use_thread, &seen[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
    }
    for (int i = 1; i < 4; i++) {
        CHECK(strcmp(seen[i], seen[0]) == 0);
    }
}

TEST(reduce_simd_env_warns_once)
{
    const char *argv[] = { test_build_path("tests/shoal_tests"),
        "reduce_simd_first_use_threads", NULL };
    const char *env[]  = { "SHOAL_SIMD=sse9", NULL };
    char       *out    = NULL;
    int         rc     = test_run(argv, env, &out, 30);

    CHECK_MSG(rc == 0, "child exited %d: %s", rc, out ? out : "");
    CHECK_MSG(test_count(out, "SHOAL_SIMD=sse9 is not one of") == 1,
        "wanted one warning: %s", out);
    free(out);
}
