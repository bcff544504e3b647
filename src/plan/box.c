// Box arithmetic and strided copies for the compile_op planner (box.h).
#include "plan/box.h"

#include <stdio.h>
#include <string.h>

int64_t
shi_box_volume(const shi_box *b, int ndim)
{
    int64_t n = 1;

    for (int d = 0; d < ndim; d++) {
        if (b->hi[d] <= b->lo[d]) {
            return 0;
        }
        n *= b->hi[d] - b->lo[d];
    }
    return n;
}

int
shi_box_intersect(const shi_box *a, const shi_box *b, int ndim, shi_box *out)
{
    for (int d = 0; d < ndim; d++) {
        out->lo[d] = a->lo[d] > b->lo[d] ? a->lo[d] : b->lo[d];
        out->hi[d] = a->hi[d] < b->hi[d] ? a->hi[d] : b->hi[d];
        if (out->hi[d] <= out->lo[d]) {
            return 0;
        }
    }
    return 1;
}

// Peels slabs off `a` dimension by dimension: below and above `b` in
// dimension d, with dimensions < d already narrowed to b's range.
int
shi_box_subtract(const shi_box *a, const shi_box *b, int ndim, shi_box *out)
{
    shi_box rest = *a;
    int     n    = 0;

    for (int d = 0; d < ndim; d++) {
        if (rest.lo[d] < b->lo[d]) {
            out[n]       = rest;
            out[n].hi[d] = b->lo[d];
            n++;
        }
        if (b->hi[d] < rest.hi[d]) {
            out[n]       = rest;
            out[n].lo[d] = b->hi[d];
            n++;
        }
        rest.lo[d] = b->lo[d];
        rest.hi[d] = b->hi[d];
    }
    return n;
}

int
shi_box_contains(const shi_box *outer, const shi_box *inner, int ndim)
{
    for (int d = 0; d < ndim; d++) {
        if (inner->lo[d] < outer->lo[d] || inner->hi[d] > outer->hi[d]) {
            return 0;
        }
    }
    return 1;
}

int
shi_box_format(const shi_box *b, int ndim, char *buf, size_t len)
{
    size_t n = (size_t) snprintf(buf, len, "[");

    for (int d = 0; d < ndim; d++) {
        n += (size_t) snprintf(buf + (n < len ? n : len),
            n < len ? len - n : 0, "%s%lld:%lld", d ? ", " : "",
            (long long) b->lo[d], (long long) b->hi[d]);
    }
    n += (size_t) snprintf(
        buf + (n < len ? n : len), n < len ? len - n : 0, "]");
    return (int) n;
}

int
shi_dims_format(const int64_t *v, int ndim, char *buf, size_t len)
{
    size_t n = (size_t) snprintf(buf, len, "[");

    for (int d = 0; d < ndim; d++) {
        n += (size_t) snprintf(buf + (n < len ? n : len),
            n < len ? len - n : 0, "%s%lld", d ? ", " : "", (long long) v[d]);
    }
    n += (size_t) snprintf(
        buf + (n < len ? n : len), n < len ? len - n : 0, "]");
    return (int) n;
}

void
shi_view_of(shi_view *v, int ndim, const shi_box *b, const shi_box *owner,
    void *base, const int64_t *strides, size_t esize)
{
    int64_t offset = 0, dense = 1;

    for (int d = ndim - 1; d >= 0; d--) {
        int64_t s = strides != NULL ? strides[d] : dense;

        v->extent[d] = b->hi[d] - b->lo[d];
        v->stride[d] = s;
        offset += (b->lo[d] - owner->lo[d]) * s;
        dense *= owner->hi[d] - owner->lo[d];
    }
    v->base = (unsigned char *) base + offset * (int64_t) esize;
}

void
shi_view_packed(shi_view *v, int ndim, const shi_box *b, void *base)
{
    shi_view_of(v, ndim, b, b, base, NULL, 1);
}

int
shi_view_is_dense(const shi_view *v, int ndim)
{
    int64_t expect = 1;

    for (int d = ndim - 1; d >= 0; d--) {
        if (v->extent[d] != 1 && v->stride[d] != expect) {
            return 0;
        }
        expect *= v->extent[d];
    }
    return 1;
}

