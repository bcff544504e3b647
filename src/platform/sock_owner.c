// Owner of a TCP connection's other end, from NETLINK_SOCK_DIAG (see
// sock_owner.h).
//
// The peer's socket, if this host holds it, is the one whose local address
// and port are our remote ones and whose remote ones are our local ones, so
// one SOCK_DIAG_BY_FAMILY request for that exact 4-tuple (a lookup, not a
// dump of every socket) finds it. "Not found" alone does not make a peer
// remote: a local peer that has already closed or reset its socket is not
// found either, and must not pass for a remote one. So a peer counts as
// remote only when it is not found and its address is not this host's.
#include "platform/sock_owner.h"

#include <errno.h>
#include <ifaddrs.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/error.h"
#include "platform/net.h"
#include "shoal.h"

// The kernel answers a lookup at once; this only bounds a wait for an
// answer that never comes.
#define OWNER_RECV_TIMEOUT_MS 1000

// One end of a connection. IPv4-mapped IPv6 addresses are folded to IPv4:
// the kernel looks those up among the IPv4 connections either way.
typedef struct owner_end {
    unsigned char addr[16];
    uint16_t      port; // network byte order
} owner_end;

typedef struct owner_conn {
    int       family; // AF_INET or AF_INET6, after folding
    uint32_t  scope; // interface of an IPv6 link-local peer, else 0
    owner_end local, remote;
    char      name[80]; // the peer, for messages
} owner_conn;

static int
end_of(const struct sockaddr_storage *ss, owner_end *e, uint32_t *scope)
{
    memset(e, 0, sizeof(*e));
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *) ss;
        memcpy(e->addr, &in->sin_addr, 4);
        e->port = in->sin_port;
        return AF_INET;
    }
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) ss;
    e->port                        = in6->sin6_port;
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
        memcpy(e->addr, in6->sin6_addr.s6_addr + 12, 4);
        return AF_INET;
    }
    memcpy(e->addr, &in6->sin6_addr, 16);
    *scope = in6->sin6_scope_id;
    return AF_INET6;
}

// Both ends of TCP socket fd.
static int
conn_of(int fd, owner_conn *c)
{
    struct sockaddr_storage l, r;
    socklen_t               ll = sizeof(l), rl = sizeof(r);
    int                     proto = 0;
    socklen_t               pl    = sizeof(proto);
    uint32_t                unused;

    memset(c, 0, sizeof(*c));
    if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &pl) != 0
        || getsockname(fd, (struct sockaddr *) &l, &ll) != 0) {
        return shi_error(
            SHOAL_EINVAL, "fd %d is not a socket: %s", fd, strerror(errno));
    }
    if (proto != IPPROTO_TCP
        || (l.ss_family != AF_INET && l.ss_family != AF_INET6)) {
        return shi_error(SHOAL_EINVAL, "fd %d is not a TCP socket", fd);
    }
    if (getpeername(fd, (struct sockaddr *) &r, &rl) != 0) {
        // A connection its peer reset is not connected any more either.
        return errno == ENOTCONN
            ? shi_error(SHOAL_EPEER,
                "the TCP connection on fd %d was closed or reset", fd)
            : shi_error(
                SHOAL_ESYS, "getpeername on fd %d: %s", fd, strerror(errno));
    }
    shi_socket_peer_name(fd, c->name, sizeof(c->name));
    c->family = end_of(&r, &c->remote, &c->scope);
    if (end_of(&l, &c->local, &unused) != c->family) {
        return shi_error(SHOAL_EINVAL,
            "TCP socket fd %d mixes IPv4 and IPv6 addresses", fd);
    }
    return SHOAL_OK;
}

static int
addr_is_loopback(int family, const unsigned char *addr)
{
    static const unsigned char v6_loopback[16] = { [15] = 1 };

    return family == AF_INET ? addr[0] == 127
                             : memcmp(addr, v6_loopback, 16) == 0;
}

