// The hash finalisers behind every data pattern of the benchmarks and the
// tests (murmur3's "fmix", 32 and 64 bits): stateless, with full
// avalanche, so mix(seed ^ i) gives element i of a reproducible
// pseudo-random sequence. Header-only; includable from C and C++ (the
// peers' benchmark harnesses under tools/perf).
#ifndef SHOAL_PERF_MIX_H
#define SHOAL_PERF_MIX_H

#include <stdint.h>

static inline uint32_t
perf_mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}

static inline uint64_t
perf_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

#endif
