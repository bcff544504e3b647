// One call: where its buffers are, what goes in, the shoal call (blocking
// or not), and the check of everything it wrote.
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "soak.h"

#define CANARY_BYTE 0xa5

static size_t
block_bytes(const soak_op *o)
{
    return o->count * o->esize;
}

static int
prev_rank(const soak_ctx *c)
{
    return (c->rank + c->n - 1) % c->n;
}

// Buffers of reductions, and the inputs their model makes.
static void
prepare_reduction(soak_ctx *c, soak_op *o)
{
    size_t bb = block_bytes(o);

    if (o->kind == SOAK_REDUCE_SCATTER) {
        o->in     = o->sbuf;
        o->out    = o->inplace ? o->sbuf + (size_t) c->rank * bb : o->rbuf;
        o->rbytes = o->inplace ? 0 : bb;
        soak_reduce_fill(o, o->sbuf, 0, o->count * (size_t) c->n, c->n);
        return;
    }
    // all-reduce, and reduce (in place only on the root; others keep
    // sendbuf and pass no recvbuf)
    if (o->kind == SOAK_REDUCE && c->rank != o->root) {
        o->in     = o->sbuf;
        o->out    = NULL;
        o->rbytes = 0;
    } else {
        o->in     = o->inplace ? o->rbuf : o->sbuf;
        o->out    = o->rbuf;
        o->rbytes = bb;
    }
    soak_reduce_fill(o, (void *) o->in, 0, o->count, c->n);
}

static void
prepare_gathers(soak_ctx *c, soak_op *o)
{
    size_t bb = block_bytes(o), all = bb * (size_t) c->n;
    int    root_or_all = o->kind == SOAK_ALL_GATHER || c->rank == o->root;

    o->out    = o->rbuf;
    o->rbytes = root_or_all ? all : 0;
    o->in     = o->sbuf;
    if (o->inplace && root_or_all) {
        o->in = o->rbuf + (size_t) c->rank * bb;
    }
    soak_pattern_fill((void *) o->in, bb, soak_pattern_key(o, c->rank, 0));
}

static void
prepare_scatter(soak_ctx *c, soak_op *o)
{
    size_t bb = block_bytes(o);
    int    p;

    o->in     = o->sbuf;
    o->out    = o->rbuf;
    o->rbytes = bb;
    if (c->rank != o->root) {
        return;
    }
    for (p = 0; p < c->n; p++) {
        soak_pattern_fill(
            o->sbuf + (size_t) p * bb, bb, soak_pattern_key(o, o->root, p));
    }
    if (o->inplace) {
        o->out    = o->sbuf + (size_t) o->root * bb;
        o->rbytes = 0;
    }
}

static void
prepare_movement(soak_ctx *c, soak_op *o)
{
    size_t bb = block_bytes(o);
    int    p;

    o->in     = o->sbuf;
    o->out    = o->rbuf;
    o->rbytes = bb * o->blocks;
    switch (o->kind) {
        case SOAK_BROADCAST:
            if (c->rank == o->root) {
                soak_pattern_fill(
                    o->rbuf, bb, soak_pattern_key(o, o->root, 0));
            }
            break;
        case SOAK_ALL_TO_ALL:
            for (p = 0; p < c->n; p++) {
                soak_pattern_fill(o->sbuf + (size_t) p * bb, bb,
                    soak_pattern_key(o, c->rank, p));
            }
            break;
        case SOAK_RING:
            soak_pattern_fill(o->sbuf, bb,
                soak_pattern_key(o, c->rank, (c->rank + 1) % c->n));
            break;
        default: // barrier
            o->rbytes = 0;
            break;
    }
}

void
soak_prepare(soak_ctx *c, soak_op *o)
{
    switch (o->kind) {
        case SOAK_ALL_REDUCE:
        case SOAK_REDUCE:
        case SOAK_REDUCE_SCATTER:
            prepare_reduction(c, o);
            break;
        case SOAK_ALL_GATHER:
        case SOAK_GATHER:
            prepare_gathers(c, o);
            break;
        case SOAK_SCATTER:
            prepare_scatter(c, o);
            break;
        default:
            prepare_movement(c, o);
            break;
    }
    if (o->rbytes != 0) {
        memset(o->rbuf + o->rbytes, CANARY_BYTE, SOAK_CANARY);
    }
}

