// The TCP mesh: `nsock` authenticated sockets between every pair of ranks,
// set up at communicator creation when ranks are on different hosts (or
// SHOAL_TRANSPORT=tcp).
//
// Rank r connects every socket to each lower rank and accepts every socket
// of each higher one (lower ranks never wait for higher ones before they
// accept, so the order cannot deadlock). Each connection proves the job
// secret both ways (auth.c), then the connecting side says who it is: its
// rank and which of the sockets this is. A connection that fails any of
// this is closed with a warning and does not disturb the job: the ports
// are reachable from the network, so strangers and port scanners must not
// take a job down.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/env.h"
#include "base/log.h"
#include "platform/net.h"
#include "platform/private_heap.h"
#include "transport/tcp/tcp_net.h"
#include "transport/upcalls.h"

#define TCP_DEFAULT_SOCKS 2
#define TCP_MAX_SOCKS     16
#define TCP_DEFAULT_CHUNK (256u << 10)
// A stranger gets this long to prove the secret before it is dropped, so a
// silent connection cannot hold up the job for the whole deadline.
#define TCP_HANDSHAKE_NS     (5 * 1000000000LL)
#define TCP_CONNECT_SLICE_NS 1000000000LL

struct tcp_hello {
    int32_t rank, sock, nsock, magic;
};

int
shi_tcp_config(int *nsock, size_t *chunk)
{
    long long n, c;
    int       st;

    if ((st = shi_env_int("SHOAL_SOCKETS_PER_PEER", TCP_DEFAULT_SOCKS, &n))
        != SHOAL_OK) {
        return st;
    }
    if (n < 1 || n > TCP_MAX_SOCKS) {
        return shi_error(SHOAL_EENV,
            "SHOAL_SOCKETS_PER_PEER=%lld: must be 1 to %d", n, TCP_MAX_SOCKS);
    }
    if ((st = shi_env_bytes("SHOAL_TCP_CHUNK_BYTES", TCP_DEFAULT_CHUNK, &c))
        != SHOAL_OK) {
        return st;
    }
    if (c < 1024 || c > (64LL << 20)) {
        return shi_error(SHOAL_EENV,
            "SHOAL_TCP_CHUNK_BYTES=%lld: must be 1 KiB to 64 MiB", c);
    }
    *nsock = (int) n;
    *chunk = (size_t) c;
    return SHOAL_OK;
}

void
shi_tcp_tune(int fd, int64_t timeout_ms)
{
    int       one = 1, flags = fcntl(fd, F_GETFL);
    long long bufsz = 0;

    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    // Keep-alive probes after 1 s of silence, every second: an idle
    // connection to a host whose link went down is then noticed too (see
    // shi_tcp_unreachable); a probe is a few bytes a second.
    int idle = 1;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof(idle));
    // Unacknowledged data older than the communicator's timeout fails the
    // socket: a cut link then ends in an error rather than in retries.
    // Two seconds more than the timeout, so that the engine's own deadline
    // (which names what it waited for) comes first.
    timeout_ms += 2000;
    unsigned ut = timeout_ms > UINT_MAX ? UINT_MAX : (unsigned) timeout_ms;
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut));
    // The kernel grows buffers by itself (up to net.ipv4.tcp_wmem/rmem's
    // maximum); a fixed size turns that off, so only set one when asked.
    if (shi_env_bytes("SHOAL_SOCKET_BUFFER_BYTES", 0, &bufsz) == SHOAL_OK
        && bufsz > 0 && bufsz <= INT_MAX) {
        int b = (int) bufsz;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof(b));
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof(b));
    }
}

static int
hello_ok(const struct tcp_hello *h, const shoal_comm *comm, int nsock)
{
    const struct shi_tp_comm *tc = shi_tp_comm(comm);

    return h->magic == (int32_t) SHI_TCP_MAGIC && h->rank > tc->rank
        && h->rank < tc->size && h->nsock == nsock && h->sock >= 0
        && h->sock < nsock;
}

