// Schedules: the operation list, its printing, the helpers every
// generator shares, and shi_sched_build's choice of generator by
// (collective, algorithm).
//
// Steps of a build: check the call, empty the schedule, run the generator
// for (kind, algo) (its registry row), report a failed allocation.
// Preconditions: the call passed the collective's argument checks (counts
// agree between ranks, in-place forms as shoal.h gives them).
// Cost: building is O(operations); no memory of the buffers is touched.
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/net/net_gen.h"
#include "algo/registry.h"
#include "base/error.h"
#include "base/log.h"
#include "core/op_props.h"
#include "core/request.h"

// ---------------------------------------------------------------------------
// The operation list
// ---------------------------------------------------------------------------

int
shi_sched_push(shi_sched *s, const shi_sop *op)
{
    if (s->nomem) {
        return -1;
    }
    if (s->nops == s->cap) {
        int ncap = s->cap > 0 ? s->cap * 2 : 64;
        if (s->cap > INT32_MAX / 2) {
            s->nomem = 1;
            return -1;
        }
        shi_sop *ops = realloc(s->ops, (size_t) ncap * sizeof(*ops));
        if (ops == NULL) {
            s->nomem = 1;
            return -1;
        }
        s->ops = ops;
        s->cap = ncap;
    }
    assert(op->dep[0] < s->nops && op->dep[1] < s->nops);
    s->ops[s->nops] = *op;
    return s->nops++;
}

void
shi_sched_free(shi_sched *s)
{
    free(s->ops);
    s->ops           = NULL;
    s->nops          = 0;
    s->cap           = 0;
    s->scratch_bytes = 0;
    s->nomem         = 0;
}

static const char *
sched_buf_name(int buf)
{
    switch (buf) {
        case SHI_SBUF_SEND:
            return "send";
        case SHI_SBUF_RECV:
            return "recv";
        case SHI_SBUF_SCRATCH:
            return "scratch";
        default:
            return "?";
    }
}

static const char *
sched_kind_name(int kind)
{
    switch (kind) {
        case SHI_SOP_SEND:
            return "SEND";
        case SHI_SOP_RECV:
            return "RECV";
        case SHI_SOP_REDUCE:
            return "REDUCE";
        case SHI_SOP_COPY:
            return "COPY";
        case SHI_SOP_PREMUL:
            return "PREMUL";
        case SHI_SOP_AVG:
            return "AVG";
        case SHI_SOP_REDUCE_ALL:
            return "REDUCE_ALL";
        case SHI_SOP_JOIN:
            return "JOIN";
        default:
            return "?";
    }
}

