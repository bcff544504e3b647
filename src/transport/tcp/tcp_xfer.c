// The TCP message layer (see tcp_xfer.h): queues, frames, matching.
#include <errno.h>
#include <poll.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "platform/net.h"
#include "platform/tcp_window.h"
#include "transport/tcp/tcp_net.h"
#include "transport/upcalls.h"

#define FRAME_BYTES sizeof(struct shi_tcp_frame)

static void
queue_push(struct shi_tcp_queue *q, shi_msg *m)
{
    m->next = NULL;
    if (q->tail != NULL) {
        q->tail->next = m;
    } else {
        q->head = m;
    }
    q->tail = m;
}

static void
queue_push_front(struct shi_tcp_queue *q, shi_msg *m)
{
    m->next = q->head;
    q->head = m;
    if (q->tail == NULL) {
        q->tail = m;
    }
}

static void
queue_remove(struct shi_tcp_queue *q, shi_msg *m)
{
    shi_msg **pp = &q->head, *prev = NULL;

    while (*pp != NULL && *pp != m) {
        prev = *pp;
        pp   = &(*pp)->next;
    }
    if (*pp == NULL) {
        return;
    }
    *pp = m->next;
    if (q->tail == m) {
        q->tail = prev;
    }
    m->next = NULL;
}

static shi_msg *
queue_find_id(const struct shi_tcp_queue *q, uint64_t id)
{
    for (shi_msg *m = q->head; m != NULL; m = m->next) {
        if (m->id == id) {
            return m;
        }
    }
    return NULL;
}

static shi_msg *
queue_find_tag(const struct shi_tcp_queue *q, int tag)
{
    for (shi_msg *m = q->head; m != NULL; m = m->next) {
        if (m->tag == tag) {
            return m;
        }
    }
    return NULL;
}

static const char *
peer_addr(struct shi_net *net, int p)
{
    return net->peers[p].addr;
}

// A message of ours (control frame or an unexpected buffer) is done.
static void
msg_complete(struct shi_net *net, shi_msg *m)
{
    m->done = 1;
    if (m->type == SHI_TCP_ABORT || m->type == SHI_TCP_BYE) {
        free(m); // control messages are one allocation with their text
    } else if (m->owner != NULL) {
        shi_net_p2p_done(net->comm, m); // a request's: P2P, PUT, SIGNAL
    } else if (m->type == SHI_TCP_PUT) {
        net->peers[m->peer].rma_cur = NULL; // a put into a window landed
        free(m);
    }
}

// ---------------------------------------------------------------- sending

static void
arm_out(struct shi_net *net, int p, int s, int on)
{
    struct shi_tcp_sock *sk = &net->peers[p].socks[s];
    struct epoll_event   ev;

    if (sk->out_armed == on || sk->fd < 0) {
        return;
    }
    ev.events   = EPOLLIN | (on ? EPOLLOUT : 0);
    ev.data.u64 = ((uint64_t) p << 16) | (uint64_t) s;
    if (epoll_ctl(net->epfd, EPOLL_CTL_MOD, sk->fd, &ev) == 0) {
        sk->out_armed = on;
    }
}

// The next frame for socket s of peer p: control and P2P go first and only
// on socket 0; data goes on any socket, chunk by chunk.
static int
next_frame(struct shi_net *net, int p, int s)
{
    struct shi_tcp_peer  *peer = &net->peers[p];
    struct shi_tcp_sock  *sk   = &peer->socks[s];
    struct shi_tcp_queue *q    = &peer->data_out;
    shi_msg              *m;

    if (s == 0 && peer->ctl_out.head != NULL) {
        q = &peer->ctl_out;
    }
    if ((m = q->head) == NULL) {
        return 0;
    }
    size_t len = m->total - m->handed;
    if (len > net->chunk && m->type != SHI_TCP_ABORT) {
        len = net->chunk;
    }
    sk->tx_hdr = (struct shi_tcp_frame) {
        .magic     = SHI_TCP_MAGIC,
        .type      = (uint16_t) m->type,
        .coll_seq  = m->type == SHI_TCP_P2P ? (uint32_t) m->tag : m->coll_seq,
        .len       = (uint32_t) len,
        .id        = m->id,
        .off       = m->handed,
        .total     = m->total,
        .call_hash = m->call_hash,
    };
    sk->tx      = m;
    sk->tx_src  = m->buf + m->handed;
    sk->tx_skip = 0;
    sk->tx_done = 0;
    m->handed += len;
    m->readers++; // frames made (a zero-byte message still needs one)
    if (m->handed == m->total) {
        queue_remove(q, m);
    }
    return 1;
}

