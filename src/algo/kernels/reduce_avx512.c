// AVX-512 (F + BW) reduction kernels, compiled for that target whatever
// the build's -march, and only ever called when the CPU has it.
//
// Every kernel walks the output 4 vectors of accumulators at a time (256
// bytes of float32 or integers; 128 bytes of bfloat16), reading that
// stretch of all k inputs before it writes, then 1 vector (or 1 bfloat16
// load) at a time, then hands the tail to the portable code. Each operation is
// the one the portable code does, in the same order (see reduce_scalar.c), so
// results are bitwise identical: a*b+c is a multiply and an add, never an FMA
// (C11 mode compiles with -ffp-contract=off), MIN is vminps(x, acc) which
// keeps acc on ties as `x < acc ? x : acc` does (a mask remembers NaN inputs,
// which vminps would drop), NaNs become the canonical NaN.
// float16 widens with vcvtph2ps and narrows with vcvtps2ph (round to
// nearest even, not MXCSR); bfloat16 widens by a shift or a mask and
// narrows by the integer round-to-nearest-even (not vcvtneps2bf16, which
// flushes subnormals).
#include "algo/kernels/reduce_impl.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define R512_TGT    __attribute__((target("avx512f,avx512bw")))
#define R512_INL    static inline __attribute__((always_inline)) R512_TGT
#define R512_UNROLL 4

// ---------------------------------------------------------------------------
// float32 and float16: 16 lanes of float32
// ---------------------------------------------------------------------------

R512_INL __m512
r512_ldf(int dt, const void *p, size_t i)
{
    const __m256i *h = (const __m256i *) ((const uint16_t *) p + i);

    switch (dt) {
        case SHOAL_FLOAT16:
            return _mm512_cvtph_ps(_mm256_loadu_si256(h));
        default:
            return _mm512_loadu_ps((const float *) p + i);
    }
}

R512_INL void
r512_stf(int dt, void *p, size_t i, __m512 v)
{
    __m256i *h = (__m256i *) ((uint16_t *) p + i);

    switch (dt) {
        case SHOAL_FLOAT16:
            _mm256_storeu_si256(h,
                _mm512_cvtps_ph(
                    v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            break;
        default:
            _mm512_storeu_ps((float *) p + i, v);
            break;
    }
}

R512_INL __m512
r512_combf(int kind, __m512 acc, __m512 x, __m512 vs, __mmask16 *nan)
{
    switch (kind) {
        case SHOAL_PROD:
            return _mm512_mul_ps(acc, x);
        case SHOAL_MIN:
            *nan |= _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
            return _mm512_min_ps(x, acc);
        case SHOAL_MAX:
            *nan |= _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
            return _mm512_max_ps(x, acc);
        case SHOAL_PREMUL_SUM:
            return _mm512_add_ps(acc, _mm512_mul_ps(x, vs));
        default:
            return _mm512_add_ps(acc, x);
    }
}

R512_INL __m512
r512_finf(int kind, __m512 acc, __mmask16 nan, __m512 vk)
{
    const __m512 qnan = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fc00000));

    if (kind == SHOAL_MIN || kind == SHOAL_MAX) {
        return _mm512_mask_mov_ps(acc, nan, qnan);
    }
    if (kind == SHOAL_AVG) {
        acc = _mm512_div_ps(acc, vk);
    }
    return _mm512_mask_mov_ps(
        acc, _mm512_cmp_ps_mask(acc, acc, _CMP_UNORD_Q), qnan);
}

// Output elements [i, i + 16 * nv): nv (1 or R512_UNROLL) vectors.
R512_INL void
r512_f32_block(int dt, int kind, int nv, void *out, const void *const *in,
    int k, size_t i, __m512 vs, __m512 vk)
{
    __m512    acc[R512_UNROLL];
    __mmask16 nan[R512_UNROLL];

#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        __m512 x = r512_ldf(dt, in[0], i + 16 * (size_t) u);
        nan[u]   = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
        acc[u]   = kind == SHOAL_PREMUL_SUM ? _mm512_mul_ps(x, vs) : x;
    }
    for (int j = 1; j < k; j++) {
        const void *p = in[j];
#pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            __m512 x = r512_ldf(dt, p, i + 16 * (size_t) u);
            acc[u]   = r512_combf(kind, acc[u], x, vs, &nan[u]);
        }
    }
#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        r512_stf(
            dt, out, i + 16 * (size_t) u, r512_finf(kind, acc[u], nan[u], vk));
    }
}

