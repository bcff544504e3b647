// Exchanging compile_op specs: every rank encodes its spec as int64s,
// all-gathers them, and decodes everyone's. A rank whose own arguments
// are unusable still takes part, sending its complaint instead of boxes,
// so that every rank fails with the same message instead of hanging.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "plan/plan_obj.h"

#define SPEC_HEADER    7 // magic ndim dtype reduction ninputs noutputs errlen
#define SPEC_MAX_VALUE (INT64_C(1) << 62) // |offsets| and |sizes| are below
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

// This rank's own complaint about its arguments, or "" when they can be
// encoded.
static void
spec_local_error(const shoal_plan_spec *s, char *err, size_t len)
{
    size_t nb;

    err[0] = '\0';
    if (s == NULL || s->size < sizeof(shoal_plan_spec)) {
        snprintf(err, len,
            "the spec is NULL or not made with "
            "SHOAL_PLAN_SPEC_INIT");
        return;
    }
    if (s->error != NULL) {
        snprintf(err, len, "%s", s->error);
        return;
    }
    if (s->ndim < 0 || s->ndim > SHI_BOX_MAX_DIMS) {
        snprintf(err, len, "ndim %d is out of range (0 .. %d)", s->ndim,
            SHI_BOX_MAX_DIMS);
        return;
    }
    if (s->reduction < SHOAL_PLAN_COPY || s->reduction >= SHOAL_OP_COUNT) {
        snprintf(err, len, "unknown reduction %d", s->reduction);
        return;
    }
    if (s->ninputs < 0 || s->noutputs < 0
        || (s->ninputs > 0 && s->inputs == NULL)
        || (s->noutputs > 0 && s->outputs == NULL)
        || (s->ndim > 0 && s->shape == NULL)) {
        snprintf(err, len, "a negative box count or a NULL array");
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

static int
spec_encode(const shoal_plan_spec *s, spec_blob *b)
{
    int    bad = 0;
    int    nd, ni, no;
    size_t elen, nbox, k = 0;

    spec_local_error(s, b->error, sizeof(b->error));
    bad  = b->error[0] != '\0';
    nd   = bad ? 0 : s->ndim;
    ni   = bad ? 0 : s->ninputs;
    no   = bad ? 0 : s->noutputs;
    elen = bad ? strlen(b->error) + 1 : 0;
    nbox = (size_t) (ni + no) * 2 * (size_t) nd;
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

// A blob that does not parse becomes its rank's error (a rank of another
// shoal version, or not shoal at all): every rank reports the same.
static int
spec_unreadable(shi_plan_spec *s, const char *why)
{
    char text[256];

    snprintf(
        text, sizeof(text), "sent a spec this shoal cannot read (%s)", why);
    free(s->inputs);
    free(s->outputs);
    s->inputs = s->outputs = NULL;
    s->ninputs = s->noutputs = s->ndim = 0;
    s->error                           = strdup(text);
    return s->error != NULL ? SHOAL_OK
                            : shi_error(SHOAL_ENOMEM, "out of memory");
}

// Boxes arrive as offsets and sizes, each checked to lie within
// +-SPEC_MAX_VALUE first, so lo + size cannot overflow.
static void
boxes_decode(shi_box *out, const int64_t *v, int n, int nd)
{
    for (int i = 0; i < n; i++, v += 2 * nd) {
        for (int d = 0; d < nd; d++) {
            out[i].lo[d] = v[d];
            out[i].hi[d] = v[d] + v[nd + d];
        }
    }
}

int
shi_plan_spec_decode(shi_plan_spec *s, const int64_t *v, size_t n)
{
    int64_t nd, ni, no, elen;
    size_t  need;

    memset(s, 0, sizeof(*s));
    s->reduction = SHOAL_PLAN_COPY;
    if (n < SPEC_HEADER || v[0] != SHI_PLAN_SPEC_MAGIC) {
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
    s->ninputs   = (int) ni;
    s->noutputs  = (int) no;
    v += SPEC_HEADER;
    memcpy(s->shape, v, sizeof(int64_t) * (size_t) nd);
    v += nd;
    s->inputs  = calloc((size_t) ni + 1, sizeof(shi_box));
    s->outputs = calloc((size_t) no + 1, sizeof(shi_box));
    if (s->inputs == NULL || s->outputs == NULL) {
        return shi_error(SHOAL_ENOMEM, "compile_op: out of memory");
    }
    boxes_decode(s->inputs, v, (int) ni, (int) nd);
    v += ni * 2 * nd;
    boxes_decode(s->outputs, v, (int) no, (int) nd);
    v += no * 2 * nd;
    if (elen > 0) {
        s->error = calloc((size_t) elen + 1, 1);
        if (s->error == NULL) {
            return shi_error(SHOAL_ENOMEM, "compile_op: out of memory");
        }
        memcpy(s->error, v, (size_t) elen);
    }
    return SHOAL_OK;
}

void
shi_plan_specs_free(shi_plan_spec *specs, int size)
{
    for (int r = 0; specs != NULL && r < size; r++) {
        free(specs[r].inputs);
        free(specs[r].outputs);
        free(specs[r].error);
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