// Whether a socket to p has a closed window: p's host answers, p does not
// read.
static int
peer_window_closed(struct shi_net *net, int p)
{
    for (int s = 0; s < net->nsock; s++) {
        uint32_t wnd;
        int      fd = net->peers[p].socks[s].fd;
        if (fd >= 0 && shi_tcp_peer_window(fd, &wnd) == 0 && wnd == 0) {
            return 1;
        }
    }
    return 0;
}

static void
peer_failed(struct shi_net *net, int p, const char *why, int err)
{
    shoal_comm      *comm = net->comm;
    struct shi_peer *cp   = &shi_tp_comm(comm)->peers[p];

    if (atomic_load(&cp->state) != SHI_PEER_LIVE) {
        return;
    }
    atomic_store(&cp->state, SHI_PEER_DEAD);
    if (err == ETIMEDOUT && peer_window_closed(net, p)) {
        shi_comm_abort(comm, SHOAL_ETIMEDOUT,
            "Timed out waiting for rank %d (pid %d on host %s, %s): its host "
            "acknowledges our data but the process has read nothing for "
            "longer than the timeout (stopped, or stuck outside shoal)",
            p, cp->pid, cp->host, peer_addr(net, p));
        return;
    }
    shi_comm_abort(comm, SHOAL_EPEER,
        "rank %d (pid %d on host %s, %s) is unreachable: %s%s%s", p, cp->pid,
        cp->host, peer_addr(net, p), why, err ? ": " : "",
        err ? strerror(err) : "");
}

static void
drop_socket(struct shi_net *net, int p, int s)
{
    struct shi_tcp_sock *sk = &net->peers[p].socks[s];

    if (sk->fd >= 0) {
        epoll_ctl(net->epfd, EPOLL_CTL_DEL, sk->fd, NULL);
        close(sk->fd);
        sk->fd = -1;
        net->peers[p].open_socks--;
    }
}

// Writes as much of socket s's frames as it takes. Returns frames done.
static int
tx_socket(struct shi_net *net, int p, int s)
{
    struct shi_tcp_sock *sk     = &net->peers[p].socks[s];
    int                  frames = 0;

    while (sk->fd >= 0 && !net->peers[p].socks[s].out_armed) {
        if (sk->tx == NULL && !next_frame(net, p, s)) {
            break;
        }
        shi_msg     *m   = sk->tx;
        size_t       len = sk->tx_hdr.len;
        struct iovec iov[2];
        int          n = 0;
        if (sk->tx_done < FRAME_BYTES) {
            iov[n++] = (struct iovec) { (char *) &sk->tx_hdr + sk->tx_done,
                FRAME_BYTES - sk->tx_done };
        }
        size_t pay = sk->tx_done > FRAME_BYTES ? sk->tx_done - FRAME_BYTES : 0;
        if (len > pay) {
            iov[n++]
                = (struct iovec) { (void *) (sk->tx_src + (pay - sk->tx_skip)),
                      len - pay };
        }
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t) n };
        ssize_t       w  = sendmsg(sk->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                arm_out(net, p, s, 1);
            } else if (errno != EINTR) {
                peer_failed(net, p, "sending failed", errno);
                drop_socket(net, p, s);
            }
            break;
        }
        sk->tx_done += (size_t) w;
        if (sk->tx_done == FRAME_BYTES + len) {
            sk->tx = NULL;
            m->moved += len;
            m->readers--;
            frames++;
            if (m->moved == m->total && m->handed == m->total
                && m->readers == 0) {
                msg_complete(net, m);
            }
        }
    }
    return frames;
}

// Tries every socket of peer p that is not waiting for EPOLLOUT.
static int
tx_peer(struct shi_net *net, int p)
{
    int n = 0;

    for (int s = 0; s < net->nsock; s++) {
        n += tx_socket(net, p, s);
    }
    return n;
}