R512_INL void
r512_f32_run(int dt, int kind, shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t lo, size_t hi)
{
    const __m512 vs = _mm512_set1_ps((float) op.scalar);
    const __m512 vk = _mm512_set1_ps((float) k);
    size_t       i  = lo;

    for (; i + 16 * R512_UNROLL <= hi; i += 16 * R512_UNROLL) {
        r512_f32_block(dt, kind, R512_UNROLL, out, in, k, i, vs, vk);
    }
    for (; i + 16 <= hi; i += 16) {
        r512_f32_block(dt, kind, 1, out, in, k, i, vs, vk);
    }
    if (i < hi) {
        shi_reduce_range(dt, op, out, in, k, i, hi);
    }
}

// ---------------------------------------------------------------------------
// bfloat16: 32 elements a 64-byte load, widened without shuffles into two
// float32 vectors, the even elements (shifted up) and the odd ones (low
// halves cleared), combined as float32, rounded in place and merged back.
// ---------------------------------------------------------------------------

// Round to nearest even, the bfloat16 in the upper half of each lane (the
// lower half is garbage). v is not NaN (NaNs are canonical by now, and the
// canonical NaN rounds to the canonical bfloat16 NaN).
R512_INL __m512i
r512_bf16_round(__m512 v)
{
    __m512i b = _mm512_castps_si512(v);
    __m512i lsb
        = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
    return _mm512_add_epi32(
        b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
}

// Output elements [i, i + 32 * nv): nv (1 or 2) loads of 32.
R512_INL void
r512_bf16_block(int kind, int nv, void *out, const void *const *in, int k,
    size_t i, __m512 vs, __m512 vk)
{
    const __m512i hi16 = _mm512_set1_epi32((int) 0xffff0000u);
    __m512        acc[4];
    __mmask16     nan[4];

#pragma GCC unroll 2
    for (int u = 0; u < nv; u++) {
        __m512i w  = _mm512_loadu_si512((const uint16_t *) in[0] + i + 32 * u);
        acc[2 * u] = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
        acc[2 * u + 1] = _mm512_castsi512_ps(_mm512_and_si512(w, hi16));
    }
#pragma GCC unroll 4
    for (int u = 0; u < 2 * nv; u++) {
        nan[u] = _mm512_cmp_ps_mask(acc[u], acc[u], _CMP_UNORD_Q);
        if (kind == SHOAL_PREMUL_SUM) {
            acc[u] = _mm512_mul_ps(acc[u], vs);
        }
    }
    for (int j = 1; j < k; j++) {
        const uint16_t *p = (const uint16_t *) in[j] + i;
#pragma GCC unroll 2
        for (int u = 0; u < nv; u++) {
            __m512i w  = _mm512_loadu_si512(p + 32 * u);
            __m512  xe = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
            __m512  xo = _mm512_castsi512_ps(_mm512_and_si512(w, hi16));
            acc[2 * u] = r512_combf(kind, acc[2 * u], xe, vs, &nan[2 * u]);
            acc[2 * u + 1]
                = r512_combf(kind, acc[2 * u + 1], xo, vs, &nan[2 * u + 1]);
        }
    }
#pragma GCC unroll 2
    for (int u = 0; u < nv; u++) {
        __m512i re
            = r512_bf16_round(r512_finf(kind, acc[2 * u], nan[2 * u], vk));
        __m512i ro = r512_bf16_round(
            r512_finf(kind, acc[2 * u + 1], nan[2 * u + 1], vk));
        // (ro & 0xffff0000) | (re >> 16)
        _mm512_storeu_si512((uint16_t *) out + i + 32 * u,
            _mm512_ternarylogic_epi32(
                ro, hi16, _mm512_srli_epi32(re, 16), 0xea));
    }
}

R512_INL void
r512_bf16_run(int dt, int kind, shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t lo, size_t hi)
{
    const __m512 vs = _mm512_set1_ps((float) op.scalar);
    const __m512 vk = _mm512_set1_ps((float) k);
    size_t       i  = lo;

    for (; i + 64 <= hi; i += 64) {
        r512_bf16_block(kind, 2, out, in, k, i, vs, vk);
    }
    for (; i + 32 <= hi; i += 32) {
        r512_bf16_block(kind, 1, out, in, k, i, vs, vk);
    }
    if (i < hi) {
        shi_reduce_range(dt, op, out, in, k, i, hi);
    }
}

// ---------------------------------------------------------------------------
// float64: 8 lanes
// ---------------------------------------------------------------------------

R512_INL __m512d
r512_combd(int kind, __m512d acc, __m512d x, __m512d vs, __mmask8 *nan)
{
    switch (kind) {
        case SHOAL_PROD:
            return _mm512_mul_pd(acc, x);
        case SHOAL_MIN:
            *nan |= _mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q);
            return _mm512_min_pd(x, acc);
        case SHOAL_MAX:
            *nan |= _mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q);
            return _mm512_max_pd(x, acc);
        case SHOAL_PREMUL_SUM:
            return _mm512_add_pd(acc, _mm512_mul_pd(x, vs));
        default:
            return _mm512_add_pd(acc, x);
    }
}

