// Owner of a TCP connection's other end (platform/sock_owner.h): loopback
// connections in both directions, IPv4 through a dual-stack listener, IPv6,
// peers that closed, sockets that are not TCP.
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "platform/net.h"
#include "platform/sock_owner.h"
#include "test.h"

typedef struct tcp_pair {
    int lfd, client, server;
} tcp_pair;

// A connection to `host` (NULL: a dual-stack listener on every address,
// reached through `to`). Returns 0 if `host` cannot be listened on.
static int
pair_open(tcp_pair *p, const char *host, const char *to)
{
    int port;

    if (shi_tcp_listen(host, 0, 4, &p->lfd, &port) != SHOAL_OK) {
        return 0;
    }
    CHECK_OK(shi_tcp_connect(to, port, shi_deadline_in_ms(2000), &p->client));
    p->server = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
    CHECK(p->server >= 0);
    return 1;
}

static void
pair_close(tcp_pair *p)
{
    close(p->lfd);
    if (p->client >= 0) {
        close(p->client);
    }
    close(p->server);
}

// Skips the test where the kernel has no socket diagnostics.
static void
expect_own_user(int fd)
{
    uid_t uid      = (uid_t) -1;
    int   is_local = -1, st = shi_tcp_peer_uid(fd, &uid, &is_local);

    if (st == SHOAL_ENOTSUP) {
        SKIP("%s", shi_error_text());
    }
    CHECK_OK(st);
    CHECK_MSG(is_local == 1, "is_local %d", is_local);
    CHECK_MSG(uid == geteuid(), "uid %u, we are %u", (unsigned) uid,
        (unsigned) geteuid());
}

TEST(sock_owner_loopback_peer_is_ours)
{
    tcp_pair p;

    CHECK(pair_open(&p, "127.0.0.1", "127.0.0.1"));
    expect_own_user(p.server); // asks about the connecting socket
    expect_own_user(p.client); // asks about the accepted one
    pair_close(&p);
}

TEST(sock_owner_dual_stack_and_ipv6)
{
    tcp_pair p;

    // An IPv6 listener accepting IPv4: the peer's address is IPv4-mapped.
    if (pair_open(&p, NULL, "127.0.0.1")) {
        expect_own_user(p.server);
        expect_own_user(p.client);
        pair_close(&p);
    }
    if (!pair_open(&p, "::1", "::1")) {
        SKIP("no IPv6 loopback here");
    }
    expect_own_user(p.server);
    expect_own_user(p.client);
    pair_close(&p);
}

// A local peer whose socket is closed (orphaned) or gone (reset) must not
// pass for a remote one: its user is unknown, not absent.
TEST(sock_owner_closed_local_peer_is_epeer)
{
    struct linger reset = { .l_onoff = 1, .l_linger = 0 };
    tcp_pair      p;
    uid_t         uid;
    int           is_local;

    CHECK(pair_open(&p, "127.0.0.1", "127.0.0.1"));
    expect_own_user(p.server);
    close(p.client);
    p.client = -1;
    CHECK_ST(shi_tcp_peer_uid(p.server, &uid, &is_local), SHOAL_EPEER);
    CHECK(strstr(shi_error_text(), "this host") != NULL);
    pair_close(&p);

    CHECK(pair_open(&p, "127.0.0.1", "127.0.0.1"));
    CHECK(setsockopt(p.client, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset))
        == 0);
    close(p.client);
    p.client = -1;
    CHECK_ST(shi_tcp_peer_uid(p.server, &uid, &is_local), SHOAL_EPEER);
    pair_close(&p);
}

TEST(sock_owner_not_a_tcp_socket)
{
    int   sv[2];
    uid_t uid;
    int   is_local;

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK_ST(shi_tcp_peer_uid(sv[0], &uid, &is_local), SHOAL_EINVAL);
    close(sv[0]);
    close(sv[1]);
    CHECK_ST(shi_tcp_peer_uid(-1, &uid, &is_local), SHOAL_EINVAL);
}