void
shi_tcp_send(struct shi_net *net, shi_msg *m)
{
    struct shi_tcp_peer *peer = &net->peers[m->peer];

    m->handed = m->moved = 0;
    m->readers           = 0;
    m->done              = 0;
    if (m->type == SHI_TCP_DATA) {
        queue_push(&peer->data_out, m); // its id was given by the caller
    } else {
        m->id = peer->p2p_tx_id++;
        queue_push(&peer->ctl_out, m);
    }
    tx_peer(net, m->peer);
}

// -------------------------------------------------------------- receiving

static void
mismatch(struct shi_net *net, int p, const struct shi_tcp_frame *h,
    const shi_msg *m)
{
    shoal_comm *comm = net->comm;

    if (m->type == SHI_TCP_P2P) {
        shi_comm_abort(comm, SHOAL_EMISMATCH,
            "rank %d sent %llu bytes with tag %d, but rank %d posted a "
            "receive of %zu bytes",
            p, (unsigned long long) h->total, m->tag, shi_tp_comm(comm)->rank,
            m->total);
        return;
    }
    shi_comm_abort(comm, SHOAL_EMISMATCH,
        "collective #%u does not match across ranks: rank %d sent "
        "%llu bytes for its collective #%u where rank %d expects %zu bytes "
        "(the ranks called different operations, counts, dtypes, roots "
        "or algorithms)",
        m->coll_seq, p, (unsigned long long) h->total, h->coll_seq,
        shi_tp_comm(comm)->rank, m->total);
}

static shi_msg *
new_unexpected(struct shi_net *net, const struct shi_tcp_frame *h, int p)
{
    shi_msg *u = calloc(1, sizeof(*u));

    if (u == NULL || (h->total > 0 && (u->buf = malloc(h->total)) == NULL)) {
        free(u);
        shi_comm_abort(net->comm, SHOAL_ENOMEM,
            "out of memory for a %llu-byte message from rank %d that "
            "arrived before its receive",
            (unsigned long long) h->total, p);
        return NULL;
    }
    u->peer      = p;
    u->type      = h->type;
    u->tag       = (int) h->coll_seq;
    u->coll_seq  = h->coll_seq;
    u->call_hash = h->call_hash;
    u->id        = h->id;
    u->total     = h->total;
    u->owned     = 1;
    net->unexpected_bytes += (int64_t) h->total;
    return u;
}

static void
free_unexpected(struct shi_net *net, shi_msg *u)
{
    net->unexpected_bytes -= (int64_t) u->total;
    free(u->buf);
    free(u);
}

static void
frames_disagree(struct shi_net *net, int p, const shi_msg *m,
    const struct shi_tcp_frame *h)
{
    shi_comm_abort(net->comm, SHOAL_EPROTO,
        "rank %d sent frames of one message with different sizes (%llu "
        "bytes, then %llu)",
        p, (unsigned long long) m->total, (unsigned long long) h->total);
}

// The message a DATA frame's payload goes to.
static shi_msg *
data_target(struct shi_net *net, int p, const struct shi_tcp_frame *h)
{
    struct shi_tcp_peer *peer = &net->peers[p];
    shi_msg             *m    = queue_find_id(&peer->posted, h->id);

    if (m != NULL) {
        if (m->total != h->total || m->call_hash != h->call_hash) {
            mismatch(net, p, h, m);
            return NULL;
        }
        return m;
    }
    if ((m = queue_find_id(&peer->unexp, h->id)) != NULL) {
        // Later frames of one message must agree with its first on the
        // size: a peer claiming more would write past the buffer.
        if (m->total != h->total) {
            frames_disagree(net, p, m, h);
            return NULL;
        }
        return m;
    }
    // Not posted yet (its receive waits for an earlier operation, or the
    // peer is ahead of us): keep it until it is.
    if ((m = new_unexpected(net, h, p)) != NULL) {
        queue_push(&peer->unexp, m);
    }
    return m;
}

// Takes the receive a P2P message from p with `tag` goes to: the earliest
// posted of p's named receives and the any-source ones.
static shi_msg *
take_posted(struct shi_net *net, int p, int tag)
{
    struct shi_tcp_peer *peer  = &net->peers[p];
    shi_msg             *named = queue_find_tag(&peer->p2p_posted, tag);
    shi_msg             *any   = queue_find_tag(&net->p2p_any, tag);

    if (any != NULL && (named == NULL || any->posted < named->posted)) {
        queue_remove(&net->p2p_any, any);
        any->peer = p;
        shi_net_p2p_matched(net->comm, any);
        return any;
    }
    if (named != NULL) {
        queue_remove(&peer->p2p_posted, named);
    }
    return named;
}

