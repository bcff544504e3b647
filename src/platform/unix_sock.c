// Abstract unix sockets, fd passing and credentials (see unix_sock.h).
#include "unix_sock.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "platform/auth.h"
#include "shoal.h"

static socklen_t
unix_addr(struct sockaddr_un *addr, const char *name)
{
    size_t len = strlen(name);

    memset(addr, 0, sizeof(*addr));
    addr->sun_family = AF_UNIX;
    // Abstract namespace: a leading NUL byte, then the name.
    memcpy(addr->sun_path + 1, name, len);
    return (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

int
shi_unix_listen(int *fd, char *name, int backlog)
{
    struct sockaddr_un addr;
    unsigned char      rnd[12];
    int                s;

    *fd = -1;
    if (shi_random_bytes(rnd, sizeof(rnd)) != SHOAL_OK) {
        return SHOAL_ESYS;
    }
    snprintf(name, SHI_UNIX_NAME_MAX, "shoal-%d-", (int) getpid());
    for (size_t i = 0; i < sizeof(rnd); i++) {
        size_t n = strlen(name);
        snprintf(name + n, SHI_UNIX_NAME_MAX - n, "%02x", rnd[i]);
    }
    s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        return shi_error(SHOAL_ESYS, "socket(AF_UNIX): %s", strerror(errno));
    }
    socklen_t len = unix_addr(&addr, name);
    if (bind(s, (struct sockaddr *) &addr, len) != 0
        || listen(s, backlog) != 0) {
        int err = errno;
        close(s);
        return shi_error(
            SHOAL_ESYS, "listen on unix socket @%s: %s", name, strerror(err));
    }
    *fd = s;
    return SHOAL_OK;
}

int
shi_unix_connect(const char *name, int64_t deadline, int *fd)
{
    struct sockaddr_un addr;
    socklen_t          len   = unix_addr(&addr, name);
    useconds_t         pause = 1000;

    *fd = -1;
    for (;;) {
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0) {
            return shi_error(
                SHOAL_ESYS, "socket(AF_UNIX): %s", strerror(errno));
        }
        if (connect(s, (struct sockaddr *) &addr, len) == 0) {
            *fd = s;
            return SHOAL_OK;
        }
        int err = errno;
        close(s);
        if (err != ECONNREFUSED && err != ENOENT && err != EAGAIN) {
            return shi_error(SHOAL_ECONNECT, "connect to unix socket @%s: %s",
                name, strerror(err));
        }
        if (shi_now_ns() > deadline) {
            return shi_error(SHOAL_ECONNECT,
                "connect to unix socket @%s: nobody listened "
                "before the deadline (%s)",
                name, strerror(err));
        }
        usleep(pause);
        pause = pause < 100000 ? pause * 2 : pause;
    }
}

static int
wait_fd(int fd, short events, int64_t deadline, const char *what)
{
    struct pollfd pfd = { .fd = fd, .events = events };

    for (;;) {
        int n = poll(&pfd, 1, shi_poll_timeout_ms(deadline));
        if (n > 0) {
            return SHOAL_OK;
        }
        if (n == 0) {
            return shi_error(SHOAL_ETIMEDOUT, "%s: deadline passed", what);
        }
        if (errno != EINTR) {
            return shi_error(
                SHOAL_ESYS, "%s: poll: %s", what, strerror(errno));
        }
    }
}

int
shi_unix_accept(int listen_fd, int64_t deadline, int *fd)
{
    int st = wait_fd(
        listen_fd, POLLIN, deadline, "waiting for a peer rank to connect");

    *fd = -1;
    if (st != SHOAL_OK) {
        return st;
    }
    int s = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (s < 0) {
        return shi_error(
            SHOAL_ESYS, "accept on unix socket: %s", strerror(errno));
    }
    *fd = s;
    return SHOAL_OK;
}

int
shi_unix_send_fd(int sock, int fd_to_send, const void *payload, size_t len,
    int64_t deadline)
{
    union {
        char           buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec    iov = { .iov_base = (void *) payload, .iov_len = len };
    struct msghdr   msg = { .msg_iov = &iov,
          .msg_iovlen                = 1,
          .msg_control               = ctl.buf,
          .msg_controllen            = sizeof(ctl.buf) };
    struct cmsghdr *c   = CMSG_FIRSTHDR(&msg);
    int             st;

    memset(ctl.buf, 0, sizeof(ctl.buf));
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type  = SCM_RIGHTS;
    c->cmsg_len   = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd_to_send, sizeof(int));
    st = wait_fd(sock, POLLOUT, deadline, "sending shared memory to a peer");
    if (st != SHOAL_OK) {
        return st;
    }
    if (sendmsg(sock, &msg, MSG_NOSIGNAL) != (ssize_t) len) {
        return shi_error(SHOAL_EPEER, "sending shared memory to a peer: %s",
            strerror(errno));
    }
    return SHOAL_OK;
}

int
shi_unix_recv_fd(
    int sock, int *fd_received, void *payload, size_t len, int64_t deadline)
{
    union {
        char           buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec  iov = { .iov_base = payload, .iov_len = len };
    struct msghdr msg = { .msg_iov = &iov,
        .msg_iovlen                = 1,
        .msg_control               = ctl.buf,
        .msg_controllen            = sizeof(ctl.buf) };
    int           st;
    ssize_t       n;

    *fd_received = -1;
    st           = wait_fd(
                  sock, POLLIN, deadline, "waiting for shared memory from rank 0");
    if (st != SHOAL_OK) {
        return st;
    }
    n                 = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (n != (ssize_t) len || c == NULL || c->cmsg_type != SCM_RIGHTS) {
        return shi_error(SHOAL_EPROTO,
            "expected a shared-memory descriptor from rank 0, "
            "got %zd bytes%s",
            n, c == NULL ? " and no descriptor" : "");
    }
    memcpy(fd_received, CMSG_DATA(c), sizeof(int));
    return SHOAL_OK;
}

int
shi_unix_check_peer_uid(int sock)
{
    struct ucred cred;
    socklen_t    len = sizeof(cred);

    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        return shi_error(SHOAL_ESYS, "SO_PEERCRED: %s", strerror(errno));
    }
    if (cred.uid != getuid()) {
        return shi_error(SHOAL_EAUTH,
            "a process of user %d (pid %d) connected to this "
            "rank; only our own user (%d) may",
            (int) cred.uid, (int) cred.pid, (int) getuid());
    }
    return SHOAL_OK;
}
