// Portable reduction kernels: the reference for the vector code, its tail,
// and the whole of shi_reduce on CPUs without AVX2.
//
// Elements are taken in blocks of REDUCE_BLOCK: every input's block is
// combined into an accumulator array (float32 for float16/bfloat16/float32,
// float64 for float64, the unsigned type of the width for integers, so
// that sums and products wrap without undefined behaviour), and the block
// is written out only after all k inputs were read, which keeps `out ==
// in[j]` safe. Every operation is the plain C one, in index order, one
// rounding per operation, as the vector code does it. Full blocks have a
// constant length, so the compiler may vectorise these loops for the
// baseline target (SSE2 on x86-64, NEON on arm64) without changing a bit.
#include <assert.h>
#include <stdint.h>

#include "algo/kernels/reduce_impl.h"

#define REDUCE_BLOCK 256

#define REDUCE_INLINE static inline __attribute__((always_inline))

// ---------------------------------------------------------------------------
// float32, float16, bfloat16: accumulate in float32
// ---------------------------------------------------------------------------

// Elements [b, b + m) of `p` as float32: `buf` filled for the half types,
// the input itself for float32.
REDUCE_INLINE const float *
reduce_widen(int dtype, const void *p, size_t b, size_t m, float *buf)
{
    const uint16_t *h = (const uint16_t *) p + b;

    switch (dtype) {
        case SHOAL_FLOAT16:
            for (size_t i = 0; i < m; i++) {
                buf[i] = shi_f16_to_f32(h[i]);
            }
            return buf;
        case SHOAL_BFLOAT16:
            for (size_t i = 0; i < m; i++) {
                buf[i] = shi_bf16_to_f32(h[i]);
            }
            return buf;
        default:
            return (const float *) p + b;
    }
}

REDUCE_INLINE void
reduce_narrow(int dtype, void *p, size_t b, size_t m, const float *acc)
{
    uint16_t *h = (uint16_t *) p + b;

    switch (dtype) {
        case SHOAL_FLOAT16:
            for (size_t i = 0; i < m; i++) {
                h[i] = shi_f32_to_f16(acc[i]);
            }
            break;
        case SHOAL_BFLOAT16:
            for (size_t i = 0; i < m; i++) {
                h[i] = shi_f32_to_bf16(acc[i]);
            }
            break;
        default:
            for (size_t i = 0; i < m; i++) {
                ((float *) p)[b + i] = acc[i];
            }
            break;
    }
}

// acc = acc op x over m elements. MIN and MAX let a NaN stick (in acc or
// from x) and otherwise keep acc when x is not strictly smaller/larger.
REDUCE_INLINE void
reduce_combine_f32(int kind, float s, float *acc, const float *x, size_t m)
{
    switch (kind) {
        case SHOAL_PROD:
            for (size_t i = 0; i < m; i++) {
                acc[i] = acc[i] * x[i];
            }
            break;
        case SHOAL_MIN:
            for (size_t i = 0; i < m; i++) {
                acc[i] = (x[i] < acc[i] || x[i] != x[i]) ? x[i] : acc[i];
            }
            break;
        case SHOAL_MAX:
            for (size_t i = 0; i < m; i++) {
                acc[i] = (x[i] > acc[i] || x[i] != x[i]) ? x[i] : acc[i];
            }
            break;
        case SHOAL_PREMUL_SUM:
            for (size_t i = 0; i < m; i++) {
                // Never fused into an FMA: the C11 build compiles with
                // -ffp-contract=off (gcc), and the product is its own
                // statement (clang's default contracts within one).
                float p = x[i] * s;
                acc[i]  = acc[i] + p;
            }
            break;
        default: // SUM, AVG
            for (size_t i = 0; i < m; i++) {
                acc[i] = acc[i] + x[i];
            }
            break;
    }
}

