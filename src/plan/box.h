// Boxes: N-d index ranges [lo, hi) inside a global tensor shape, the unit
// the compile_op planner works in, and strided copies of a box's elements
// between tensors of any layout.
#ifndef SHI_BOX_H
#define SHI_BOX_H

#include <stddef.h>
#include <stdint.h>

#include "platform/strided.h"

// Most dimensions a plan may have (DLPack and torch allow more; nobody
// redistributes tensors of more than a dozen dimensions).
#define SHI_BOX_MAX_DIMS 12

typedef struct shi_box {
    int64_t lo[SHI_BOX_MAX_DIMS];
    int64_t hi[SHI_BOX_MAX_DIMS]; // exclusive
} shi_box;

// Number of elements (1 for a 0-d box, 0 if any extent is <= 0).
int64_t shi_box_volume(const shi_box *b, int ndim);

// *out = a ∩ b; returns 1 if it is non-empty, 0 otherwise.
int shi_box_intersect(
    const shi_box *a, const shi_box *b, int ndim, shi_box *out);

// Writes the parts of `a` outside `b` as at most 2 * ndim disjoint boxes
// into out[] and returns how many. `b` must lie inside `a` (intersect
// first).
int shi_box_subtract(
    const shi_box *a, const shi_box *b, int ndim, shi_box *out);

// 1 if `inner` lies inside `outer`.
int shi_box_contains(const shi_box *outer, const shi_box *inner, int ndim);

// "[2:4, 0:8]" (numpy slice notation); returns snprintf's count.
int shi_box_format(const shi_box *b, int ndim, char *buf, size_t len);

// "[2, 4]" for an int64 list.
int shi_dims_format(const int64_t *v, int ndim, char *buf, size_t len);

// A strided view of a box's elements: the element at index i (0 <= i[d] <
// extent[d]) lives at base + sum(i[d] * stride[d]) elements.
typedef struct shi_view {
    unsigned char *base;
    int64_t        extent[SHI_BOX_MAX_DIMS];
    int64_t        stride[SHI_BOX_MAX_DIMS]; // in elements
} shi_view;

// The view of global box `b` inside a local tensor holding global box
// `owner` at `base` with element strides `strides` (NULL: row-major).
void shi_view_of(shi_view *v, int ndim, const shi_box *b, const shi_box *owner,
    void *base, const int64_t *strides, size_t esize);

// The view of box `b` packed densely (row-major) at `base`.
void shi_view_packed(shi_view *v, int ndim, const shi_box *b, void *base);

// 1 if the view's elements are dense and in row-major order.
int shi_view_is_dense(const shi_view *v, int ndim);

// The byte layout of a view's elements (row-major order) from its base:
// dimensions of extent 1 dropped, contiguous neighbours merged. Returns 1,
// or 0 when its contiguous runs would be shorter than `min_run` bytes (a
// pack moves such data faster than a transfer piece by piece), when it
// has a negative stride, or when it is empty.
int shi_view_strided(const shi_view *v, int ndim, size_t esize,
    uint64_t min_run, shi_strided *out);

// Copies every element of `src` to the same index of `dst` (same extents).
void shi_view_copy(
    const shi_view *dst, const shi_view *src, int ndim, size_t esize);

#endif
