// AVG's final division on its own (shi_reduce_divide): a reduction made
// of several SUM steps (the network schedules) divides the finished sum
// once, with the bits shi_reduce's AVG gives for the same sum.
//
// Steps: floating types divide by k in the accumulator type (float32 for
// float16, bfloat16 and float32; float64) and canonicalise NaN results,
// float16/bfloat16 rounding once back to their type (nearest even);
// integers divide rounding toward zero (shi_reduce_int_div).
// Preconditions: k >= 1; dtype is not bool (AVG is not defined on it).
// Cost: one pass over n elements, memory-bound.
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "algo/kernels/reduce_impl.h"

static inline float
divide_one(float x, float k)
{
    float q = x / k;

    return q != q ? shi_f32_from_bits(0x7fc00000u) : q;
}

static void
divide_f32(int dtype, void *buf, size_t n, int k)
{
    const float fk = (float) k;
    float      *f  = buf;
    uint16_t   *h  = buf;

    switch (dtype) {
        case SHOAL_FLOAT16:
            for (size_t i = 0; i < n; i++) {
                h[i] = shi_f32_to_f16(divide_one(shi_f16_to_f32(h[i]), fk));
            }
            break;
        case SHOAL_BFLOAT16:
            for (size_t i = 0; i < n; i++) {
                h[i] = shi_f32_to_bf16(divide_one(shi_bf16_to_f32(h[i]), fk));
            }
            break;
        default:
            for (size_t i = 0; i < n; i++) {
                f[i] = divide_one(f[i], fk);
            }
            break;
    }
}

static void
divide_f64(void *buf, size_t n, int k)
{
    const uint64_t qbits = 0x7ff8000000000000ull;
    const double   dk    = (double) k;
    double        *d     = buf;
    double         qnan;

    memcpy(&qnan, &qbits, sizeof(qnan));
    for (size_t i = 0; i < n; i++) {
        double x = d[i] / dk;
        d[i]     = x != x ? qnan : x;
    }
}

void
shi_reduce_divide(int dtype, void *buf, size_t n, int k)
{
    assert(k >= 1);
    switch (dtype) {
        case SHOAL_FLOAT16:
        case SHOAL_BFLOAT16:
        case SHOAL_FLOAT32:
            divide_f32(dtype, buf, n, k);
            break;
        case SHOAL_FLOAT64:
            divide_f64(buf, n, k);
            break;
        case SHOAL_UINT8:
        case SHOAL_INT8:
        case SHOAL_INT16:
        case SHOAL_INT32:
        case SHOAL_INT64:
            shi_reduce_int_div(dtype, buf, k, 0, n);
            break;
        default:
            assert(!"shi_reduce_divide: not a dtype AVG is defined on");
            break;
    }
}