static shi_msg *
p2p_target(struct shi_net *net, int p, const struct shi_tcp_frame *h)
{
    struct shi_tcp_peer *peer = &net->peers[p];
    shi_msg             *m;

    if (h->off != 0) {
        m = peer->p2p_cur;
        if (m == NULL || m->id != h->id) {
            shi_comm_abort(net->comm, SHOAL_EPROTO,
                "rank %d sent a point-to-point frame out of order", p);
            return NULL;
        }
        if (m->total != h->total) {
            frames_disagree(net, p, m, h);
            return NULL;
        }
        return m;
    }
    m = take_posted(net, p, (int) h->coll_seq);
    if (m != NULL) {
        if (m->total != h->total) {
            mismatch(net, p, h, m);
            return NULL;
        }
        m->id = h->id;
    } else if ((m = new_unexpected(net, h, p)) != NULL) {
        m->arrival = ++net->p2p_arrivals;
        queue_push(&peer->p2p_unexp, m);
    }
    peer->p2p_cur = m;
    return m;
}

// A frame's payload has fully arrived in m.
static void
frame_arrived(struct shi_net *net, shi_msg *m, const struct shi_tcp_frame *h)
{
    m->readers--;
    m->moved += h->len;
    if (m->forward != NULL) {
        shi_msg *f = m->forward;
        if (h->len > 0) {
            memcpy(f->buf + h->off, m->buf + h->off, h->len);
        }
        f->moved += h->len;
        // Later data frames go straight to f; P2P ones keep coming here.
        if (m->readers == 0
            && (m->type == SHI_TCP_DATA || m->moved == m->total)) {
            if (net->peers[m->peer].p2p_cur == m) {
                net->peers[m->peer].p2p_cur = f;
            }
            queue_remove(&net->peers[m->peer].forwarding, m);
            free_unexpected(net, m);
        }
        m = f;
    }
    if (m->moved == m->total && m->readers == 0 && !m->owned) {
        if (m->type == SHI_TCP_DATA) {
            queue_remove(&net->peers[m->peer].posted, m);
        }
        msg_complete(net, m);
    } else if (m->moved == m->total && m->owned) {
        m->done = 1; // unexpected, complete: waits for its receive
    }
}

static void
control_arrived(struct shi_net *net, int p, struct shi_tcp_sock *sk,
    const struct shi_tcp_frame *h, const char *text)
{
    shoal_comm *comm = net->comm;

    if (h->type == SHI_TCP_SIGNAL) {
        shi_tcp_signal_arrives(net, p, h);
        return;
    }
    if (h->type == SHI_TCP_BYE) {
        // Gone once every socket said so: each socket's data precedes its
        // goodbye, so then everything the peer sent has arrived.
        sk->bye = 1;
        if (++net->peers[p].byes == net->nsock) {
            atomic_store(&shi_tp_comm(comm)->peers[p].state, SHI_PEER_LEFT);
            SHI_INFO("communicator '%s': rank %d destroyed its communicator",
                shi_tp_comm(comm)->name, p);
        }
        return;
    }
    shi_comm_abort(comm, (int) (int32_t) h->coll_seq, "rank %d reported: %.*s",
        p, (int) h->len, text);
}

int
shi_tcp_frame_ok(const struct shi_tcp_frame *h)
{
    return h->magic == SHI_TCP_MAGIC && h->type >= SHI_TCP_DATA
        && h->type <= SHI_TCP_SIGNAL && h->off <= h->total
        && h->len <= h->total - h->off
        && !((h->type == SHI_TCP_ABORT || h->type == SHI_TCP_BYE)
            && h->len > SHI_TCP_CTL_MAX)
        && !(h->type == SHI_TCP_SIGNAL && h->total != 0);
}

