// Control messages over UCX (struct shi_ucx_ctl): a peer's hello (the job
// secret's proof), an abort's text, a goodbye, and the headers of window
// puts and signals.
//
// A window put is a header, then its bytes as a PUTDATA message numbered
// per sender; the target checks the header with the window layer and
// receives the bytes straight into the window. A signal carries how many
// puts its sender sent before it, and is raised only once those are
// written, so a signal never overtakes the data it announces. Control
// messages carry their number per peer; one out of order, from a peer
// that did not prove the secret, or malformed aborts the communicator.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "transport/ucx/ucx.h"
#include "transport/upcalls.h"

static const uint64_t CTL_MASK = ~SHI_UCX_RANK_MASK;

static int
post_one(struct shi_ucx *ucx)
{
    struct shi_ucx_op *op = shi_ucx_op_new(ucx, SHI_UCX_CTL, -1);

    if (op == NULL) {
        return SHOAL_ENOMEM;
    }
    if ((op->ctl = malloc(sizeof(*op->ctl))) == NULL) {
        shi_comm_abort(ucx->comm, SHOAL_ENOMEM, "out of memory");
        return SHOAL_ENOMEM;
    }
    shi_ucx_recv(op, op->ctl, sizeof(*op->ctl), shi_ucx_tag(SHI_UCX_CTL, 0, 0),
        CTL_MASK);
    return SHOAL_OK;
}

int
shi_ucx_ctl_post_all(struct shi_ucx *ucx)
{
    for (int i = 0; i < SHI_UCX_CTL_POSTED; i++) {
        int st = post_one(ucx);
        if (st != SHOAL_OK) {
            return st;
        }
    }
    return SHOAL_OK;
}

// Sends *c (ours to free; its seq is set here) to `peer`; `req`, if any,
// completes when it is out.
void
shi_ucx_ctl_send(
    struct shi_ucx *ucx, int peer, struct shi_ucx_ctl *c, shoal_request *req)
{
    struct shi_ucx_op *op = shi_ucx_op_new(ucx, SHI_UCX_CTL, peer);
    int                me = shi_tp_comm(ucx->comm)->rank;

    if (op == NULL) {
        free(c);
        return;
    }
    c->magic = SHI_UCX_MAGIC;
    c->seq   = ucx->peers[peer].ctl_tx++;
    op->ctl  = c;
    op->req  = req;
    shi_ucx_send(
        op, c, SHI_UCX_CTL_HEAD + c->len, shi_ucx_tag(SHI_UCX_CTL, me, 0));
}

static struct shi_ucx_ctl *
ctl_new(int type)
{
    struct shi_ucx_ctl *c = calloc(1, sizeof(*c));

    if (c != NULL) {
        c->type = (uint16_t) type;
    }
    return c;
}

// A send of ours ended: a one-sided request completes with its last part.
void
shi_ucx_sent(struct shi_ucx_op *op, ucs_status_t status)
{
    shoal_request *req = op->req;

    if (status != UCS_OK && status != UCS_ERR_CANCELED) {
        shi_ucx_peer_failed(op->ucx, op->peer, status);
        return;
    }
    if (req != NULL && status == UCS_OK) {
        op->req = NULL;
        shi_transport_complete(op->ucx->comm, req, SHOAL_OK);
    }
}

