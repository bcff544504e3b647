// Exchanging compile_op specs: every rank encodes its spec as int64s,
// all-gathers them, and decodes everyone's. A rank whose own arguments
// are unusable still takes part, sending its complaint instead of boxes,
// so that every rank fails with the same message instead of hanging. A
// spec of one tensor keeps the first blob format; one of several tensors
// (names, per-tensor dimensions) has its own (plan_obj.h).
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "plan/plan_obj.h"

#define SPEC_HEADER 7 // magic ndim dtype reduction ninputs noutputs errlen
// magic dtype reduction ntensors ninputs noutputs
#define SPEC_TENSORS_HEADER 6
#define SPEC_MAX_VALUE      (INT64_C(1) << 62) // |offsets| and |sizes| are below
// Values one rank's spec may take (8 bytes each): far beyond any real
// spec, and a bound on what a peer can make every rank allocate.
#define SPEC_MAX_VALUES (INT64_C(1) << 24)

typedef struct spec_blob {
    int64_t *v;
    size_t   n;
    char     error[512];
} spec_blob;

static int
values_ok(const int64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i] >= SPEC_MAX_VALUE || v[i] <= -SPEC_MAX_VALUE) {
            return 0;
        }
    }
    return 1;
}

// Checks a several-tensors spec's own fields: its tensors, and each box's
// tensor index and values (whose count depends on its tensor).
static void
tensors_local_error(const shoal_plan_spec *s, char *err, size_t len)
{
    const int64_t *boxes[2] = { s->inputs, s->outputs };
    const int     *which[2] = { s->input_tensor, s->output_tensor };
    int            count[2] = { s->ninputs, s->noutputs };
    const char    *what[2]  = { "input", "output" };

    if ((s->ninputs > 0 && s->input_tensor == NULL)
        || (s->noutputs > 0 && s->output_tensor == NULL)) {
        snprintf(err, len, "input_tensor or output_tensor is NULL");
        return;
    }
    for (int k = 0; k < s->ntensors; k++) {
        const shoal_plan_tensor *t = &s->tensors[k];

        if (t->name == NULL || t->name[0] == '\0'
            || strlen(t->name) > SHOAL_PLAN_MAX_NAME) {
            snprintf(err, len, "tensors[%d] needs a name of 1 to %d bytes", k,
                SHOAL_PLAN_MAX_NAME);
            return;
        }
        if (t->ndim < 0 || t->ndim > SHI_BOX_MAX_DIMS) {
            snprintf(err, len, "tensor '%s' has %d dimensions (0 .. %d)",
                t->name, t->ndim, SHI_BOX_MAX_DIMS);
            return;
        }
        if (t->shape != NULL && !values_ok(t->shape, (size_t) t->ndim)) {
            snprintf(err, len, "tensor '%s' has a size beyond 2^62", t->name);
            return;
        }
    }
    for (int side = 0; side < 2; side++) {
        const int64_t *v = boxes[side];

        for (int i = 0; i < count[side]; i++) {
            int k = which[side][i];

            if (k < 0 || k >= s->ntensors) {
                snprintf(err, len,
                    "%s_tensor[%d] is %d, not an index into the %d tensors",
                    what[side], i, k, s->ntensors);
                return;
            }
            if (!values_ok(v, 2 * (size_t) s->tensors[k].ndim)) {
                snprintf(err, len, "an offset or size beyond 2^62");
                return;
            }
            v += 2 * s->tensors[k].ndim;
        }
    }
}

