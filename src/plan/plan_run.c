// Running a compiled plan: one message per peer and direction, posted as
// shoal's own point-to-point transfers (a negative tag, so they never meet
// user messages), then the cells written or reduced into the outputs.
//
// Copies avoided where the layout allows: a message of one piece is sent
// from the input itself, and one that fills a single-source cell is
// received into the output itself, when that piece or cell is dense there
// or when the transport moves strided data (shared memory: the receiver
// then reads the piece from the sender's input straight into its output,
// in its progress engine, one copy in all); a cell fed by this rank's own
// input is copied straight across at start. Everything else is packed into
// (kept) staging buffers. When inputs and outputs share memory every local
// read is staged at start, so no output write can change an input that is
// still to be read.
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "algo/kernels/reduce.h"
#include "base/align.h"
#include "base/error.h"
#include "core/ops.h"
#include "plan/plan_obj.h"

// Strided transfers pay where their contiguous runs are long: shorter ones
// are packed (a copy moves them faster than a transfer piece by piece).
#define PLAN_MIN_RUN 512

// The transfer layout of view v: NULL when it is dense (or empty), else
// *slot filled; *ok 0 when neither (the data must be packed).
static const shi_strided *
transfer_layout(
    const shoal_plan *p, const shi_view *v, shi_strided *slot, int *ok)
{
    *ok = 1;
    if (shi_view_is_dense(v, p->l.ndim)) {
        return NULL;
    }
    *ok = shi_p2p_strided_ok(p->comm)
        && shi_view_strided(v, p->l.ndim, p->l.esize, PLAN_MIN_RUN, slot);
    return *ok ? slot : NULL;
}

static unsigned char *
stage_alloc(unsigned char **slot, size_t bytes)
{
    if (*slot == NULL) {
        *slot = aligned_alloc(64, shi_round_up(bytes, 64));
    }
    return *slot;
}

// Box b of input box `input`, in the local tensor holding that box.
static void
input_view(const shoal_plan *p, shi_view *v, int input, const shi_box *b)
{
    const shi_plan_layout *l = &p->l;
    int                    k = l->input_local[input];

    shi_view_of(v, l->ndim, b, &l->local_in[k].owner, p->in_base[k],
        p->in_strides + (size_t) k * (size_t) l->ndim, l->esize);
}

static void
output_view(const shoal_plan *p, shi_view *v, int output, const shi_box *b)
{
    const shi_plan_layout *l = &p->l;
    int                    k = l->output_local[output];

    shi_view_of(v, l->ndim, b, &l->local_out[k].owner, p->out_base[k],
        p->out_strides + (size_t) k * (size_t) l->ndim, l->esize);
}

// Packs input box `b` of input `input` densely at dst.
static void
pack_input(const shoal_plan *p, void *dst, int input, const shi_box *b)
{
    shi_view from, to;

    input_view(p, &from, input, b);
    shi_view_packed(&to, p->l.ndim, b, dst);
    shi_view_copy(&to, &from, p->l.ndim, p->l.esize);
}

// ---- checking the arguments
// -------------------------------------------------

// A local tensor's strides padded to the plan's ndim: the caller's (its
// tensor's own ndim of them) or row-major over the box it holds, and 0
// for the leading dimensions of extent 1 that padding added.
static void
copy_strides(int64_t *dst, const int64_t *src, const shi_box *owner, int ndim,
    int own_ndim)
{
    int     pad   = ndim - own_ndim;
    int64_t dense = 1;

    for (int d = ndim - 1; d >= 0; d--) {
        dst[d] = d < pad ? 0 : src != NULL ? src[d - pad] : dense;
        dense *= owner->hi[d] - owner->lo[d];
    }
}

static int
own_ndim(const shi_plan_layout *l, const shi_plan_local *k)
{
    return l->tensors[k->tensor].ndim;
}

