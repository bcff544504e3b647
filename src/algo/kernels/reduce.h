// Reduction kernels: combine k input arrays element-wise into one output.
//
// Every dtype x op pair that makes sense is supported (see shoal.h):
// SUM, PROD, MIN, MAX, AVG on every dtype (bool: SUM = or, PROD = and,
// MIN = and, MAX = or; AVG not on bool), BAND/BOR/BXOR on integer and bool
// types, PREMUL_SUM on floating types. float16 and bfloat16 are widened to
// float32, combined, and rounded once (round to nearest even). MIN and MAX
// propagate NaN. Integer SUM and PROD wrap (two's complement), AVG on
// integers divides the wrapped sum by k rounding toward zero. Inputs are
// combined in index order (in[0] op in[1] op ...), so every rank computing
// the same reduction gets bitwise identical results.
//
// Details every path (scalar, AVX2, AVX-512) shares bit for bit: a NaN
// result is always the canonical quiet NaN (positive, zero payload), so
// NaN payloads and signs are not kept; MIN and MAX keep the earlier input
// of two that compare equal (min(-0.0, 0.0) is -0.0, min(0.0, -0.0) is
// 0.0); subnormals are kept, never flushed; float AVG divides the sum by k
// in the accumulator type; PREMUL_SUM multiplies by (float) scalar for the
// float16/bfloat16/float32 types, then adds (never fused). A bool input
// byte is true when nonzero; bool results are 0 or 1.
//
// Kernels are vectorised with AVX-512 or AVX2 when the CPU has them
// (chosen once at run time; SHOAL_SIMD=avx512|avx2|scalar forces a level)
// and fall back to portable C.
#ifndef SHI_REDUCE_H
#define SHI_REDUCE_H

#include <stddef.h>

#include "shoal.h"

// SHOAL_OK if (dtype, op) is a valid pair, else SHOAL_EINVAL with a message
// ("bitwise op band needs an integer or bool dtype, not float32").
int shi_reduce_check(int dtype, shoal_reduce_op op);

// out[i] = in[0][i] op in[1][i] op ... op in[k-1][i] for i < n, with AVG
// dividing by k and PREMUL_SUM multiplying every input by op.scalar before
// summing. k >= 1. `out` may be exactly one of the inputs (in place); no
// other overlap is allowed. The pair must have passed shi_reduce_check.
void shi_reduce(int dtype, shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t n);

// The same with the portable scalar code only (the tests' reference, and
// the fallback).
void shi_reduce_scalar(int dtype, shoal_reduce_op op, void *out,
    const void *const *in, int k, size_t n);

// AVG's last step on its own: buf[i] /= k in place for i < n, as the AVG
// of shi_reduce divides a sum (floating types in the accumulator type,
// float16/bfloat16 widened to float32 and rounded once to nearest even,
// NaN results canonical; integers divided rounding toward zero). For
// reductions made of several SUM steps (across hosts). k >= 1; not bool.
void shi_reduce_divide(int dtype, void *buf, size_t n, int k);

// The SIMD level in use: "avx512", "avx2" or "scalar".
const char *shi_reduce_simd_level(void);

#endif