// Checks a header; sets the socket's target. Returns 0 on a fault.
static int
header_arrived(struct shi_net *net, int p, struct shi_tcp_sock *sk)
{
    const struct shi_tcp_frame *h = &sk->rx_hdr;

    sk->rx     = NULL;
    sk->rx_got = 0;
    if (!shi_tcp_frame_ok(h)) {
        shi_comm_abort(net->comm, SHOAL_EPROTO,
            "rank %d (%s) sent a malformed frame (not a shoal rank of this "
            "version, or another byte order)",
            p, peer_addr(net, p));
        return 0;
    }
    if (h->type == SHI_TCP_DATA) {
        sk->rx = data_target(net, p, h);
    } else if (h->type == SHI_TCP_P2P) {
        sk->rx = p2p_target(net, p, h);
    } else if (h->type == SHI_TCP_PUT) {
        sk->rx = shi_tcp_put_arrives(net, p, h);
    } else {
        return 1; // control: payload goes to sk->ctl
    }
    if (sk->rx == NULL) {
        return 0;
    }
    sk->rx->readers++;
    return 1;
}

// A frame of socket s is complete: deliver it.
static void
frame_done(struct shi_net *net, int p, struct shi_tcp_sock *sk)
{
    sk->rx_hdr_got = 0;
    if (sk->rx != NULL) {
        frame_arrived(net, sk->rx, &sk->rx_hdr);
    } else {
        control_arrived(net, p, sk, &sk->rx_hdr, sk->ctl);
    }
}

// The socket closed or failed (n is recv's result, err its errno).
static int
rx_failed(struct shi_net *net, int p, int s, ssize_t n, int err)
{
    if (!net->peers[p].socks[s].bye
        && atomic_load(&shi_tp_comm(net->comm)->peers[p].state)
            == SHI_PEER_LIVE) {
        peer_failed(net, p,
            n == 0 ? "Connection closed by peer: its connection closed "
                     "without a goodbye"
                   : "receiving failed",
            n == 0 ? 0 : err);
    }
    drop_socket(net, p, s);
    return -1;
}

// Reads what socket s of peer p has. Returns frames finished, -1 when the
// socket is finished (closed).
static int
rx_socket(struct shi_net *net, int p, int s)
{
    struct shi_tcp_sock        *sk     = &net->peers[p].socks[s];
    const struct shi_tcp_frame *h      = &sk->rx_hdr;
    int                         frames = 0;

    while (!atomic_load(&shi_tp_comm(net->comm)->failed) && sk->fd >= 0) {
        ssize_t n;
        if (sk->rx_hdr_got < FRAME_BYTES) {
            n = recv(sk->fd, (char *) &sk->rx_hdr + sk->rx_hdr_got,
                FRAME_BYTES - sk->rx_hdr_got, MSG_DONTWAIT);
        } else {
            char *dst
                = sk->rx != NULL ? (char *) sk->rx->buf + h->off : sk->ctl;
            n = recv(
                sk->fd, dst + sk->rx_got, h->len - sk->rx_got, MSG_DONTWAIT);
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return frames;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return rx_failed(net, p, s, n, errno);
        }
        if (sk->rx_hdr_got < FRAME_BYTES) {
            sk->rx_hdr_got += (size_t) n;
            if (sk->rx_hdr_got < FRAME_BYTES) {
                continue;
            }
            if (!header_arrived(net, p, sk)) {
                return frames;
            }
        } else {
            sk->rx_got += (size_t) n;
        }
        if (sk->rx_got == h->len) {
            frame_done(net, p, sk);
            frames++;
        }
    }
    return frames;
}

// Resets the wake-up descriptor (it stays readable until then).
static void
clear_wake(struct shi_net *net)
{
    uint64_t v;

    if (read(net->wakefd, &v, sizeof(v)) < 0 && errno != EAGAIN) {
        SHI_TRACE("wake-up read: %s", strerror(errno));
    }
}

int
shi_tcp_progress(struct shi_net *net, int may_clear_wake)
{
    struct epoll_event ev[32];
    int                frames = 0;
    int                n      = epoll_wait(net->epfd, ev, 32, 0);

    for (int i = 0; i < n; i++) {
        if (ev[i].data.u64 == UINT64_MAX) {
            if (may_clear_wake) {
                clear_wake(net);
            }
            continue;
        }
        int p = (int) (ev[i].data.u64 >> 16),
            s = (int) (ev[i].data.u64 & 0xffff);
        if (ev[i].events & EPOLLOUT) {
            arm_out(net, p, s, 0);
            frames += tx_socket(net, p, s);
        }
        if (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
            int f = rx_socket(net, p, s);
            frames += f > 0 ? f : (f < 0);
        }
    }
    return frames;
}