// Accepts one connection arriving before `until`; a stranger is refused
// with a warning (*got 0). The handshake may take until `deadline`.
static int
accept_one(shoal_comm *comm, struct shi_net *net, int lfd, int64_t until,
    int64_t deadline, int *got)
{
    struct shi_tp_comm *tc  = shi_tp_comm(comm);
    struct pollfd       pfd = { .fd = lfd, .events = POLLIN };
    struct tcp_hello    h;
    char                who[80];
    int64_t             now = shi_now_ns(), hs_deadline;
    int                 fd, st;

    *got = 0;
    if (now >= until) {
        return shi_error(SHOAL_ETIMEDOUT, "nobody connected in time");
    }
    int ms = (int) ((until - now) / 1000000 + 1);
    if (poll(&pfd, 1, ms) <= 0) {
        return poll(&pfd, 1, 0) > 0
            ? SHOAL_OK
            : shi_error(SHOAL_ETIMEDOUT, "nobody connected in time");
    }
    if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0) {
        return SHOAL_OK; // aborted before we took it: try again
    }
    shi_socket_peer_name(fd, who, sizeof(who));
    hs_deadline = now + TCP_HANDSHAKE_NS < deadline ? now + TCP_HANDSHAKE_NS
                                                    : deadline;
    st          = shi_auth_server(fd, &tc->secret, who, hs_deadline);
    if (st == SHOAL_OK) {
        st = shi_read_all(fd, &h, sizeof(h), hs_deadline);
    }
    if (st == SHOAL_OK && !hello_ok(&h, comm, net->nsock)) {
        st = shi_error(SHOAL_EPROTO,
            "it claims rank %d socket %d of %d (sockets per peer differ "
            "across ranks, or not a rank of this job)",
            h.rank, h.sock, h.nsock);
    }
    if (st == SHOAL_OK && net->peers[h.rank].socks[h.sock].fd >= 0) {
        st = shi_error(
            SHOAL_EPROTO, "rank %d socket %d connected twice", h.rank, h.sock);
    }
    if (st != SHOAL_OK) {
        // Strangers may knock repeatedly: a line per cause and interval.
        static shi_log_limit refused_auth, refused_other;
        shi_log_limited(st == SHOAL_EAUTH ? &refused_auth : &refused_other,
            SHI_LOG_WARN,
            "communicator '%s': refused a TCP connection from %s: %s",
            tc->name, who, shi_error_text());
        close(fd);
        return SHOAL_OK;
    }
    net->peers[h.rank].socks[h.sock].fd = fd;
    *got                                = 1;
    return SHOAL_OK;
}

static int
accept_higher(shoal_comm *comm, struct shi_net *net, int lfd, int64_t deadline)
{
    struct shi_tp_comm *tc   = shi_tp_comm(comm);
    int                 need = (tc->size - 1 - tc->rank) * net->nsock;

    while (need > 0) {
        int64_t until = shi_rdv_until(deadline);
        int     got, st = accept_one(comm, net, lfd, until, deadline, &got);
        if (st != SHOAL_OK
            && (st = shi_rdv_sliced(comm, st, until, deadline))
                == SHOAL_INPROGRESS) {
            continue; // a slice without a connection; nobody died
        }
        if (st != SHOAL_OK) {
            return shi_error_wrap(st,
                "rank %d waiting for %d connection(s) from higher ranks",
                tc->rank, need);
        }
        need -= got;
    }
    return SHOAL_OK;
}

static int
connect_one(shoal_comm *comm, struct shi_net *net, int r, int s,
    const char *addr, int64_t deadline)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    char                host[64], what[128];
    int                 port, fd, st;
    struct tcp_hello h = { tc->rank, s, net->nsock, (int32_t) SHI_TCP_MAGIC };

    snprintf(what, sizeof(what), "rank %d at %s", r, addr);
    if ((st = shi_parse_host_port(addr, host, sizeof(host), &port))
        != SHOAL_OK) {
        return st;
    }
    // Slices of a second: a connection attempt to a distant host is not
    // cut short, and a dead peer (refused at once) is noticed in time.
    do {
        int64_t until = shi_now_ns() + TCP_CONNECT_SLICE_NS;
        until         = until < deadline ? until : deadline;
        st            = shi_tcp_connect(host, port, until, &fd);
        st = st == SHOAL_OK ? st : shi_rdv_sliced(comm, st, until, deadline);
    } while (st == SHOAL_INPROGRESS);
    if (st != SHOAL_OK) {
        return shi_error_wrap(st, "connecting to %s", what);
    }
    net->peers[r].socks[s].fd = fd;
    st = shi_auth_client(fd, &tc->secret, what, deadline);
    if (st == SHOAL_OK) {
        st = shi_write_all(fd, &h, sizeof(h), deadline);
    }
    return st == SHOAL_OK ? st : shi_error_wrap(st, "connecting to %s", what);
}

