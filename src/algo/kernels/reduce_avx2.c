// AVX2 (+ F16C) reduction kernels, compiled for that target whatever the
// build's -march, and only ever called when the CPU has it.
//
// The same shape and the same operations as reduce_avx512.c (see there and
// reduce_scalar.c), 32-byte vectors: 4 vectors (128 bytes) of output at a
// time, then 1, then the portable code for the tail. NaN masks are vectors
// (cmp + blendv) instead of mask registers; int64 MIN/MAX, which AVX2
// lacks, are a compare and a blend.
#include "algo/kernels/reduce_impl.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define R256_TGT    __attribute__((target("avx2,f16c")))
#define R256_INL    static inline __attribute__((always_inline)) R256_TGT
#define R256_UNROLL 4

// ---------------------------------------------------------------------------
// float32 and float16: 8 lanes of float32
// ---------------------------------------------------------------------------

R256_INL __m256
r256_ldf(int dt, const void *p, size_t i)
{
    const __m128i *h = (const __m128i *) ((const uint16_t *) p + i);

    switch (dt) {
        case SHOAL_FLOAT16:
            return _mm256_cvtph_ps(_mm_loadu_si128(h));
        default:
            return _mm256_loadu_ps((const float *) p + i);
    }
}

R256_INL void
r256_stf(int dt, void *p, size_t i, __m256 v)
{
    __m128i *h = (__m128i *) ((uint16_t *) p + i);

    switch (dt) {
        case SHOAL_FLOAT16:
            _mm_storeu_si128(h, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
            break;
        default:
            _mm256_storeu_ps((float *) p + i, v);
            break;
    }
}

R256_INL __m256
r256_combf(int kind, __m256 acc, __m256 x, __m256 vs, __m256 *nan)
{
    switch (kind) {
        case SHOAL_PROD:
            return _mm256_mul_ps(acc, x);
        case SHOAL_MIN:
            *nan = _mm256_or_ps(*nan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
            return _mm256_min_ps(x, acc);
        case SHOAL_MAX:
            *nan = _mm256_or_ps(*nan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
            return _mm256_max_ps(x, acc);
        case SHOAL_PREMUL_SUM:
            return _mm256_add_ps(acc, _mm256_mul_ps(x, vs));
        default:
            return _mm256_add_ps(acc, x);
    }
}

R256_INL __m256
r256_finf(int kind, __m256 acc, __m256 nan, __m256 vk)
{
    const __m256 qnan = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000));

    if (kind == SHOAL_MIN || kind == SHOAL_MAX) {
        return _mm256_blendv_ps(acc, qnan, nan);
    }
    if (kind == SHOAL_AVG) {
        acc = _mm256_div_ps(acc, vk);
    }
    return _mm256_blendv_ps(acc, qnan, _mm256_cmp_ps(acc, acc, _CMP_UNORD_Q));
}

// Output elements [i, i + 8 * nv): nv (1 or R256_UNROLL) vectors.
R256_INL void
r256_f32_block(int dt, int kind, int nv, void *out, const void *const *in,
    int k, size_t i, __m256 vs, __m256 vk)
{
    __m256 acc[R256_UNROLL], nan[R256_UNROLL];

#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        __m256 x = r256_ldf(dt, in[0], i + 8 * (size_t) u);
        nan[u]   = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
        acc[u]   = kind == SHOAL_PREMUL_SUM ? _mm256_mul_ps(x, vs) : x;
    }
    for (int j = 1; j < k; j++) {
        const void *p = in[j];
#pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            __m256 x = r256_ldf(dt, p, i + 8 * (size_t) u);
            acc[u]   = r256_combf(kind, acc[u], x, vs, &nan[u]);
        }
    }
#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        r256_stf(
            dt, out, i + 8 * (size_t) u, r256_finf(kind, acc[u], nan[u], vk));
    }
}

R256_INL void
r256_f32_run(int dt, int kind, shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t lo, size_t hi)
{
    const __m256 vs = _mm256_set1_ps((float) op.scalar);
    const __m256 vk = _mm256_set1_ps((float) k);
    size_t       i  = lo;

    for (; i + 8 * R256_UNROLL <= hi; i += 8 * R256_UNROLL) {
        r256_f32_block(dt, kind, R256_UNROLL, out, in, k, i, vs, vk);
    }
    for (; i + 8 <= hi; i += 8) {
        r256_f32_block(dt, kind, 1, out, in, k, i, vs, vk);
    }
    if (i < hi) {
        shi_reduce_range(dt, op, out, in, k, i, hi);
    }
}

