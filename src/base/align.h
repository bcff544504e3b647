// Rounding sizes and offsets up to a multiple (cache lines, pages,
// huge pages).
#ifndef SHI_ALIGN_H
#define SHI_ALIGN_H

#include <stddef.h>

// n rounded up to a multiple of `to` (any positive multiple, not only a
// power of two).
static inline size_t
shi_round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

#endif
