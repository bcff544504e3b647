// The tensors of a plan (plan_impl.h). Every rank's spec names tensors
// (the spec's one-tensor form names one, ""); they are matched by name
// across ranks into one table that every rank computes alike from the
// exchanged specs. Then every box is checked against its tensor's shape
// and padded to the plan's ndim with leading dimensions of extent 1, so
// that the planner and the runs treat all tensors alike.
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "plan/plan_impl.h"

typedef struct tensors_ctx {
    shi_plan_world *w;
    int             cap; // of w->tensors and the per-tensor arrays here
    int            *first_rank; // per tensor: the first rank naming it
    int            *shape_rank; // the rank its shape came from, or -1
    int            *named_by; // the last rank that named it
    int            *map; // this rank's spec tensor index -> the plan's
} tensors_ctx;

static int
tensors_oom(void)
{
    return shi_error(SHOAL_ENOMEM, "compile_op: out of memory while planning");
}

int
shi_plan_box_format(const shi_plan_gtensor *t, const shi_box *b, int ndim,
    char *buf, size_t len)
{
    int     pad = ndim - t->ndim;
    shi_box own;

    for (int d = 0; d < t->ndim; d++) {
        own.lo[d] = b->lo[pad + d];
        own.hi[d] = b->hi[pad + d];
    }
    return shi_box_format(&own, t->ndim, buf, len);
}

const char *
shi_plan_tensor_label(const shi_plan_gtensor *t, char *buf, size_t len)
{
    if (t->name[0] == '\0') {
        return "";
    }
    snprintf(buf, len, "tensor '%s', ", t->name);
    return buf;
}

// ---- the table of tensors
// ----------------------------------------------------

static int
disagree_shape(const char *name, int r0, const int64_t *s0, int n0, int r,
    const int64_t *s, int n)
{
    char a[256], b[256];

    shi_dims_format(s0, n0, a, sizeof(a));
    shi_dims_format(s, n, b, sizeof(b));
    if (name[0] == '\0') {
        return shi_error(SHOAL_EINVAL,
            "compile_op: ranks disagree on the global shape: rank %d passed "
            "%s, rank %d passed %s",
            r0, a, r, b);
    }
    return shi_error(SHOAL_EINVAL,
        "compile_op: ranks disagree on the shape of tensor '%s': rank %d "
        "passed %s, rank %d passed %s",
        name, r0, a, r, b);
}

static int
tensors_find(const shi_plan_world *w, const char *name)
{
    for (int t = 0; t < w->ntensors; t++) {
        if (strcmp(w->tensors[t].name, name) == 0) {
            return t;
        }
    }
    return -1;
}

static int
tensors_reserve(tensors_ctx *c, int need)
{
    int   n = c->cap > 0 ? 2 * c->cap : 8;
    void *p;

    if (need <= c->cap) {
        return SHOAL_OK;
    }
    while (n < need) {
        n *= 2;
    }
    // Each array is replaced as soon as it has grown, so that a failure
    // leaves nothing to leak.
    if ((p = realloc(c->w->tensors, (size_t) n * sizeof(shi_plan_gtensor)))
        == NULL) {
        return tensors_oom();
    }
    c->w->tensors = p;
    if ((p = realloc(c->first_rank, (size_t) n * sizeof(int))) == NULL) {
        return tensors_oom();
    }
    c->first_rank = p;
    if ((p = realloc(c->shape_rank, (size_t) n * sizeof(int))) == NULL) {
        return tensors_oom();
    }
    c->shape_rank = p;
    if ((p = realloc(c->named_by, (size_t) n * sizeof(int))) == NULL) {
        return tensors_oom();
    }
    c->named_by = p;
    c->cap      = n;
    return SHOAL_OK;
}

static int
tensors_add(tensors_ctx *c, const char *name, int ndim, int r)
{
    shi_plan_world   *w  = c->w;
    int               st = tensors_reserve(c, w->ntensors + 1);
    shi_plan_gtensor *t;

    if (st < 0) {
        return st;
    }
    t = &w->tensors[w->ntensors];
    memset(t, 0, sizeof(*t));
    t->name = strdup(name);
    if (t->name == NULL) {
        return tensors_oom();
    }
    t->ndim                    = ndim;
    c->first_rank[w->ntensors] = r;
    c->shape_rank[w->ntensors] = -1;
    c->named_by[w->ntensors]   = -1;
    return w->ntensors++;
}

