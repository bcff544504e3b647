// TCP socket helpers with deadlines (see net.h).
//
// Reads and writes use MSG_DONTWAIT and wait in poll(2) for at most the
// time left to the caller's deadline, so no call here blocks past it, on a
// blocking or a non-blocking socket alike. Writes use MSG_NOSIGNAL so a closed
// peer gives EPIPE (and SHOAL_EPEER) instead of killing the process with
// SIGPIPE.
#include "platform/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "shoal.h"

#define NET_BACKOFF_FIRST_NS 10000000 // 10 ms
#define NET_BACKOFF_MAX_NS   1000000000 // 1 s

int
shi_parse_host_port(const char *addr, char *host, size_t host_len, int *port)
{
    const char *colon, *hstart, *hend;
    char       *end;
    long        p;
    size_t      n;

    if (addr == NULL || host == NULL || port == NULL) {
        return shi_error(SHOAL_EINVAL, "address is NULL");
    }
    if (addr[0] == '[') {
        hstart = addr + 1;
        hend   = strchr(hstart, ']');
        if (hend == NULL || hend[1] != ':') {
            return shi_error(SHOAL_EINVAL,
                "bad address '%s': expected '[ipv6]:port'", addr);
        }
        colon = hend + 1;
    } else {
        hstart = addr;
        colon  = strrchr(addr, ':');
        if (colon == NULL) {
            return shi_error(
                SHOAL_EINVAL, "bad address '%s': expected 'host:port'", addr);
        }
        if (memchr(addr, ':', (size_t) (colon - addr)) != NULL) {
            return shi_error(SHOAL_EINVAL,
                "bad address '%s': write IPv6 addresses as '[addr]:port'",
                addr);
        }
        hend = colon;
    }
    n = (size_t) (hend - hstart);
    if (n == 0) {
        return shi_error(SHOAL_EINVAL, "bad address '%s': empty host", addr);
    }
    if (n >= host_len) {
        return shi_error(
            SHOAL_EINVAL, "bad address '%s': host name too long", addr);
    }
    errno = 0;
    p     = strtol(colon + 1, &end, 10);
    if (colon[1] < '0' || colon[1] > '9' || *end != '\0' || errno != 0 || p < 0
        || p > 65535) {
        return shi_error(SHOAL_EINVAL,
            "bad address '%s': port must be a number from 0 to 65535", addr);
    }
    memcpy(host, hstart, n);
    host[n] = '\0';
    *port   = (int) p;
    return SHOAL_OK;
}

