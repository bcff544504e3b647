// The compile_op planner (plan.h): cuts every output box into cells over
// the grid its covering inputs draw, and turns each cell's contributors
// into message pieces and sources.
//
// For one output box O with k intersecting inputs, the grid's lines in
// each dimension are O's and the intersections' bounds, so every grid cell
// is covered by a fixed set of inputs. Runs of cells along the innermost
// dimension with the same contributors are merged back into one cell.
// Cost per output: O(k) boxes to intersect, plus the grid (at most
// (2k + 1)^ndim cells, few in real redistributions, where an output meets a
// handful of inputs). Every rank plans every output, so that the coverage
// errors are the same everywhere; only its own messages and cells are kept.
// Only inputs of an output's own tensor meet it; boxes arrive padded to
// the plan's ndim (plan_tensors.c), so tensors of any ndim share the code.
#include <stdlib.h>

#include "base/error.h"
#include "plan/plan_impl.h"

// Fails a plan whose grid would have more cells than this: a pattern that
// fragmented is almost surely a mistake, and would take minutes.
#define BUILD_MAX_GRID_CELLS (1 << 24)
// Most bytes a plan may move in all, so that no message's size or piece
// offset (size_t) can wrap: each box is below this (plan_check.c), but a
// message sums many pieces.
#define BUILD_MAX_BYTES (INT64_C(1) << 62)

typedef struct build_cand {
    int     rank, input;
    shi_box box; // the input's part of the output
    int64_t first[SHI_BOX_MAX_DIMS], last[SHI_BOX_MAX_DIMS]; // grid ranges
} build_cand;

typedef struct build_ctx {
    const shi_plan_world *w;
    int                   size, rank, ndim, reduction;
    int                   tensor; // the tensor of the output being planned
    size_t                esize;
    shi_plan_msg         *send_by_peer, *recv_by_peer;
    shi_plan_layout      *out;
    int                   cell_cap;
    int64_t               moved; // bytes of every cell's contributors so far
    // Scratch for one output.
    build_cand *cands;
    int         ncands, cand_cap;
    int64_t    *bounds[SHI_BOX_MAX_DIMS];
    int64_t     nbounds[SHI_BOX_MAX_DIMS];
    int64_t    *count, *start; // per grid cell (start: CSR offsets)
    int        *who; // contributors per grid cell, candidate indexes
    int64_t     grid_cap, who_cap;
} build_ctx;

int
shi_plan_grow(void **arr, int *cap, int need, size_t elem)
{
    int   n = *cap > 0 ? *cap : 8;
    void *p;

    if (need <= *cap) {
        return 0;
    }
    while (n < need) {
        n *= 2;
    }
    p = realloc(*arr, (size_t) n * elem);
    if (p == NULL) {
        return -1;
    }
    *arr = p;
    *cap = n;
    return 0;
}

static int
oom(void)
{
    return shi_error(SHOAL_ENOMEM, "compile_op: out of memory while planning");
}

// ---- candidates and grid ---------------------------------------------------

static int
collect_candidates(build_ctx *c, const shi_box *o)
{
    shi_box x;

    c->ncands = 0;
    for (int s = 0; s < c->size; s++) {
        const shi_plan_rank_boxes *rb = &c->w->ranks[s];

        for (int i = 0; i < rb->ninputs; i++) {
            if (rb->input_tensor[i] != c->tensor
                || !shi_box_intersect(&rb->inputs[i], o, c->ndim, &x)) {
                continue;
            }
            if (shi_plan_grow((void **) &c->cands, &c->cand_cap, c->ncands + 1,
                    sizeof(build_cand))
                < 0) {
                return oom();
            }
            c->cands[c->ncands].rank  = s;
            c->cands[c->ncands].input = i;
            c->cands[c->ncands].box   = x;
            c->ncands++;
        }
    }
    return SHOAL_OK;
}

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;

    return (x > y) - (x < y);
}