void
shi_sched_dump(const shi_sched *s, const char *title)
{
    if (!shi_log_enabled(SHI_LOG_TRACE)) {
        return;
    }
    shi_log(SHI_LOG_TRACE, "schedule %s: %d operations, %zu scratch bytes",
        title != NULL ? title : "", s->nops, s->scratch_bytes);
    for (int i = 0; i < s->nops; i++) {
        const shi_sop *o = &s->ops[i];
        char           what[160];
        switch (o->kind) {
            case SHI_SOP_SEND:
                snprintf(what, sizeof(what), "to %d from %s+%llu",
                    (int) o->peer, sched_buf_name(o->src),
                    (unsigned long long) o->src_off);
                break;
            case SHI_SOP_RECV:
                snprintf(what, sizeof(what), "from %d into %s+%llu",
                    (int) o->peer, sched_buf_name(o->dst),
                    (unsigned long long) o->dst_off);
                break;
            case SHI_SOP_REDUCE:
                snprintf(what, sizeof(what), "%s+%llu = %s+%llu op %s+%llu",
                    sched_buf_name(o->dst), (unsigned long long) o->dst_off,
                    sched_buf_name(o->src), (unsigned long long) o->src_off,
                    sched_buf_name(o->src2), (unsigned long long) o->src2_off);
                break;
            case SHI_SOP_AVG:
                snprintf(what, sizeof(what), "%s+%llu", sched_buf_name(o->dst),
                    (unsigned long long) o->dst_off);
                break;
            case SHI_SOP_REDUCE_ALL:
                snprintf(what, sizeof(what),
                    "%s+%llu = all of %s+%llu, %s+%llu step %llu",
                    sched_buf_name(o->dst), (unsigned long long) o->dst_off,
                    sched_buf_name(o->src), (unsigned long long) o->src_off,
                    sched_buf_name(o->src2), (unsigned long long) o->src2_off,
                    (unsigned long long) o->step);
                break;
            case SHI_SOP_JOIN:
                what[0] = '\0';
                break;
            default: // COPY, PREMUL
                snprintf(what, sizeof(what), "%s+%llu = %s+%llu",
                    sched_buf_name(o->dst), (unsigned long long) o->dst_off,
                    sched_buf_name(o->src), (unsigned long long) o->src_off);
                break;
        }
        char after[40] = "";
        if (o->dep[1] != SHI_SOP_NODEP) {
            snprintf(after, sizeof(after), ", after #%d #%d", (int) o->dep[0],
                (int) o->dep[1]);
        } else if (o->dep[0] != SHI_SOP_NODEP) {
            snprintf(after, sizeof(after), ", after #%d", (int) o->dep[0]);
        }
        shi_log(SHI_LOG_TRACE, "  #%d %s %s, %llu bytes%s", i,
            sched_kind_name(o->kind), what, (unsigned long long) o->bytes,
            after);
    }
}

// ---------------------------------------------------------------------------
// Helpers for the generators (net_gen.h)
// ---------------------------------------------------------------------------

void *
net_tmp(net_gen *g, size_t n, size_t size)
{
    void *p = NULL;

    if (g->ntmp < NET_MAX_TMP) {
        p = calloc(n > 0 ? n : 1, size);
    }
    if (p == NULL) {
        g->nomem = 1;
        return NULL;
    }
    g->tmp[g->ntmp++] = p;
    return p;
}

int *
net_tmp_deps(net_gen *g, size_t n)
{
    int *d = net_tmp(g, n, sizeof(int));

    if (d != NULL) {
        for (size_t i = 0; i < n; i++) {
            d[i] = SHI_SOP_NODEP;
        }
    }
    return d;
}

uint64_t
net_scratch(net_gen *g, uint64_t bytes)
{
    uint64_t off = g->s->scratch_bytes;

    off = (off + NET_SCRATCH_ALIGN - 1) / NET_SCRATCH_ALIGN
        * NET_SCRATCH_ALIGN;
    g->s->scratch_bytes = off + bytes;
    return off;
}

// Appends `op` with dependencies d0, d1 (SHI_SOP_NODEP or earlier
// indices; a repeated one is kept once).
static int
net_push(net_gen *g, shi_sop *op, int d0, int d1)
{
    if (d0 == d1) {
        d1 = SHI_SOP_NODEP;
    }
    if (d0 == SHI_SOP_NODEP) {
        d0 = d1;
        d1 = SHI_SOP_NODEP;
    }
    op->dep[0] = d0;
    op->dep[1] = d1;
    int i      = shi_sched_push(g->s, op);
    if (i < 0) {
        g->nomem = 1;
        return SHI_SOP_NODEP;
    }
    return i;
}

int
net_send(net_gen *g, int peer, net_loc src, uint64_t bytes, int d0, int d1)
{
    shi_sop op = { .kind = SHI_SOP_SEND,
        .dst             = src.buf,
        .src             = src.buf,
        .src2            = src.buf,
        .peer            = peer,
        .src_off         = src.off,
        .bytes           = bytes };

    return net_push(g, &op, d0, d1);
}

int
net_recv(net_gen *g, int peer, net_loc dst, uint64_t bytes, int d0, int d1)
{
    shi_sop op = { .kind = SHI_SOP_RECV,
        .dst             = dst.buf,
        .src             = dst.buf,
        .src2            = dst.buf,
        .peer            = peer,
        .dst_off         = dst.off,
        .bytes           = bytes };

    return net_push(g, &op, d0, d1);
}

