// Data and point-to-point messages over UCX: each is one tagged message.
// A collective's data message is tagged with its position on the channel
// and 16 bits of its call's hash; the receive ignores the hash bits when
// matching and then compares them, so ranks that called different
// collectives fail with a message instead of exchanging wrong data. A
// point-to-point message is tagged with the application's tag; an
// any-source receive leaves the sender's bits out of its mask.
#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "transport/ucx/ucx.h"
#include "transport/upcalls.h"

#define POS_BITS  24
#define POS_MASK  ((UINT64_C(1) << POS_BITS) - 1)
#define HASH_MASK (SHI_UCX_LOW_MASK & ~POS_MASK)

static struct shi_ucx *
ucx_of(shoal_comm *comm)
{
    return shi_tp_comm(comm)->tp_state;
}

static uint64_t
data_low(const shi_msg *msg)
{
    return (msg->call_hash << POS_BITS & HASH_MASK) | (msg->id & POS_MASK);
}

void
shi_ucx_msg_send(shoal_comm *comm, shi_msg *msg)
{
    struct shi_ucx    *ucx = ucx_of(comm);
    struct shi_ucx_op *op  = shi_ucx_op_new(ucx, SHI_UCX_DATA, msg->peer);

    if (op != NULL) {
        op->msg = msg;
        shi_ucx_send(op, msg->buf, msg->total,
            shi_ucx_tag(SHI_UCX_DATA, shi_tp_comm(comm)->rank, data_low(msg)));
    }
}

int
shi_ucx_msg_recv(shoal_comm *comm, shi_msg *msg)
{
    struct shi_ucx    *ucx  = ucx_of(comm);
    struct shi_ucx_op *op   = shi_ucx_op_new(ucx, SHI_UCX_DATA, msg->peer);
    uint64_t           mask = ~HASH_MASK;

    if (op != NULL) {
        op->msg = msg;
        shi_ucx_recv(op, msg->buf, msg->total,
            shi_ucx_tag(SHI_UCX_DATA, msg->peer, data_low(msg)), mask);
    }
    return msg->done;
}

int
shi_ucx_p2p_post(shoal_comm *comm, shoal_request *req)
{
    struct shi_tp_comm *tc  = shi_tp_comm(comm);
    struct shi_tp_req  *tr  = shi_tp_req(req);
    struct shi_ucx     *ucx = tc->tp_state;
    int                 any = tr->peer == SHOAL_ANY_SOURCE;
    struct shi_ucx_op  *op;

    tr->seq        = ++tc->p2p_seq;
    tr->blocked_on = tr->peer; // -1 (no one yet) for any-source
    tr->source     = tr->peer;
    tc->p2p_active++;
    if ((op = shi_ucx_op_new(ucx, SHI_UCX_P2P, any ? -1 : tr->peer)) == NULL) {
        return 0;
    }
    op->req = req;
    if (tr->kind == SHI_OP_SEND) {
        shi_ucx_send(op, tr->buf, tr->bytes,
            shi_ucx_tag(SHI_UCX_P2P, tc->rank, (uint32_t) tr->tag));
        return 0;
    }
    shi_ucx_recv(op, tr->buf, tr->bytes,
        shi_ucx_tag(SHI_UCX_P2P, any ? 0 : tr->peer, (uint32_t) tr->tag),
        any ? ~SHI_UCX_RANK_MASK : ~UINT64_C(0));
    return 0; // the pass progresses the worker
}

// The request ended before its message did (a deadline): stop waiting.
void
shi_ucx_p2p_forget(shoal_comm *comm, shoal_request *req)
{
    struct shi_ucx *ucx = ucx_of(comm);

    for (struct shi_ucx_op *op = ucx->ops; op != NULL; op = op->next) {
        if (op->req == req) {
            op->req = NULL;
            shi_ucx_op_forget(op, shi_now_ns() + 1000000000);
            return;
        }
    }
}

static void
mismatch(struct shi_ucx_op *op, const ucp_tag_recv_info_t *info)
{
    shoal_comm *comm = op->ucx->comm;
    int         me   = shi_tp_comm(comm)->rank;
    int  from = info != NULL ? shi_ucx_tag_rank(info->sender_tag) : op->peer;
    char sent[64];

    if (info != NULL) {
        snprintf(sent, sizeof(sent), "%zu bytes", info->length);
    } else {
        snprintf(sent, sizeof(sent), "more than %zu bytes", op->want);
    }
    if (op->kind == SHI_UCX_P2P) {
        shi_comm_abort(comm, SHOAL_EMISMATCH,
            "rank %d sent %s with tag %d, but rank %d posted a receive of "
            "%zu bytes",
            from, sent, shi_tp_req(op->req)->tag, me, op->want);
        return;
    }
    shi_comm_abort(comm, SHOAL_EMISMATCH,
        "collective #%u does not match across ranks: rank %d sent %s for "
        "it where rank %d expects %zu bytes, or for another call (the ranks "
        "called different operations, counts, dtypes, roots or orders)",
        op->msg->coll_seq, from, sent, me, op->want);
}

// Whether a received message is the one the receive expected.
static int
received_ok(struct shi_ucx_op *op, const ucp_tag_recv_info_t *info)
{
    if (info->length != op->want) {
        return 0;
    }
    return op->kind != SHI_UCX_DATA
        || (info->sender_tag & HASH_MASK) == (data_low(op->msg) & HASH_MASK);
}

void
shi_ucx_msg_done(struct shi_ucx_op *op, ucs_status_t status,
    const ucp_tag_recv_info_t *info)
{
    struct shi_ucx *ucx  = op->ucx;
    shoal_comm     *comm = ucx->comm;
    shoal_request  *req  = op->req;

    if (status == UCS_ERR_MESSAGE_TRUNCATED
        || (status == UCS_OK && op->is_recv && info != NULL
            && !received_ok(op, info))) {
        mismatch(op, info);
        return;
    }
    if (status != UCS_OK) {
        shi_ucx_peer_failed(ucx, op->peer, status);
        return;
    }
    if (op->msg != NULL) {
        op->msg->moved = op->msg->total;
        op->msg->done  = 1;
        return;
    }
    op->req = NULL; // completing it calls p2p_forget, which must not find it
    if (op->is_recv && info != NULL) {
        int from                = shi_ucx_tag_rank(info->sender_tag);
        shi_tp_req(req)->source = from < shi_tp_comm(comm)->size ? from : -1;
        shi_tp_req(req)->blocked_on = shi_tp_req(req)->source;
    }
    shi_transport_complete(comm, req, SHOAL_OK);
}