void
shi_tcp_sleep(struct shi_net *net, int64_t timeout_ns)
{
    struct epoll_event ev;
    int                ms = (int) ((timeout_ns + 999999) / 1000000);

    epoll_wait(net->epfd, &ev, 1, ms);
}

void
shi_tcp_wake(struct shi_net *net)
{
    uint64_t one = 1;

    if (write(net->wakefd, &one, sizeof(one)) < 0) {
        SHI_TRACE("wake-up write: %s", strerror(errno));
    }
}

// Adopts an unexpected message u into the posted receive m. Returns 1 if
// m is complete.
static int
adopt(struct shi_net *net, shi_msg *m, shi_msg *u)
{
    struct shi_tcp_peer *peer = &net->peers[m->peer];

    if (u->total != m->total
        || (m->type == SHI_TCP_DATA && u->call_hash != m->call_hash)) {
        struct shi_tcp_frame h
            = { .total = u->total, .coll_seq = u->coll_seq };
        mismatch(net, u->peer, &h, m);
        if (u->readers == 0) {
            free_unexpected(net, u);
        } else { // frames still arrive into it: teardown frees it there
            struct shi_tcp_peer *from = &net->peers[u->peer];
            queue_push(
                u->type == SHI_TCP_DATA ? &from->unexp : &from->p2p_unexp, u);
        }
        return 0;
    }
    m->id = u->id;
    if (u->moved > 0) {
        memcpy(m->buf, u->buf, u->total);
    }
    m->moved = u->moved;
    if (m->type == SHI_TCP_DATA) {
        queue_push(&peer->posted, m); // later frames come straight here
    }
    if (u->readers == 0 && (m->type == SHI_TCP_DATA || u->moved == u->total)) {
        if (peer->p2p_cur == u) {
            peer->p2p_cur = m;
        }
        free_unexpected(net, u);
    } else {
        u->forward = m; // frames still arriving into u are copied on
        queue_push(&net->peers[u->peer].forwarding, u);
    }
    if (m->moved == m->total) {
        if (m->type == SHI_TCP_DATA) {
            queue_remove(&peer->posted, m);
        }
        m->done = 1;
        return 1;
    }
    return 0;
}

// Posts an any-source P2P receive: it adopts the earliest arrived message
// with its tag from any peer, or waits for one on net->p2p_any.
static int
recv_any(struct shi_net *net, shi_msg *m)
{
    shi_msg *best = NULL;

    for (int p = 0; p < shi_tp_comm(net->comm)->size; p++) {
        shi_msg *u = p == shi_tp_comm(net->comm)->rank
            ? NULL
            : queue_find_tag(&net->peers[p].p2p_unexp, m->tag);
        if (u != NULL && (best == NULL || u->arrival < best->arrival)) {
            best = u;
        }
    }
    if (best == NULL) {
        queue_push(&net->p2p_any, m);
        return 0;
    }
    queue_remove(&net->peers[best->peer].p2p_unexp, best);
    m->peer = best->peer;
    shi_net_p2p_matched(net->comm, m);
    return adopt(net, m, best);
}

int
shi_tcp_recv(struct shi_net *net, shi_msg *m)
{
    struct shi_tcp_peer *peer;
    shi_msg             *u;

    m->moved = m->handed = 0;
    m->readers           = 0;
    m->done              = 0;
    m->forward           = NULL;
    m->owned             = 0;
    if (m->type == SHI_TCP_P2P && m->peer == SHOAL_ANY_SOURCE) {
        return recv_any(net, m);
    }
    peer = &net->peers[m->peer];
    if (m->type == SHI_TCP_DATA) {
        if ((u = queue_find_id(&peer->unexp, m->id)) != NULL) {
            queue_remove(&peer->unexp, u);
            return adopt(net, m, u);
        }
        queue_push(&peer->posted, m);
        return 0;
    }
    if ((u = queue_find_tag(&peer->p2p_unexp, m->tag)) != NULL) {
        queue_remove(&peer->p2p_unexp, u);
        return adopt(net, m, u);
    }
    queue_push(&peer->p2p_posted, m);
    return 0;
}

// ---------------------------------------------------------------- control

