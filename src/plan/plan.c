// shoal_plan objects: compiling (exchange specs, plan, precompute what runs
// need), listing and freeing. Runs are in plan_run.c.
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "base/log.h"
#include "plan/plan_obj.h"

_Static_assert(SHI_BOX_MAX_DIMS == SHOAL_PLAN_MAX_DIMS,
    "plans and their boxes must agree on the most dimensions");

static int
plan_oom(void)
{
    return shi_error(SHOAL_ENOMEM, "compile_op: out of memory");
}

// Local sources get a place in the aliasing runs' staging buffer; each
// receive that fills one single-source cell with its only piece may land
// in the output directly.
static void
plan_precompute(shoal_plan *p)
{
    shi_plan_layout *l = &p->l;

    for (int i = 0; i < l->nrecvs; i++) {
        p->recv_cell[i] = -1;
    }
    for (int c = 0; c < l->ncells; c++) {
        shi_plan_cell *cell = &l->cells[c];
        size_t bytes = (size_t) shi_box_volume(&cell->box, l->ndim) * l->esize;

        if (cell->nsources > p->max_sources) {
            p->max_sources = cell->nsources;
        }
        for (int j = 0; j < cell->nsources; j++) {
            shi_plan_source *s = &cell->sources[j];

            if (s->msg < 0) {
                s->offset = p->local_bytes;
                p->local_bytes += bytes;
            } else if (cell->nsources == 1 && l->recvs[s->msg].npieces == 1) {
                p->recv_cell[s->msg] = c;
            }
        }
    }
}

static int
plan_alloc_run_state(shoal_plan *p)
{
    shi_plan_layout *l  = &p->l;
    size_t           nd = (size_t) (l->ndim > 0 ? l->ndim : 1);

    p->recv_cell   = calloc((size_t) l->nrecvs + 1, sizeof(int));
    p->recv_direct = calloc((size_t) l->nrecvs + 1, sizeof(int));
    p->sreq        = calloc((size_t) l->nsends + 1, sizeof(*p->sreq));
    p->rreq        = calloc((size_t) l->nrecvs + 1, sizeof(*p->rreq));
    p->send_stage  = calloc((size_t) l->nsends + 1, sizeof(*p->send_stage));
    p->recv_stage  = calloc((size_t) l->nrecvs + 1, sizeof(*p->recv_stage));
    p->send_layout = calloc((size_t) l->nsends + 1, sizeof(*p->send_layout));
    p->recv_layout = calloc((size_t) l->nrecvs + 1, sizeof(*p->recv_layout));
    p->in_base     = calloc((size_t) l->nlocal_in + 1, sizeof(*p->in_base));
    p->out_base    = calloc((size_t) l->nlocal_out + 1, sizeof(*p->out_base));
    p->in_strides  = calloc(((size_t) l->nlocal_in + 1) * nd, sizeof(int64_t));
    p->out_strides
        = calloc(((size_t) l->nlocal_out + 1) * nd, sizeof(int64_t));
    if (p->recv_cell == NULL || p->recv_direct == NULL || p->sreq == NULL
        || p->rreq == NULL || p->send_stage == NULL || p->recv_stage == NULL
        || p->send_layout == NULL || p->recv_layout == NULL
        || p->in_base == NULL || p->out_base == NULL || p->in_strides == NULL
        || p->out_strides == NULL) {
        return plan_oom();
    }
    plan_precompute(p);
    p->reduce_in = calloc((size_t) p->max_sources + 1, sizeof(void *));
    return p->reduce_in != NULL ? SHOAL_OK : plan_oom();
}

static void
plan_trace(const shoal_plan *p)
{
    size_t n;
    char  *text;

    if (!shi_log_enabled(SHI_LOG_TRACE)) {
        return;
    }
    n    = shoal_plan_format(p, NULL, 0);
    text = malloc(n + 1);
    if (text != NULL) {
        shoal_plan_format(p, text, n + 1);
        shi_log(SHI_LOG_TRACE, "%s", text);
        free(text);
    }
}