// This rank's own complaint about its arguments, or "" when they can be
// encoded. *s gets the spec with the fields of a smaller (older) struct
// at their defaults.
static void
spec_local_error(
    const shoal_plan_spec *in, shoal_plan_spec *s, char *err, size_t len)
{
    const shoal_plan_spec defaults = SHOAL_PLAN_SPEC_INIT;
    size_t                nb;

    err[0] = '\0';
    *s     = defaults;
    if (in == NULL || in->size < offsetof(shoal_plan_spec, ntensors)) {
        snprintf(err, len,
            "the spec is NULL or not made with "
            "SHOAL_PLAN_SPEC_INIT");
        return;
    }
    memcpy(s, in, in->size < sizeof(*s) ? in->size : sizeof(*s));
    if (s->error != NULL) {
        snprintf(err, len, "%s", s->error);
        return;
    }
    if (s->reduction < SHOAL_PLAN_COPY || s->reduction >= SHOAL_OP_COUNT) {
        snprintf(err, len, "unknown reduction %d", s->reduction);
        return;
    }
    if (s->ninputs < 0 || s->noutputs < 0 || s->ntensors < 0
        || (s->ninputs > 0 && s->inputs == NULL)
        || (s->noutputs > 0 && s->outputs == NULL)) {
        snprintf(err, len, "a negative count or a NULL array");
        return;
    }
    if (s->ntensors > 0 && s->tensors == NULL) {
        snprintf(err, len, "ntensors is %d and tensors is NULL", s->ntensors);
        return;
    }
    if (s->tensors != NULL) {
        tensors_local_error(s, err, len);
        return;
    }
    if (s->ndim < 0 || s->ndim > SHI_BOX_MAX_DIMS) {
        snprintf(err, len, "ndim %d is out of range (0 .. %d)", s->ndim,
            SHI_BOX_MAX_DIMS);
        return;
    }
    if (s->ndim > 0 && s->shape == NULL) {
        snprintf(err, len, "a negative count or a NULL array");
        return;
    }
    nb = (size_t) (s->ninputs + s->noutputs) * 2 * (size_t) s->ndim;
    if (!values_ok(s->shape, (size_t) s->ndim)
        || !values_ok(s->inputs, (size_t) s->ninputs * 2 * (size_t) s->ndim)
        || !values_ok(
            s->outputs, nb - (size_t) s->ninputs * 2 * (size_t) s->ndim)) {
        snprintf(err, len, "an offset or size beyond 2^62");
    }
}

// The one-tensor blob: also carries any rank's complaint.
static int
spec_encode_one(const shoal_plan_spec *s, spec_blob *b)
{
    int    bad  = b->error[0] != '\0';
    int    nd   = bad ? 0 : s->ndim;
    int    ni   = bad ? 0 : s->ninputs;
    int    no   = bad ? 0 : s->noutputs;
    size_t elen = bad ? strlen(b->error) + 1 : 0;
    size_t nbox = (size_t) (ni + no) * 2 * (size_t) nd, k = 0;

    b->n = SPEC_HEADER + (size_t) nd + nbox + (elen + 7) / 8;
    b->v = calloc(b->n, sizeof(int64_t));
    if (b->v == NULL) {
        return shi_error(SHOAL_ENOMEM, "compile_op: out of memory");
    }
    b->v[k++] = SHI_PLAN_SPEC_MAGIC;
    b->v[k++] = nd;
    b->v[k++] = bad ? 0 : (int64_t) s->dtype;
    b->v[k++] = bad ? SHOAL_PLAN_COPY : s->reduction;
    b->v[k++] = ni;
    b->v[k++] = no;
    b->v[k++] = (int64_t) elen;
    if (!bad) {
        memcpy(b->v + k, s->shape, sizeof(int64_t) * (size_t) nd);
        k += (size_t) nd;
        memcpy(b->v + k, s->inputs, sizeof(int64_t) * (size_t) ni * 2 * nd);
        k += (size_t) ni * 2 * (size_t) nd;
        memcpy(b->v + k, s->outputs, sizeof(int64_t) * (size_t) no * 2 * nd);
    } else {
        memcpy(b->v + k, b->error, elen);
    }
    return SHOAL_OK;
}

