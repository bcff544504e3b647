// The schedule executor: runs the head collective of a TCP communicator.
//
// When a collective starts, its schedule is built (sched.h), every message
// gets its position on its peer's data channel (so receives may be posted
// in any order their dependencies allow and still pair with the right
// send), and the operations without dependencies start at once. Each step
// then starts what became ready and notes what finished; the request
// completes when every operation is done. Reductions run inline in the
// step that finds their inputs complete, while the sockets keep moving the
// next pieces in the kernel's buffers.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/common/algos.h"
#include "algo/common/call_desc.h"
#include "algo/kernels/reduce.h"
#include "algo/net/net_driver.h"
#include "algo/net/sched.h"
#include "algo/registry.h"
#include "base/env.h"
#include "base/log.h"
#include "core/comm.h"
#include "core/engine.h"
#include "core/op_props.h"
#include "transport/msg.h"

// Reduction pipelining unit (a piece is reduced as soon as it arrives).
#define NET_PIECE_BYTES (1u << 20)

enum { OP_WAITING = 0, OP_STARTED, OP_DONE };

// The executor's state for the head collective (comm->net_run, kept from
// one collective to the next so that its arrays are reused).
struct shi_net_run {
    shi_sched      sched;
    shi_msg       *msgs; // one per SEND/RECV op
    unsigned char *state; // per op: 0 waiting, 1 started, 2 done
    int            msgs_cap, state_cap;
    int            remaining; // operations not done
    int            first_open; // no operation before it is still open
    unsigned char *scratch;
    size_t         scratch_cap;
};

// The in-place forms of shoal.h, from the buffers' addresses.
static int
in_place(const shoal_comm *comm, const shoal_request *req)
{
    shi_op_shape shape = { .kind = req->kind,
        .rank                    = comm->rank,
        .nranks                  = comm->size,
        .root                    = req->peer,
        .count                   = req->count,
        .counts                  = req->counts,
        .rcounts                 = req->rcounts };

    return shi_op_in_place(&shape, shi_req_esize(req), req->sendbuf, req->buf);
}

static uint64_t
call_hash(const shoal_request *req)
{
    struct shi_call_desc d = {
        .kind        = (uint32_t) req->kind,
        .root        = req->peer,
        .dtype       = (uint32_t) req->dtype,
        .count       = req->count,
        .redop       = (uint32_t) req->op.kind,
        .algo        = (uint32_t) req->algo,
        .counts_hash = req->counts_hash,
    };
    atomic_init(&d.seq, (uint32_t) req->seq);
    return shi_desc_hash(&d);
}

static int
grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap) {
        return SHOAL_OK;
    }
    void *q = realloc(*p, (size_t) need * elem);
    if (q == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory for a schedule");
    }
    *p   = q;
    *cap = need;
    return SHOAL_OK;
}

static int
ensure_scratch(struct shi_net_run *run, size_t bytes)
{
    if (bytes <= run->scratch_cap) {
        return SHOAL_OK;
    }
    unsigned char *p = realloc(run->scratch, bytes);
    if (p == NULL) {
        return shi_error(
            SHOAL_ENOMEM, "out of memory for %zu bytes of scratch", bytes);
    }
    run->scratch     = p;
    run->scratch_cap = bytes;
    return SHOAL_OK;
}

static unsigned char *
buffer(shoal_comm *comm, shoal_request *req, int which)
{
    switch (which) {
        case SHI_SBUF_SEND:
            return (unsigned char *) req->sendbuf;
        case SHI_SBUF_RECV:
            return req->buf;
    }
    return comm->net_run->scratch;
}

// Where an operand lives (NULL for a buffer the call does not have: a
// zero-byte operand then).
static unsigned char *
at(shoal_comm *comm, shoal_request *req, int which, uint64_t off)
{
    unsigned char *base = buffer(comm, req, which);

    return base != NULL ? base + off : NULL;
}