int
shoal_plan_create(
    shoal_comm *comm, const shoal_plan_spec *spec, shoal_plan **out)
{
    shoal_plan_spec complaint = SHOAL_PLAN_SPEC_INIT;
    shi_plan_spec  *specs     = NULL;
    shoal_plan     *p;
    int             st;

    if (comm == NULL) {
        return shi_error(SHOAL_EINVAL, "compile_op: the communicator is NULL");
    }
    if (out == NULL) {
        complaint.error = "the output pointer is NULL";
        spec            = &complaint;
    } else {
        *out = NULL;
    }
    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return shi_comm_error(comm, plan_oom());
    }
    p->comm = comm;
    p->id   = comm->nplans++;
    p->tag  = -2 - (p->id & 0x3fffffff);
    st      = shi_plan_exchange(comm, spec, &specs);
    if (st == SHOAL_OK) {
        st = shi_plan_build(&p->l, specs, comm->size, comm->rank);
    }
    shi_plan_specs_free(specs, comm->size);
    if (st == SHOAL_OK) {
        st = plan_alloc_run_state(p);
    }
    if (st < 0 || out == NULL) {
        shoal_plan_free(p);
        return shi_comm_error(comm, st < 0 ? st : SHOAL_EINVAL);
    }
    plan_trace(p);
    *out = p;
    return SHOAL_OK;
}

size_t
shoal_plan_format(const shoal_plan *plan, char *buf, size_t len)
{
    char title[160];

    if (plan == NULL) {
        return (size_t) snprintf(buf, len, "(no plan)");
    }
    snprintf(
        title, sizeof(title), "plan #%d on '%s'", plan->id, plan->comm->name);
    return shi_plan_format(&plan->l, title, buf, len);
}

int
shoal_plan_bytes(const shoal_plan *plan, size_t *sent, size_t *received)
{
    if (plan == NULL) {
        return shi_error(SHOAL_EINVAL, "plan_bytes: the plan is NULL");
    }
    if (sent != NULL) {
        *sent = plan->l.send_bytes;
    }
    if (received != NULL) {
        *received = plan->l.recv_bytes;
    }
    return SHOAL_OK;
}

int
shoal_plan_local_tensors(const shoal_plan *plan, int *ninputs, int *noutputs)
{
    if (plan == NULL) {
        return shi_error(SHOAL_EINVAL, "plan_local_tensors: the plan is NULL");
    }
    if (ninputs != NULL) {
        *ninputs = plan->l.nlocal_in;
    }
    if (noutputs != NULL) {
        *noutputs = plan->l.nlocal_out;
    }
    return SHOAL_OK;
}

int
shoal_plan_local_tensor(const shoal_plan *plan, int output, int index,
    int *ndim, int64_t *shape, const char **name)
{
    const shi_plan_local   *k;
    const shi_plan_gtensor *t;
    int                     n, pad;

    if (plan == NULL || ndim == NULL || shape == NULL) {
        return shi_error(SHOAL_EINVAL,
            "plan_local_tensor: the plan, ndim or shape is NULL");
    }
    n = output ? plan->l.nlocal_out : plan->l.nlocal_in;
    if (index < 0 || index >= n) {
        return shi_error(SHOAL_EINVAL,
            "plan_local_tensor: this rank has %d local %s tensors, not %d", n,
            output ? "output" : "input", index + 1);
    }
    k     = output ? &plan->l.local_out[index] : &plan->l.local_in[index];
    t     = &plan->l.tensors[k->tensor];
    pad   = plan->l.ndim - t->ndim;
    *ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) {
        shape[d] = k->owner.hi[pad + d] - k->owner.lo[pad + d];
    }
    if (name != NULL) {
        *name = t->name;
    }
    return SHOAL_OK;
}

void
shoal_plan_free(shoal_plan *plan)
{
    if (plan == NULL) {
        return;
    }
    if (plan->running) {
        shoal_plan_wait(plan);
    }
    shi_plan_run_free(plan);
    free(plan->recv_cell);
    free(plan->recv_direct);
    free(plan->sreq);
    free(plan->rreq);
    free(plan->send_stage);
    free(plan->recv_stage);
    free(plan->send_layout);
    free(plan->recv_layout);
    free(plan->in_base);
    free(plan->out_base);
    free(plan->in_strides);
    free(plan->out_strides);
    free(plan->reduce_in);
    shi_plan_layout_free(&plan->l);
    free(plan);
}