void
shi_ucx_rma_send(
    shoal_comm *comm, shoal_request *req, uint32_t win, uint64_t off)
{
    struct shi_tp_req   *tr  = shi_tp_req(req);
    struct shi_ucx      *ucx = shi_tp_comm(comm)->tp_state;
    struct shi_ucx_peer *p   = &ucx->peers[tr->peer];
    int                  put = tr->kind == SHI_OP_PUT;
    struct shi_ucx_ctl  *c   = ctl_new(put ? SHI_UCX_PUT : SHI_UCX_SIGNAL);

    tr->blocked_on = tr->peer;
    if (c == NULL) {
        shi_comm_abort(comm, SHOAL_ENOMEM, "out of memory for a message");
        return;
    }
    c->win   = win;
    c->off   = off;
    c->bytes = put ? tr->bytes : 0;
    c->puts  = put ? p->puts_tx++ : p->puts_tx;
    if (!put || tr->bytes == 0) {
        shi_ucx_ctl_send(ucx, tr->peer, c, req);
        return;
    }
    uint64_t puts = c->puts;
    shi_ucx_ctl_send(ucx, tr->peer, c, NULL);
    struct shi_ucx_op *op = shi_ucx_op_new(ucx, SHI_UCX_PUTDATA, tr->peer);
    if (op != NULL) {
        op->req = req;
        shi_ucx_send(op, tr->sendbuf, tr->bytes,
            shi_ucx_tag(SHI_UCX_PUTDATA, shi_tp_comm(comm)->rank, puts));
    }
}

static void
refuse(struct shi_ucx *ucx, int p, const char *what)
{
    shi_comm_abort(ucx->comm, SHOAL_EPROTO, "%s sent %s: %s",
        ucx->peers[p].addr, what, shi_error_text());
}

// Raises the signals of peer p whose puts are all written.
static void
release_signals(struct shi_ucx *ucx, int p)
{
    struct shi_ucx_peer        *peer = &ucx->peers[p];
    struct shi_ucx_held_signal *h;

    while ((h = peer->held) != NULL && h->after <= peer->puts_rx_done) {
        peer->held = h->next;
        if (peer->held == NULL) {
            peer->held_tail = NULL;
        }
        if (shi_transport_signal_arrived(ucx->comm, p, h->win, h->counter)
            != SHOAL_OK) {
            refuse(ucx, p, "a signal this rank cannot take");
        }
        free(h);
    }
}

static void
hold_signal(struct shi_ucx *ucx, int p, const struct shi_ucx_ctl *c)
{
    struct shi_ucx_peer        *peer = &ucx->peers[p];
    struct shi_ucx_held_signal *h    = calloc(1, sizeof(*h));

    if (h == NULL) {
        shi_comm_abort(ucx->comm, SHOAL_ENOMEM, "out of memory for a signal");
        return;
    }
    h->win     = c->win;
    h->counter = c->off;
    h->after   = c->puts;
    if (peer->held_tail != NULL) {
        peer->held_tail->next = h;
    } else {
        peer->held = h;
    }
    peer->held_tail = h;
    release_signals(ucx, p);
}

static void
put_arrives(struct shi_ucx *ucx, int p, const struct shi_ucx_ctl *c)
{
    struct shi_ucx_peer *peer = &ucx->peers[p];
    unsigned char       *dst;
    struct shi_ucx_op   *op;

    dst = shi_transport_put_target(ucx->comm, p, c->win, c->off, c->bytes);
    if (dst == NULL) {
        refuse(ucx, p, "a put this rank cannot take");
        return;
    }
    if (c->bytes == 0) {
        peer->puts_rx_done++;
        release_signals(ucx, p);
        return;
    }
    if ((op = shi_ucx_op_new(ucx, SHI_UCX_PUTDATA, p)) != NULL) {
        shi_ucx_recv(op, dst, c->bytes,
            shi_ucx_tag(SHI_UCX_PUTDATA, p, c->puts), ~UINT64_C(0));
    }
}

void
shi_ucx_put_written(struct shi_ucx_op *op, ucs_status_t status,
    const ucp_tag_recv_info_t *info)
{
    struct shi_ucx *ucx = op->ucx;

    if (status != UCS_OK || info == NULL || info->length != op->want) {
        if (status == UCS_OK || status == UCS_ERR_MESSAGE_TRUNCATED) {
            shi_error(SHOAL_EPROTO, "its bytes differ from its header's");
            refuse(ucx, op->peer, "a put");
        } else if (status != UCS_ERR_CANCELED) {
            shi_ucx_peer_failed(ucx, op->peer, status);
        }
        return;
    }
    ucx->peers[op->peer].puts_rx_done++;
    release_signals(ucx, op->peer);
}