static int
check_tensors(const shi_plan_layout *l, const char *what, int n, int want,
    const void *const *bases, const shi_plan_local *locals, char *err,
    size_t len)
{
    if (n != want) {
        snprintf(err, len,
            "%d tensors given as %s, the op was compiled with %d", n, what,
            want);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (shi_box_volume(&locals[i].owner, l->ndim) == 0) {
            continue;
        }
        if (bases == NULL || bases[i] == NULL) {
            snprintf(err, len, "%s[%d] is NULL", what, i);
            return -1;
        }
    }
    return 0;
}

// An output whose elements share memory (stride 0 over more than one
// element) would be written twice.
static int
check_outputs_distinct(const shi_plan_layout *l, const int64_t *const *strides,
    char *err, size_t len)
{
    for (int i = 0; i < l->nlocal_out && strides != NULL; i++) {
        const shi_box *b   = &l->local_out[i].owner;
        int            own = own_ndim(l, &l->local_out[i]);
        int            pad = l->ndim - own;

        for (int d = 0; d < own && strides[i] != NULL; d++) {
            if (strides[i][d] == 0 && b->hi[pad + d] - b->lo[pad + d] > 1) {
                snprintf(err, len,
                    "outputs[%d] has stride 0 in dimension %d, so its "
                    "elements overlap",
                    i, d);
                return -1;
            }
        }
    }
    return 0;
}

// Every rank learns whether some rank's arguments are bad: the lowest such
// rank's number travels in a MIN all-reduce. A bad rank reports its own
// complaint, the others name the lowest bad rank.
static int
agree(shoal_plan *p, const char *err)
{
    int32_t mine = err[0] != '\0' ? p->comm->rank : INT32_MAX, low;
    int     st   = shoal_all_reduce(
              p->comm, &mine, &low, 1, SHOAL_INT32, SHOAL_REDUCE_OP(SHOAL_MIN));

    if (st < 0 || low == INT32_MAX) {
        return st;
    }
    if (err[0] != '\0') { // this rank's own complaint says the most
        return shi_error(
            SHOAL_EINVAL, "compile_op run: %s; nothing was sent", err);
    }
    return shi_error(SHOAL_EINVAL,
        "compile_op run: rank %d passed bad tensors (its error says which); "
        "nothing was sent",
        low);
}

// ---- aliasing
// -----------------------------------------------------------------

typedef struct span {
    uintptr_t lo, hi;
} span;

static int
tensor_span(const shoal_plan *p, unsigned char *base, const int64_t *strides,
    const shi_box *b, span *s)
{
    intptr_t lo = 0, hi = 0;

    if (base == NULL || shi_box_volume(b, p->l.ndim) == 0) {
        return 0;
    }
    for (int d = 0; d < p->l.ndim; d++) {
        intptr_t step = (intptr_t) ((b->hi[d] - b->lo[d] - 1) * strides[d]);

        lo += step < 0 ? step : 0;
        hi += step > 0 ? step : 0;
    }
    s->lo = (uintptr_t) base + (uintptr_t) (lo * (intptr_t) p->l.esize);
    s->hi = (uintptr_t) base + (uintptr_t) ((hi + 1) * (intptr_t) p->l.esize);
    return 1;
}

static int
inputs_meet_outputs(const shoal_plan *p)
{
    const shi_plan_layout *l  = &p->l;
    size_t                 nd = (size_t) l->ndim;
    span                   a, b;

    for (int i = 0; i < l->nlocal_in; i++) {
        if (!tensor_span(p, p->in_base[i], p->in_strides + (size_t) i * nd,
                &l->local_in[i].owner, &a)) {
            continue;
        }
        for (int o = 0; o < l->nlocal_out; o++) {
            if (tensor_span(p, p->out_base[o],
                    p->out_strides + (size_t) o * nd, &l->local_out[o].owner,
                    &b)
                && a.lo < b.hi && b.lo < a.hi) {
                return 1;
            }
        }
    }
    return 0;
}

// ---- starting
// ---------------------------------------------------------------

