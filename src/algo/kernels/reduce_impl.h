// Private to the reduction kernels (and their unit test): the SIMD levels,
// the per-level kernel tables, the portable range kernels the vector code
// falls back to for tails, and the scalar float16/bfloat16 conversions.
//
// Floating results that are NaN are always the canonical quiet NaN
// (positive, payload 0: 0x7e00, 0x7fc0, 0x7fc00000, 0x7ff8000000000000),
// whatever NaNs went in. x86 picks the payload of the first NaN operand of
// an addition, and which operand is "first" is the compiler's choice for a
// commutative operation, so only a canonical NaN is the same between the
// scalar and the vector code and between builds.
//
// MIN and MAX keep the earlier input when two compare equal (so -0.0 and
// 0.0 give whichever came first, in index order), on every path.
#ifndef SHI_REDUCE_IMPL_H
#define SHI_REDUCE_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "algo/kernels/reduce.h"

enum shi_simd {
    SHI_SIMD_SCALAR = 0,
    SHI_SIMD_AVX2, // AVX2 + F16C
    SHI_SIMD_AVX512, // AVX-512 F + BW
    SHI_SIMD_COUNT
};

// A kernel for one (dtype, op) pair at one SIMD level: shi_reduce for
// that pair over elements [lo, hi) of every array (the vector body, then
// the portable code for the tail).
typedef void (*shi_reduce_fn)(shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t lo, size_t hi);

// The vector kernel of a level for (dtype, op kind), or NULL where the
// level has none (the scalar code runs instead). Integer AVG is not among
// them: shi_reduce builds it from SUM and shi_reduce_int_div.
shi_reduce_fn shi_reduce_avx2_fn(int dtype, int kind);
shi_reduce_fn shi_reduce_avx512_fn(int dtype, int kind);

// The portable kernel over elements [lo, hi) of every array: the scalar
// code proper, and the vector kernels' tail.
void shi_reduce_range(int dtype, shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t lo, size_t hi);

// A float32 SUM of a few elements (at most SHI_REDUCE_FEW), the inline
// all-reduce's usual call, without a kernel's set-up: the same order of
// additions as every kernel (in[0] + in[1] + ...), so the same result.
#define SHI_REDUCE_FEW 16
void shi_reduce_f32_sum_few(
    float *out, const void *const *in, int k, size_t n);

// Integer AVG's second half: out[i] = out[i] / k, rounding toward zero, for
// i in [lo, hi) (out holds the wrapped sums).
void shi_reduce_int_div(int dtype, void *out, int k, size_t lo, size_t hi);

// 1 if this CPU (and OS) can run `level`.
int shi_reduce_simd_supported(int level);

// Forces the level used by shi_reduce from now on (tests). A level the CPU
// lacks falls back to the best one below it. Returns the level in force.
int shi_reduce_set_simd(int level);

// Name of a level ("avx512", "avx2", "scalar").
const char *shi_reduce_simd_name(int level);

// ---------------------------------------------------------------------------
// float16 and bfloat16 <-> float32, portable and bit-exact with F16C
// (vcvtph2ps, vcvtps2ph with round to nearest even) and with the vector
// bfloat16 code.
// ---------------------------------------------------------------------------

static inline uint32_t
shi_f32_bits(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float
shi_f32_from_bits(uint32_t u)
{
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

// Exact; a signalling NaN comes out quiet, as with vcvtph2ps.
static inline float
shi_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t) (h & 0x8000u) << 16;
    uint32_t exp  = (h >> 10) & 0x1fu;
    uint32_t man  = h & 0x3ffu;

    if (exp == 0x1f) {
        return shi_f32_from_bits(
            sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0));
    }
    if (exp == 0) {
        // Zero or subnormal: man * 2^-24, exact in float32.
        float mag = (float) man * 0x1p-24f;
        return shi_f32_from_bits(sign | shi_f32_bits(mag));
    }
    return shi_f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

// Round to nearest even; overflow gives infinity; a NaN gives a quiet NaN
// keeping the top of the payload, as vcvtps2ph does.
static inline uint16_t
shi_f32_to_f16(float f)
{
    uint32_t x    = shi_f32_bits(f);
    uint16_t sign = (uint16_t) ((x >> 16) & 0x8000u);

    x &= 0x7fffffffu;
    if (x > 0x7f800000u) {
        return (uint16_t) (sign | 0x7e00u | ((x >> 13) & 0x3ffu));
    }
    if (x >= 0x477ff000u) { // 65520 and up (ties to even: up) -> infinity
        return (uint16_t) (sign | 0x7c00u);
    }
    if (x >= 0x38800000u) { // normal half: rebias, round off 13 bits
        x -= 0x38000000u;
        x += 0x0fffu + ((x >> 13) & 1u);
        return (uint16_t) (sign | (x >> 13));
    }
    // Subnormal half (or zero): the value in units of 2^-24.
    uint32_t exp = x >> 23;
    if (exp < 102) { // below 2^-25: rounds to zero
        return sign;
    }
    uint32_t man   = (x & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp; // 14 .. 24
    uint32_t q     = man >> shift;
    uint32_t rem   = man & ((1u << shift) - 1);
    uint32_t half  = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) {
        q++;
    }
    return (uint16_t) (sign | q);
}

static inline float
shi_bf16_to_f32(uint16_t h)
{
    return shi_f32_from_bits((uint32_t) h << 16);
}

// Round to nearest even; a NaN gives a quiet NaN keeping the top of the
// payload.
static inline uint16_t
shi_f32_to_bf16(float f)
{
    uint32_t x = shi_f32_bits(f);

    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t) ((x >> 16) | 0x40u);
    }
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t) (x >> 16);
}

#endif