// Values the several-tensors blob of a checked spec takes.
static size_t
spec_tensors_size(const shoal_plan_spec *s)
{
    size_t n = SPEC_TENSORS_HEADER;

    for (int k = 0; k < s->ntensors; k++) {
        const shoal_plan_tensor *t = &s->tensors[k];

        n += 3 + (t->shape != NULL ? (size_t) t->ndim : 0)
            + (strlen(t->name) + 7) / 8;
    }
    for (int i = 0; i < s->ninputs; i++) {
        n += 1 + 2 * (size_t) s->tensors[s->input_tensor[i]].ndim;
    }
    for (int o = 0; o < s->noutputs; o++) {
        n += 1 + 2 * (size_t) s->tensors[s->output_tensor[o]].ndim;
    }
    return n;
}

static int64_t *
put_boxes(int64_t *v, const shoal_plan_spec *s, const int64_t *boxes,
    const int *tensor, int n)
{
    for (int i = 0; i < n; i++) {
        size_t m = 2 * (size_t) s->tensors[tensor[i]].ndim;

        *v++ = tensor[i];
        memcpy(v, boxes, m * sizeof(int64_t));
        v += m;
        boxes += m;
    }
    return v;
}

static int
spec_encode_tensors(const shoal_plan_spec *s, spec_blob *b)
{
    int64_t *v;

    b->n = spec_tensors_size(s);
    b->v = calloc(b->n, sizeof(int64_t));
    if (b->v == NULL) {
        return shi_error(SHOAL_ENOMEM, "compile_op: out of memory");
    }
    v    = b->v;
    *v++ = SHI_PLAN_SPEC_MAGIC_TENSORS;
    *v++ = (int64_t) s->dtype;
    *v++ = s->reduction;
    *v++ = s->ntensors;
    *v++ = s->ninputs;
    *v++ = s->noutputs;
    for (int k = 0; k < s->ntensors; k++) {
        const shoal_plan_tensor *t    = &s->tensors[k];
        size_t                   nlen = strlen(t->name);

        *v++ = t->ndim;
        *v++ = t->shape != NULL;
        *v++ = (int64_t) nlen;
        if (t->shape != NULL) {
            memcpy(v, t->shape, sizeof(int64_t) * (size_t) t->ndim);
            v += t->ndim;
        }
        memcpy(v, t->name, nlen); // the rest of its last value stays 0
        v += (nlen + 7) / 8;
    }
    v = put_boxes(v, s, s->inputs, s->input_tensor, s->ninputs);
    put_boxes(v, s, s->outputs, s->output_tensor, s->noutputs);
    return SHOAL_OK;
}

static int
spec_encode(const shoal_plan_spec *in, spec_blob *b)
{
    shoal_plan_spec s;

    spec_local_error(in, &s, b->error, sizeof(b->error));
    if (b->error[0] == '\0' && s.tensors != NULL) {
        return spec_encode_tensors(&s, b);
    }
    return spec_encode_one(&s, b);
}

// A blob that does not parse becomes its rank's error (a rank of another
// shoal version, or not shoal at all): every rank reports the same.
static int
spec_unreadable(shi_plan_spec *s, const char *why)
{
    char text[256];

    snprintf(
        text, sizeof(text), "sent a spec this shoal cannot read (%s)", why);
    shi_plan_spec_free(s);
    s->error = strdup(text);
    return s->error != NULL ? SHOAL_OK
                            : shi_error(SHOAL_ENOMEM, "out of memory");
}

// Boxes arrive as offsets and sizes, each checked to lie within
// +-SPEC_MAX_VALUE first, so lo + size cannot overflow.
static void
box_decode(shi_box *out, const int64_t *v, int nd)
{
    for (int d = 0; d < nd; d++) {
        out->lo[d] = v[d];
        out->hi[d] = v[d] + v[nd + d];
    }
}