static int
net_alloc(shoal_comm *comm, struct shi_net **out)
{
    struct shi_tp_comm *tc  = shi_tp_comm(comm);
    struct shi_net     *net = calloc(1, sizeof(*net));
    int                 st;

    *out = net;
    if (net == NULL
        || (net->peers = calloc((size_t) tc->size, sizeof(*net->peers)))
            == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory for TCP state");
    }
    net->comm   = comm;
    net->epfd   = -1;
    net->wakefd = -1;
    if ((st = shi_tcp_config(&net->nsock, &net->chunk)) != SHOAL_OK) {
        return st;
    }
    for (int r = 0; r < tc->size; r++) {
        struct shi_tcp_peer *p = &net->peers[r];
        if ((p->socks = calloc((size_t) net->nsock, sizeof(*p->socks)))
            == NULL) {
            return shi_error(SHOAL_ENOMEM, "out of memory for TCP state");
        }
        for (int s = 0; s < net->nsock; s++) {
            p->socks[s].fd = -1;
        }
    }
    return SHOAL_OK;
}

// Non-blocking sockets in one epoll set with the wake-up eventfd.
static int
net_arm(shoal_comm *comm, struct shi_net *net)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    struct epoll_event  ev = { .events = EPOLLIN, .data.u64 = UINT64_MAX };

    net->epfd   = epoll_create1(EPOLL_CLOEXEC);
    net->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (net->epfd < 0 || net->wakefd < 0
        || epoll_ctl(net->epfd, EPOLL_CTL_ADD, net->wakefd, &ev) != 0) {
        return shi_error(SHOAL_ESYS, "epoll/eventfd: %s", strerror(errno));
    }
    for (int r = 0; r < tc->size; r++) {
        for (int s = 0; r != tc->rank && s < net->nsock; s++) {
            int fd = net->peers[r].socks[s].fd;
            shi_tcp_tune(fd, tc->timeout_ms);
            ev.data.u64 = ((uint64_t) r << 16) | (uint64_t) s;
            if (epoll_ctl(net->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
                return shi_error(SHOAL_ESYS, "epoll_ctl: %s", strerror(errno));
            }
            net->peers[r].open_socks++;
        }
    }
    return SHOAL_OK;
}

int
shi_tcp_mesh(shoal_comm *comm, int lfd, char (*addrs)[64], int64_t deadline)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    struct shi_net     *net;
    int                 st = net_alloc(comm, &net);

    tc->tp_state = net;
    for (int r = 0; r < tc->size && net != NULL; r++) {
        snprintf(
            net->peers[r].addr, sizeof(net->peers[r].addr), "%s", addrs[r]);
    }
    // For tests (tests/net): a rank that is slow to connect, so that the
    // lower ranks' ports can be probed while they wait for it.
    long long delay_ms = 0;
    if (st == SHOAL_OK
        && shi_env_int("SHOAL_TEST_CONNECT_DELAY_MS", 0, &delay_ms) == SHOAL_OK
        && delay_ms > 0) {
        usleep((useconds_t) (delay_ms > 60000 ? 60000 : delay_ms) * 1000);
    }
    for (int r = 0; st == SHOAL_OK && r < tc->rank; r++) {
        for (int s = 0; st == SHOAL_OK && s < net->nsock; s++) {
            st = connect_one(comm, net, r, s, addrs[r], deadline);
        }
    }
    if (st == SHOAL_OK) {
        st = accept_higher(comm, net, lfd, deadline);
    }
    if (st == SHOAL_OK) {
        st = net_arm(comm, net);
    }
    return st;
}

void
shi_net_free(struct shi_net *net)
{
    if (net == NULL) {
        return;
    }
    for (int r = 0; net->peers != NULL && r < shi_tp_comm(net->comm)->size;
         r++) {
        struct shi_tcp_peer *p = &net->peers[r];
        for (int s = 0; p->socks != NULL && s < net->nsock; s++) {
            if (p->socks[s].fd >= 0) {
                close(p->socks[s].fd);
            }
        }
        free(p->socks);
        free(p->rma_cur); // a put half arrived: ours, into a window
        // Unexpected messages nobody received, or still being forwarded.
        struct shi_tcp_queue *qs[]
            = { &p->unexp, &p->p2p_unexp, &p->forwarding, &p->ctl_out };
        for (size_t i = 0; i < sizeof(qs) / sizeof(*qs); i++) {
            shi_msg *m = qs[i]->head;
            while (m != NULL) {
                shi_msg *next = m->next;
                if (m->owned) {
                    free(m->buf);
                    free(m);
                } else if (m->type == SHI_TCP_ABORT
                    || m->type == SHI_TCP_BYE) {
                    free(m);
                }
                m = next;
            }
        }
    }
    if (net->epfd >= 0) {
        close(net->epfd);
    }
    if (net->wakefd >= 0) {
        close(net->wakefd);
    }
    if (net->heap != NULL) {
        shi_private_heap_unmap(net->heap, net->heap_bytes);
    }
    free(net->zeros);
    free(net->peers);
    free(net);
}