// Writes "host:port" of a socket address into buf.
static void
net_format_addr(const struct sockaddr *sa, char *buf, size_t len)
{
    char host[NI_MAXHOST], serv[NI_MAXSERV];

    if (getnameinfo(sa,
            sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                      : sizeof(struct sockaddr_in),
            host, sizeof(host), serv, sizeof(serv),
            NI_NUMERICHOST | NI_NUMERICSERV)
        != 0) {
        snprintf(buf, len, "?");
        return;
    }
    snprintf(
        buf, len, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
}

void
shi_socket_peer_name(int fd, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t               sl = sizeof(ss);

    if (getpeername(fd, (struct sockaddr *) &ss, &sl) != 0
        || (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)) {
        snprintf(buf, len, "fd %d", fd);
        return;
    }
    net_format_addr((struct sockaddr *) &ss, buf, len);
}

int
shi_tcp_listen(
    const char *host, int port, int backlog, int *fd, int *bound_port)
{
    struct addrinfo         hints = { 0 }, *res = NULL, *ai;
    struct sockaddr_storage ss;
    socklen_t               sl = sizeof(ss);
    char                    serv[16];
    int                     rc, s = -1, one = 1, zero = 0, err = 0;

    *fd = -1;
    if (port < 0 || port > 65535) {
        return shi_error(SHOAL_EINVAL, "listen port %d out of range", port);
    }
    snprintf(serv, sizeof(serv), "%d", port);
    hints.ai_family   = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags    = AI_PASSIVE | AI_NUMERICSERV;
    rc                = getaddrinfo(host, serv, &hints, &res);
    if (rc != 0) {
        return shi_error(SHOAL_EINVAL, "cannot listen on %s:%d: %s",
            host ? host : "*", port, gai_strerror(rc));
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        s = socket(
            ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (s < 0) {
            err = errno;
            continue;
        }
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (ai->ai_family == AF_INET6 && host == NULL) {
            // "All interfaces" means IPv4 too.
            setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
        }
        if (bind(s, ai->ai_addr, ai->ai_addrlen) == 0
            && listen(s, backlog) == 0) {
            break;
        }
        err = errno;
        close(s);
        s = -1;
    }
    freeaddrinfo(res);
    if (s < 0) {
        return shi_error(SHOAL_ESYS,
            "cannot listen on %s:%d: %s (is the port already in use?)",
            host ? host : "*", port, strerror(err));
    }
    if (getsockname(s, (struct sockaddr *) &ss, &sl) != 0) {
        err = errno;
        close(s);
        return shi_error(SHOAL_ESYS, "getsockname: %s", strerror(err));
    }
    *bound_port = ntohs(ss.ss_family == AF_INET6
            ? ((struct sockaddr_in6 *) &ss)->sin6_port
            : ((struct sockaddr_in *) &ss)->sin_port);
    *fd         = s;
    return SHOAL_OK;
}

// Is `err` (from connect) worth another try: the peer may not be up yet.
static int
net_connect_retryable(int err)
{
    switch (err) {
        case ECONNREFUSED:
        case ECONNRESET:
        case ECONNABORTED:
        case ENETUNREACH:
        case EHOSTUNREACH:
        case ENETDOWN:
        case EHOSTDOWN:
        case ETIMEDOUT:
        case EAGAIN:
        case EINTR:
            return 1;
        default:
            return 0;
    }
}

// One connection attempt to `ai`, waiting at most until `deadline`. Returns
// the connected fd, or -1 with the cause in *err.
static int
net_connect_once(const struct addrinfo *ai, int64_t deadline, int *err)
{
    int       s, one = 1, soerr = 0;
    socklen_t sl = sizeof(soerr);

    s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
        ai->ai_protocol);
    if (s < 0) {
        *err = errno;
        return -1;
    }
    if (connect(s, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            *err = errno;
            close(s);
            return -1;
        }
        for (;;) {
            struct pollfd pfd = { .fd = s, .events = POLLOUT };
            int           n   = poll(&pfd, 1, shi_poll_timeout_ms(deadline));
            if (n > 0) {
                break;
            }
            if (n == 0) {
                *err = ETIMEDOUT;
                close(s);
                return -1;
            }
            if (errno != EINTR) {
                *err = errno;
                close(s);
                return -1;
            }
        }
        if (getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0) {
            soerr = errno;
        }
        if (soerr != 0) {
            *err = soerr;
            close(s);
            return -1;
        }
    }
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    // Hand back an ordinary blocking socket; our read/write helpers do not
    // depend on the mode.
    fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK);
    return s;
}

// Sleeps `ns` nanoseconds, but never past `deadline`.
static void
net_sleep_until(int64_t ns, int64_t deadline)
{
    int64_t         now = shi_now_ns();
    struct timespec ts;

    if (deadline != SHI_NO_DEADLINE && now + ns > deadline) {
        ns = deadline - now;
    }
    if (ns <= 0) {
        return;
    }
    ts.tv_sec  = ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
    nanosleep(&ts, NULL);
}