// Builds the schedule and gives every message its channel position.
static int
net_start(shoal_comm *comm, shoal_request *req)
{
    struct shi_net_run *run;
    long long           piece;
    int                 st;

    if (comm->net_run == NULL
        && (comm->net_run = calloc(1, sizeof(*comm->net_run))) == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory for a schedule");
    }
    run = comm->net_run;

    shi_env_bytes("SHOAL_NET_PIECE_BYTES", NET_PIECE_BYTES, &piece);
    shi_sched_call call = {
        .kind        = req->kind,
        .algo        = req->algo,
        .rank        = comm->rank,
        .nranks      = comm->size,
        .root        = req->peer,
        .dtype       = req->dtype,
        .count       = req->count,
        .esize       = shi_req_esize(req),
        .counts      = req->counts,
        .rcounts     = req->rcounts,
        .op          = req->op,
        .in_place    = in_place(comm, req),
        .piece_bytes = piece >= 4096 ? (size_t) piece : NET_PIECE_BYTES,
    };
    if ((st = shi_sched_build(&run->sched, &call)) != SHOAL_OK
        || (st = ensure_scratch(run, run->sched.scratch_bytes)) != SHOAL_OK
        || (st = grow((void **) &run->msgs, &run->msgs_cap, run->sched.nops,
                sizeof(*run->msgs)))
            != SHOAL_OK
        || (st = grow(
                (void **) &run->state, &run->state_cap, run->sched.nops, 1))
            != SHOAL_OK) {
        return st;
    }
    if (shi_log_enabled(SHI_LOG_TRACE)) {
        char title[256];
        shi_req_describe(req, title, sizeof(title));
        shi_sched_dump(&run->sched, title);
    }
    uint64_t hash = call_hash(req);
    if (run->sched.nops > 0) {
        memset(run->state, OP_WAITING, (size_t) run->sched.nops);
    }
    run->remaining  = run->sched.nops;
    run->first_open = 0;
    for (int i = 0; i < run->sched.nops; i++) {
        const shi_sop *op = &run->sched.ops[i];
        shi_msg       *m  = &run->msgs[i];
        if (op->kind != SHI_SOP_SEND && op->kind != SHI_SOP_RECV) {
            continue;
        }
        *m = (shi_msg) {
            .peer      = op->peer,
            .type      = SHI_MSG_DATA,
            .coll_seq  = (uint32_t) req->seq,
            .call_hash = hash,
            .total     = op->bytes,
        };
        comm->tp->msg_number(comm, m, op->kind == SHI_SOP_SEND);
        m->buf = op->kind == SHI_SOP_SEND
            ? at(comm, req, op->src, op->src_off)
            : at(comm, req, op->dst, op->dst_off);
    }
    return SHOAL_OK;
}

// REDUCE_ALL: every rank's input, in rank order, through the kernel that
// reduces over shared memory, so that the bits are the same.
static void
run_reduce_all(shoal_comm *comm, shoal_request *req, const shi_sop *op)
{
    const unsigned char *others = at(comm, req, op->src2, op->src2_off);
    size_t               k      = 0;

    for (int q = 0; q < comm->size; q++) {
        comm->inputs[q] = q == comm->rank ? at(comm, req, op->src, op->src_off)
                                          : others + op->step * k++;
    }
    shi_reduce(req->dtype, req->op, at(comm, req, op->dst, op->dst_off),
        comm->inputs, comm->size, op->bytes / shi_req_esize(req));
}

static void
run_local(shoal_comm *comm, shoal_request *req, const shi_sop *op)
{
    unsigned char  *dst     = at(comm, req, op->dst, op->dst_off);
    size_t          n       = op->bytes / shi_req_esize(req);
    shoal_reduce_op combine = req->op;
    const void     *in[2];

    switch (op->kind) {
        case SHI_SOP_COPY:
            if (op->bytes > 0) {
                memmove(dst, at(comm, req, op->src, op->src_off), op->bytes);
            }
            return;
        case SHI_SOP_REDUCE:
            if (combine.kind == SHOAL_AVG
                || combine.kind == SHOAL_PREMUL_SUM) {
                combine.kind = SHOAL_SUM;
            }
            in[0] = at(comm, req, op->src, op->src_off);
            in[1] = at(comm, req, op->src2, op->src2_off);
            shi_reduce(req->dtype, combine, dst, in, 2, n);
            return;
        case SHI_SOP_PREMUL:
            in[0] = at(comm, req, op->src, op->src_off);
            shi_reduce(req->dtype, req->op, dst, in, 1, n);
            return;
        case SHI_SOP_AVG:
            shi_reduce_divide(req->dtype, dst, n, comm->size);
            return;
        case SHI_SOP_REDUCE_ALL:
            run_reduce_all(comm, req, op);
            return;
    }
}

