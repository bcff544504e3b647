// Point-to-point operations over TCP: each send or receive is one message
// on the peer's point-to-point channel (see tcp_xfer.h), matched by tag in
// send order; an any-source receive takes the message with its tag that
// arrives first on any channel. A send completes once its bytes are in the
// kernel's socket buffers, so the caller may reuse its buffer then.
#include <stdlib.h>

#include "transport/tcp/tcp_net.h"
#include "transport/upcalls.h"

void
shi_net_p2p_done(shoal_comm *comm, shi_msg *msg)
{
    shoal_request *req = msg->owner;

    shi_tp_req(req)->xfer = NULL;
    free(msg);
    shi_transport_complete(comm, req, SHOAL_OK);
}

// An any-source receive found its sender: from now on it waits for that
// rank alone (and shoal_request_source will name it).
void
shi_net_p2p_matched(shoal_comm *comm, shi_msg *msg)
{
    shoal_request *req = msg->owner;

    (void) comm;
    shi_tp_req(req)->source     = msg->peer;
    shi_tp_req(req)->blocked_on = msg->peer;
}

int
shi_tcp_p2p_post(shoal_comm *comm, shoal_request *req)
{
    struct shi_tp_comm *tc  = shi_tp_comm(comm);
    struct shi_tp_req  *tr  = shi_tp_req(req);
    struct shi_net     *net = tc->tp_state;
    shi_msg            *m   = calloc(1, sizeof(*m));

    tr->seq        = ++tc->p2p_seq;
    tr->blocked_on = tr->peer; // -1 (no one yet) for any-source
    tr->source     = tr->peer;
    tc->p2p_active++;
    if (m == NULL) {
        shi_comm_abort(comm, SHOAL_ENOMEM, "out of memory for a message");
        return 0;
    }
    m->peer   = tr->peer;
    m->type   = SHI_TCP_P2P;
    m->tag    = tr->tag;
    m->buf    = tr->buf;
    m->total  = tr->bytes;
    m->posted = tr->seq;
    m->owner  = req;
    tr->xfer  = m;
    if (tr->kind == SHI_OP_SEND) {
        shi_tcp_send(net, m);
    } else if (shi_tcp_recv(net, m)) {
        shi_net_p2p_done(comm, m);
    }
    return 0; // the pass reads and writes the sockets
}