int
net_send_data(
    net_gen *g, int peer, net_loc src, uint64_t bytes, int d0, int d1)
{
    return bytes > 0 ? net_send(g, peer, src, bytes, d0, d1) : SHI_SOP_NODEP;
}

int
net_recv_data(
    net_gen *g, int peer, net_loc dst, uint64_t bytes, int d0, int d1)
{
    return bytes > 0 ? net_recv(g, peer, dst, bytes, d0, d1) : SHI_SOP_NODEP;
}

int
net_reduce(net_gen *g, net_loc dst, net_loc a, net_loc b, uint64_t bytes,
    int d0, int d1)
{
    if (bytes == 0) {
        return SHI_SOP_NODEP;
    }
    shi_sop op = { .kind = SHI_SOP_REDUCE,
        .dst             = dst.buf,
        .src             = a.buf,
        .src2            = b.buf,
        .peer            = -1,
        .dst_off         = dst.off,
        .src_off         = a.off,
        .src2_off        = b.off,
        .bytes           = bytes };

    return net_push(g, &op, d0, d1);
}

int
net_reduce_all(net_gen *g, net_loc dst, net_loc own, net_loc others,
    uint64_t step, uint64_t bytes, int d0, int d1)
{
    if (bytes == 0) {
        return SHI_SOP_NODEP;
    }
    shi_sop op = { .kind = SHI_SOP_REDUCE_ALL,
        .dst             = dst.buf,
        .src             = own.buf,
        .src2            = others.buf,
        .peer            = -1,
        .dst_off         = dst.off,
        .src_off         = own.off,
        .src2_off        = others.off,
        .step            = step,
        .bytes           = bytes };

    return net_push(g, &op, d0, d1);
}

int
net_join(net_gen *g, int d0, int d1)
{
    if (d0 == SHI_SOP_NODEP || d1 == SHI_SOP_NODEP || d0 == d1) {
        return d0 != SHI_SOP_NODEP ? d0 : d1;
    }
    shi_sop op = { .kind = SHI_SOP_JOIN,
        .dst             = SHI_SBUF_SCRATCH,
        .src             = SHI_SBUF_SCRATCH,
        .src2            = SHI_SBUF_SCRATCH,
        .peer            = -1 };

    return net_push(g, &op, d0, d1);
}

static int
net_unary(net_gen *g, int kind, net_loc dst, net_loc src, uint64_t bytes,
    int d0, int d1)
{
    if (bytes == 0) {
        return SHI_SOP_NODEP;
    }
    shi_sop op = { .kind = (uint8_t) kind,
        .dst             = dst.buf,
        .src             = src.buf,
        .src2            = src.buf,
        .peer            = -1,
        .dst_off         = dst.off,
        .src_off         = src.off,
        .src2_off        = src.off,
        .bytes           = bytes };

    return net_push(g, &op, d0, d1);
}

int
net_copy(net_gen *g, net_loc dst, net_loc src, uint64_t bytes, int d0, int d1)
{
    if (dst.buf == src.buf && dst.off == src.off) {
        return d0 != SHI_SOP_NODEP ? d0 : d1; // already there
    }
    return net_unary(g, SHI_SOP_COPY, dst, src, bytes, d0, d1);
}

int
net_premul(
    net_gen *g, net_loc dst, net_loc src, uint64_t bytes, int d0, int d1)
{
    return net_unary(g, SHI_SOP_PREMUL, dst, src, bytes, d0, d1);
}

int
net_avg(net_gen *g, net_loc dst, uint64_t bytes, int d0)
{
    return net_unary(g, SHI_SOP_AVG, dst, dst, bytes, d0, SHI_SOP_NODEP);
}

int
net_is_premul(const net_gen *g)
{
    return g->c->op.kind == SHOAL_PREMUL_SUM;
}

int
net_is_avg(const net_gen *g)
{
    return g->c->op.kind == SHOAL_AVG && g->n > 1;
}