int
shi_tcp_unreachable(struct shi_net *net, int *peer, char *why, size_t len)
{
    for (int p = 0; p < shi_tp_comm(net->comm)->size; p++) {
        for (int s = 0; p != shi_tp_comm(net->comm)->rank && s < net->nsock;
             s++) {
            struct tcp_info ti;
            socklen_t       tl = sizeof(ti);
            int             fd = net->peers[p].socks[s].fd;
            if (fd < 0
                || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) != 0) {
                continue;
            }
            int data     = ti.tcpi_unacked > 0 && ti.tcpi_last_ack_recv > 1000;
            uint32_t wnd = 1;
            // A closed window is its host's answer: the link is up and the
            // process reads nothing (stopped, stuck): a time-out, not this.
            // One probe may be simply in flight (a zero-window probe to a
            // stopped peer is answered, and the count drops back to 0);
            // two unanswered in a row is silence.
            if ((data || ti.tcpi_probes >= 2)
                && !(shi_tcp_peer_window(fd, &wnd) == 0 && wnd == 0)) {
                snprintf(why, len,
                    "%s unanswered for %.1f s (%u retransmissions): its "
                    "link or host is down",
                    data ? "our data" : "keep-alive probes",
                    ti.tcpi_last_ack_recv / 1e3,
                    (unsigned) ti.tcpi_retransmits + ti.tcpi_probes);
                *peer = p;
                return 1;
            }
        }
    }
    return 0;
}

static void
queue_control(struct shi_net *net, int p, int type, int status,
    const char *text, int front)
{
    size_t   len = text != NULL ? strlen(text) : 0;
    shi_msg *m;

    if (len > SHI_TCP_CTL_MAX) {
        len = SHI_TCP_CTL_MAX;
    }
    if ((m = calloc(1, sizeof(*m) + len + 1)) == NULL) {
        return;
    }
    m->peer     = p;
    m->type     = type;
    m->coll_seq = (uint32_t) status;
    m->buf      = (unsigned char *) (m + 1);
    memcpy(m->buf, text != NULL ? text : "", len);
    m->total = len;
    if (front) {
        queue_push_front(&net->peers[p].ctl_out, m);
    } else {
        queue_push(&net->peers[p].ctl_out, m);
    }
    tx_peer(net, p);
}

void
shi_tcp_abort_peers(struct shi_net *net, int status, const char *text)
{
    for (int p = 0; p < shi_tp_comm(net->comm)->size; p++) {
        if (p != shi_tp_comm(net->comm)->rank
            && atomic_load(&shi_tp_comm(net->comm)->peers[p].state)
                == SHI_PEER_LIVE) {
            queue_control(net, p, SHI_TCP_ABORT, status, text, 1);
        }
    }
}

static void
purge_queue(struct shi_tcp_queue *q, int keep_control)
{
    shi_msg *m = q->head, *next;

    q->head = q->tail = NULL;
    for (; m != NULL; m = next) {
        next = m->next;
        if (keep_control
            && (m->type == SHI_TCP_ABORT || m->type == SHI_TCP_BYE)) {
            queue_push(q, m);
        } else if (m->owner != NULL) { // a request's: P2P, PUT, SIGNAL
            shi_tp_req((shoal_request *) m->owner)->xfer = NULL;
            free(m);
        }
    }
}

void
shi_tcp_purge(struct shi_net *net)
{
    if (net->zeros == NULL && (net->zeros = calloc(1, net->chunk)) == NULL) {
        return;
    }
    net->purged = (shi_msg) { .type = SHI_TCP_DATA, .total = SIZE_MAX };
    purge_queue(&net->p2p_any, 0);
    for (int p = 0; p < shi_tp_comm(net->comm)->size; p++) {
        struct shi_tcp_peer *peer = &net->peers[p];
        purge_queue(&peer->data_out, 0);
        purge_queue(&peer->posted, 0);
        purge_queue(&peer->p2p_posted, 0);
        purge_queue(&peer->ctl_out, 1);
        for (int s = 0; p != shi_tp_comm(net->comm)->rank && s < net->nsock;
             s++) {
            struct shi_tcp_sock *sk = &peer->socks[s];
            if (sk->tx != NULL && sk->tx->type != SHI_TCP_ABORT
                && sk->tx->type != SHI_TCP_BYE) {
                size_t pay  = sk->tx_done > FRAME_BYTES
                     ? sk->tx_done - FRAME_BYTES
                     : 0;
                sk->tx      = &net->purged;
                sk->tx_src  = net->zeros; // the rest of the frame
                sk->tx_skip = pay;
            }
        }
    }
}