// ---------------------------------------------------------------------------
// The calls
// ---------------------------------------------------------------------------

static int
issue_ring(soak_ctx *c, soak_op *o)
{
    int next = (c->rank + 1) % c->n, tag = (int) (o->seq & 0xffffff);
    shoal_request *send;
    int            st;

    if (o->async) {
        st = shoal_irecv(
            c->comm, o->out, o->count, o->dt, prev_rank(c), tag, &o->req[1]);
        return st < 0 ? st
                      : shoal_isend(c->comm, o->in, o->count, o->dt, next, tag,
                          &o->req[0]);
    }
    st = shoal_isend(c->comm, o->in, o->count, o->dt, next, tag, &send);
    if (st < 0) {
        return st;
    }
    st = shoal_recv(c->comm, o->out, o->count, o->dt, prev_rank(c), tag);
    if (st == SHOAL_OK) {
        st = shoal_wait(send, -1);
    }
    shoal_request_free(send);
    return st;
}

// The blocking call, or the non-blocking one when `req` is not NULL.
static int
issue_collective(soak_ctx *c, soak_op *o, shoal_request **req)
{
    shoal_comm *w = c->comm;

    switch (o->kind) {
        case SOAK_ALL_REDUCE:
            return req
                ? shoal_iall_reduce(
                    w, o->in, o->out, o->count, o->dt, o->op, req)
                : shoal_all_reduce(w, o->in, o->out, o->count, o->dt, o->op);
        case SOAK_REDUCE:
            return req ? shoal_ireduce(
                       w, o->in, o->out, o->count, o->dt, o->op, o->root, req)
                       : shoal_reduce(
                           w, o->in, o->out, o->count, o->dt, o->op, o->root);
        case SOAK_BROADCAST:
            return req
                ? shoal_ibroadcast(w, o->out, o->count, o->dt, o->root, req)
                : shoal_broadcast(w, o->out, o->count, o->dt, o->root);
        case SOAK_ALL_GATHER:
            return req
                ? shoal_iall_gather(w, o->in, o->out, o->count, o->dt, req)
                : shoal_all_gather(w, o->in, o->out, o->count, o->dt);
        case SOAK_REDUCE_SCATTER:
            return req ? shoal_ireduce_scatter(
                       w, o->in, o->out, o->count, o->dt, o->op, req)
                       : shoal_reduce_scatter(
                           w, o->in, o->out, o->count, o->dt, o->op);
        case SOAK_ALL_TO_ALL:
            return req
                ? shoal_iall_to_all(w, o->in, o->out, o->count, o->dt, req)
                : shoal_all_to_all(w, o->in, o->out, o->count, o->dt);
        case SOAK_GATHER:
            return req
                ? shoal_igather(
                    w, o->in, o->out, o->count, o->dt, o->root, req)
                : shoal_gather(w, o->in, o->out, o->count, o->dt, o->root);
        case SOAK_SCATTER:
            return req
                ? shoal_iscatter(
                    w, o->in, o->out, o->count, o->dt, o->root, req)
                : shoal_scatter(w, o->in, o->out, o->count, o->dt, o->root);
        default:
            return req ? shoal_ibarrier(w, req) : shoal_barrier(w);
    }
}

// Starts (non-blocking) or runs (blocking) the call; the time spent in it
// adds to blocked_ns.
int
soak_issue(soak_ctx *c, soak_op *o)
{
    uint64_t t0 = soak_now_ns();
    int      st;

    if (o->kind == SOAK_RING) {
        st = issue_ring(c, o);
    } else {
        st = issue_collective(c, o, o->async ? &o->req[0] : NULL);
    }
    o->blocked_ns += soak_now_ns() - t0;
    return st;
}