// ---------------------------------------------------------------------------
// bfloat16: 16 elements a 32-byte load, split without shuffles into the
// even elements (shifted up) and the odd ones (low halves cleared), as in
// reduce_avx512.c.
// ---------------------------------------------------------------------------

// Round to nearest even, the bfloat16 in the upper half of each lane. v is
// not NaN (NaNs are canonical by now).
R256_INL __m256i
r256_bf16_round(__m256 v)
{
    __m256i b = _mm256_castps_si256(v);
    __m256i lsb
        = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
    return _mm256_add_epi32(
        b, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
}

// Output elements [i, i + 16 * nv): nv (1 or 2) loads of 16.
R256_INL void
r256_bf16_block(int kind, int nv, void *out, const void *const *in, int k,
    size_t i, __m256 vs, __m256 vk)
{
    const __m256i hi16 = _mm256_set1_epi32((int) 0xffff0000u);
    __m256        acc[4], nan[4];

#pragma GCC unroll 2
    for (int u = 0; u < nv; u++) {
        __m256i w = _mm256_loadu_si256(
            (const __m256i *) ((const uint16_t *) in[0] + i + 16 * u));
        acc[2 * u]     = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
        acc[2 * u + 1] = _mm256_castsi256_ps(_mm256_and_si256(w, hi16));
    }
#pragma GCC unroll 4
    for (int u = 0; u < 2 * nv; u++) {
        nan[u] = _mm256_cmp_ps(acc[u], acc[u], _CMP_UNORD_Q);
        if (kind == SHOAL_PREMUL_SUM) {
            acc[u] = _mm256_mul_ps(acc[u], vs);
        }
    }
    for (int j = 1; j < k; j++) {
        const uint16_t *p = (const uint16_t *) in[j] + i;
#pragma GCC unroll 2
        for (int u = 0; u < nv; u++) {
            __m256i w  = _mm256_loadu_si256((const __m256i *) (p + 16 * u));
            __m256  xe = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
            __m256  xo = _mm256_castsi256_ps(_mm256_and_si256(w, hi16));
            acc[2 * u] = r256_combf(kind, acc[2 * u], xe, vs, &nan[2 * u]);
            acc[2 * u + 1]
                = r256_combf(kind, acc[2 * u + 1], xo, vs, &nan[2 * u + 1]);
        }
    }
#pragma GCC unroll 2
    for (int u = 0; u < nv; u++) {
        __m256i re
            = r256_bf16_round(r256_finf(kind, acc[2 * u], nan[2 * u], vk));
        __m256i ro = r256_bf16_round(
            r256_finf(kind, acc[2 * u + 1], nan[2 * u + 1], vk));
        _mm256_storeu_si256((__m256i *) ((uint16_t *) out + i + 16 * u),
            _mm256_or_si256(
                _mm256_and_si256(ro, hi16), _mm256_srli_epi32(re, 16)));
    }
}

R256_INL void
r256_bf16_run(int dt, int kind, shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t lo, size_t hi)
{
    const __m256 vs = _mm256_set1_ps((float) op.scalar);
    const __m256 vk = _mm256_set1_ps((float) k);
    size_t       i  = lo;

    for (; i + 32 <= hi; i += 32) {
        r256_bf16_block(kind, 2, out, in, k, i, vs, vk);
    }
    for (; i + 16 <= hi; i += 16) {
        r256_bf16_block(kind, 1, out, in, k, i, vs, vk);
    }
    if (i < hi) {
        shi_reduce_range(dt, op, out, in, k, i, hi);
    }
}

// ---------------------------------------------------------------------------
// float64: 4 lanes
// ---------------------------------------------------------------------------

R256_INL __m256d
r256_combd(int kind, __m256d acc, __m256d x, __m256d vs, __m256d *nan)
{
    switch (kind) {
        case SHOAL_PROD:
            return _mm256_mul_pd(acc, x);
        case SHOAL_MIN:
            *nan = _mm256_or_pd(*nan, _mm256_cmp_pd(x, x, _CMP_UNORD_Q));
            return _mm256_min_pd(x, acc);
        case SHOAL_MAX:
            *nan = _mm256_or_pd(*nan, _mm256_cmp_pd(x, x, _CMP_UNORD_Q));
            return _mm256_max_pd(x, acc);
        case SHOAL_PREMUL_SUM:
            return _mm256_add_pd(acc, _mm256_mul_pd(x, vs));
        default:
            return _mm256_add_pd(acc, x);
    }
}

R256_INL __m256d
r256_find(int kind, __m256d acc, __m256d nan, __m256d vk)
{
    const __m256d qnan
        = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7ff8000000000000ll));

    if (kind == SHOAL_MIN || kind == SHOAL_MAX) {
        return _mm256_blendv_pd(acc, qnan, nan);
    }
    if (kind == SHOAL_AVG) {
        acc = _mm256_div_pd(acc, vk);
    }
    return _mm256_blendv_pd(acc, qnan, _mm256_cmp_pd(acc, acc, _CMP_UNORD_Q));
}