int
shi_tcp_connect(const char *host, int port, int64_t deadline, int *fd)
{
    struct addrinfo hints = { 0 }, *res = NULL, *ai;
    char            serv[16], why[256]  = "";
    int64_t         start    = shi_now_ns();
    int64_t         backoff  = NET_BACKOFF_FIRST_NS;
    int             attempts = 0, rc, err = 0, s = -1;

    *fd = -1;
    if (host == NULL || port <= 0 || port > 65535) {
        return shi_error(SHOAL_EINVAL, "cannot connect to %s:%d: bad address",
            host ? host : "(null)", port);
    }
    snprintf(serv, sizeof(serv), "%d", port);
    hints.ai_family   = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags    = AI_NUMERICSERV;
    for (;;) {
        attempts++;
        // Resolve every time: a name may appear only once its host is up.
        rc = getaddrinfo(host, serv, &hints, &res);
        if (rc != 0) {
            snprintf(why, sizeof(why), "cannot resolve host '%s': %s", host,
                rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
            if (rc != EAI_AGAIN && rc != EAI_NONAME && rc != EAI_FAIL) {
                break;
            }
        } else {
            for (ai = res; ai != NULL && s < 0; ai = ai->ai_next) {
                s = net_connect_once(ai, deadline, &err);
            }
            freeaddrinfo(res);
            res = NULL;
            if (s >= 0) {
                *fd = s;
                return SHOAL_OK;
            }
            snprintf(why, sizeof(why), "%s", strerror(err));
            if (!net_connect_retryable(err)) {
                break;
            }
        }
        if (shi_now_ns() >= deadline) {
            break;
        }
        net_sleep_until(backoff, deadline);
        backoff = backoff * 2 > NET_BACKOFF_MAX_NS ? NET_BACKOFF_MAX_NS
                                                   : backoff * 2;
    }
    return shi_error(SHOAL_ECONNECT,
        "could not connect to %s:%d after %.2f s (%d attempt%s): %s; check "
        "that the process serving it is running and that the address is "
        "reachable from this host",
        host, port, (double) (shi_now_ns() - start) / 1e9, attempts,
        attempts == 1 ? "" : "s", why);
}

// Waits until fd is ready for `events` or the deadline passes.
static int
net_wait(int fd, short events, int64_t deadline, const char *what, size_t done,
    size_t len)
{
    struct pollfd pfd = { .fd = fd, .events = events };
    char          peer[128];
    int           n;

    do {
        n = poll(&pfd, 1, shi_poll_timeout_ms(deadline));
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
        return SHOAL_OK;
    }
    shi_socket_peer_name(fd, peer, sizeof(peer));
    if (n == 0) {
        return shi_error(SHOAL_ETIMEDOUT,
            "deadline passed while %s %s (%zu of %zu bytes done)", what, peer,
            done, len);
    }
    return shi_error(
        SHOAL_ESYS, "poll while %s %s: %s", what, peer, strerror(errno));
}

static int
net_io_error(int fd, int err, const char *what, size_t done, size_t len)
{
    char peer[128];

    shi_socket_peer_name(fd, peer, sizeof(peer));
    if (err == EPIPE || err == ECONNRESET || err == ECONNABORTED
        || err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH) {
        return shi_error(SHOAL_EPEER,
            "connection to %s lost while %s (%zu of %zu bytes done): %s", peer,
            what, done, len, strerror(err));
    }
    return shi_error(
        SHOAL_ESYS, "%s %s failed: %s", what, peer, strerror(err));
}

// send(2)/recv(2) with MSG_DONTWAIT, so blocking sockets never block here.
// Non-sockets (pipes, in tests) are polled first and written in chunks of
// PIPE_BUF, which a writable pipe always accepts without blocking.
static ssize_t
net_send(int fd, const char *p, size_t n)
{
    ssize_t       r   = send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    struct pollfd pfd = { .fd = fd, .events = POLLOUT };

    if (r >= 0 || errno != ENOTSOCK) {
        return r;
    }
    if (poll(&pfd, 1, 0) == 0) {
        errno = EAGAIN;
        return -1;
    }
    return write(fd, p, n < PIPE_BUF ? n : PIPE_BUF);
}

static ssize_t
net_recv(int fd, char *p, size_t n)
{
    ssize_t       r   = recv(fd, p, n, MSG_DONTWAIT);
    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    if (r >= 0 || errno != ENOTSOCK) {
        return r;
    }
    if (poll(&pfd, 1, 0) == 0) {
        errno = EAGAIN;
        return -1;
    }
    return read(fd, p, n);
}

int
shi_write_all(int fd, const void *buf, size_t len, int64_t deadline)
{
    const char *p    = buf;
    size_t      done = 0;

    while (done < len) {
        ssize_t n = net_send(fd, p + done, len - done);
        if (n >= 0) {
            done += (size_t) n;
            continue;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            return net_io_error(fd, errno, "sending to", done, len);
        }
        int rc = net_wait(fd, POLLOUT, deadline, "sending to", done, len);
        if (rc != SHOAL_OK) {
            return rc;
        }
    }
    return SHOAL_OK;
}

int
shi_read_all(int fd, void *buf, size_t len, int64_t deadline)
{
    char  *p    = buf;
    size_t done = 0;
    char   peer[128];

    while (done < len) {
        ssize_t n = net_recv(fd, p + done, len - done);
        if (n > 0) {
            done += (size_t) n;
            continue;
        }
        if (n == 0) {
            shi_socket_peer_name(fd, peer, sizeof(peer));
            return shi_error(SHOAL_EPEER,
                "connection closed by %s (%zu of %zu bytes received); the "
                "process at the other end exited or dropped the connection",
                peer, done, len);
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            return net_io_error(fd, errno, "receiving from", done, len);
        }
        int rc = net_wait(fd, POLLIN, deadline, "receiving from", done, len);
        if (rc != SHOAL_OK) {
            return rc;
        }
    }
    return SHOAL_OK;
}

void
shi_raise_fd_limit(void)
{
    struct rlimit lim;

    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        setrlimit(RLIMIT_NOFILE, &lim);
    }
}