int
net_is_half(const net_gen *g)
{
    return g->c->dtype == SHOAL_FLOAT16 || g->c->dtype == SHOAL_BFLOAT16;
}

static void
net_blocks_finish(net_blocks *b)
{
    size_t off = 0;

    b->max = 0;
    for (int c = 0; c < b->n; c++) {
        b->off[c] = off;
        off += b->cnt[c];
        if (b->cnt[c] > b->max) {
            b->max = b->cnt[c];
        }
    }
    b->total = off;
}

int
net_blocks_per_rank(net_gen *g, net_blocks *b, const size_t *counts)
{
    b->n   = g->n;
    b->off = net_tmp(g, (size_t) g->n, sizeof(size_t));
    b->cnt = net_tmp(g, (size_t) g->n, sizeof(size_t));
    if (b->off == NULL || b->cnt == NULL) {
        return SHOAL_ENOMEM;
    }
    for (int c = 0; c < g->n; c++) {
        b->cnt[c] = counts != NULL ? counts[c] : g->c->count;
    }
    net_blocks_finish(b);
    return SHOAL_OK;
}

int
net_blocks_split(net_gen *g, net_blocks *b, size_t total)
{
    size_t base = total / (size_t) g->n, extra = total % (size_t) g->n;

    b->n   = g->n;
    b->off = net_tmp(g, (size_t) g->n, sizeof(size_t));
    b->cnt = net_tmp(g, (size_t) g->n, sizeof(size_t));
    if (b->off == NULL || b->cnt == NULL) {
        return SHOAL_ENOMEM;
    }
    for (int c = 0; c < g->n; c++) {
        b->cnt[c] = base + ((size_t) c < extra ? 1 : 0);
    }
    net_blocks_finish(b);
    return SHOAL_OK;
}

int
net_blocks_one(net_gen *g, net_blocks *b, size_t total)
{
    b->n   = 1;
    b->off = net_tmp(g, 1, sizeof(size_t));
    b->cnt = net_tmp(g, 1, sizeof(size_t));
    if (b->off == NULL || b->cnt == NULL) {
        return SHOAL_ENOMEM;
    }
    b->cnt[0] = total;
    net_blocks_finish(b);
    return SHOAL_OK;
}

void
net_set_piece(net_gen *g, size_t max_cnt)
{
    size_t pe = g->c->piece_bytes / g->es;

    if (g->c->piece_bytes == 0) {
        pe = SIZE_MAX; // no pipelining: one piece per block
    }
    if (pe == 0) {
        pe = 1;
    }
    if (max_cnt / pe >= NET_MAX_PIECES) {
        pe = (max_cnt + NET_MAX_PIECES - 1) / NET_MAX_PIECES;
    }
    g->pe = pe;
}

size_t
net_npieces(const net_gen *g, size_t cnt)
{
    return cnt / g->pe + (cnt % g->pe != 0 ? 1 : 0);
}

size_t
net_piece_cnt(const net_gen *g, size_t cnt, size_t j)
{
    size_t lo = j * g->pe;

    return cnt - lo < g->pe ? cnt - lo : g->pe;
}

size_t *
net_piece_base(net_gen *g, const net_blocks *b)
{
    size_t *base = net_tmp(g, (size_t) b->n + 1, sizeof(size_t));

    if (base == NULL) {
        return NULL;
    }
    for (int c = 0; c < b->n; c++) {
        base[c + 1] = base[c] + net_npieces(g, b->cnt[c]);
    }
    return base;
}