static int64_t
bound_index(const int64_t *v, int64_t n, int64_t x)
{
    int64_t lo = 0, hi = n;

    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;

        if (v[mid] < x) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// The grid lines of each dimension, and each candidate's cell range.
static int
make_grid(build_ctx *c, const shi_box *o, int64_t *ncells)
{
    *ncells = 1;
    for (int d = 0; d < c->ndim; d++) {
        int64_t *v = realloc(
            c->bounds[d], sizeof(int64_t) * (size_t) (2 * c->ncands + 2));
        int64_t n = 0;

        if (v == NULL) {
            return oom();
        }
        c->bounds[d] = v;
        v[n++]       = o->lo[d];
        v[n++]       = o->hi[d];
        for (int k = 0; k < c->ncands; k++) {
            v[n++] = c->cands[k].box.lo[d];
            v[n++] = c->cands[k].box.hi[d];
        }
        qsort(v, (size_t) n, sizeof(int64_t), cmp_i64);
        int64_t u = 1;
        for (int64_t i = 1; i < n; i++) {
            if (v[i] != v[u - 1]) {
                v[u++] = v[i];
            }
        }
        c->nbounds[d] = u;
        for (int k = 0; k < c->ncands; k++) {
            c->cands[k].first[d] = bound_index(v, u, c->cands[k].box.lo[d]);
            c->cands[k].last[d]  = bound_index(v, u, c->cands[k].box.hi[d]);
        }
        *ncells *= u - 1;
        if (*ncells > BUILD_MAX_GRID_CELLS) {
            return shi_error(SHOAL_EINVAL,
                "compile_op: the inputs overlapping one output cut it into "
                "more than %d pieces; use fewer, larger boxes",
                BUILD_MAX_GRID_CELLS);
        }
    }
    return SHOAL_OK;
}

static int64_t
grid_index(const build_ctx *c, const int64_t *idx)
{
    int64_t lin = 0;

    for (int d = 0; d < c->ndim; d++) {
        lin = lin * (c->nbounds[d] - 1) + idx[d];
    }
    return lin;
}

// Calls add(c, cell, k) for every grid cell of candidate k, in order.
static void
for_cand_cells(build_ctx *c, int k, int64_t *slot_of, int fill)
{
    const build_cand *b = &c->cands[k];
    int64_t           idx[SHI_BOX_MAX_DIMS];
    int               d;

    for (d = 0; d < c->ndim; d++) {
        idx[d] = b->first[d];
    }
    for (;;) {
        int64_t cell = grid_index(c, idx);

        if (fill) {
            c->who[slot_of[cell]++] = k;
        } else {
            c->count[cell]++;
        }
        for (d = c->ndim - 1; d >= 0; d--) {
            if (++idx[d] < b->last[d]) {
                break;
            }
            idx[d] = b->first[d];
        }
        if (d < 0) {
            return;
        }
    }
}

// Contributors of every grid cell, in canonical order (CSR in count/start
// and who).
static int
fill_grid(build_ctx *c, int64_t ncells)
{
    int64_t total = 0;

    if (ncells > c->grid_cap) {
        int64_t *n = realloc(c->count, sizeof(int64_t) * (size_t) ncells);
        int64_t *s
            = n ? realloc(c->start, sizeof(int64_t) * (size_t) ncells) : NULL;

        if (n) {
            c->count = n;
        }
        if (s == NULL) {
            return oom();
        }
        c->start    = s;
        c->grid_cap = ncells;
    }
    memset(c->count, 0, sizeof(int64_t) * (size_t) ncells);
    for (int k = 0; k < c->ncands; k++) {
        for_cand_cells(c, k, NULL, 0);
    }
    for (int64_t i = 0; i < ncells; i++) {
        c->start[i] = total;
        total += c->count[i];
    }
    // Never NULL, even when no cell has a contributor (an output no input
    // covers): kept() points into `who` for every cell, empty ones too.
    if (total > c->who_cap || c->who == NULL) {
        int64_t cap = total > 0 ? total : 1;
        int    *w   = realloc(c->who, sizeof(int) * (size_t) cap);

        if (w == NULL) {
            return oom();
        }
        c->who     = w;
        c->who_cap = cap;
    }
    // Fill using start[] as moving cursors, then restore it.
    for (int k = 0; k < c->ncands; k++) {
        for_cand_cells(c, k, c->start, 1);
    }
    for (int64_t i = 0; i < ncells; i++) {
        c->start[i] -= c->count[i];
    }
    return SHOAL_OK;
}

// ---- emitting cells, pieces and sources ------------------------------------

static int
add_piece(build_ctx *c, shi_plan_msg *m, int peer, int input, const shi_box *b,
    size_t *offset)
{
    if (shi_plan_grow((void **) &m->pieces, &m->cap, m->npieces + 1,
            sizeof(shi_plan_piece))
        < 0) {
        return oom();
    }
    m->peer                      = peer;
    m->pieces[m->npieces].input  = input;
    m->pieces[m->npieces].tensor = c->tensor;
    m->pieces[m->npieces].box    = *b;
    m->pieces[m->npieces].offset = m->bytes;
    *offset                      = m->bytes;
    m->npieces++;
    m->bytes += (size_t) shi_box_volume(b, c->ndim) * c->esize;
    return SHOAL_OK;
}

// Adds a cell's traffic to the whole plan's. Every rank counts every cell,
// so a plan over the limit fails with the same message everywhere.
static int
count_moved(build_ctx *c, const shi_box *box, int n)
{
    int64_t bytes;

    if (__builtin_mul_overflow(
            shi_box_volume(box, c->ndim), (int64_t) c->esize * n, &bytes)
        || __builtin_add_overflow(c->moved, bytes, &c->moved)
        || c->moved > BUILD_MAX_BYTES) {
        return shi_error(SHOAL_EINVAL,
            "compile_op: the plan moves more than 2^62 bytes (each output "
            "element counts once per input it takes); use fewer or smaller "
            "overlapping boxes");
    }
    return SHOAL_OK;
}

// A cell of rank `d`'s output `o` with contributors who[0..n) (candidate
// indexes).
static int
emit_cell(
    build_ctx *c, int d, int o, const shi_box *box, const int *who, int n)
{
    shi_plan_layout *l    = c->out;
    shi_plan_cell   *cell = NULL;
    size_t           off;
    int              st = count_moved(c, box, n);

    if (st < 0) {
        return st;
    }
    if (d == c->rank) {
        if (shi_plan_grow((void **) &l->cells, &c->cell_cap, l->ncells + 1,
                sizeof(shi_plan_cell))
            < 0) {
            return oom();
        }
        cell           = &l->cells[l->ncells++];
        cell->output   = o;
        cell->box      = *box;
        cell->nsources = n;
        cell->sources  = calloc((size_t) n, sizeof(shi_plan_source));
        if (cell->sources == NULL) {
            cell->nsources = 0;
            return oom();
        }
    }
    for (int j = 0; j < n; j++) {
        const build_cand *k = &c->cands[who[j]];

        if (cell != NULL) {
            cell->sources[j].rank  = k->rank;
            cell->sources[j].input = k->input;
            cell->sources[j].msg   = -1;
            if (k->rank != d) {
                st = add_piece(c, &c->recv_by_peer[k->rank], k->rank, k->input,
                    box, &off);
                if (st < 0) {
                    return st;
                }
                cell->sources[j].msg    = k->rank; // remapped at the end
                cell->sources[j].offset = off;
            }
        } else if (k->rank == c->rank) {
            st = add_piece(c, &c->send_by_peer[d], d, k->input, box, &off);
            if (st < 0) {
                return st;
            }
        }
    }
    return SHOAL_OK;
}

static int
uncovered(build_ctx *c, int d, int o, const shi_box *o_box,
    const shi_box *first, int64_t missing)
{
    const shi_plan_gtensor *t = &c->w->tensors[c->tensor];
    char                    a[256], b[256], label[SHOAL_PLAN_MAX_NAME + 16];

    shi_plan_box_format(t, first, c->ndim, a, sizeof(a));
    shi_plan_box_format(t, o_box, c->ndim, b, sizeof(b));
    return shi_error(SHOAL_EINVAL,
        "compile_op: elements %s of rank %d's outputs[%d] (%sglobal box %s) "
        "are in no rank's inputs%s (%lld of its elements are uncovered)",
        a, d, o, shi_plan_tensor_label(t, label, sizeof(label)), b,
        t->name[0] != '\0' ? " of that tensor" : "", (long long) missing);
}

// The contributors a cell keeps: all of them with a reduction, the last
// (highest rank, then last listed input) without.
static void
kept(const build_ctx *c, int64_t cell, const int **who, int *n)
{
    *who = c->who + c->start[cell];
    *n   = (int) c->count[cell];
    if (c->reduction == SHI_PLAN_COPY && *n > 1) {
        *who += *n - 1;
        *n = 1;
    }
}

static int
same_who(const int *a, int na, const int *b, int nb)
{
    return na == nb && memcmp(a, b, sizeof(int) * (size_t) na) == 0;
}

// Walks the grid row by row (rows along the innermost dimension), merging
// runs of cells with the same contributors.
static int
emit_grid(build_ctx *c, int d, int o, const shi_box *o_box, int64_t ncells)
{
    int     nd   = c->ndim;
    int64_t row  = nd > 0 ? c->nbounds[nd - 1] - 1 : 1;
    int64_t miss = 0;
    shi_box first_miss;
    int64_t idx[SHI_BOX_MAX_DIMS] = { 0 };

    for (int64_t base = 0; base < ncells; base += row) {
        shi_box box = { 0 };
        int64_t j   = 0;

        for (int k = 0; k < nd - 1; k++) {
            box.lo[k] = c->bounds[k][idx[k]];
            box.hi[k] = c->bounds[k][idx[k] + 1];
        }
        while (j < row) {
            const int *w, *w2;
            int        n, n2;
            int64_t    e = j + 1;

            kept(c, base + j, &w, &n);
            while (e < row) {
                kept(c, base + e, &w2, &n2);
                if (!same_who(w, n, w2, n2)) {
                    break;
                }
                e++;
            }
            if (nd > 0) {
                box.lo[nd - 1] = c->bounds[nd - 1][j];
                box.hi[nd - 1] = c->bounds[nd - 1][e];
            }
            if (n == 0) {
                if (miss == 0) {
                    first_miss = box;
                }
                miss += shi_box_volume(&box, nd);
            } else if (miss == 0) {
                int st = emit_cell(c, d, o, &box, w, n);

                if (st < 0) {
                    return st;
                }
            }
            j = e;
        }
        for (int k = nd - 2; k >= 0; k--) {
            if (++idx[k] < c->nbounds[k] - 1) {
                break;
            }
            idx[k] = 0;
        }
    }
    return miss > 0 ? uncovered(c, d, o, o_box, &first_miss, miss) : SHOAL_OK;
}

static int
plan_output(build_ctx *c, int d, int o)
{
    const shi_box *ob = &c->w->ranks[d].outputs[o];
    int64_t        ncells;
    int            st;

    if (shi_box_volume(ob, c->ndim) == 0) {
        return SHOAL_OK;
    }
    c->tensor = c->w->ranks[d].output_tensor[o];
    st        = collect_candidates(c, ob);
    if (st == SHOAL_OK) {
        st = make_grid(c, ob, &ncells);
    }
    if (st == SHOAL_OK) {
        st = fill_grid(c, ncells);
    }
    return st == SHOAL_OK ? emit_grid(c, d, o, ob, ncells) : st;
}

// ---- the layout
// --------------------------------------------------------------

static int
copy_array(void **dst, const void *src, int n, size_t elem)
{
    *dst = calloc(n > 0 ? (size_t) n : 1, elem);
    if (*dst == NULL) {
        return oom();
    }
    memcpy(*dst, src, elem * (size_t) n);
    return SHOAL_OK;
}

// This rank's local tensors for boxes[0..n): one per box (the spec's
// one-tensor form), or one per tensor in the order the boxes first name
// them, each holding its whole tensor.
static int
make_locals(const shi_plan_world *w, int per_box, const shi_box *boxes,
    const int *tensor, int n, int *nlocal, shi_plan_local **locals,
    int **box_local)
{
    *nlocal    = 0;
    *locals    = calloc((size_t) n + 1, sizeof(shi_plan_local));
    *box_local = calloc((size_t) n + 1, sizeof(int));
    if (*locals == NULL || *box_local == NULL) {
        return oom();
    }
    for (int i = 0; i < n; i++) {
        const shi_plan_gtensor *t = &w->tensors[tensor[i]];
        int                     k = 0, pad = w->ndim - t->ndim;

        while (!per_box && k < *nlocal && (*locals)[k].tensor != tensor[i]) {
            k++;
        }
        (*box_local)[i] = per_box ? i : k;
        if (!per_box && k < *nlocal) {
            continue;
        }
        (*locals)[*nlocal].tensor = tensor[i];
        for (int d = 0; d < w->ndim; d++) {
            (*locals)[*nlocal].owner.lo[d] = per_box ? boxes[i].lo[d] : 0;
            (*locals)[*nlocal].owner.hi[d] = per_box ? boxes[i].hi[d]
                : d < pad                            ? 1
                                                     : t->shape[d - pad];
        }
        (*nlocal)++;
    }
    return SHOAL_OK;
}

// This rank's boxes, their tensors and its local tensors into the layout.
static int
layout_own(shi_plan_layout *l, const shi_plan_world *w, int per_box)
{
    const shi_plan_rank_boxes *me = &w->ranks[l->rank];
    int                        st = copy_array(
                               (void **) &l->inputs, me->inputs, me->ninputs, sizeof(shi_box));

    if (st == SHOAL_OK) {
        st = copy_array(
            (void **) &l->outputs, me->outputs, me->noutputs, sizeof(shi_box));
    }
    if (st == SHOAL_OK) {
        st = copy_array((void **) &l->input_tensor, me->input_tensor,
            me->ninputs, sizeof(int));
    }
    if (st == SHOAL_OK) {
        st = copy_array((void **) &l->output_tensor, me->output_tensor,
            me->noutputs, sizeof(int));
    }
    if (st == SHOAL_OK) {
        st = make_locals(w, per_box, me->inputs, me->input_tensor, me->ninputs,
            &l->nlocal_in, &l->local_in, &l->input_local);
    }
    if (st == SHOAL_OK) {
        st = make_locals(w, per_box, me->outputs, me->output_tensor,
            me->noutputs, &l->nlocal_out, &l->local_out, &l->output_local);
    }
    return st;
}

// Moves the non-empty per-peer messages into compact arrays; points cell
// sources at their message's index.
static int
compact_messages(build_ctx *c)
{
    shi_plan_layout *l     = c->out;
    int             *index = calloc((size_t) c->size, sizeof(int));

    l->sends = calloc((size_t) c->size, sizeof(shi_plan_msg));
    l->recvs = calloc((size_t) c->size, sizeof(shi_plan_msg));
    if (index == NULL || l->sends == NULL || l->recvs == NULL) {
        free(index);
        return oom();
    }
    for (int p = 0; p < c->size; p++) {
        if (c->send_by_peer[p].npieces > 0) {
            l->sends[l->nsends++] = c->send_by_peer[p];
            l->send_bytes += c->send_by_peer[p].bytes;
            c->send_by_peer[p].pieces = NULL;
        }
        if (c->recv_by_peer[p].npieces > 0) {
            index[p]              = l->nrecvs;
            l->recvs[l->nrecvs++] = c->recv_by_peer[p];
            l->recv_bytes += c->recv_by_peer[p].bytes;
            c->recv_by_peer[p].pieces = NULL;
        }
    }
    for (int i = 0; i < l->ncells; i++) {
        for (int j = 0; j < l->cells[i].nsources; j++) {
            shi_plan_source *s = &l->cells[i].sources[j];

            if (s->msg >= 0) {
                s->msg = index[s->msg];
            }
        }
    }
    free(index);
    return SHOAL_OK;
}

static void
build_ctx_free(build_ctx *c)
{
    for (int p = 0; c->send_by_peer != NULL && p < c->size; p++) {
        free(c->send_by_peer[p].pieces);
    }
    for (int p = 0; c->recv_by_peer != NULL && p < c->size; p++) {
        free(c->recv_by_peer[p].pieces);
    }
    free(c->send_by_peer);
    free(c->recv_by_peer);
    free(c->cands);
    for (int d = 0; d < SHI_BOX_MAX_DIMS; d++) {
        free(c->bounds[d]);
    }
    free(c->count);
    free(c->start);
    free(c->who);
}

static int
plan_all_outputs(build_ctx *c)
{
    for (int d = 0; d < c->size; d++) {
        for (int o = 0; o < c->w->ranks[d].noutputs; o++) {
            int st = plan_output(c, d, o);

            if (st < 0) {
                return st;
            }
        }
    }
    return SHOAL_OK;
}

int
shi_plan_build(
    shi_plan_layout *l, const shi_plan_spec *specs, int size, int rank)
{
    shi_plan_world w = { 0 };
    build_ctx      c = { 0 };
    int            st;

    memset(l, 0, sizeof(*l));
    st = shi_plan_check_specs(specs, size);
    if (st == SHOAL_OK) {
        st = shi_plan_world_make(&w, specs, size);
    }
    if (st < 0) {
        return st;
    }
    l->rank        = rank;
    l->size        = size;
    l->ndim        = w.ndim;
    l->dtype       = specs[rank].dtype;
    l->esize       = shoal_dtype_size(specs[rank].dtype);
    l->reduction   = specs[rank].reduction;
    l->ninputs     = w.ranks[rank].ninputs;
    l->noutputs    = w.ranks[rank].noutputs;
    c.w            = &w;
    c.size         = size;
    c.rank         = rank;
    c.ndim         = w.ndim;
    c.reduction    = l->reduction;
    c.esize        = l->esize;
    c.out          = l;
    c.send_by_peer = calloc((size_t) size, sizeof(shi_plan_msg));
    c.recv_by_peer = calloc((size_t) size, sizeof(shi_plan_msg));
    if (c.send_by_peer == NULL || c.recv_by_peer == NULL) {
        st = oom();
    }
    if (st == SHOAL_OK) {
        st = layout_own(l, &w, !specs[rank].several);
    }
    if (st == SHOAL_OK) {
        st = plan_all_outputs(&c);
    }
    if (st == SHOAL_OK) {
        st = compact_messages(&c);
    }
    build_ctx_free(&c);
    if (st == SHOAL_OK) { // the layout keeps the tensors
        l->tensors  = w.tensors;
        l->ntensors = w.ntensors;
        w.tensors   = NULL;
        w.ntensors  = 0;
    }
    shi_plan_world_free(&w);
    if (st < 0) {
        shi_plan_layout_free(l);
    }
    return st;
}

void
shi_plan_layout_free(shi_plan_layout *l)
{
    for (int i = 0; l->sends != NULL && i < l->nsends; i++) {
        free(l->sends[i].pieces);
    }
    for (int i = 0; l->recvs != NULL && i < l->nrecvs; i++) {
        free(l->recvs[i].pieces);
    }
    for (int i = 0; l->cells != NULL && i < l->ncells; i++) {
        free(l->cells[i].sources);
    }
    for (int k = 0; l->tensors != NULL && k < l->ntensors; k++) {
        free(l->tensors[k].name);
    }
    free(l->sends);
    free(l->recvs);
    free(l->cells);
    free(l->inputs);
    free(l->outputs);
    free(l->tensors);
    free(l->input_tensor);
    free(l->output_tensor);
    free(l->local_in);
    free(l->local_out);
    free(l->input_local);
    free(l->output_local);
    memset(l, 0, sizeof(*l));
}