static int
spec_alloc_boxes(shi_plan_spec *s, int64_t ni, int64_t no)
{
    s->ninputs  = (int) ni;
    s->noutputs = (int) no;
    s->inputs   = calloc((size_t) ni + 1, sizeof(shi_box));
    s->outputs  = calloc((size_t) no + 1, sizeof(shi_box));
    if (s->inputs == NULL || s->outputs == NULL) {
        return shi_error(SHOAL_ENOMEM, "compile_op: out of memory");
    }
    return SHOAL_OK;
}

static int
spec_decode_one(shi_plan_spec *s, const int64_t *v, size_t n)
{
    int64_t nd, ni, no, elen;
    size_t  need;
    int     st;

    if (n < SPEC_HEADER) {
        return spec_unreadable(s, "another shoal version?");
    }
    nd   = v[1];
    ni   = v[4];
    no   = v[5];
    elen = v[6];
    if (nd < 0 || nd > SHI_BOX_MAX_DIMS || ni < 0 || no < 0 || elen < 0
        || ni > INT32_MAX / 2 || no > INT32_MAX / 2 || elen > (1 << 20)) {
        return spec_unreadable(s, "header values out of range");
    }
    // Boxes of a 0-d spec take no values: their count is bounded by the
    // values received, so a short blob cannot make ranks allocate much.
    if ((uint64_t) (ni + no) > n) {
        return spec_unreadable(s, "more boxes than values");
    }
    need = SPEC_HEADER + (size_t) nd + (size_t) ((ni + no) * 2 * nd)
        + (size_t) (elen + 7) / 8;
    if (need != n) {
        return spec_unreadable(s, "its length does not match its header");
    }
    if (!values_ok(v + SPEC_HEADER, (size_t) (nd + (ni + no) * 2 * nd))) {
        return spec_unreadable(s, "a shape, offset or size beyond 2^62");
    }
    s->ndim      = (int) nd;
    s->dtype     = (int) v[2];
    s->reduction = (int) v[3];
    v += SPEC_HEADER;
    memcpy(s->shape, v, sizeof(int64_t) * (size_t) nd);
    v += nd;
    if ((st = spec_alloc_boxes(s, ni, no)) < 0) {
        return st;
    }
    for (int i = 0; i < ni + no; i++, v += 2 * nd) {
        box_decode(i < ni ? &s->inputs[i] : &s->outputs[i - ni], v, (int) nd);
    }
    if (elen > 0) {
        s->error = calloc((size_t) elen + 1, 1);
        if (s->error == NULL) {
            return shi_error(SHOAL_ENOMEM, "compile_op: out of memory");
        }
        memcpy(s->error, v, (size_t) elen);
    }
    return SHOAL_OK;
}

// Reading a several-tensors blob: each take() either yields the next k
// values or says the blob ended early.
typedef struct spec_cursor {
    const int64_t *v;
    size_t         n, at;
} spec_cursor;

static const int64_t *
take(spec_cursor *c, size_t k)
{
    const int64_t *p = c->v + c->at;

    if (k > c->n - c->at) {
        return NULL;
    }
    c->at += k;
    return p;
}