static int
post_recvs(shoal_plan *p)
{
    const shi_plan_layout *l = &p->l;

    for (int i = 0; i < l->nrecvs; i++) {
        const shi_plan_msg *m      = &l->recvs[i];
        int                 c      = p->recv_cell[i];
        unsigned char      *dest   = NULL;
        const shi_strided  *layout = NULL;
        shi_view            v;
        int                 ok = 0;

        p->recv_direct[i] = 0;
        if (!p->alias && c >= 0) {
            output_view(p, &v, l->cells[c].output, &l->cells[c].box);
            layout = transfer_layout(p, &v, &p->recv_layout[i], &ok);
            if (ok) {
                dest              = v.base;
                p->recv_direct[i] = 1;
            }
        }
        if (dest == NULL
            && (dest = stage_alloc(&p->recv_stage[i], m->bytes)) == NULL) {
            return shi_error(SHOAL_ENOMEM, "compile_op run: out of memory");
        }
        int st = shi_p2p_start(p->comm, SHI_OP_RECV, dest, m->bytes, layout,
            m->peer, p->tag, &p->rreq[i]);
        if (st < 0) {
            return st;
        }
    }
    return SHOAL_OK;
}

static int
post_sends(shoal_plan *p)
{
    const shi_plan_layout *l = &p->l;

    for (int i = 0; i < l->nsends; i++) {
        const shi_plan_msg *m      = &l->sends[i];
        unsigned char      *src    = NULL;
        const shi_strided  *layout = NULL;
        shi_view            v;
        int                 ok = 0;

        if (!p->alias && m->npieces == 1) {
            input_view(p, &v, m->pieces[0].input, &m->pieces[0].box);
            layout = transfer_layout(p, &v, &p->send_layout[i], &ok);
            src    = ok ? v.base : NULL;
        }
        if (src == NULL) {
            src = stage_alloc(&p->send_stage[i], m->bytes);
            if (src == NULL) {
                return shi_error(
                    SHOAL_ENOMEM, "compile_op run: out of memory");
            }
            for (int k = 0; k < m->npieces; k++) {
                pack_input(p, src + m->pieces[k].offset, m->pieces[k].input,
                    &m->pieces[k].box);
            }
        }
        int st = shi_p2p_start(p->comm, SHI_OP_SEND, src, m->bytes, layout,
            m->peer, p->tag, &p->sreq[i]);
        if (st < 0) {
            return st;
        }
    }
    return SHOAL_OK;
}

// Local reads: staged in full when inputs and outputs share memory, else
// the single-source local cells are copied now.
static int
do_local(shoal_plan *p)
{
    const shi_plan_layout *l = &p->l;

    if (p->alias && p->local_bytes > 0
        && stage_alloc(&p->local_stage, p->local_bytes) == NULL) {
        return shi_error(SHOAL_ENOMEM, "compile_op run: out of memory");
    }
    for (int c = 0; c < l->ncells; c++) {
        const shi_plan_cell *cell = &l->cells[c];

        for (int j = 0; j < cell->nsources; j++) {
            const shi_plan_source *s = &cell->sources[j];
            shi_view               from, to;

            if (s->msg >= 0) {
                continue;
            }
            if (p->alias) {
                pack_input(
                    p, p->local_stage + s->offset, s->input, &cell->box);
            } else if (cell->nsources == 1) {
                input_view(p, &from, s->input, &cell->box);
                output_view(p, &to, cell->output, &cell->box);
                shi_view_copy(&to, &from, l->ndim, l->esize);
            }
        }
    }
    return SHOAL_OK;
}

static void
take_args(shoal_plan *p, const void *const *inputs,
    const int64_t *const *input_strides, void *const *outputs,
    const int64_t *const *output_strides)
{
    const shi_plan_layout *l  = &p->l;
    size_t                 nd = (size_t) l->ndim;

    for (int i = 0; i < l->nlocal_in; i++) {
        p->in_base[i] = inputs != NULL ? (unsigned char *) inputs[i] : NULL;
        copy_strides(p->in_strides + (size_t) i * nd,
            input_strides != NULL ? input_strides[i] : NULL,
            &l->local_in[i].owner, l->ndim, own_ndim(l, &l->local_in[i]));
    }
    for (int o = 0; o < l->nlocal_out; o++) {
        p->out_base[o] = outputs != NULL ? (unsigned char *) outputs[o] : NULL;
        copy_strides(p->out_strides + (size_t) o * nd,
            output_strides != NULL ? output_strides[o] : NULL,
            &l->local_out[o].owner, l->ndim, own_ndim(l, &l->local_out[o]));
    }
    p->alias = inputs_meet_outputs(p);
}