// Elements [b, b + m). Always inlined: called with m == REDUCE_BLOCK, a
// constant, for every full block, so that the compiler can vectorise the
// loops without run-time checks.
REDUCE_INLINE void
reduce_f32_block(int dtype, shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t b, size_t m)
{
    const float  qnan = shi_f32_from_bits(0x7fc00000u);
    const float  s    = (float) op.scalar;
    float        acc[REDUCE_BLOCK], buf[REDUCE_BLOCK];
    const float *x = reduce_widen(dtype, in[0], b, m, buf);

    for (size_t i = 0; i < m; i++) {
        acc[i] = op.kind == SHOAL_PREMUL_SUM ? x[i] * s : x[i];
    }
    for (int j = 1; j < k; j++) {
        x = reduce_widen(dtype, in[j], b, m, buf);
        reduce_combine_f32(op.kind, s, acc, x, m);
    }
    if (op.kind == SHOAL_AVG) {
        for (size_t i = 0; i < m; i++) {
            acc[i] = acc[i] / (float) k;
        }
    }
    for (size_t i = 0; i < m; i++) {
        acc[i] = acc[i] != acc[i] ? qnan : acc[i];
    }
    reduce_narrow(dtype, out, b, m, acc);
}

static void
reduce_f32_range(int dtype, shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t lo, size_t hi)
{
    size_t b = lo;

    for (; hi - b >= REDUCE_BLOCK; b += REDUCE_BLOCK) {
        reduce_f32_block(dtype, op, out, in, k, b, REDUCE_BLOCK);
    }
    if (b < hi) {
        reduce_f32_block(dtype, op, out, in, k, b, hi - b);
    }
}

// ---------------------------------------------------------------------------
// float64
// ---------------------------------------------------------------------------

REDUCE_INLINE void
reduce_combine_f64(int kind, double s, double *acc, const double *x, size_t m)
{
    switch (kind) {
        case SHOAL_PROD:
            for (size_t i = 0; i < m; i++) {
                acc[i] = acc[i] * x[i];
            }
            break;
        case SHOAL_MIN:
            for (size_t i = 0; i < m; i++) {
                acc[i] = (x[i] < acc[i] || x[i] != x[i]) ? x[i] : acc[i];
            }
            break;
        case SHOAL_MAX:
            for (size_t i = 0; i < m; i++) {
                acc[i] = (x[i] > acc[i] || x[i] != x[i]) ? x[i] : acc[i];
            }
            break;
        case SHOAL_PREMUL_SUM:
            for (size_t i = 0; i < m; i++) {
                double p = x[i] * s;
                acc[i]   = acc[i] + p;
            }
            break;
        default:
            for (size_t i = 0; i < m; i++) {
                acc[i] = acc[i] + x[i];
            }
            break;
    }
}

REDUCE_INLINE void
reduce_f64_block(shoal_reduce_op op, void *out, const void *const *in, int k,
    size_t b, size_t m)
{
    const uint64_t qbits = 0x7ff8000000000000ull;
    const double   s     = op.scalar;
    const double  *x     = (const double *) in[0] + b;
    double         qnan, acc[REDUCE_BLOCK];
    double        *o = (double *) out + b;

    memcpy(&qnan, &qbits, sizeof(qnan));
    for (size_t i = 0; i < m; i++) {
        acc[i] = op.kind == SHOAL_PREMUL_SUM ? x[i] * s : x[i];
    }
    for (int j = 1; j < k; j++) {
        reduce_combine_f64(op.kind, s, acc, (const double *) in[j] + b, m);
    }
    if (op.kind == SHOAL_AVG) {
        for (size_t i = 0; i < m; i++) {
            acc[i] = acc[i] / (double) k;
        }
    }
    for (size_t i = 0; i < m; i++) {
        o[i] = acc[i] != acc[i] ? qnan : acc[i];
    }
}

static void
reduce_f64_range(shoal_reduce_op op, void *out, const void *const *in, int k,
    size_t lo, size_t hi)
{
    size_t b = lo;

    for (; hi - b >= REDUCE_BLOCK; b += REDUCE_BLOCK) {
        reduce_f64_block(op, out, in, k, b, REDUCE_BLOCK);
    }
    if (b < hi) {
        reduce_f64_block(op, out, in, k, b, hi - b);
    }
}

// ---------------------------------------------------------------------------
// Integers: T the element type, U its unsigned twin (the accumulator), M
// the type products are formed in (at least unsigned int, so that uint16
// operands are not promoted to a signed int that could overflow).
// ---------------------------------------------------------------------------

