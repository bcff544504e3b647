// One-sided operations over TCP (the table's rma_send, transport.h): a
// window's put or signal is a message on the peer's point-to-point
// channel, so it travels in order with every put and signal sent to that
// peer before it. The target's progress engine applies it on arrival: a
// put's frames are read straight into the window (where the window layer
// says, after checking the range), a signal raises the counter. A peer's
// window number, offset and size are untrusted: anything the window layer
// refuses aborts the communicator (EPROTO) before a byte is written.
#include <stdlib.h>

#include "transport/tcp/tcp_net.h"
#include "transport/upcalls.h"

void
shi_tcp_rma_send(
    shoal_comm *comm, shoal_request *req, uint32_t win, uint64_t off)
{
    struct shi_tp_req *tr  = shi_tp_req(req);
    struct shi_net    *net = shi_tp_comm(comm)->tp_state;
    shi_msg           *m   = calloc(1, sizeof(*m));

    tr->blocked_on = tr->peer;
    if (m == NULL) {
        shi_comm_abort(comm, SHOAL_ENOMEM, "out of memory for a message");
        return;
    }
    m->peer      = tr->peer;
    m->type      = tr->kind == SHI_OP_PUT ? SHI_TCP_PUT : SHI_TCP_SIGNAL;
    m->coll_seq  = win;
    m->call_hash = off;
    m->buf       = (unsigned char *) tr->sendbuf;
    m->total     = tr->kind == SHI_OP_PUT ? tr->bytes : 0;
    m->owner     = req;
    tr->xfer     = m;
    shi_tcp_send(net, m);
}

static shi_msg *
refuse(struct shi_net *net, int p, const char *what)
{
    shi_comm_abort(net->comm, SHOAL_EPROTO, "rank %d (%s) sent %s: %s", p,
        net->peers[p].addr, what, shi_error_text());
    return NULL;
}

// The later frames of a put continue the one arriving from that peer.
static shi_msg *
put_continues(struct shi_net *net, int p, const struct shi_tcp_frame *h)
{
    shi_msg *m = net->peers[p].rma_cur;

    if (m == NULL || m->id != h->id || m->total != h->total) {
        shi_error(SHOAL_EPROTO,
            "frame %llu at offset %llu of %llu bytes belongs to no put in "
            "progress",
            (unsigned long long) h->id, (unsigned long long) h->off,
            (unsigned long long) h->total);
        return refuse(net, p, "a put frame out of order");
    }
    return m;
}

shi_msg *
shi_tcp_put_arrives(struct shi_net *net, int p, const struct shi_tcp_frame *h)
{
    unsigned char *dst;
    shi_msg       *m;

    if (h->off != 0) {
        return put_continues(net, p, h);
    }
    if (net->peers[p].rma_cur != NULL) {
        shi_error(SHOAL_EPROTO, "a new put began before the last one ended");
        return refuse(net, p, "a put out of order");
    }
    dst = shi_transport_put_target(
        net->comm, p, h->coll_seq, h->call_hash, h->total);
    if (dst == NULL) {
        return refuse(net, p, "a put this rank cannot take");
    }
    if ((m = calloc(1, sizeof(*m))) == NULL) {
        shi_comm_abort(net->comm, SHOAL_ENOMEM, "out of memory for a put");
        return NULL;
    }
    m->peer               = p;
    m->type               = SHI_TCP_PUT;
    m->id                 = h->id;
    m->buf                = dst;
    m->total              = h->total;
    net->peers[p].rma_cur = m;
    return m;
}

void
shi_tcp_signal_arrives(
    struct shi_net *net, int p, const struct shi_tcp_frame *h)
{
    if (shi_transport_signal_arrived(net->comm, p, h->coll_seq, h->call_hash)
        != SHOAL_OK) {
        refuse(net, p, "a signal this rank cannot take");
    }
}