// Rank r names tensor `name`: its index in the plan's table, or an error
// when the ranks disagree on it.
static int
tensors_declare(
    tensors_ctx *c, int r, const char *name, int ndim, const int64_t *shape)
{
    shi_plan_world   *w = c->w;
    int               k = tensors_find(w, name);
    shi_plan_gtensor *t;

    if (k < 0) {
        k = tensors_add(c, name, ndim, r);
        if (k < 0) {
            return k;
        }
    }
    t = &w->tensors[k];
    if (c->named_by[k] == r) {
        return shi_error(SHOAL_EINVAL,
            "compile_op: rank %d names tensor '%s' twice", r, name);
    }
    c->named_by[k] = r;
    if (t->ndim != ndim && name[0] == '\0') {
        return disagree_shape(
            name, c->shape_rank[k], t->shape, t->ndim, r, shape, ndim);
    }
    if (t->ndim != ndim) {
        return shi_error(SHOAL_EINVAL,
            "compile_op: ranks disagree on the number of dimensions of "
            "tensor '%s': rank %d gives it %d, rank %d gives it %d",
            name, c->first_rank[k], t->ndim, r, ndim);
    }
    if (shape == NULL) {
        return k;
    }
    if (c->shape_rank[k] < 0) {
        memcpy(t->shape, shape, sizeof(int64_t) * (size_t) ndim);
        c->shape_rank[k] = r;
    } else if (memcmp(t->shape, shape, sizeof(int64_t) * (size_t) ndim) != 0) {
        return disagree_shape(
            name, c->shape_rank[k], t->shape, ndim, r, shape, ndim);
    }
    return k;
}

// The plan's index of each tensor rank r's spec names (c->map).
static int
tensors_of_rank(tensors_ctx *c, const shi_plan_spec *s, int r)
{
    int n = s->several ? s->ntensors : 1;

    free(c->map);
    c->map = calloc((size_t) n + 1, sizeof(int));
    if (c->map == NULL) {
        return tensors_oom();
    }
    if (!s->several) {
        c->map[0] = tensors_declare(c, r, "", s->ndim, s->shape);
        return c->map[0] < 0 ? c->map[0] : SHOAL_OK;
    }
    for (int i = 0; i < s->ntensors; i++) {
        const shi_plan_tensor *t = &s->tensors[i];

        c->map[i] = tensors_declare(
            c, r, t->name, t->ndim, t->has_shape ? t->shape : NULL);
        if (c->map[i] < 0) {
            return c->map[i];
        }
    }
    return SHOAL_OK;
}

// ---- boxes
// -------------------------------------------------------------------

// More bytes than any machine has: also keeps every offset computation
// in range.
static int
box_too_big(size_t esize, const int64_t *extent, int ndim)
{
    int64_t bytes = (int64_t) esize;

    for (int d = 0; d < ndim; d++) {
        if (__builtin_mul_overflow(bytes, extent[d], &bytes)
            || bytes > (INT64_C(1) << 62)) {
            return 1;
        }
    }
    return 0;
}

static int
check_box(const shi_plan_gtensor *t, size_t esize, const shi_box *b, int r,
    const char *what, int i)
{
    char    off[256], ext[256], shape[256], label[SHOAL_PLAN_MAX_NAME + 16];
    int     outside = 0, negative = 0;
    int64_t extent[SHI_BOX_MAX_DIMS];

    for (int d = 0; d < t->ndim; d++) {
        extent[d] = b->hi[d] - b->lo[d];
        negative |= extent[d] < 0;
        outside |= b->lo[d] < 0 || b->hi[d] > t->shape[d];
    }
    if (!negative && !outside && !box_too_big(esize, extent, t->ndim)) {
        return SHOAL_OK;
    }
    shi_dims_format(b->lo, t->ndim, off, sizeof(off));
    shi_dims_format(extent, t->ndim, ext, sizeof(ext));
    shi_dims_format(t->shape, t->ndim, shape, sizeof(shape));
    return shi_error(SHOAL_EINVAL,
        "compile_op: rank %d's %s[%d] (%soffset %s, shape %s) %s the global "
        "shape %s",
        r, what, i, shi_plan_tensor_label(t, label, sizeof(label)), off, ext,
        negative      ? "has a negative size in"
            : outside ? "lies outside"
                      : "has more than 2^62 bytes in",
        shape);
}

static int
check_shape(const shi_plan_gtensor *t)
{
    char a[256];

    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0) {
            shi_dims_format(t->shape, t->ndim, a, sizeof(a));
            if (t->name[0] == '\0') {
                return shi_error(SHOAL_EINVAL,
                    "compile_op: the global shape %s has a negative size", a);
            }
            return shi_error(SHOAL_EINVAL,
                "compile_op: the shape %s of tensor '%s' has a negative size",
                a, t->name);
        }
    }
    return SHOAL_OK;
}

// Tensors no rank gave a shape reach as far as their furthest box.
static void
grow_extents(shi_plan_world *w, const int *shape_rank, const shi_box *boxes,
    const int *tensor, const int *map, int n)
{
    for (int i = 0; i < n; i++) {
        int               k = map[tensor != NULL ? tensor[i] : 0];
        shi_plan_gtensor *t = &w->tensors[k];

        for (int d = 0; shape_rank[k] < 0 && d < t->ndim; d++) {
            if (boxes[i].hi[d] > t->shape[d]) {
                t->shape[d] = boxes[i].hi[d];
            }
        }
    }
}

