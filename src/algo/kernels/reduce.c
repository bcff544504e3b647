// Reduction entry points: the dtype/op check, the choice of SIMD level
// (once per process), and the dispatch of each call to a vector kernel of
// that level or to the portable code.
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "algo/kernels/reduce_impl.h"
#include "base/error.h"
#include "base/log.h"

// Integer AVG runs the vector SUM over this many bytes, then divides them
// while they are still in the cache.
#define REDUCE_AVG_CHUNK_BYTES 8192

static const char *const reduce_simd_names[SHI_SIMD_COUNT] = {
    [SHI_SIMD_SCALAR] = "scalar",
    [SHI_SIMD_AVX2]   = "avx2",
    [SHI_SIMD_AVX512] = "avx512",
};

static pthread_once_t reduce_once = PTHREAD_ONCE_INIT;
static atomic_int     reduce_level;
// Kernels by level, dtype and op kind; NULL: the portable code.
static shi_reduce_fn reduce_table[SHI_SIMD_COUNT][SHOAL_DTYPE_COUNT]
                                 [SHOAL_OP_COUNT];

static int
reduce_is_float(int dtype)
{
    return dtype == SHOAL_FLOAT16 || dtype == SHOAL_BFLOAT16
        || dtype == SHOAL_FLOAT32 || dtype == SHOAL_FLOAT64;
}

int
shi_reduce_check(int dtype, shoal_reduce_op op)
{
    int kind = (int) op.kind;

    if (dtype < 0 || dtype >= SHOAL_DTYPE_COUNT) {
        return shi_error(SHOAL_EINVAL,
            "reduce: unknown dtype %d (valid: 0 .. %d, bool to "
            "float64)",
            dtype, SHOAL_DTYPE_COUNT - 1);
    }
    if (kind < 0 || kind >= SHOAL_OP_COUNT) {
        return shi_error(SHOAL_EINVAL,
            "reduce: unknown op kind %d (valid: sum, prod, min, "
            "max, band, bor, bxor, avg, premul_sum)",
            kind);
    }
    // The names are looked up for a message only: this check is on every
    // reduction's entry.
    if ((kind == SHOAL_BAND || kind == SHOAL_BOR || kind == SHOAL_BXOR)
        && reduce_is_float(dtype)) {
        return shi_error(SHOAL_EINVAL,
            "reduce: bitwise op %s needs an integer or bool "
            "dtype, not %s (sum, prod, min, max, avg and "
            "premul_sum work on %s)",
            shoal_op_name(kind), shoal_dtype_name(dtype),
            shoal_dtype_name(dtype));
    }
    if (kind == SHOAL_PREMUL_SUM && !reduce_is_float(dtype)) {
        return shi_error(SHOAL_EINVAL,
            "reduce: op %s needs a floating dtype (float16, "
            "bfloat16, float32, float64), not %s",
            shoal_op_name(kind), shoal_dtype_name(dtype));
    }
    if (kind == SHOAL_AVG && dtype == SHOAL_BOOL) {
        return shi_error(SHOAL_EINVAL,
            "reduce: op %s is not defined on %s (use an integer "
            "or floating dtype; sum gives 'any', prod 'all')",
            shoal_op_name(kind), shoal_dtype_name(dtype));
    }
    return SHOAL_OK;
}

// ---------------------------------------------------------------------------
// SIMD level
// ---------------------------------------------------------------------------

const char *
shi_reduce_simd_name(int level)
{
    if (level < 0 || level >= SHI_SIMD_COUNT) {
        return "unknown";
    }
    return reduce_simd_names[level];
}

int
shi_reduce_simd_supported(int level)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    switch (level) {
        case SHI_SIMD_SCALAR:
            return 1;
        case SHI_SIMD_AVX2:
            return __builtin_cpu_supports("avx2") != 0
                && __builtin_cpu_supports("f16c") != 0;
        case SHI_SIMD_AVX512:
            return __builtin_cpu_supports("avx512f") != 0
                && __builtin_cpu_supports("avx512bw") != 0;
        default:
            return 0;
    }
#else
    return level == SHI_SIMD_SCALAR;
#endif
}