int
shi_view_strided(const shi_view *v, int ndim, size_t esize, uint64_t min_run,
    shi_strided *out)
{
    int64_t  ext[SHI_BOX_MAX_DIMS], step[SHI_BOX_MAX_DIMS];
    int      n   = 0;
    uint64_t run = esize;

    for (int d = 0; d < ndim; d++) {
        if (v->extent[d] <= 0 || v->stride[d] < 0) {
            return 0;
        }
        if (v->extent[d] > 1) {
            ext[n]    = v->extent[d];
            step[n++] = v->stride[d] * (int64_t) esize;
        }
    }
    // The innermost dimensions that continue each other make the run.
    while (n > 0 && step[n - 1] == (int64_t) run) {
        run *= (uint64_t) ext[--n];
    }
    if (run < min_run) {
        return 0;
    }
    memset(out, 0, sizeof(*out));
    out->run = run;
    for (int d = 0; d < n; d++) {
        uint32_t k = out->ndim;

        if (k > 0 && out->stride[k - 1] == ext[d] * step[d]) {
            out->count[k - 1] *= (uint64_t) ext[d]; // continues its outer
            out->stride[k - 1] = step[d];
            continue;
        }
        out->count[k]  = (uint64_t) ext[d];
        out->stride[k] = step[d];
        out->ndim++;
    }
    return 1;
}

// A copy reduced to its essential loops: dimensions of extent 1 dropped,
// neighbours that are contiguous in both views merged.
typedef struct view_loops {
    int     n;
    int64_t extent[SHI_BOX_MAX_DIMS];
    int64_t dst[SHI_BOX_MAX_DIMS];
    int64_t src[SHI_BOX_MAX_DIMS];
} view_loops;

static void
view_loops_make(
    view_loops *l, const shi_view *dst, const shi_view *src, int ndim)
{
    l->n = 0;
    for (int d = 0; d < ndim; d++) {
        int k = l->n - 1;

        if (dst->extent[d] == 1) {
            continue;
        }
        if (k >= 0 && l->dst[k] == dst->stride[d] * dst->extent[d]
            && l->src[k] == src->stride[d] * dst->extent[d]) {
            l->extent[k] *= dst->extent[d];
            l->dst[k] = dst->stride[d];
            l->src[k] = src->stride[d];
            continue;
        }
        l->extent[l->n] = dst->extent[d];
        l->dst[l->n]    = dst->stride[d];
        l->src[l->n]    = src->stride[d];
        l->n++;
    }
}

// Copies the innermost loop: one memcpy when both sides are dense.
static void
view_copy_row(unsigned char *d, const unsigned char *s, const view_loops *l,
    size_t esize)
{
    int64_t n  = l->n > 0 ? l->extent[l->n - 1] : 1;
    int64_t ds = l->n > 0 ? l->dst[l->n - 1] : 1;
    int64_t ss = l->n > 0 ? l->src[l->n - 1] : 1;

    if (ds == 1 && ss == 1) {
        memcpy(d, s, (size_t) n * esize);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        memcpy(
            d + i * ds * (int64_t) esize, s + i * ss * (int64_t) esize, esize);
    }
}

void
shi_view_copy(const shi_view *dst, const shi_view *src, int ndim, size_t esize)
{
    view_loops l;
    int64_t    idx[SHI_BOX_MAX_DIMS] = { 0 };
    int        outer;

    for (int d = 0; d < ndim; d++) {
        if (dst->extent[d] <= 0) {
            return;
        }
    }
    view_loops_make(&l, dst, src, ndim);
    outer = l.n - 1; // loops 0 .. outer-1 iterate rows
    for (;;) {
        int64_t doff = 0, soff = 0;
        int     d;

        for (d = 0; d < outer; d++) {
            doff += idx[d] * l.dst[d];
            soff += idx[d] * l.src[d];
        }
        view_copy_row(dst->base + doff * (int64_t) esize,
            src->base + soff * (int64_t) esize, &l, esize);
        for (d = outer - 1; d >= 0; d--) {
            if (++idx[d] < l.extent[d]) {
                break;
            }
            idx[d] = 0;
        }
        if (d < 0) {
            return;
        }
    }
}