static int settle(shoal_request **reqs, int n, int st);

// A run that failed on this rank after the ranks agreed to start it: the
// peers have posted their transfers and cannot be told otherwise, so the
// communicator is aborted (as for any outside fault), and what was
// started is drained without writing the outputs.
static int
fail_started_run(shoal_plan *p, int st)
{
    char text[SHI_ERROR_TEXT_MAX];

    snprintf(text, sizeof(text), "%s", shi_error_text());
    shi_comm_abort(p->comm, st,
        "compile_op run of plan #%d failed on rank %d after it started: %s",
        p->id, p->comm->rank, text);
    settle(p->rreq, p->l.nrecvs, st);
    settle(p->sreq, p->l.nsends, st);
    p->running = 0;
    shi_error(st, "%s", text);
    return shi_comm_error(p->comm, st);
}

int
shoal_plan_start(shoal_plan *p, int ninputs, const void *const *inputs,
    const int64_t *const *input_strides, int noutputs, void *const *outputs,
    const int64_t *const *output_strides, const char *error)
{
    char err[512] = "";
    int  st;

    if (p == NULL) {
        return shi_error(SHOAL_EINVAL, "compile_op run: the plan is NULL");
    }
    // The previous run's failure still lets this rank take part in the
    // agreement below: the others are already in it.
    if (p->running && shoal_plan_wait(p) < 0) {
        snprintf(err, sizeof(err), "the previous run failed: %s",
            shoal_last_error());
    } else if (error != NULL) {
        snprintf(err, sizeof(err), "%s", error);
    } else if (check_tensors(&p->l, "inputs", ninputs, p->l.nlocal_in, inputs,
                   p->l.local_in, err, sizeof(err))
            == 0
        && check_tensors(&p->l, "outputs", noutputs, p->l.nlocal_out,
               (const void *const *) outputs, p->l.local_out, err, sizeof(err))
            == 0) {
        check_outputs_distinct(&p->l, output_strides, err, sizeof(err));
    }
    st = agree(p, err);
    if (st < 0) {
        return shi_comm_error(p->comm, st);
    }
    take_args(p, inputs, input_strides, outputs, output_strides);
    p->running = 1;
    // Sends first: a receive may read its message at once, and a peer
    // waiting for this rank's send should not wait for that read.
    st = post_sends(p);
    if (st == SHOAL_OK) {
        st = post_recvs(p);
    }
    if (st == SHOAL_OK) {
        st = do_local(p);
    }
    return st < 0 ? fail_started_run(p, st) : SHOAL_OK;
}

// ---- finishing
// ----------------------------------------------------------------

static unsigned char *
scratch(shoal_plan *p, size_t bytes)
{
    if (bytes > p->scratch_bytes) {
        free(p->scratch);
        p->scratch_bytes = 0;
        p->scratch       = aligned_alloc(64, shi_round_up(bytes, 64));
        if (p->scratch == NULL) {
            return NULL;
        }
        p->scratch_bytes = bytes;
    }
    return p->scratch;
}

static const unsigned char *
source_data(const shoal_plan *p, const shi_plan_source *s)
{
    return s->msg >= 0 ? p->recv_stage[s->msg] + s->offset
                       : p->local_stage + s->offset;
}