R512_INL __m512d
r512_find(int kind, __m512d acc, __mmask8 nan, __m512d vk)
{
    const __m512d qnan
        = _mm512_castsi512_pd(_mm512_set1_epi64(0x7ff8000000000000ll));

    if (kind == SHOAL_MIN || kind == SHOAL_MAX) {
        return _mm512_mask_mov_pd(acc, nan, qnan);
    }
    if (kind == SHOAL_AVG) {
        acc = _mm512_div_pd(acc, vk);
    }
    return _mm512_mask_mov_pd(
        acc, _mm512_cmp_pd_mask(acc, acc, _CMP_UNORD_Q), qnan);
}

R512_INL void
r512_f64_block(int kind, int nv, void *out, const void *const *in, int k,
    size_t i, __m512d vs, __m512d vk)
{
    __m512d  acc[R512_UNROLL];
    __mmask8 nan[R512_UNROLL];

#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        __m512d x = _mm512_loadu_pd((const double *) in[0] + i + 8 * u);
        nan[u]    = _mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q);
        acc[u]    = kind == SHOAL_PREMUL_SUM ? _mm512_mul_pd(x, vs) : x;
    }
    for (int j = 1; j < k; j++) {
        const double *p = (const double *) in[j] + i;
#pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            acc[u] = r512_combd(
                kind, acc[u], _mm512_loadu_pd(p + 8 * u), vs, &nan[u]);
        }
    }
#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        _mm512_storeu_pd(
            (double *) out + i + 8 * u, r512_find(kind, acc[u], nan[u], vk));
    }
}

R512_INL void
r512_f64_run(int dt, int kind, shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t lo, size_t hi)
{
    const __m512d vs = _mm512_set1_pd(op.scalar);
    const __m512d vk = _mm512_set1_pd((double) k);
    size_t        i  = lo;

    for (; i + 8 * R512_UNROLL <= hi; i += 8 * R512_UNROLL) {
        r512_f64_block(kind, R512_UNROLL, out, in, k, i, vs, vk);
    }
    for (; i + 8 <= hi; i += 8) {
        r512_f64_block(kind, 1, out, in, k, i, vs, vk);
    }
    if (i < hi) {
        shi_reduce_range(dt, op, out, in, k, i, hi);
    }
}

// ---------------------------------------------------------------------------
// Integers and bool: 64 bytes a vector
// ---------------------------------------------------------------------------

R512_INL size_t
r512_isize(int dt)
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
R512_INL __m512i
r512_firsti(int dt, __m512i x)
{
    return dt == SHOAL_BOOL ? _mm512_min_epu8(x, _mm512_set1_epi8(1)) : x;
}

R512_INL __m512i
r512_combi(int dt, int kind, __m512i a, __m512i x)
{
    if (dt == SHOAL_BOOL) {
        x = r512_firsti(dt, x);
        switch (kind) {
            case SHOAL_PROD:
            case SHOAL_MIN:
            case SHOAL_BAND:
                return _mm512_and_si512(a, x);
            case SHOAL_BXOR:
                return _mm512_xor_si512(a, x);
            default:
                return _mm512_or_si512(a, x);
        }
    }
    switch (kind) {
        case SHOAL_BAND:
            return _mm512_and_si512(a, x);
        case SHOAL_BOR:
            return _mm512_or_si512(a, x);
        case SHOAL_BXOR:
            return _mm512_xor_si512(a, x);
        case SHOAL_PROD:
            return dt == SHOAL_INT16 ? _mm512_mullo_epi16(a, x)
                                     : _mm512_mullo_epi32(a, x);
        case SHOAL_MIN:
            switch (dt) {
                case SHOAL_UINT8:
                    return _mm512_min_epu8(a, x);
                case SHOAL_INT8:
                    return _mm512_min_epi8(a, x);
                case SHOAL_INT16:
                    return _mm512_min_epi16(a, x);
                case SHOAL_INT32:
                    return _mm512_min_epi32(a, x);
                default:
                    return _mm512_min_epi64(a, x);
            }
        case SHOAL_MAX:
            switch (dt) {
                case SHOAL_UINT8:
                    return _mm512_max_epu8(a, x);
                case SHOAL_INT8:
                    return _mm512_max_epi8(a, x);
                case SHOAL_INT16:
                    return _mm512_max_epi16(a, x);
                case SHOAL_INT32:
                    return _mm512_max_epi32(a, x);
                default:
                    return _mm512_max_epi64(a, x);
            }
        default: // SUM (integer AVG divides afterwards, in reduce.c)
            switch (r512_isize(dt)) {
                case 1:
                    return _mm512_add_epi8(a, x);
                case 2:
                    return _mm512_add_epi16(a, x);
                case 4:
                    return _mm512_add_epi32(a, x);
                default:
                    return _mm512_add_epi64(a, x);
            }
    }
}