#define REDUCE_INT_RANGE(name, T, U, M)                                       \
    REDUCE_INLINE void name##_block(int kind, void *out,                      \
        const void *const *in, int k, size_t b, size_t m)                     \
    {                                                                         \
        U        acc[REDUCE_BLOCK];                                           \
        const T *x0 = (const T *) in[0] + b;                                  \
        T       *o  = (T *) out + b;                                          \
                                                                              \
        for (size_t i = 0; i < m; i++) {                                      \
            acc[i] = (U) x0[i];                                               \
        }                                                                     \
        for (int j = 1; j < k; j++) {                                         \
            const T *x = (const T *) in[j] + b;                               \
            switch (kind) {                                                   \
                case SHOAL_PROD:                                              \
                    for (size_t i = 0; i < m; i++) {                          \
                        acc[i] = (U) ((M) acc[i] * (M) (U) x[i]);             \
                    }                                                         \
                    break;                                                    \
                case SHOAL_MIN:                                               \
                    for (size_t i = 0; i < m; i++) {                          \
                        T a    = (T) acc[i];                                  \
                        acc[i] = (U) (x[i] < a ? x[i] : a);                   \
                    }                                                         \
                    break;                                                    \
                case SHOAL_MAX:                                               \
                    for (size_t i = 0; i < m; i++) {                          \
                        T a    = (T) acc[i];                                  \
                        acc[i] = (U) (x[i] > a ? x[i] : a);                   \
                    }                                                         \
                    break;                                                    \
                case SHOAL_BAND:                                              \
                    for (size_t i = 0; i < m; i++) {                          \
                        acc[i] &= (U) x[i];                                   \
                    }                                                         \
                    break;                                                    \
                case SHOAL_BOR:                                               \
                    for (size_t i = 0; i < m; i++) {                          \
                        acc[i] |= (U) x[i];                                   \
                    }                                                         \
                    break;                                                    \
                case SHOAL_BXOR:                                              \
                    for (size_t i = 0; i < m; i++) {                          \
                        acc[i] ^= (U) x[i];                                   \
                    }                                                         \
                    break;                                                    \
                default: /* SUM, AVG */                                       \
                    for (size_t i = 0; i < m; i++) {                          \
                        acc[i] = (U) ((M) acc[i] + (M) (U) x[i]);             \
                    }                                                         \
                    break;                                                    \
            }                                                                 \
        }                                                                     \
        for (size_t i = 0; i < m; i++) {                                      \
            o[i] = (T) acc[i];                                                \
        }                                                                     \
        if (kind == SHOAL_AVG) {                                              \
            for (size_t i = 0; i < m; i++) {                                  \
                o[i] = (T) (o[i] / k);                                        \
            }                                                                 \
        }                                                                     \
    }                                                                         \
                                                                              \
    static void name(int kind, void *out, const void *const *in, int k,       \
        size_t lo, size_t hi)                                                 \
    {                                                                         \
        size_t b = lo;                                                        \
                                                                              \
        for (; hi - b >= REDUCE_BLOCK; b += REDUCE_BLOCK) {                   \
            name##_block(kind, out, in, k, b, REDUCE_BLOCK);                  \
        }                                                                     \
        if (b < hi) {                                                         \
            name##_block(kind, out, in, k, b, hi - b);                        \
        }                                                                     \
    }

REDUCE_INT_RANGE(reduce_u8_range, uint8_t, uint8_t, unsigned)
REDUCE_INT_RANGE(reduce_i8_range, int8_t, uint8_t, unsigned)
REDUCE_INT_RANGE(reduce_i16_range, int16_t, uint16_t, unsigned)
REDUCE_INT_RANGE(reduce_i32_range, int32_t, uint32_t, uint32_t)
REDUCE_INT_RANGE(reduce_i64_range, int64_t, uint64_t, uint64_t)

// ---------------------------------------------------------------------------
// bool: any nonzero byte is true; the result is 0 or 1. SUM and MAX are
// "or", PROD and MIN are "and".
// ---------------------------------------------------------------------------

REDUCE_INLINE void
reduce_bool_block(
    int kind, void *out, const void *const *in, int k, size_t b, size_t m)
{
    uint8_t        acc[REDUCE_BLOCK];
    const uint8_t *x0 = (const uint8_t *) in[0] + b;

    for (size_t i = 0; i < m; i++) {
        acc[i] = x0[i] != 0;
    }
    for (int j = 1; j < k; j++) {
        const uint8_t *x = (const uint8_t *) in[j] + b;
        switch (kind) {
            case SHOAL_PROD:
            case SHOAL_MIN:
            case SHOAL_BAND:
                for (size_t i = 0; i < m; i++) {
                    acc[i] &= x[i] != 0;
                }
                break;
            case SHOAL_BXOR:
                for (size_t i = 0; i < m; i++) {
                    acc[i] ^= x[i] != 0;
                }
                break;
            default: // SUM, MAX, BOR
                for (size_t i = 0; i < m; i++) {
                    acc[i] |= x[i] != 0;
                }
                break;
        }
    }
    memcpy((uint8_t *) out + b, acc, m);
}