// Checks rank r's boxes of one direction and writes them padded, with
// their tensors, into out/out_tensor.
static int
pad_boxes(shi_plan_world *w, size_t esize, const shi_box *in,
    const int *in_tensor, const int *map, int n, int r, const char *what,
    shi_box *out, int *out_tensor)
{
    for (int i = 0; i < n; i++) {
        int                     k = map[in_tensor != NULL ? in_tensor[i] : 0];
        const shi_plan_gtensor *t = &w->tensors[k];
        int                     pad = w->ndim - t->ndim;
        int                     st  = check_box(t, esize, &in[i], r, what, i);

        if (st < 0) {
            return st;
        }
        for (int d = 0; d < w->ndim; d++) {
            out[i].lo[d] = d < pad ? 0 : in[i].lo[d - pad];
            out[i].hi[d] = d < pad ? 1 : in[i].hi[d - pad];
        }
        out_tensor[i] = k;
    }
    return SHOAL_OK;
}

// ---- the world
// ---------------------------------------------------------------

static int
world_alloc_rank(shi_plan_rank_boxes *rb, const shi_plan_spec *s)
{
    rb->ninputs       = s->ninputs;
    rb->noutputs      = s->noutputs;
    rb->inputs        = calloc((size_t) s->ninputs + 1, sizeof(shi_box));
    rb->outputs       = calloc((size_t) s->noutputs + 1, sizeof(shi_box));
    rb->input_tensor  = calloc((size_t) s->ninputs + 1, sizeof(int));
    rb->output_tensor = calloc((size_t) s->noutputs + 1, sizeof(int));
    return rb->inputs != NULL && rb->outputs != NULL
            && rb->input_tensor != NULL && rb->output_tensor != NULL
        ? SHOAL_OK
        : tensors_oom();
}

// Names every rank's tensors (maps[r]: rank r's spec index -> the plan's).
static int
world_name_tensors(
    tensors_ctx *c, const shi_plan_spec *specs, int size, int **maps)
{
    for (int r = 0; r < size; r++) {
        int st = tensors_of_rank(c, &specs[r], r);

        if (st < 0) {
            return st;
        }
        maps[r] = c->map;
        c->map  = NULL;
    }
    return SHOAL_OK;
}

static int
world_fill(tensors_ctx *c, const shi_plan_spec *specs, int size, int **maps)
{
    shi_plan_world *w     = c->w;
    size_t          esize = shoal_dtype_size(specs[0].dtype);
    int             st    = SHOAL_OK;

    for (int r = 0; r < size; r++) {
        const shi_plan_spec *s = &specs[r];

        grow_extents(w, c->shape_rank, s->inputs,
            s->several ? s->input_tensor : NULL, maps[r], s->ninputs);
        grow_extents(w, c->shape_rank, s->outputs,
            s->several ? s->output_tensor : NULL, maps[r], s->noutputs);
    }
    for (int k = 0; k < w->ntensors && st == SHOAL_OK; k++) {
        st      = check_shape(&w->tensors[k]);
        w->ndim = w->tensors[k].ndim > w->ndim ? w->tensors[k].ndim : w->ndim;
    }
    for (int r = 0; r < size && st == SHOAL_OK; r++) {
        const shi_plan_spec *s  = &specs[r];
        shi_plan_rank_boxes *rb = &w->ranks[r];

        st = world_alloc_rank(rb, s);
        if (st == SHOAL_OK) {
            st = pad_boxes(w, esize, s->inputs,
                s->several ? s->input_tensor : NULL, maps[r], s->ninputs, r,
                "inputs", rb->inputs, rb->input_tensor);
        }
        if (st == SHOAL_OK) {
            st = pad_boxes(w, esize, s->outputs,
                s->several ? s->output_tensor : NULL, maps[r], s->noutputs, r,
                "outputs", rb->outputs, rb->output_tensor);
        }
    }
    return st;
}

int
shi_plan_world_make(shi_plan_world *w, const shi_plan_spec *specs, int size)
{
    tensors_ctx c    = { .w = w };
    int       **maps = calloc((size_t) size, sizeof(int *));
    int         st;

    memset(w, 0, sizeof(*w));
    w->size  = size;
    w->ranks = calloc((size_t) size, sizeof(*w->ranks));
    st       = maps != NULL && w->ranks != NULL ? SHOAL_OK : tensors_oom();
    if (st == SHOAL_OK) {
        st = world_name_tensors(&c, specs, size, maps);
    }
    if (st == SHOAL_OK) {
        st = world_fill(&c, specs, size, maps);
    }
    for (int r = 0; maps != NULL && r < size; r++) {
        free(maps[r]);
    }
    free(maps);
    free(c.map);
    free(c.first_rank);
    free(c.shape_rank);
    free(c.named_by);
    if (st < 0) {
        shi_plan_world_free(w);
    }
    return st;
}

void
shi_plan_world_free(shi_plan_world *w)
{
    for (int r = 0; w->ranks != NULL && r < w->size; r++) {
        free(w->ranks[r].inputs);
        free(w->ranks[r].outputs);
        free(w->ranks[r].input_tensor);
        free(w->ranks[r].output_tensor);
    }
    for (int k = 0; w->tensors != NULL && k < w->ntensors; k++) {
        free(w->tensors[k].name);
    }
    free(w->ranks);
    free(w->tensors);
    memset(w, 0, sizeof(*w));
}