// The best supported level at or below `level`.
static int
reduce_best_at_most(int level)
{
    while (level > SHI_SIMD_SCALAR && !shi_reduce_simd_supported(level)) {
        level--;
    }
    return level;
}

static int
reduce_parse_level(const char *text)
{
    for (int l = 0; l < SHI_SIMD_COUNT; l++) {
        if (strcmp(text, reduce_simd_names[l]) == 0) {
            return l;
        }
    }
    return -1;
}

static void
reduce_init(void)
{
    int         best  = reduce_best_at_most(SHI_SIMD_AVX512);
    int         level = best;
    const char *env   = getenv("SHOAL_SIMD");

    if (env != NULL && env[0] != '\0') {
        int want = reduce_parse_level(env);
        if (want < 0) {
            SHI_WARN("SHOAL_SIMD=%s is not one of avx512, avx2, scalar; "
                     "using %s",
                env, reduce_simd_names[best]);
        } else if (want > best) {
            SHI_WARN("SHOAL_SIMD=%s: this CPU cannot run it; using %s", env,
                reduce_simd_names[best]);
        } else {
            level = want;
        }
    }
    for (int d = 0; d < SHOAL_DTYPE_COUNT; d++) {
        for (int o = 0; o < SHOAL_OP_COUNT; o++) {
            if (shi_reduce_simd_supported(SHI_SIMD_AVX2)) {
                reduce_table[SHI_SIMD_AVX2][d][o] = shi_reduce_avx2_fn(d, o);
            }
            if (shi_reduce_simd_supported(SHI_SIMD_AVX512)) {
                reduce_table[SHI_SIMD_AVX512][d][o]
                    = shi_reduce_avx512_fn(d, o);
            }
        }
    }
    atomic_store(&reduce_level, level);
    SHI_TRACE("reduce kernels: %s", reduce_simd_names[level]);
}

int
shi_reduce_set_simd(int level)
{
    pthread_once(&reduce_once, reduce_init);
    if (level < 0 || level >= SHI_SIMD_COUNT) {
        level = SHI_SIMD_AVX512;
    }
    level = reduce_best_at_most(level);
    atomic_store(&reduce_level, level);
    return level;
}

const char *
shi_reduce_simd_level(void)
{
    pthread_once(&reduce_once, reduce_init);
    return reduce_simd_names[atomic_load_explicit(
        &reduce_level, memory_order_relaxed)];
}

// ---------------------------------------------------------------------------
// Dispatch
// ---------------------------------------------------------------------------

void
shi_reduce(int dtype, shoal_reduce_op op, void *out, const void *const *in,
    int k, size_t n)
{
    assert(k >= 1);
    assert(dtype >= 0 && dtype < SHOAL_DTYPE_COUNT);
    assert(op.kind >= 0 && op.kind < SHOAL_OP_COUNT);
    if (dtype == SHOAL_FLOAT32 && op.kind == SHOAL_SUM
        && n <= SHI_REDUCE_FEW) {
        shi_reduce_f32_sum_few(out, in, k, n);
        return;
    }
    pthread_once(&reduce_once, reduce_init);
    int level = atomic_load_explicit(&reduce_level, memory_order_relaxed);

    if (op.kind == SHOAL_AVG && !reduce_is_float(dtype)) {
        // Integer AVG: the vector sum, then a scalar division by k, chunk
        // by chunk.
        shi_reduce_fn sum = reduce_table[level][dtype][SHOAL_SUM];
        if (sum == NULL) {
            shi_reduce_range(dtype, op, out, in, k, 0, n);
            return;
        }
        shoal_reduce_op sop = SHOAL_REDUCE_OP(SHOAL_SUM);
        size_t chunk        = REDUCE_AVG_CHUNK_BYTES / shoal_dtype_size(dtype);
        for (size_t lo = 0; lo < n; lo += chunk) {
            size_t hi = n - lo < chunk ? n : lo + chunk;
            sum(sop, out, in, k, lo, hi);
            shi_reduce_int_div(dtype, out, k, lo, hi);
        }
        return;
    }
    shi_reduce_fn fn = reduce_table[level][dtype][op.kind];
    if (fn != NULL) {
        fn(op, out, in, k, 0, n);
    } else {
        shi_reduce_range(dtype, op, out, in, k, 0, n);
    }
}