// Whether the peer's address is one of this host's.
static int
peer_addr_is_local(const owner_conn *c, int *local)
{
    struct ifaddrs *all;
    size_t          n = c->family == AF_INET ? 4 : 16;

    *local = addr_is_loopback(c->family, c->remote.addr);
    if (*local) {
        return SHOAL_OK;
    }
    if (getifaddrs(&all) != 0) {
        return shi_error(SHOAL_ESYS, "getifaddrs: %s", strerror(errno));
    }
    for (struct ifaddrs *i = all; i != NULL && !*local; i = i->ifa_next) {
        if (i->ifa_addr == NULL || i->ifa_addr->sa_family != c->family) {
            continue;
        }
        const void *a = c->family == AF_INET
            ? (const void *) &((struct sockaddr_in *) i->ifa_addr)->sin_addr
            : (const void *) &((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr;
        *local        = memcmp(a, c->remote.addr, n) == 0;
    }
    freeifaddrs(all);
    return SHOAL_OK;
}

static int
diag_unavailable(int err, const char *what)
{
    return shi_error(SHOAL_ENOTSUP,
        "the kernel's socket diagnostics (NETLINK_SOCK_DIAG) are "
        "unavailable: %s: %s",
        what, strerror(err));
}

static int
diag_open(int *nl)
{
    struct timeval tv = { .tv_sec = OWNER_RECV_TIMEOUT_MS / 1000,
        .tv_usec                  = (OWNER_RECV_TIMEOUT_MS % 1000) * 1000 };

    *nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (*nl < 0) {
        int err = errno;
        if (err == EPROTONOSUPPORT || err == EAFNOSUPPORT || err == EPERM
            || err == EACCES) {
            return diag_unavailable(err, "socket");
        }
        return shi_error(
            SHOAL_ESYS, "socket(NETLINK_SOCK_DIAG): %s", strerror(err));
    }
    if (setsockopt(*nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
        return shi_error(SHOAL_ESYS, "SO_RCVTIMEO on a netlink socket: %s",
            strerror(errno));
    }
    return SHOAL_OK;
}

static int
diag_send(int nl, const owner_conn *c, const owner_end *src,
    const owner_end *dst, uint32_t seq)
{
    struct {
        struct nlmsghdr         nlh;
        struct inet_diag_req_v2 req;
    } msg;
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

    memset(&msg, 0, sizeof(msg));
    msg.nlh.nlmsg_len          = sizeof(msg);
    msg.nlh.nlmsg_type         = SOCK_DIAG_BY_FAMILY;
    msg.nlh.nlmsg_flags        = NLM_F_REQUEST;
    msg.nlh.nlmsg_seq          = seq;
    msg.req.sdiag_family       = (uint8_t) c->family;
    msg.req.sdiag_protocol     = IPPROTO_TCP;
    msg.req.idiag_states       = ~0u;
    msg.req.id.idiag_sport     = src->port;
    msg.req.id.idiag_dport     = dst->port;
    msg.req.id.idiag_if        = c->scope;
    msg.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    memcpy(msg.req.id.idiag_src, src->addr, sizeof(src->addr));
    memcpy(msg.req.id.idiag_dst, dst->addr, sizeof(dst->addr));
    if (sendto(nl, &msg, sizeof(msg), 0, (struct sockaddr *) &kernel,
            sizeof(kernel))
        != (ssize_t) sizeof(msg)) {
        int err = errno;
        return err == EPERM || err == EACCES
            ? diag_unavailable(err, "sendto")
            : shi_error(
                SHOAL_ESYS, "sending to NETLINK_SOCK_DIAG: %s", strerror(err));
    }
    return SHOAL_OK;
}

// Reads the kernel's answer to request `seq`: the socket (*found 1) or
// none (*found 0).
static int
diag_recv(int nl, uint32_t seq, struct inet_diag_msg *out, int *found)
{
    union {
        struct nlmsghdr h;
        char            buf[8192];
    } u;
    struct sockaddr_nl from;

    *found = 0;
    for (;;) {
        socklen_t fl = sizeof(from);
        ssize_t   n  = recvfrom(nl, u.buf, sizeof(u.buf), MSG_TRUNC,
               (struct sockaddr *) &from, &fl);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 || n > (ssize_t) sizeof(u.buf)) {
            return shi_error(SHOAL_ESYS, "reading NETLINK_SOCK_DIAG: %s",
                n < 0 ? (errno == EAGAIN ? "no answer within a second"
                                         : strerror(errno))
                      : "answer too long");
        }
        int len = (int) n;
        for (struct nlmsghdr *h = &u.h; NLMSG_OK(h, len);
             h                  = NLMSG_NEXT(h, len)) {
            if (from.nl_pid != 0 || h->nlmsg_seq != seq) {
                continue; // not the kernel's answer to us
            }
            if (h->nlmsg_type == NLMSG_ERROR) {
                int err = -((struct nlmsgerr *) NLMSG_DATA(h))->error;
                if (err == 0 || err == ENOENT) {
                    return SHOAL_OK;
                }
                return err == EPERM || err == EACCES || err == EOPNOTSUPP
                    ? diag_unavailable(err, "lookup")
                    : shi_error(SHOAL_ESYS, "NETLINK_SOCK_DIAG lookup: %s",
                        strerror(err));
            }
            if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY
                && h->nlmsg_len >= NLMSG_LENGTH(sizeof(*out))) {
                memcpy(out, NLMSG_DATA(h), sizeof(*out));
                *found = 1;
                return SHOAL_OK;
            }
        }
    }
}

static int
diag_lookup(int nl, const owner_conn *c, const owner_end *src,
    const owner_end *dst, uint32_t seq, struct inet_diag_msg *out, int *found)
{
    int st = diag_send(nl, c, src, dst, seq);

    return st == SHOAL_OK ? diag_recv(nl, seq, out, found) : st;
}

// The lookup's answer is the peer's socket only if it is connected to us
// (a lookup that misses the connections may fall back to a listener).
static int
is_peer_socket(const owner_conn *c, const struct inet_diag_msg *m)
{
    return m->idiag_state != TCP_LISTEN && m->id.idiag_sport == c->remote.port
        && m->id.idiag_dport == c->local.port;
}

// No socket of this host is the peer's: a remote peer, a local one that
// closed, or no socket diagnostics at all.
static int
peer_not_found(int nl, const owner_conn *c, int *is_local)
{
    struct inet_diag_msg m;
    int                  found, st = peer_addr_is_local(c, is_local);

    if (st != SHOAL_OK || !*is_local) {
        return st;
    }
    // A kernel without tcp_diag answers "no such socket" to everything: it
    // cannot find our own socket either.
    st = diag_lookup(nl, c, &c->local, &c->remote, 2, &m, &found);
    if (st == SHOAL_OK && !found) {
        return shi_error(SHOAL_ENOTSUP,
            "the kernel's socket diagnostics cannot find TCP sockets (is "
            "the tcp_diag module missing?)");
    }
    return st != SHOAL_OK ? st
                          : shi_error(SHOAL_EPEER,
                              "%s is on this host but its socket is gone "
                              "(it closed the connection)",
                              c->name);
}

int
shi_tcp_peer_uid(int fd, uid_t *uid, int *is_local)
{
    owner_conn           c;
    struct inet_diag_msg m;
    int                  nl = -1, found = 0, st;

    *is_local = 0;
    st        = conn_of(fd, &c);
    if (st == SHOAL_OK) {
        st = diag_open(&nl);
    }
    if (st == SHOAL_OK) {
        st = diag_lookup(nl, &c, &c.remote, &c.local, 1, &m, &found);
    }
    if (st == SHOAL_OK && !(found && is_peer_socket(&c, &m))) {
        st = peer_not_found(nl, &c, is_local);
    } else if (st == SHOAL_OK) {
        *is_local = 1;
        // A socket without an inode belongs to no process: closed (time
        // wait, orphaned) or still in the listener's queue. Its reported
        // uid means nothing.
        if (m.idiag_inode == 0) {
            st = shi_error(SHOAL_EPEER,
                "%s is on this host but its socket belongs to no process "
                "(closed, or not yet accepted)",
                c.name);
        } else {
            *uid = (uid_t) m.idiag_uid;
        }
    }
    if (nl >= 0) {
        close(nl);
    }
    return st;
}