static void
reduce_bool_range(
    int kind, void *out, const void *const *in, int k, size_t lo, size_t hi)
{
    size_t b = lo;

    for (; hi - b >= REDUCE_BLOCK; b += REDUCE_BLOCK) {
        reduce_bool_block(kind, out, in, k, b, REDUCE_BLOCK);
    }
    if (b < hi) {
        reduce_bool_block(kind, out, in, k, b, hi - b);
    }
}

void
shi_reduce_range(int dtype, shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t lo, size_t hi)
{
    assert(k >= 1);
    switch (dtype) {
        case SHOAL_BOOL:
            reduce_bool_range(op.kind, out, in, k, lo, hi);
            break;
        case SHOAL_UINT8:
            reduce_u8_range(op.kind, out, in, k, lo, hi);
            break;
        case SHOAL_INT8:
            reduce_i8_range(op.kind, out, in, k, lo, hi);
            break;
        case SHOAL_INT16:
            reduce_i16_range(op.kind, out, in, k, lo, hi);
            break;
        case SHOAL_INT32:
            reduce_i32_range(op.kind, out, in, k, lo, hi);
            break;
        case SHOAL_INT64:
            reduce_i64_range(op.kind, out, in, k, lo, hi);
            break;
        case SHOAL_FLOAT16:
        case SHOAL_BFLOAT16:
        case SHOAL_FLOAT32:
            reduce_f32_range(dtype, op, out, in, k, lo, hi);
            break;
        case SHOAL_FLOAT64:
            reduce_f64_range(op, out, in, k, lo, hi);
            break;
        default:
            assert(!"dtype not checked by shi_reduce_check");
            break;
    }
}

// Division of the wrapped sums by k, rounding toward zero, in floating
// point where that is exact, so that it vectorises: for |x| <= 2^31 the
// quotient x / k computed in double is within |x / k| * 2^-53 <= 2^-22 / k
// of the true one, and a quotient that is not an integer lies at least 1/k
// from every integer, so truncating the rounded quotient gives the
// truncated true one (float does the same for |x| <= 2^15). int64 sums
// divide as integers. The portable AVG above divides as integers: the unit
// test holds the two to each other.
#define REDUCE_DIV_FP(T, F)                                                   \
    do {                                                                      \
        T     *o  = out;                                                      \
        F      fk = (F) k;                                                    \
        size_t i  = lo;                                                       \
        for (; hi - i >= REDUCE_BLOCK; i += REDUCE_BLOCK) {                   \
            T *p = o + i;                                                     \
            for (size_t j = 0; j < REDUCE_BLOCK; j++) {                       \
                p[j] = (T) ((F) p[j] / fk);                                   \
            }                                                                 \
        }                                                                     \
        for (; i < hi; i++) {                                                 \
            o[i] = (T) ((F) o[i] / fk);                                       \
        }                                                                     \
    } while (0)

void
shi_reduce_int_div(int dtype, void *out, int k, size_t lo, size_t hi)
{
    switch (dtype) {
        case SHOAL_UINT8:
            REDUCE_DIV_FP(uint8_t, float);
            break;
        case SHOAL_INT8:
            REDUCE_DIV_FP(int8_t, float);
            break;
        case SHOAL_INT16:
            REDUCE_DIV_FP(int16_t, float);
            break;
        case SHOAL_INT32:
            REDUCE_DIV_FP(int32_t, double);
            break;
        case SHOAL_INT64: {
            int64_t *o = out;
            for (size_t i = lo; i < hi; i++) {
                o[i] /= k;
            }
            break;
        }
        default:
            assert(!"not an integer dtype");
            break;
    }
}

void
shi_reduce_f32_sum_few(float *out, const void *const *in, int k, size_t n)
{
    const float qnan = shi_f32_from_bits(0x7fc00000u);

    for (size_t i = 0; i < n; i++) {
        float acc = ((const float *) in[0])[i];
        for (int j = 1; j < k; j++) {
            acc = acc + ((const float *) in[j])[i];
        }
        out[i] = acc != acc ? qnan : acc;
    }
}

void
shi_reduce_scalar(int dtype, shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t n)
{
    shi_reduce_range(dtype, op, out, in, k, 0, n);
}
