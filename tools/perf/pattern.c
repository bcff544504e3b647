// Data patterns for checking results, for every shoal dtype.
//
// A pattern is a tile of PERF_PATTERN_TILE (a prime) pseudo-random
// elements repeated over the buffer. Filling is a run of memcpy() calls and
// checking a run of memcmp() calls, so both go at memory speed; elements
// are compared one by one only inside a tile that differs. Values are exact
// in their type (small integers for the floating-point types) and bools
// are 0 or 1, so the bytes a correct transfer delivers are known exactly.
#include <string.h>

#include "mix.h"
#include "perf.h"

uint32_t
perf_seed(uint32_t what, uint32_t src, uint32_t size_index, uint32_t iteration)
{
    uint32_t h = perf_mix32(what * 0x9e3779b9u + 1);

    h = perf_mix32(h ^ (src + 0x7f4a7c15u));
    h = perf_mix32(h ^ (size_index * 0x27d4eb2fu));
    return perf_mix32(h ^ (iteration * 0x165667b1u));
}

// IEEE half for an integer 0 <= k < 2048 (exact).
static uint16_t
half_of_int(uint32_t k)
{
    int e = 0;

    if (k == 0) {
        return 0;
    }
    while ((k >> (e + 1)) != 0) {
        e++;
    }
    return (
        uint16_t) (((uint32_t) (e + 15) << 10) | ((k << (10 - e)) & 0x3ffu));
}

// bfloat16 for an integer 0 <= k < 256: the top half of its float32.
static uint16_t
bf16_of_int(uint32_t k)
{
    float    f = (float) k;
    uint32_t bits;

    memcpy(&bits, &f, sizeof(bits));
    return (uint16_t) (bits >> 16);
}

static void
encode(shoal_dtype dtype, uint32_t r, uint32_t r2, unsigned char *dst)
{
    switch (dtype) {
        case SHOAL_BOOL:
            dst[0] = (unsigned char) (r & 1u);
            break;
        case SHOAL_UINT8:
        case SHOAL_INT8:
            dst[0] = (unsigned char) r;
            break;
        case SHOAL_INT16: {
            uint16_t v = (uint16_t) r;
            memcpy(dst, &v, 2);
            break;
        }
        case SHOAL_INT32:
            memcpy(dst, &r, 4);
            break;
        case SHOAL_INT64: {
            uint64_t v = ((uint64_t) r2 << 32) | r;
            memcpy(dst, &v, 8);
            break;
        }
        case SHOAL_FLOAT16: {
            uint16_t v = half_of_int(r & 2047u);
            memcpy(dst, &v, 2);
            break;
        }
        case SHOAL_BFLOAT16: {
            uint16_t v = bf16_of_int(r & 255u);
            memcpy(dst, &v, 2);
            break;
        }
        case SHOAL_FLOAT32: {
            float v = (float) (r & 0xffffffu);
            memcpy(dst, &v, 4);
            break;
        }
        case SHOAL_FLOAT64: {
            double v = (double) r;
            memcpy(dst, &v, 8);
            break;
        }
        default:
            break;
    }
}

void
perf_pattern_make(perf_pattern *p, shoal_dtype dtype, uint32_t seed)
{
    p->dtype = dtype;
    p->esize = shoal_dtype_size(dtype);
    p->len   = PERF_PATTERN_TILE;
    for (uint32_t i = 0; i < PERF_PATTERN_TILE; i++) {
        uint32_t r = perf_mix32(seed ^ (i * 0x9e3779b9u));
        encode(
            dtype, r, perf_mix32(r + seed), p->tile + (size_t) i * p->esize);
    }
}

void
perf_pattern_fill(const perf_pattern *p, void *buf, size_t count)
{
    unsigned char *dst = buf;

    for (size_t i = 0; i < count; i += PERF_PATTERN_TILE) {
        size_t n
            = count - i < PERF_PATTERN_TILE ? count - i : PERF_PATTERN_TILE;
        memcpy(dst + i * p->esize, p->tile, n * p->esize);
    }
}

size_t
perf_pattern_check(const perf_pattern *p, const void *buf, size_t count)
{
    const unsigned char *src   = buf;
    size_t               wrong = 0;

    for (size_t i = 0; i < count; i += PERF_PATTERN_TILE) {
        size_t n
            = count - i < PERF_PATTERN_TILE ? count - i : PERF_PATTERN_TILE;
        const unsigned char *got = src + i * p->esize;
        if (memcmp(got, p->tile, n * p->esize) == 0) {
            continue;
        }
        for (size_t j = 0; j < n; j++) {
            wrong
                += memcmp(got + j * p->esize, p->tile + j * p->esize, p->esize)
                != 0;
        }
    }
    return wrong;
}

size_t
perf_pattern_check_at(
    const perf_pattern *p, const void *buf, size_t first, size_t count)
{
    const unsigned char *src   = buf;
    size_t               phase = first % PERF_PATTERN_TILE;
    size_t               head  = PERF_PATTERN_TILE - phase;
    size_t               wrong = 0;

    if (phase == 0) {
        return perf_pattern_check(p, buf, count);
    }
    // The first partial tile, element by element where it differs, then
    // whole tiles from the start of the pattern.
    head = head < count ? head : count;
    if (memcmp(src, p->tile + phase * p->esize, head * p->esize) != 0) {
        for (size_t j = 0; j < head; j++) {
            wrong += memcmp(src + j * p->esize,
                         p->tile + (phase + j) * p->esize, p->esize)
                != 0;
        }
    }
    return wrong + perf_pattern_check(p, src + head * p->esize, count - head);
}
