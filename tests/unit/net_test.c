// Socket helpers: address parsing, listen/connect with retries, reads and
// writes with deadlines.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "platform/net.h"
#include "test.h"

// A port on 127.0.0.1 that nothing listens on (just released by us).
static int
free_port(void)
{
    int fd, port;

    CHECK_OK(shi_tcp_listen("127.0.0.1", 0, 1, &fd, &port));
    close(fd);
    return port;
}

static double
seconds_since(int64_t start)
{
    return (double) (shi_now_ns() - start) / 1e9;
}

TEST(net_parse_host_port)
{
    char host[64];
    int  port;

    CHECK_OK(
        shi_parse_host_port("127.0.0.1:29500", host, sizeof(host), &port));
    CHECK(strcmp(host, "127.0.0.1") == 0 && port == 29500);
    CHECK_OK(
        shi_parse_host_port("node-3.cluster:0", host, sizeof(host), &port));
    CHECK(strcmp(host, "node-3.cluster") == 0 && port == 0);
    CHECK_OK(shi_parse_host_port("[::1]:80", host, sizeof(host), &port));
    CHECK(strcmp(host, "::1") == 0 && port == 80);

    const char *bad[] = { "noport", ":80", "host:", "host:65536", "host:-1",
        "host:12x", "::1:80", "[::1]80", "[::1", "host: 80" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_ST(shi_parse_host_port(bad[i], host, sizeof(host), &port),
            SHOAL_EINVAL);
        CHECK_MSG(strstr(shi_error_text(), bad[i]) != NULL,
            "message for '%s' does not quote it: %s", bad[i],
            shi_error_text());
    }
    CHECK_ST(shi_parse_host_port("a-very-long-host-name:1", host, 8, &port),
        SHOAL_EINVAL);
}

typedef struct reader {
    int            fd;
    unsigned char *buf;
    size_t         len;
    int            rc;
} reader;

static void *
reader_main(void *arg)
{
    reader *r = arg;

    r->rc = shi_read_all(r->fd, r->buf, r->len, shi_deadline_in_ms(10000));
    return NULL;
}

TEST(net_listen_connect_roundtrip)
{
    int            lfd, port, cfd, sfd, flag = 0;
    socklen_t      sl  = sizeof(flag);
    size_t         len = 8u << 20; // far more than the socket buffers
    unsigned char *out = malloc(len), *in = calloc(1, len);
    reader         r;
    pthread_t      th;

    CHECK_OK(shi_tcp_listen("127.0.0.1", 0, 4, &lfd, &port));
    CHECK(port > 0);
    CHECK(fcntl(lfd, F_GETFD) & FD_CLOEXEC);
    CHECK_OK(
        shi_tcp_connect("127.0.0.1", port, shi_deadline_in_ms(2000), &cfd));
    CHECK(fcntl(cfd, F_GETFD) & FD_CLOEXEC);
    CHECK((fcntl(cfd, F_GETFL) & O_NONBLOCK) == 0);
    CHECK(getsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &flag, &sl) == 0);
    CHECK(flag != 0);
    sfd = accept(lfd, NULL, NULL);
    CHECK(sfd >= 0);

    for (size_t i = 0; i < len; i++) {
        out[i] = (unsigned char) (i * 7 + 3);
    }
    r = (reader) { .fd = sfd, .buf = in, .len = len };
    pthread_create(&th, NULL, reader_main, &r);
    CHECK_OK(shi_write_all(cfd, out, len, shi_deadline_in_ms(10000)));
    pthread_join(th, NULL);
    CHECK_OK(r.rc);
    CHECK(memcmp(in, out, len) == 0);

    char name[64];
    shi_socket_peer_name(sfd, name, sizeof(name));
    CHECK(strncmp(name, "127.0.0.1:", 10) == 0);
    close(cfd);
    close(sfd);
    close(lfd);
    free(out);
    free(in);
}

TEST(net_read_deadline_and_eof)
{
    int     sv[2];
    char    buf[16];
    int64_t start;

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    start = shi_now_ns();
    CHECK_ST(shi_read_all(sv[0], buf, sizeof(buf), shi_deadline_in_ms(200)),
        SHOAL_ETIMEDOUT);
    CHECK(seconds_since(start) >= 0.15 && seconds_since(start) < 1.5);

    CHECK_OK(shi_write_all(sv[1], "abc", 3, shi_deadline_in_ms(1000)));
    close(sv[1]);
    CHECK_ST(shi_read_all(sv[0], buf, sizeof(buf), shi_deadline_in_ms(1000)),
        SHOAL_EPEER);
    CHECK(strstr(shi_error_text(), "3 of 16") != NULL);
    // Writing to a closed peer is an error, not a SIGPIPE.
    CHECK_ST(shi_write_all(sv[0], buf, sizeof(buf), shi_deadline_in_ms(1000)),
        SHOAL_EPEER);
    close(sv[0]);
}

TEST(net_write_deadline_when_peer_does_not_read)
{
    int            sv[2];
    size_t         len = 64u << 20;
    unsigned char *buf = calloc(1, len);
    int64_t        start;

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    start = shi_now_ns();
    CHECK_ST(shi_write_all(sv[0], buf, len, shi_deadline_in_ms(200)),
        SHOAL_ETIMEDOUT);
    CHECK(seconds_since(start) < 1.5);
    close(sv[0]);
    close(sv[1]);
    free(buf);
}

TEST(net_connect_refused_reports_address_within_deadline)
{
    int     port = free_port(), fd = 123;
    char    want[32];
    int64_t start = shi_now_ns();

    CHECK_ST(shi_tcp_connect("127.0.0.1", port, shi_deadline_in_ms(300), &fd),
        SHOAL_ECONNECT);
    CHECK(seconds_since(start) >= 0.25 && seconds_since(start) < 2.0);
    CHECK(fd == -1);
    snprintf(want, sizeof(want), "127.0.0.1:%d", port);
    CHECK_MSG(strstr(shi_error_text(), want) != NULL, "%s", shi_error_text());
    CHECK(strstr(shi_error_text(), "attempts") != NULL);
}

typedef struct late_listener {
    int port, fd;
} late_listener;

static void *
late_listener_main(void *arg)
{
    late_listener *l = arg;
    int            bound;

    usleep(300000);
    if (shi_tcp_listen("127.0.0.1", l->port, 4, &l->fd, &bound) != 0) {
        l->fd = -1;
    }
    return NULL;
}

TEST(net_connect_retries_until_listener_appears)
{
    late_listener l = { .port = free_port(), .fd = -1 };
    pthread_t     th;
    int           fd;

    pthread_create(&th, NULL, late_listener_main, &l);
    CHECK_OK(
        shi_tcp_connect("127.0.0.1", l.port, shi_deadline_in_ms(5000), &fd));
    pthread_join(th, NULL);
    CHECK(l.fd >= 0);
    close(fd);
    close(l.fd);
}