static int
anything_queued(struct shi_net *net)
{
    for (int p = 0; p < shi_tp_comm(net->comm)->size; p++) {
        struct shi_tcp_peer *peer = &net->peers[p];
        if (p == shi_tp_comm(net->comm)->rank || peer->open_socks == 0) {
            continue;
        }
        if (peer->ctl_out.head != NULL || peer->data_out.head != NULL) {
            return 1;
        }
        for (int s = 0; s < net->nsock; s++) {
            if (peer->socks[s].fd >= 0 && peer->socks[s].tx != NULL) {
                return 1;
            }
        }
    }
    return 0;
}

// Ends socket s of peer p: a goodbye frame as its last, then our FIN.
// Whatever the peer sent that we did not read is drained first, since
// closing a socket with unread data resets the connection, which may
// destroy data still on its way to the peer.
#define LINGER_QUIET_MS 50

static void
close_gracefully(struct shi_net *net, int p, int s, int64_t deadline)
{
    struct shi_tcp_sock *sk  = &net->peers[p].socks[s];
    struct shi_tcp_frame bye = { .magic = SHI_TCP_MAGIC, .type = SHI_TCP_BYE };
    char                 sink[4096];

    if (sk->fd < 0) {
        return;
    }
    if (sk->tx == NULL) {
        shi_write_all(sk->fd, &bye, sizeof(bye), deadline);
    }
    shutdown(sk->fd, SHUT_WR);
    while (recv(sk->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0) { }
}

// After an abort, a peer may still be sending us a large message: closing
// on its unread data would reset the connection, and a reset throws away
// what we sent before it, our abort among them, so the peer would blame
// us. Drain every socket until its peer falls silent (it read the abort
// and stopped) or closes, or the deadline comes.
static void
linger_after_abort(struct shi_net *net, int64_t deadline)
{
    char sink[65536];

    for (;;) {
        struct pollfd fds[64];
        int           n = 0;
        for (int p = 0; p < shi_tp_comm(net->comm)->size; p++) {
            for (int s = 0;
                 p != shi_tp_comm(net->comm)->rank && s < net->nsock; s++) {
                int fd = net->peers[p].socks[s].fd;
                if (fd >= 0 && n < 64) {
                    fds[n++] = (struct pollfd) { .fd = fd, .events = POLLIN };
                }
            }
        }
        int64_t left = (deadline - shi_now_ns()) / 1000000;
        int     ms   = left < LINGER_QUIET_MS ? (int) left : LINGER_QUIET_MS;
        if (n == 0 || ms <= 0 || poll(fds, (nfds_t) n, ms) <= 0) {
            return; // silence, or the deadline
        }
        int open = 0;
        for (int i = 0; i < n; i++) {
            ssize_t got = 1;
            while ((fds[i].revents & (POLLIN | POLLHUP)) && got > 0) {
                got = recv(fds[i].fd, sink, sizeof(sink), MSG_DONTWAIT);
            }
            open += got != 0 && !(fds[i].revents & (POLLERR | POLLNVAL));
        }
        if (open == 0) {
            return; // every peer closed its end
        }
    }
}

void
shi_tcp_goodbye(struct shi_net *net, int64_t deadline)
{
    // Everything queued goes first; then every socket says goodbye, so a
    // peer that sees a socket's goodbye has all of that socket's data.
    while (anything_queued(net) && shi_now_ns() < deadline) {
        // Nothing is in flight (destroy): no sleeper needs a wake-up, and
        // one left rung would end every sleep here at once.
        if (shi_tcp_progress(net, 1) == 0) {
            shi_tcp_sleep(net, 1000000);
        }
    }
    for (int p = 0; p < shi_tp_comm(net->comm)->size; p++) {
        for (int s = 0; p != shi_tp_comm(net->comm)->rank && s < net->nsock;
             s++) {
            close_gracefully(net, p, s, deadline);
        }
    }
    if (atomic_load(&shi_tp_comm(net->comm)->failed)) {
        linger_after_abort(net, deadline);
    }
}