R256_INL void
r256_f64_block(int kind, int nv, void *out, const void *const *in, int k,
    size_t i, __m256d vs, __m256d vk)
{
    __m256d acc[R256_UNROLL], nan[R256_UNROLL];

#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        __m256d x = _mm256_loadu_pd((const double *) in[0] + i + 4 * u);
        nan[u]    = _mm256_cmp_pd(x, x, _CMP_UNORD_Q);
        acc[u]    = kind == SHOAL_PREMUL_SUM ? _mm256_mul_pd(x, vs) : x;
    }
    for (int j = 1; j < k; j++) {
        const double *p = (const double *) in[j] + i;
#pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            acc[u] = r256_combd(
                kind, acc[u], _mm256_loadu_pd(p + 4 * u), vs, &nan[u]);
        }
    }
#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        _mm256_storeu_pd(
            (double *) out + i + 4 * u, r256_find(kind, acc[u], nan[u], vk));
    }
}

R256_INL void
r256_f64_run(int dt, int kind, shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t lo, size_t hi)
{
    const __m256d vs = _mm256_set1_pd(op.scalar);
    const __m256d vk = _mm256_set1_pd((double) k);
    size_t        i  = lo;

    for (; i + 4 * R256_UNROLL <= hi; i += 4 * R256_UNROLL) {
        r256_f64_block(kind, R256_UNROLL, out, in, k, i, vs, vk);
    }
    for (; i + 4 <= hi; i += 4) {
        r256_f64_block(kind, 1, out, in, k, i, vs, vk);
    }
    if (i < hi) {
        shi_reduce_range(dt, op, out, in, k, i, hi);
    }
}

// ---------------------------------------------------------------------------
// Integers and bool: 32 bytes a vector
// ---------------------------------------------------------------------------

R256_INL size_t
r256_isize(int dt)
{
    switch (dt) {
        case SHOAL_INT16:
            return 2;
        case SHOAL_INT32:
            return 4;
        case SHOAL_INT64:
            return 8;
        default:
            return 1;
    }
}

// bool: every nonzero byte becomes 1.
R256_INL __m256i
r256_firsti(int dt, __m256i x)
{
    return dt == SHOAL_BOOL ? _mm256_min_epu8(x, _mm256_set1_epi8(1)) : x;
}

R256_INL __m256i
r256_combi(int dt, int kind, __m256i a, __m256i x)
{
    if (dt == SHOAL_BOOL) {
        x = r256_firsti(dt, x);
        switch (kind) {
            case SHOAL_PROD:
            case SHOAL_MIN:
            case SHOAL_BAND:
                return _mm256_and_si256(a, x);
            case SHOAL_BXOR:
                return _mm256_xor_si256(a, x);
            default:
                return _mm256_or_si256(a, x);
        }
    }
    switch (kind) {
        case SHOAL_BAND:
            return _mm256_and_si256(a, x);
        case SHOAL_BOR:
            return _mm256_or_si256(a, x);
        case SHOAL_BXOR:
            return _mm256_xor_si256(a, x);
        case SHOAL_PROD:
            return dt == SHOAL_INT16 ? _mm256_mullo_epi16(a, x)
                                     : _mm256_mullo_epi32(a, x);
        case SHOAL_MIN:
            switch (dt) {
                case SHOAL_UINT8:
                    return _mm256_min_epu8(a, x);
                case SHOAL_INT8:
                    return _mm256_min_epi8(a, x);
                case SHOAL_INT16:
                    return _mm256_min_epi16(a, x);
                case SHOAL_INT32:
                    return _mm256_min_epi32(a, x);
                default: // int64: take x where a > x
                    return _mm256_blendv_epi8(a, x, _mm256_cmpgt_epi64(a, x));
            }
        case SHOAL_MAX:
            switch (dt) {
                case SHOAL_UINT8:
                    return _mm256_max_epu8(a, x);
                case SHOAL_INT8:
                    return _mm256_max_epi8(a, x);
                case SHOAL_INT16:
                    return _mm256_max_epi16(a, x);
                case SHOAL_INT32:
                    return _mm256_max_epi32(a, x);
                default: // int64: take x where x > a
                    return _mm256_blendv_epi8(a, x, _mm256_cmpgt_epi64(x, a));
            }
        default: // SUM (integer AVG divides afterwards, in reduce.c)
            switch (r256_isize(dt)) {
                case 1:
                    return _mm256_add_epi8(a, x);
                case 2:
                    return _mm256_add_epi16(a, x);
                case 4:
                    return _mm256_add_epi32(a, x);
                default:
                    return _mm256_add_epi64(a, x);
            }
    }
}