// One tensor's ndim, shape and name: SHOAL_OK (*why set when the values
// do not make a tensor) or SHOAL_ENOMEM.
static int
tensor_decode(shi_plan_tensor *t, spec_cursor *c, const char **why)
{
    const int64_t *h = take(c, 3), *shape = NULL, *name = NULL;
    int64_t        nlen;

    if (h == NULL) {
        *why = "it ends early";
        return SHOAL_OK;
    }
    nlen = h[2];
    if (h[0] < 0 || h[0] > SHI_BOX_MAX_DIMS || (h[1] != 0 && h[1] != 1)
        || nlen < 1 || nlen > SHOAL_PLAN_MAX_NAME) {
        *why = "tensor values out of range";
        return SHOAL_OK;
    }
    t->ndim      = (int) h[0];
    t->has_shape = (int) h[1];
    shape        = take(c, t->has_shape ? (size_t) t->ndim : 0);
    name         = shape != NULL ? take(c, (size_t) (nlen + 7) / 8) : NULL;
    if (name == NULL) {
        *why = "it ends early";
    } else if (!values_ok(shape, t->has_shape ? (size_t) t->ndim : 0)) {
        *why = "a shape beyond 2^62";
    } else if (memchr(name, '\0', (size_t) nlen) != NULL) {
        *why = "a tensor name with a NUL byte";
    }
    if (*why != NULL) {
        return SHOAL_OK;
    }
    if (t->has_shape) {
        memcpy(t->shape, shape, sizeof(int64_t) * (size_t) t->ndim);
    }
    t->name = calloc((size_t) nlen + 1, 1);
    if (t->name == NULL) {
        return shi_error(SHOAL_ENOMEM, "compile_op: out of memory");
    }
    memcpy(t->name, name, (size_t) nlen);
    return SHOAL_OK;
}

static const char *
boxes_decode(
    const shi_plan_spec *s, spec_cursor *c, shi_box *out, int *tensor, int n)
{
    for (int i = 0; i < n; i++) {
        const int64_t *k = take(c, 1), *v;
        int            nd;

        if (k == NULL) {
            return "it ends early";
        }
        if (*k < 0 || *k >= s->ntensors) {
            return "a box of no tensor";
        }
        tensor[i] = (int) *k;
        nd        = s->tensors[*k].ndim;
        if ((v = take(c, 2 * (size_t) nd)) == NULL) {
            return "it ends early";
        }
        if (!values_ok(v, 2 * (size_t) nd)) {
            return "an offset or size beyond 2^62";
        }
        box_decode(&out[i], v, nd);
    }
    return NULL;
}

static int
spec_decode_tensors(shi_plan_spec *s, const int64_t *v, size_t n)
{
    spec_cursor    c   = { v, n, 0 };
    const int64_t *h   = take(&c, SPEC_TENSORS_HEADER);
    const char    *why = NULL;
    int            st  = SHOAL_OK;

    if (h == NULL) {
        return spec_unreadable(s, "it ends early");
    }
    // Each tensor takes 4 values at least, each box 1: the counts are
    // bounded by the values received.
    if (h[3] < 0 || h[3] > (int64_t) (n / 4) || h[4] < 0 || h[5] < 0
        || (uint64_t) h[4] + (uint64_t) h[5] > n) {
        return spec_unreadable(s, "header values out of range");
    }
    s->several   = 1;
    s->dtype     = (int) h[1];
    s->reduction = (int) h[2];
    s->tensors   = calloc((size_t) h[3] + 1, sizeof(shi_plan_tensor));
    if (s->tensors == NULL) {
        return shi_error(SHOAL_ENOMEM, "compile_op: out of memory");
    }
    while (st == SHOAL_OK && why == NULL && s->ntensors < h[3]) {
        st = tensor_decode(&s->tensors[s->ntensors++], &c, &why);
    }
    if (st == SHOAL_OK && why == NULL) {
        st = spec_alloc_boxes(s, h[4], h[5]);
    }
    if (st < 0 || why != NULL) {
        return st < 0 ? st : spec_unreadable(s, why);
    }
    s->input_tensor  = calloc((size_t) h[4] + 1, sizeof(int));
    s->output_tensor = calloc((size_t) h[5] + 1, sizeof(int));
    if (s->input_tensor == NULL || s->output_tensor == NULL) {
        return shi_error(SHOAL_ENOMEM, "compile_op: out of memory");
    }
    why = boxes_decode(s, &c, s->inputs, s->input_tensor, s->ninputs);
    if (why == NULL) {
        why = boxes_decode(s, &c, s->outputs, s->output_tensor, s->noutputs);
    }
    if (why == NULL && c.at != n) {
        why = "its length does not match its header";
    }
    return why != NULL ? spec_unreadable(s, why) : SHOAL_OK;
}