static int
deps_done(const struct shi_net_run *run, const shi_sop *op)
{
    for (int d = 0; d < 2; d++) {
        if (op->dep[d] >= 0 && run->state[op->dep[d]] != OP_DONE) {
            return 0;
        }
    }
    return 1;
}

static void
op_finished(struct shi_net_run *run, int i)
{
    run->state[i] = OP_DONE;
    run->remaining--;
}

// Starts op i. Returns 1 if it finished at once.
static int
start_op(shoal_comm *comm, shoal_request *req, int i)
{
    struct shi_net_run *run = comm->net_run;
    const shi_sop      *op  = &run->sched.ops[i];

    run->state[i] = OP_STARTED;
    if (op->kind == SHI_SOP_SEND) {
        comm->tp->msg_send(comm, &run->msgs[i]);
        return run->msgs[i].done;
    }
    if (op->kind == SHI_SOP_RECV) {
        return comm->tp->msg_recv(comm, &run->msgs[i]) || run->msgs[i].done;
    }
    run_local(comm, req, op);
    return 1;
}

// One pass over the schedule. Returns operations started or finished.
static int
net_advance(shoal_comm *comm, shoal_request *req)
{
    struct shi_net_run *run = comm->net_run;
    int                 n = 0, moved = 1;

    while (moved && !atomic_load(&comm->failed)) {
        int sending_to = -1; // a send not done: whom we wait for if no
                             // receive is left (its link may be down)
        moved           = 0;
        req->blocked_on = -1;
        for (int i = run->first_open; i < run->sched.nops; i++) {
            const shi_sop *op = &run->sched.ops[i];
            if (run->state[i] == OP_STARTED && run->msgs[i].done) {
                op_finished(run, i);
                moved = 1;
            } else if (run->state[i] == OP_WAITING && deps_done(run, op)) {
                if (start_op(comm, req, i)) {
                    op_finished(run, i);
                }
                moved = 1;
            }
            if (run->state[i] != OP_DONE && req->blocked_on < 0
                && op->kind == SHI_SOP_RECV) {
                req->blocked_on = op->peer;
            }
            if (run->state[i] == OP_STARTED && sending_to < 0
                && op->kind == SHI_SOP_SEND) {
                sending_to = op->peer;
            }
            if (i == run->first_open && run->state[i] == OP_DONE) {
                run->first_open++;
            }
        }
        req->blocked_on = req->blocked_on >= 0 ? req->blocked_on : sending_to;
        n += moved;
    }
    if (run->remaining == 0 && !atomic_load(&comm->failed)) {
        shi_engine_complete(comm, req, SHOAL_OK);
        n++;
    }
    return n;
}

int
shi_net_coll_step(shoal_comm *comm)
{
    int n = 0;

    for (;;) {
        shoal_request *req = shi_engine_head(comm);
        if (req == NULL || atomic_load(&comm->failed)) {
            return n;
        }
        const shi_algo_desc *d = req->impl; // chosen at submission
        if (d != NULL && d->step != NULL) { // runs itself (host-aware)
            n += d->step(comm, req);
            if (shi_engine_head(comm) == req) {
                return n;
            }
            continue;
        }
        if (!req->started) {
            req->started = 1;
            int st       = net_start(comm, req);
            if (st != SHOAL_OK) {
                char desc[256];
                shi_req_describe(req, desc, sizeof(desc));
                shi_comm_abort(comm, st, "%s: %s", desc, shi_error_text());
                return n + 1;
            }
            n++;
        }
        n += net_advance(comm, req);
        if (shi_engine_head(comm) == req) {
            return n; // later collectives wait behind it
        }
    }
}

void
shi_net_exec_free(shoal_comm *comm)
{
    struct shi_net_run *run = comm->net_run;

    if (run == NULL) {
        return;
    }
    shi_sched_free(&run->sched);
    free(run->msgs);
    free(run->state);
    free(run->scratch);
    free(run);
    comm->net_run = NULL;
}