// Output bytes [b, b + 64 * nv).
R512_INL void
r512_int_block(int dt, int kind, int nv, void *out, const void *const *in,
    int k, size_t b)
{
    __m512i acc[R512_UNROLL];

#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        acc[u] = r512_firsti(
            dt, _mm512_loadu_si512((const char *) in[0] + b + 64 * u));
    }
    for (int j = 1; j < k; j++) {
        const char *p = (const char *) in[j] + b;
#pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            acc[u]
                = r512_combi(dt, kind, acc[u], _mm512_loadu_si512(p + 64 * u));
        }
    }
#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        _mm512_storeu_si512((char *) out + b + 64 * u, acc[u]);
    }
}

R512_INL void
r512_int_run(int dt, int kind, shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t lo, size_t hi)
{
    const size_t es = r512_isize(dt), w = 64 / es;
    size_t       i = lo;

    for (; i + w * R512_UNROLL <= hi; i += w * R512_UNROLL) {
        r512_int_block(dt, kind, R512_UNROLL, out, in, k, i * es);
    }
    for (; i + w <= hi; i += w) {
        r512_int_block(dt, kind, 1, out, in, k, i * es);
    }
    if (i < hi) {
        shi_reduce_range(dt, op, out, in, k, i, hi);
    }
}

// ---------------------------------------------------------------------------
// The kernels: (family, dtype, op)
// ---------------------------------------------------------------------------

#define R512_FLOAT_OPS(X, fam, DT)                                            \
    X(fam, DT, SUM)                                                           \
    X(fam, DT, PROD)                                                          \
    X(fam, DT, MIN)                                                           \
    X(fam, DT, MAX)                                                           \
    X(fam, DT, AVG)                                                           \
    X(fam, DT, PREMUL_SUM)

#define R512_INT_OPS(X, DT)                                                   \
    X(int, DT, SUM)                                                           \
    X(int, DT, MIN)                                                           \
    X(int, DT, MAX)                                                           \
    X(int, DT, BAND)                                                          \
    X(int, DT, BOR)                                                           \
    X(int, DT, BXOR)

#define R512_KERNELS(X)                                                       \
    R512_FLOAT_OPS(X, f32, FLOAT32)                                           \
    R512_FLOAT_OPS(X, f32, FLOAT16)                                           \
    R512_FLOAT_OPS(X, bf16, BFLOAT16)                                         \
    R512_FLOAT_OPS(X, f64, FLOAT64)                                           \
    R512_INT_OPS(X, UINT8)                                                    \
    R512_INT_OPS(X, INT8)                                                     \
    R512_INT_OPS(X, INT16)                                                    \
    X(int, INT16, PROD)                                                       \
    R512_INT_OPS(X, INT32)                                                    \
    X(int, INT32, PROD)                                                       \
    R512_INT_OPS(X, INT64)                                                    \
    R512_INT_OPS(X, BOOL)                                                     \
    X(int, BOOL, PROD)

#define R512_DEFINE(fam, DT, OP)                                              \
    static R512_TGT void r512_##DT##_##OP(shoal_reduce_op op, void *out,      \
        const void *const *in, int k, size_t lo, size_t hi)                   \
    {                                                                         \
        r512_##fam##_run(SHOAL_##DT, SHOAL_##OP, op, out, in, k, lo, hi);     \
    }

R512_KERNELS(R512_DEFINE)

shi_reduce_fn
shi_reduce_avx512_fn(int dtype, int kind)
{
#define R512_CASE(fam, DT, OP)                                                \
    if (dtype == SHOAL_##DT && kind == SHOAL_##OP) {                          \
        return r512_##DT##_##OP;                                              \
    }
    R512_KERNELS(R512_CASE)
#undef R512_CASE
    return NULL;
}

#else // not x86

shi_reduce_fn
shi_reduce_avx512_fn(int dtype, int kind)
{
    (void) dtype;
    (void) kind;
    return NULL;
}

#endif
