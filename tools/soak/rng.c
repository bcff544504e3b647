// splitmix64: tiny, fast and identical everywhere, which is all the
// shared sequence needs.
#include <time.h>

#include "soak.h"

uint64_t
soak_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t
soak_rng_next(soak_rng *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    return soak_mix64(r->s);
}

// Uniform in [0, n); the modulo bias is irrelevant at these ranges.
uint64_t
soak_rng_below(soak_rng *r, uint64_t n)
{
    return n == 0 ? 0 : soak_rng_next(r) % n;
}

double
soak_rng_unit(soak_rng *r)
{
    return (double) (soak_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t
soak_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}
