// A readable listing of one rank's plan (shoal_plan_format,
// SHOAL_DEBUG=TRACE).
#include <stdarg.h>
#include <stdio.h>

#include "plan/plan_impl.h"

typedef struct fmt_out {
    char  *buf;
    size_t len, n;
} fmt_out;

__attribute__((format(printf, 2, 3))) static void
put(fmt_out *o, const char *fmt, ...)
{
    va_list ap;
    int     k;

    va_start(ap, fmt);
    k = vsnprintf(o->buf != NULL && o->n < o->len ? o->buf + o->n : NULL,
        o->buf != NULL && o->n < o->len ? o->len - o->n : 0, fmt, ap);
    va_end(ap);
    if (k > 0) {
        o->n += (size_t) k;
    }
}

// A box of tensor `tensor`, in that tensor's own dimensions, after its
// name when the plan has several.
static void
put_box(fmt_out *o, const shi_plan_layout *l, int tensor, const shi_box *b)
{
    const shi_plan_gtensor *t = &l->tensors[tensor];
    char                    s[512];

    shi_plan_box_format(t, b, l->ndim, s, sizeof(s));
    if (t->name[0] != '\0') {
        put(o, "'%s' ", t->name);
    }
    put(o, "%s", s);
}

static void
put_msg(fmt_out *o, const shi_plan_layout *l, const shi_plan_msg *m,
    const char *dir)
{
    put(o, "  %s rank %d: %zu bytes in %d piece%s\n", dir, m->peer, m->bytes,
        m->npieces, m->npieces == 1 ? "" : "s");
    for (int i = 0; i < m->npieces; i++) {
        put(o, "    @%zu inputs[%d] ", m->pieces[i].offset,
            m->pieces[i].input);
        put_box(o, l, m->pieces[i].tensor, &m->pieces[i].box);
        put(o, "\n");
    }
}

static void
put_cell(fmt_out *o, const shi_plan_layout *l, const shi_plan_cell *c)
{
    put(o, "  outputs[%d] ", c->output);
    put_box(o, l, l->output_tensor[c->output], &c->box);
    put(o, " <-");
    for (int j = 0; j < c->nsources; j++) {
        const shi_plan_source *s = &c->sources[j];

        put(o, "%s rank %d inputs[%d]", j ? "," : "", s->rank, s->input);
        if (s->msg >= 0) {
            put(o, " (message @%zu)", s->offset);
        } else {
            put(o, " (local)");
        }
    }
    put(o, "\n");
}

size_t
shi_plan_format(
    const shi_plan_layout *l, const char *title, char *buf, size_t len)
{
    fmt_out o = { buf, len, 0 };
    char    shape[512];

    if (buf != NULL && len > 0) {
        buf[0] = '\0';
    }
    put(&o, "%s, rank %d of %d:", title, l->rank, l->size);
    for (int k = 0; k < l->ntensors; k++) {
        const shi_plan_gtensor *t = &l->tensors[k];

        shi_dims_format(t->shape, t->ndim, shape, sizeof(shape));
        if (t->name[0] != '\0') {
            put(&o, "%s tensor '%s' %s", k > 0 ? "," : "", t->name, shape);
        } else {
            put(&o, "%s shape %s", k > 0 ? "," : "", shape);
        }
    }
    put(&o, " %s, reduction %s\n", shoal_dtype_name(l->dtype),
        l->reduction == SHI_PLAN_COPY ? "none (last wins)"
                                      : shoal_op_name(l->reduction));
    for (int i = 0; i < l->ninputs; i++) {
        put(&o, "  inputs[%d] ", i);
        put_box(&o, l, l->input_tensor[i], &l->inputs[i]);
        put(&o, "\n");
    }
    for (int i = 0; i < l->noutputs; i++) {
        put(&o, "  outputs[%d] ", i);
        put_box(&o, l, l->output_tensor[i], &l->outputs[i]);
        put(&o, "\n");
    }
    for (int i = 0; i < l->nsends; i++) {
        put_msg(&o, l, &l->sends[i], "send to");
    }
    for (int i = 0; i < l->nrecvs; i++) {
        put_msg(&o, l, &l->recvs[i], "receive from");
    }
    put(&o, "  %d cell%s:\n", l->ncells, l->ncells == 1 ? "" : "s");
    for (int i = 0; i < l->ncells; i++) {
        put_cell(&o, l, &l->cells[i]);
    }
    return o.n;
}