static void
hello_arrives(struct shi_ucx *ucx, int p, const struct shi_ucx_ctl *c)
{
    struct shi_tp_comm  *tc   = shi_tp_comm(ucx->comm);
    struct shi_ucx_peer *peer = &ucx->peers[p];

    if (peer->hello_ok) {
        shi_error(SHOAL_EPROTO, "a second hello");
        refuse(ucx, p, "a hello");
        return;
    }
    int st = shi_auth_peer_token_ok(
        &tc->secret, ucx->nonce, peer->nonce, c->token, peer->addr);
    if (st != SHOAL_OK) {
        shi_comm_abort(ucx->comm, st, "%s", shi_error_text());
        return;
    }
    peer->hello_ok = 1;
    ucx->hellos++;
}

static void
abort_arrives(struct shi_ucx *ucx, int p, const struct shi_ucx_ctl *c)
{
    int len = c->len < SHI_UCX_TEXT_MAX ? (int) c->len : SHI_UCX_TEXT_MAX;

    ucx->abort_heard = 1;
    shi_comm_abort(ucx->comm, c->status < 0 ? c->status : SHOAL_EABORTED,
        "rank %d reported: %.*s", p, len, c->text);
}

static void
bye_arrives(struct shi_ucx *ucx, int p)
{
    struct shi_tp_comm *tc = shi_tp_comm(ucx->comm);

    atomic_store(&tc->peers[p].state, SHI_PEER_LEFT);
    SHI_INFO(
        "communicator '%s': rank %d destroyed its communicator", tc->name, p);
}

// A control message's envelope: from a rank of this communicator, well
// formed, in order, and (but for the hello) from a peer that proved the
// job secret. Returns the sender, or -1 after aborting.
static int
check_envelope(struct shi_ucx *ucx, const struct shi_ucx_ctl *c,
    const ucp_tag_recv_info_t *info)
{
    struct shi_tp_comm *tc = shi_tp_comm(ucx->comm);
    int                 p  = shi_ucx_tag_rank(info->sender_tag);

    if (p >= tc->size || p == tc->rank) {
        shi_comm_abort(ucx->comm, SHOAL_EPROTO,
            "a control message names sender %d, not a peer of this "
            "communicator of %d ranks",
            p, tc->size);
        return -1;
    }
    if (info->length < SHI_UCX_CTL_HEAD || c->magic != SHI_UCX_MAGIC
        || c->len > info->length - SHI_UCX_CTL_HEAD) {
        shi_error(SHOAL_EPROTO, "%zu bytes that are no shoal control message",
            info->length);
        refuse(ucx, p, "a malformed message");
        return -1;
    }
    if (!ucx->peers[p].hello_ok && c->type != SHI_UCX_HELLO) {
        shi_error(SHOAL_EAUTH, "it has not proved the job secret");
        refuse(ucx, p, "a message before its hello");
        return -1;
    }
    if (c->seq != ucx->peers[p].ctl_rx) {
        shi_error(SHOAL_EPROTO, "control message %llu where %llu was next",
            (unsigned long long) c->seq,
            (unsigned long long) ucx->peers[p].ctl_rx);
        refuse(ucx, p, "a message out of order");
        return -1;
    }
    ucx->peers[p].ctl_rx++;
    return p;
}