// Waits for a non-blocking call's requests; nothing for a blocking one.
int
soak_complete(soak_ctx *c, soak_op *o)
{
    uint64_t t0 = soak_now_ns();
    int      st = SHOAL_OK, i, r;

    (void) c;
    for (i = 0; i < 2; i++) {
        if (o->req[i] != NULL) {
            r  = shoal_wait(o->req[i], -1);
            st = st == SHOAL_OK ? r : st;
            shoal_request_free(o->req[i]);
            o->req[i] = NULL;
        }
    }
    o->blocked_ns += soak_now_ns() - t0;
    return st;
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

static void
report_wrong(soak_ctx *c, const soak_op *o, int64_t wrong, const char *why)
{
    c->st.wrong += wrong;
    if (c->reports++ >= SOAK_MAX_REPORTS) {
        return;
    }
    fprintf(stderr,
        "shoal-soak: WRONG rank %d call %" PRIu64 " %s%s dtype %s op %s "
        "count %zu root %d inplace %d heap %d (seed %" PRIu64 "): "
        "%" PRId64 " wrong, %s\n",
        c->rank, o->seq, o->async ? "i" : "", soak_kind_name(o->kind),
        shoal_dtype_name(o->dt),
        o->model == SOAK_MODEL_NONE ? "-" : shoal_op_name(o->op.kind),
        o->count, o->root, o->inplace, o->heap, c->opt.seed, wrong, why);
}

// Checks `bb` bytes at p against the pattern of (src, dst).
static void
check_block(
    soak_ctx *c, const soak_op *o, const unsigned char *p, int src, int dst)
{
    int64_t at
        = soak_pattern_check(p, block_bytes(o), soak_pattern_key(o, src, dst));
    char why[128];

    if (at >= 0) {
        snprintf(why, sizeof why,
            "block from rank %d to rank %d differs at byte %" PRId64, src, dst,
            at);
        report_wrong(c, o, 1, why);
    }
}

static void
check_reduction(soak_ctx *c, const soak_op *o)
{
    size_t first
        = o->kind == SOAK_REDUCE_SCATTER ? (size_t) c->rank * o->count : 0;
    char    why[160] = "";
    int64_t wrong;

    if (o->out == NULL) {
        return;
    }
    wrong
        = soak_reduce_check(o, o->out, first, o->count, c->n, why, sizeof why);
    if (wrong != 0) {
        report_wrong(c, o, wrong, why);
    }
}

static void
check_blocks(soak_ctx *c, const soak_op *o)
{
    const unsigned char *out = o->out;
    size_t               bb  = block_bytes(o);
    int                  p;

    switch (o->kind) {
        case SOAK_BROADCAST:
            check_block(c, o, out, o->root, 0);
            break;
        case SOAK_ALL_GATHER:
        case SOAK_GATHER:
            for (p = 0; o->rbytes != 0 && p < c->n; p++) {
                check_block(c, o, out + (size_t) p * bb, p, 0);
            }
            break;
        case SOAK_ALL_TO_ALL:
            for (p = 0; p < c->n; p++) {
                check_block(c, o, out + (size_t) p * bb, p, c->rank);
            }
            break;
        case SOAK_SCATTER:
            check_block(c, o, out, o->root, c->rank);
            break;
        case SOAK_RING:
            check_block(c, o, out, prev_rank(c), c->rank);
            break;
        default:
            break;
    }
}

static void
check_canary(soak_ctx *c, const soak_op *o)
{
    const unsigned char *p = o->rbuf + o->rbytes;
    int                  i;

    for (i = 0; o->rbytes != 0 && i < SOAK_CANARY; i++) {
        if (p[i] != CANARY_BYTE) {
            char why[96];

            snprintf(why, sizeof why,
                "wrote past its output: byte %zu of recvbuf changed",
                o->rbytes + (size_t) i);
            report_wrong(c, o, 1, why);
            return;
        }
    }
}

void
soak_verify(soak_ctx *c, soak_op *o)
{
    if (o->model != SOAK_MODEL_NONE) {
        check_reduction(c, o);
    } else {
        check_blocks(c, o);
    }
    check_canary(c, o);
}