// Output bytes [b, b + 32 * nv).
R256_INL void
r256_int_block(int dt, int kind, int nv, void *out, const void *const *in,
    int k, size_t b)
{
    __m256i acc[R256_UNROLL];

#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        acc[u] = r256_firsti(dt,
            _mm256_loadu_si256(
                (const __m256i *) ((const char *) in[0] + b + 32 * u)));
    }
    for (int j = 1; j < k; j++) {
        const char *p = (const char *) in[j] + b;
#pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            acc[u] = r256_combi(dt, kind, acc[u],
                _mm256_loadu_si256((const __m256i *) (p + 32 * u)));
        }
    }
#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        _mm256_storeu_si256((__m256i *) ((char *) out + b + 32 * u), acc[u]);
    }
}

R256_INL void
r256_int_run(int dt, int kind, shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t lo, size_t hi)
{
    const size_t es = r256_isize(dt), w = 32 / es;
    size_t       i = lo;

    for (; i + w * R256_UNROLL <= hi; i += w * R256_UNROLL) {
        r256_int_block(dt, kind, R256_UNROLL, out, in, k, i * es);
    }
    for (; i + w <= hi; i += w) {
        r256_int_block(dt, kind, 1, out, in, k, i * es);
    }
    if (i < hi) {
        shi_reduce_range(dt, op, out, in, k, i, hi);
    }
}

// ---------------------------------------------------------------------------
// The kernels: (family, dtype, op)
// ---------------------------------------------------------------------------

#define R256_FLOAT_OPS(X, fam, DT)                                            \
    X(fam, DT, SUM)                                                           \
    X(fam, DT, PROD)                                                          \
    X(fam, DT, MIN)                                                           \
    X(fam, DT, MAX)                                                           \
    X(fam, DT, AVG)                                                           \
    X(fam, DT, PREMUL_SUM)

#define R256_INT_OPS(X, DT)                                                   \
    X(int, DT, SUM)                                                           \
    X(int, DT, MIN)                                                           \
    X(int, DT, MAX)                                                           \
    X(int, DT, BAND)                                                          \
    X(int, DT, BOR)                                                           \
    X(int, DT, BXOR)

#define R256_KERNELS(X)                                                       \
    R256_FLOAT_OPS(X, f32, FLOAT32)                                           \
    R256_FLOAT_OPS(X, f32, FLOAT16)                                           \
    R256_FLOAT_OPS(X, bf16, BFLOAT16)                                         \
    R256_FLOAT_OPS(X, f64, FLOAT64)                                           \
    R256_INT_OPS(X, UINT8)                                                    \
    R256_INT_OPS(X, INT8)                                                     \
    R256_INT_OPS(X, INT16)                                                    \
    X(int, INT16, PROD)                                                       \
    R256_INT_OPS(X, INT32)                                                    \
    X(int, INT32, PROD)                                                       \
    R256_INT_OPS(X, INT64)                                                    \
    R256_INT_OPS(X, BOOL)                                                     \
    X(int, BOOL, PROD)

#define R256_DEFINE(fam, DT, OP)                                              \
    static R256_TGT void r256_##DT##_##OP(shoal_reduce_op op, void *out,      \
        const void *const *in, int k, size_t lo, size_t hi)                   \
    {                                                                         \
        r256_##fam##_run(SHOAL_##DT, SHOAL_##OP, op, out, in, k, lo, hi);     \
    }

R256_KERNELS(R256_DEFINE)

shi_reduce_fn
shi_reduce_avx2_fn(int dtype, int kind)
{
#define R256_CASE(fam, DT, OP)                                                \
    if (dtype == SHOAL_##DT && kind == SHOAL_##OP) {                          \
        return r256_##DT##_##OP;                                              \
    }
    R256_KERNELS(R256_CASE)
#undef R256_CASE
    return NULL;
}

#else // not x86

shi_reduce_fn
shi_reduce_avx2_fn(int dtype, int kind)
{
    (void) dtype;
    (void) kind;
    return NULL;
}

#endif