static int
reduce_cell(shoal_plan *p, const shi_plan_cell *cell)
{
    const shi_plan_layout *l = &p->l;
    size_t                 n = (size_t) shi_box_volume(&cell->box, l->ndim);
    size_t                 bytes = n * l->esize;
    size_t                 slots = 1; // the result, then packed local sources
    unsigned char         *tmp;
    shi_view               out, packed;

    for (int j = 0; j < cell->nsources && !p->alias; j++) {
        slots += cell->sources[j].msg < 0;
    }
    tmp = scratch(p, bytes * slots);
    if (tmp == NULL) {
        return shi_error(SHOAL_ENOMEM, "compile_op run: out of memory");
    }
    slots = 1;
    for (int j = 0; j < cell->nsources; j++) {
        const shi_plan_source *s = &cell->sources[j];

        if (s->msg < 0 && !p->alias) {
            p->reduce_in[j] = tmp + bytes * slots++;
            pack_input(p, (void *) p->reduce_in[j], s->input, &cell->box);
        } else {
            p->reduce_in[j] = source_data(p, s);
        }
    }
    output_view(p, &out, cell->output, &cell->box);
    if (shi_view_is_dense(&out, l->ndim)) {
        shi_reduce(l->dtype, SHOAL_REDUCE_OP(l->reduction), out.base,
            p->reduce_in, cell->nsources, n);
        return SHOAL_OK;
    }
    shi_reduce(l->dtype, SHOAL_REDUCE_OP(l->reduction), tmp, p->reduce_in,
        cell->nsources, n);
    shi_view_packed(&packed, l->ndim, &cell->box, tmp);
    shi_view_copy(&out, &packed, l->ndim, l->esize);
    return SHOAL_OK;
}

static int
write_cells(shoal_plan *p)
{
    const shi_plan_layout *l = &p->l;

    for (int c = 0; c < l->ncells; c++) {
        const shi_plan_cell   *cell = &l->cells[c];
        const shi_plan_source *s    = &cell->sources[0];
        shi_view               from, to;

        if (cell->nsources > 1) {
            int st = reduce_cell(p, cell);

            if (st < 0) {
                return st;
            }
            continue;
        }
        if ((s->msg >= 0 && p->recv_direct[s->msg])
            || (s->msg < 0 && !p->alias)) {
            continue; // already in place
        }
        shi_view_packed(
            &from, l->ndim, &cell->box, (void *) source_data(p, s));
        output_view(p, &to, cell->output, &cell->box);
        shi_view_copy(&to, &from, l->ndim, l->esize);
    }
    return SHOAL_OK;
}

static int
settle(shoal_request **reqs, int n, int st)
{
    for (int i = 0; i < n; i++) {
        if (reqs[i] != NULL) {
            int r = shoal_wait(reqs[i], -1);

            st = st < 0 ? st : r;
            shoal_request_free(reqs[i]);
            reqs[i] = NULL;
        }
    }
    return st;
}

int
shoal_plan_wait(shoal_plan *p)
{
    int st;

    if (p == NULL) {
        return shi_error(SHOAL_EINVAL, "compile_op wait: the plan is NULL");
    }
    if (!p->running) {
        return SHOAL_OK;
    }
    st = settle(p->rreq, p->l.nrecvs, SHOAL_OK);
    if (st == SHOAL_OK) {
        st = write_cells(p);
    }
    st         = settle(p->sreq, p->l.nsends, st);
    p->running = 0;
    return st < 0 ? shi_comm_error(p->comm, st) : SHOAL_OK;
}

int
shoal_plan_test(shoal_plan *p)
{
    if (p == NULL) {
        return shi_error(SHOAL_EINVAL, "compile_op test: the plan is NULL");
    }
    for (int i = 0; p->running && i < p->l.nrecvs; i++) {
        if (p->rreq[i] != NULL && shoal_test(p->rreq[i]) == SHOAL_INPROGRESS) {
            return SHOAL_INPROGRESS;
        }
    }
    for (int i = 0; p->running && i < p->l.nsends; i++) {
        if (p->sreq[i] != NULL && shoal_test(p->sreq[i]) == SHOAL_INPROGRESS) {
            return SHOAL_INPROGRESS;
        }
    }
    return shoal_plan_wait(p);
}

void
shi_plan_run_free(shoal_plan *p)
{
    for (int i = 0; p->send_stage != NULL && i < p->l.nsends; i++) {
        free(p->send_stage[i]);
    }
    for (int i = 0; p->recv_stage != NULL && i < p->l.nrecvs; i++) {
        free(p->recv_stage[i]);
    }
    free(p->local_stage);
    free(p->scratch);
}