int
net_inputs_make(net_gen *g, net_inputs *in, const net_blocks *b,
    const net_loc *orig, int recv_full)
{
    uint64_t scr = 0;

    in->loc     = net_tmp(g, (size_t) b->n, sizeof(net_loc));
    in->dep     = net_tmp(g, (size_t) b->n, sizeof(int));
    in->in_recv = 0;
    if (in->loc == NULL || in->dep == NULL) {
        return SHOAL_ENOMEM;
    }
    if (net_is_premul(g) && !recv_full) {
        scr = net_scratch(g, b->total * g->es);
    }
    for (int c = 0; c < b->n; c++) {
        uint64_t bytes = b->cnt[c] * g->es;
        in->loc[c]     = orig[c];
        in->dep[c]     = SHI_SOP_NODEP;
        if (net_is_premul(g)) {
            // The send buffer is read only: every rank scales its own
            // input once, and everything after combines with SUM.
            if (orig[c].buf == SHI_SBUF_RECV) {
                in->loc[c] = orig[c];
            } else if (recv_full) {
                in->loc[c] = net_at(SHI_SBUF_RECV, b->off[c] * g->es);
            } else {
                in->loc[c] = net_at(SHI_SBUF_SCRATCH, scr + b->off[c] * g->es);
            }
            in->dep[c] = net_premul(
                g, in->loc[c], orig[c], bytes, SHI_SOP_NODEP, SHI_SOP_NODEP);
        }
        if (in->loc[c].buf == SHI_SBUF_RECV) {
            in->in_recv = 1;
        }
    }
    return g->nomem ? SHOAL_ENOMEM : SHOAL_OK;
}

// ---------------------------------------------------------------------------
// Dispatch
// ---------------------------------------------------------------------------

static int
sched_check(const shi_sched_call *c)
{
    if (c->nranks < 1 || c->rank < 0 || c->rank >= c->nranks) {
        return shi_error(SHOAL_EINVAL,
            "net schedule: rank %d out of range for %d ranks", c->rank,
            c->nranks);
    }
    const shi_op_props *p = shi_op_props_of(c->kind);

    if (p->rooted && (c->root < 0 || c->root >= c->nranks)) {
        return shi_error(SHOAL_EINVAL,
            "net schedule: root %d out of range for %d ranks", c->root,
            c->nranks);
    }
    if (c->esize == 0 && c->kind != SHI_OP_BARRIER) {
        return shi_error(
            SHOAL_EINVAL, "net schedule: element size 0 (unknown dtype?)");
    }
    if (p->counts && c->counts == NULL) {
        return shi_error(SHOAL_EINVAL,
            "net schedule: %s without per-rank counts",
            shi_op_kind_name(c->kind));
    }
    if (p->rcounts && c->rcounts == NULL) {
        return shi_error(
            SHOAL_EINVAL, "net schedule: all_to_all_v without receive counts");
    }
    return SHOAL_OK;
}

int
shi_sched_build(shi_sched *s, const shi_sched_call *call)
{
    const shi_algo_desc *d
        = shi_algo_find(shi_coll_of_op(call->kind), (shi_algo) call->algo);
    shi_build_fn fn = d != NULL ? d->build : NULL;

    s->nops          = 0;
    s->scratch_bytes = 0;
    s->nomem         = 0;
    if (fn == NULL) {
        const char *an = shi_algo_name(call->algo);
        return shi_error(SHOAL_ENOTSUP,
            "net schedule: no algorithm '%s' for %s across hosts",
            an != NULL ? an : "unknown", shi_op_kind_name(call->kind));
    }
    int st = sched_check(call);
    if (st != SHOAL_OK) {
        return st;
    }

    net_gen g = { .s = s,
        .c           = call,
        .r           = call->rank,
        .n           = call->nranks,
        .es          = call->esize > 0 ? call->esize : 1,
        .pe          = SIZE_MAX };
    st        = fn(&g);
    for (int i = 0; i < g.ntmp; i++) {
        free(g.tmp[i]);
    }
    if (st == SHOAL_OK && (g.nomem || s->nomem)) {
        st = SHOAL_ENOMEM;
    }
    if (st == SHOAL_ENOMEM) {
        s->nops = 0;
        return shi_error(SHOAL_ENOMEM,
            "net schedule: out of memory building %s (%s) for rank %d",
            shi_op_kind_name(call->kind), shi_algo_name(call->algo),
            call->rank);
    }
    if (st != SHOAL_OK) {
        s->nops = 0;
    }
    return st;
}