void
shi_ucx_ctl_arrived(struct shi_ucx_op *op, ucs_status_t status,
    const ucp_tag_recv_info_t *info)
{
    struct shi_ucx     *ucx = op->ucx;
    struct shi_ucx_ctl *c   = op->ctl;
    int                 p;

    if (status == UCS_ERR_CANCELED) {
        return;
    }
    if (!atomic_load(&shi_tp_comm(ucx->comm)->failed)) {
        post_one(ucx); // keep SHI_UCX_CTL_POSTED receives posted
    }
    if (status != UCS_OK || info == NULL) {
        shi_comm_abort(ucx->comm, SHOAL_EPROTO,
            "receiving a control message failed: %s",
            ucs_status_string(status));
        return;
    }
    if ((p = check_envelope(ucx, c, info)) < 0) {
        return;
    }
    switch (c->type) {
        case SHI_UCX_HELLO:
            hello_arrives(ucx, p, c);
            return;
        case SHI_UCX_ABORT:
            abort_arrives(ucx, p, c);
            return;
        case SHI_UCX_BYE:
            bye_arrives(ucx, p);
            return;
        case SHI_UCX_PUT:
            put_arrives(ucx, p, c);
            return;
        case SHI_UCX_SIGNAL:
            hold_signal(ucx, p, c);
            return;
        default:
            shi_error(SHOAL_EPROTO, "control message type %u", c->type);
            refuse(ucx, p, "an unknown message");
    }
}

// Tells every live peer why this communicator failed (once).
void
shi_ucx_say_abort(struct shi_ucx *ucx)
{
    struct shi_tp_comm *tc = shi_tp_comm(ucx->comm);

    for (int p = 0; p < tc->size; p++) {
        struct shi_ucx_ctl *c = ctl_new(SHI_UCX_ABORT);
        if (p == tc->rank || ucx->peers[p].failed
            || atomic_load(&tc->peers[p].state) != SHI_PEER_LIVE
            || c == NULL) {
            free(c);
            continue;
        }
        c->status = atomic_load(&tc->failed);
        pthread_mutex_lock(&tc->err_lock);
        c->len = (uint32_t) snprintf(
            c->text, sizeof(c->text), "%s", tc->fail_text);
        pthread_mutex_unlock(&tc->err_lock);
        c->len = c->len < sizeof(c->text) ? c->len : sizeof(c->text) - 1;
        shi_ucx_ctl_send(ucx, p, c, NULL);
    }
}

static int
sends_out(const struct shi_ucx *ucx)
{
    for (const struct shi_ucx_op *op = ucx->ops; op != NULL; op = op->next) {
        if (!op->is_recv && !op->detached) {
            return 1;
        }
    }
    return 0;
}

// Everything sent goes out first, then a goodbye to every peer, flushed,
// so that a peer that sees our endpoint close after it knows we left.
void
shi_ucx_goodbye(struct shi_ucx *ucx, int64_t deadline)
{
    struct shi_tp_comm *tc = shi_tp_comm(ucx->comm);

    while (sends_out(ucx) && shi_now_ns() < deadline) {
        ucp_worker_progress(ucx->worker);
    }
    for (int p = 0; p < tc->size; p++) {
        struct shi_ucx_ctl *c = ctl_new(SHI_UCX_BYE);
        if (p == tc->rank || ucx->peers[p].failed || c == NULL) {
            free(c);
            continue;
        }
        shi_ucx_ctl_send(ucx, p, c, NULL);
    }
    while (sends_out(ucx) && shi_now_ns() < deadline) {
        ucp_worker_progress(ucx->worker);
    }
}

void
shi_ucx_peer_failed(struct shi_ucx *ucx, int p, ucs_status_t status)
{
    struct shi_tp_comm *tc = shi_tp_comm(ucx->comm);

    if (p < 0 || p >= tc->size) {
        shi_comm_abort(ucx->comm, SHOAL_EPEER, "a UCX operation failed: %s",
            ucs_status_string(status));
        return;
    }
    ucx->peers[p].failed = 1;
    if (atomic_load(&tc->peers[p].state) != SHI_PEER_LIVE) {
        return; // it said goodbye (or was found dead already)
    }
    atomic_store(&tc->peers[p].state, SHI_PEER_DEAD);
    shi_comm_abort(ucx->comm, SHOAL_EPEER,
        "%s (pid %d) is unreachable: UCX reports %s", ucx->peers[p].addr,
        tc->peers[p].pid, ucs_status_string(status));
}