int
shi_plan_spec_decode(shi_plan_spec *s, const int64_t *v, size_t n)
{
    memset(s, 0, sizeof(*s));
    s->reduction = SHOAL_PLAN_COPY;
    if (n >= 1 && v[0] == SHI_PLAN_SPEC_MAGIC) {
        return spec_decode_one(s, v, n);
    }
    if (n >= 1 && v[0] == SHI_PLAN_SPEC_MAGIC_TENSORS) {
        return spec_decode_tensors(s, v, n);
    }
    return spec_unreadable(s, "another shoal version?");
}

void
shi_plan_spec_free(shi_plan_spec *s)
{
    for (int k = 0; s->tensors != NULL && k < s->ntensors; k++) {
        free(s->tensors[k].name);
    }
    free(s->tensors);
    free(s->inputs);
    free(s->outputs);
    free(s->input_tensor);
    free(s->output_tensor);
    free(s->error);
    memset(s, 0, sizeof(*s));
    s->reduction = SHOAL_PLAN_COPY;
}

void
shi_plan_specs_free(shi_plan_spec *specs, int size)
{
    for (int r = 0; specs != NULL && r < size; r++) {
        shi_plan_spec_free(&specs[r]);
    }
    free(specs);
}

static int
gather_blobs(
    shoal_comm *comm, const spec_blob *b, int64_t **all, size_t **counts)
{
    int64_t *lens  = calloc((size_t) comm->size, sizeof(int64_t));
    size_t   total = 0;
    int64_t  mine  = (int64_t) b->n;
    int      st;

    *counts = calloc((size_t) comm->size, sizeof(size_t));
    if (lens == NULL || *counts == NULL) {
        free(lens);
        return shi_error(SHOAL_ENOMEM, "compile_op: out of memory");
    }
    st = shoal_all_gather(comm, &mine, lens, 1, SHOAL_INT64);
    for (int r = 0; st == SHOAL_OK && r < comm->size; r++) {
        // Every rank sees the same lengths, so all refuse alike.
        if (lens[r] < 0 || lens[r] > SPEC_MAX_VALUES) {
            st = shi_error(SHOAL_EINVAL,
                "compile_op: rank %d sent a spec of %lld values; at most "
                "%lld are accepted",
                r, (long long) lens[r], (long long) SPEC_MAX_VALUES);
            break;
        }
        (*counts)[r] = (size_t) lens[r];
        total += (size_t) lens[r];
    }
    free(lens);
    if (st < 0) {
        return st;
    }
    *all = malloc(total * sizeof(int64_t));
    if (*all == NULL) {
        return shi_error(SHOAL_ENOMEM, "compile_op: out of memory");
    }
    return shoal_all_gather_v(comm, b->v, *all, *counts, SHOAL_INT64);
}

int
shi_plan_exchange(
    shoal_comm *comm, const shoal_plan_spec *mine, shi_plan_spec **specs)
{
    spec_blob b      = { 0 };
    int64_t  *all    = NULL;
    size_t   *counts = NULL;
    size_t    at     = 0;
    int       st     = spec_encode(mine, &b);

    *specs = NULL;
    if (st == SHOAL_OK) {
        st = gather_blobs(comm, &b, &all, &counts);
    }
    if (st == SHOAL_OK) {
        *specs = calloc((size_t) comm->size, sizeof(shi_plan_spec));
        st     = *specs != NULL ? SHOAL_OK
                                : shi_error(SHOAL_ENOMEM, "out of memory");
    }
    for (int r = 0; st == SHOAL_OK && r < comm->size; r++) {
        st = shi_plan_spec_decode(&(*specs)[r], all + at, counts[r]);
        at += counts[r];
    }
    free(b.v);
    free(all);
    free(counts);
    if (st < 0) {
        shi_plan_specs_free(*specs, comm->size);
        *specs = NULL;
    }
    return st;
}
