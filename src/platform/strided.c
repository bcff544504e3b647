// Strided byte layouts (strided.h): checking one, walking its stream, and
// copying between two of them piece by piece.
#include "platform/strided.h"

#include <string.h>

void
shi_strided_dense(shi_strided *s, uint64_t bytes)
{
    memset(s, 0, sizeof(*s));
    s->run = bytes;
}

int
shi_strided_extent(
    const shi_strided *s, uint64_t bytes, int64_t *lo, int64_t *hi)
{
    uint64_t total = s->run;
    int64_t  low = 0, high = 0;

    if (s->ndim > SHI_STRIDED_DIMS || s->reserved != 0) {
        return -1;
    }
    for (uint32_t d = 0; d < s->ndim; d++) {
        if (__builtin_mul_overflow(total, s->count[d], &total)) {
            return -1;
        }
    }
    if (total != bytes) {
        return -1;
    }
    *lo = *hi = 0;
    if (bytes == 0) {
        return 0;
    }
    for (uint32_t d = 0; d < s->ndim; d++) {
        int64_t reach;

        if (s->count[d] > INT64_MAX
            || __builtin_mul_overflow(
                (int64_t) s->count[d] - 1, s->stride[d], &reach)
            || __builtin_add_overflow(
                reach < 0 ? low : high, reach, reach < 0 ? &low : &high)) {
            return -1;
        }
    }
    if (s->run > INT64_MAX
        || __builtin_add_overflow(high, (int64_t) s->run, &high)) {
        return -1;
    }
    *lo = low;
    *hi = high;
    return 0;
}

void
shi_strided_seek(shi_strided_pos *p, const shi_strided *s, uint64_t at)
{
    uint64_t runs = s->run > 0 ? at / s->run : 0;

    p->s       = s;
    p->in_run  = s->run > 0 ? at % s->run : 0;
    p->run_off = 0;
    for (int d = (int) s->ndim - 1; d >= 0; d--) {
        p->idx[d] = s->count[d] > 0 ? runs % s->count[d] : 0;
        runs      = s->count[d] > 0 ? runs / s->count[d] : 0;
        p->run_off += (int64_t) p->idx[d] * s->stride[d];
    }
}

uint64_t
shi_strided_piece(const shi_strided_pos *p, int64_t *off)
{
    *off = p->run_off + (int64_t) p->in_run;
    return p->s->run - p->in_run;
}

void
shi_strided_advance(shi_strided_pos *p, uint64_t n)
{
    const shi_strided *s = p->s;

    p->in_run += n;
    if (p->in_run < s->run) {
        return;
    }
    p->in_run = 0;
    // The next run: an odometer over the outer dimensions.
    for (int d = (int) s->ndim - 1; d >= 0; d--) {
        p->idx[d]++;
        p->run_off += s->stride[d];
        if (p->idx[d] < s->count[d]) {
            return;
        }
        p->run_off -= (int64_t) p->idx[d] * s->stride[d];
        p->idx[d] = 0;
    }
}

void
shi_strided_pair_start(shi_strided_pair *w, const shi_strided *dst,
    uint64_t dst_at, const shi_strided *src, uint64_t src_at, uint64_t n)
{
    if (dst == NULL) {
        shi_strided_dense(&w->dense_dst, dst_at + n);
        dst = &w->dense_dst;
    }
    if (src == NULL) {
        shi_strided_dense(&w->dense_src, src_at + n);
        src = &w->dense_src;
    }
    shi_strided_seek(&w->d, dst, dst_at);
    shi_strided_seek(&w->s, src, src_at);
    w->left = n;
}

uint64_t
shi_strided_pair_next(shi_strided_pair *w, int64_t *doff, int64_t *soff)
{
    if (w->left == 0) { // never ask a position past its stream's end
        return 0;
    }
    uint64_t a = shi_strided_piece(&w->d, doff);
    uint64_t b = shi_strided_piece(&w->s, soff);
    uint64_t k = a < b ? a : b;

    k = k < w->left ? k : w->left;
    shi_strided_advance(&w->d, k);
    shi_strided_advance(&w->s, k);
    w->left -= k;
    return k;
}

void
shi_strided_copy(unsigned char *dst_base, const shi_strided *dst,
    uint64_t dst_at, const unsigned char *src_base, const shi_strided *src,
    uint64_t src_at, uint64_t n)
{
    shi_strided_pair w;
    int64_t          doff, soff;
    uint64_t         k;

    shi_strided_pair_start(&w, dst, dst_at, src, src_at, n);
    while ((k = shi_strided_pair_next(&w, &doff, &soff)) > 0) {
        memcpy(dst_base + doff, src_base + soff, k);
    }
}
