// Job-secret handshake: both ends over a socketpair or a loopback TCP
// connection, the server side in a thread; and, without a secret, peers of
// another user on this host (a forked child that becomes nobody; root only).
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "platform/auth.h"
#include "platform/auth_msg.h"
#include "platform/net.h"
#include "platform/sock_owner.h"
#include "test.h"

typedef struct side {
    int        fd;
    shi_secret secret;
    int64_t    deadline;
    int        rc;
    char       text[SHI_ERROR_TEXT_MAX];
} side;

static void *
server_main(void *arg)
{
    side *s = arg;

    s->rc = shi_auth_server(s->fd, &s->secret, "test client", s->deadline);
    snprintf(s->text, sizeof(s->text), "%s", shi_error_text());
    return NULL;
}

// Runs a handshake over connected sockets sfd (server) and cfd (client)
// between a server knowing `srv_secret` and a client knowing `cli_secret`
// (NULL: none). Closes both sockets.
static void
handshake_on(int sfd, int cfd, const char *srv_secret, const char *cli_secret,
    side *srv, side *cli)
{
    pthread_t th;

    memset(srv, 0, sizeof(*srv));
    memset(cli, 0, sizeof(*cli));
    srv->fd       = sfd;
    cli->fd       = cfd;
    srv->deadline = cli->deadline = shi_deadline_in_ms(5000);
    CHECK_OK(shi_secret_from_string(&srv->secret, srv_secret));
    CHECK_OK(shi_secret_from_string(&cli->secret, cli_secret));
    pthread_create(&th, NULL, server_main, srv);
    cli->rc
        = shi_auth_client(cli->fd, &cli->secret, "test server", cli->deadline);
    snprintf(cli->text, sizeof(cli->text), "%s", shi_error_text());
    // The client may give up first; closing its end lets the server finish.
    close(cli->fd);
    pthread_join(th, NULL);
    close(srv->fd);
}

static void
handshake(const char *srv_secret, const char *cli_secret, side *srv, side *cli)
{
    int sv[2];

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    handshake_on(sv[0], sv[1], srv_secret, cli_secret, srv, cli);
}

TEST(auth_same_secret_succeeds)
{
    side srv, cli;

    handshake("s3cret", "s3cret", &srv, &cli);
    CHECK_MSG(srv.rc == SHOAL_OK && cli.rc == SHOAL_OK,
        "server %s: %s / "
        "client %s: %s",
        shoal_status_name(srv.rc), srv.text, shoal_status_name(cli.rc),
        cli.text);
}

TEST(auth_no_secret_on_either_side_succeeds)
{
    side srv, cli;

    handshake(NULL, "", &srv, &cli);
    CHECK(srv.rc == SHOAL_OK && cli.rc == SHOAL_OK);
}

TEST(auth_wrong_secret_refused_on_both_sides)
{
    side srv, cli;

    handshake("right", "wrong", &srv, &cli);
    CHECK_MSG(cli.rc == SHOAL_EAUTH, "client: %s %s",
        shoal_status_name(cli.rc), cli.text);
    CHECK_MSG(srv.rc == SHOAL_EAUTH, "server: %s %s",
        shoal_status_name(srv.rc), srv.text);
    CHECK(strstr(cli.text, "SHOAL_SECRET") != NULL);
    CHECK(strstr(cli.text, "test server") != NULL);
    CHECK(strstr(srv.text, "test client") != NULL);
}

TEST(auth_secret_on_one_side_only_refused)
{
    side srv, cli;

    handshake("s3cret", NULL, &srv, &cli);
    CHECK(cli.rc == SHOAL_EAUTH && srv.rc == SHOAL_EAUTH);
    CHECK_MSG(
        strstr(cli.text, "requires a job secret") != NULL, "%s", cli.text);
    CHECK(strstr(cli.text, "set the same SHOAL_SECRET on every rank"));

    handshake(NULL, "s3cret", &srv, &cli);
    CHECK(cli.rc == SHOAL_EAUTH && srv.rc == SHOAL_EAUTH);
    CHECK_MSG(
        strstr(cli.text, "without a job secret") != NULL, "%s", cli.text);
    CHECK(strstr(srv.text, "set the same SHOAL_SECRET on every rank"));
}

TEST(auth_server_gives_up_on_silent_client)
{
    int        sv[2];
    shi_secret s;
    int64_t    start = shi_now_ns();

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK_OK(shi_secret_from_string(&s, "x"));
    CHECK_ST(shi_auth_server(sv[0], &s, "silent", shi_deadline_in_ms(200)),
        SHOAL_ETIMEDOUT);
    CHECK(shi_now_ns() - start < 1500000000);
    CHECK(strstr(shi_error_text(), "silent") != NULL);
    close(sv[0]);
    close(sv[1]);
}

TEST(auth_non_shoal_peers_are_protocol_errors)
{
    int           sv[2];
    unsigned char junk[SHI_AUTH_PROOF_LEN], hello[SHI_AUTH_HELLO_LEN];
    shi_secret    none;

    memset(junk, 'G', sizeof(junk));
    CHECK_OK(shi_secret_from_string(&none, NULL));

    // A client talking to something that is not a shoal server.
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK_OK(shi_write_all(
        sv[1], junk, SHI_AUTH_HELLO_LEN, shi_deadline_in_ms(1000)));
    CHECK_ST(
        shi_auth_client(sv[0], &none, "web server", shi_deadline_in_ms(1000)),
        SHOAL_EPROTO);
    CHECK(strstr(shi_error_text(), "not a shoal") != NULL);
    close(sv[0]);
    close(sv[1]);

    // A server hearing from something that is not a shoal client.
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK_OK(
        shi_write_all(sv[1], junk, sizeof(junk), shi_deadline_in_ms(1000)));
    CHECK_ST(
        shi_auth_server(sv[0], &none, "scanner", shi_deadline_in_ms(1000)),
        SHOAL_EPROTO);
    CHECK_OK(
        shi_read_all(sv[1], hello, sizeof(hello), shi_deadline_in_ms(1000)));
    close(sv[0]);
    close(sv[1]);
}

TEST(auth_peer_closing_is_epeer)
{
    int        sv[2];
    shi_secret s;

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK_OK(shi_secret_from_string(&s, "x"));
    close(sv[1]);
    CHECK_ST(shi_auth_client(sv[0], &s, "gone", shi_deadline_in_ms(1000)),
        SHOAL_EPEER);
    close(sv[0]);
}

typedef struct client_run {
    int        fd;
    shi_secret secret;
    int        rc;
} client_run;

static void *
client_main(void *arg)
{
    client_run *c = arg;

    c->rc = shi_auth_client(
        c->fd, &c->secret, "relay", shi_deadline_in_ms(2000));
    return NULL;
}

// A proof captured from one session is worthless in another: it is bound
// to the server's nonce.
TEST(auth_captured_proof_cannot_be_replayed)
{
    unsigned char ns1[SHI_AUTH_NONCE_LEN], ns2[SHI_AUTH_NONCE_LEN];
    unsigned char hello[SHI_AUTH_HELLO_LEN], proof[SHI_AUTH_PROOF_LEN];
    unsigned char reply[SHI_AUTH_REPLY_LEN];
    shi_secret    s;
    client_run    c;
    pthread_t     th;
    int           sv[2];

    CHECK_OK(shi_secret_from_string(&s, "job-42"));
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    c = (client_run) { .fd = sv[1], .secret = s };
    pthread_create(&th, NULL, client_main, &c);
    CHECK_OK(shi_auth_make_hello(&s, ns1, hello));
    CHECK_OK(
        shi_write_all(sv[0], hello, sizeof(hello), shi_deadline_in_ms(2000)));
    CHECK_OK(
        shi_read_all(sv[0], proof, sizeof(proof), shi_deadline_in_ms(2000)));

    CHECK_OK(shi_auth_check_proof(&s, ns1, proof, reply, "relay"));
    CHECK_OK(
        shi_write_all(sv[0], reply, sizeof(reply), shi_deadline_in_ms(2000)));
    pthread_join(th, NULL);
    CHECK_OK(c.rc);

    CHECK_OK(shi_auth_make_hello(&s, ns2, hello));
    CHECK(memcmp(ns1, ns2, sizeof(ns1)) != 0);
    CHECK_ST(
        shi_auth_check_proof(&s, ns2, proof, reply, "replayer"), SHOAL_EAUTH);
    close(sv[0]);
    close(sv[1]);
}

TEST(auth_secret_from_string)
{
    shi_secret a, b, c, none;
    int        pipefd[2], saved;
    char       buf[4096];
    ssize_t    n;

    CHECK_OK(shi_secret_from_string(&a, "alpha"));
    CHECK_OK(shi_secret_from_string(&b, "alpha"));
    CHECK_OK(shi_secret_from_string(&c, "beta"));
    CHECK(a.set && b.set && c.set);
    CHECK(memcmp(a.key, b.key, sizeof(a.key)) == 0);
    CHECK(memcmp(a.key, c.key, sizeof(a.key)) != 0);

    // An unset secret warns once per process.
    if (!shi_log_enabled(SHI_LOG_WARN)) {
        SKIP("warnings are off (SHOAL_DEBUG)");
    }
    CHECK(pipe(pipefd) == 0);
    saved = dup(STDERR_FILENO);
    dup2(pipefd[1], STDERR_FILENO);
    CHECK_OK(shi_secret_from_string(&none, NULL));
    CHECK(!none.set);
    CHECK_OK(shi_secret_from_string(&none, ""));
    CHECK(!none.set);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(pipefd[1]);
    n = read(pipefd[0], buf, sizeof(buf) - 1);
    close(pipefd[0]);
    CHECK(n > 0);
    buf[n] = '\0';
    CHECK_MSG(test_count(buf, "not authenticated") == 1, "%s", buf);
    CHECK(strstr(buf, "SHOAL_SECRET") != NULL);
}

TEST(auth_random_bytes)
{
    unsigned char x[32] = { 0 }, y[32] = { 0 };

    CHECK_OK(shi_random_bytes(x, sizeof(x)));
    CHECK_OK(shi_random_bytes(y, sizeof(y)));
    CHECK(memcmp(x, y, sizeof(x)) != 0);
    CHECK_OK(shi_random_bytes(x, 0));
    CHECK_ST(shi_random_bytes(x, -1), SHOAL_EINVAL);
}

// Accepts the next connection on lfd, waiting at most 5 s.
static int
accept_within(int lfd)
{
    struct pollfd pfd = { .fd = lfd, .events = POLLIN };
    int           fd;

    CHECK_MSG(poll(&pfd, 1, 5000) == 1, "nobody connected within 5 s");
    fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    CHECK(fd >= 0);
    return fd;
}

TEST(auth_same_user_over_tcp_without_secret_succeeds)
{
    side srv, cli;
    int  lfd, port, cfd;

    CHECK_OK(shi_tcp_listen("127.0.0.1", 0, 4, &lfd, &port));
    CHECK_OK(
        shi_tcp_connect("127.0.0.1", port, shi_deadline_in_ms(2000), &cfd));
    handshake_on(accept_within(lfd), cfd, NULL, NULL, &srv, &cli);
    close(lfd);
    CHECK_MSG(srv.rc == SHOAL_OK && cli.rc == SHOAL_OK,
        "server %s: %s / client %s: %s", shoal_status_name(srv.rc), srv.text,
        shoal_status_name(cli.rc), cli.text);
}

#define NOBODY 65534

// What a forked child's handshake gave.
typedef struct child_result {
    int  rc;
    char text[SHI_ERROR_TEXT_MAX];
} child_result;

// Skips unless we can run a process as another user and the kernel can say
// who owns a TCP socket.
static void
need_root_and_sock_diag(void)
{
    int   lfd, port, cfd, sfd, is_local;
    uid_t uid;

    if (geteuid() != 0) {
        SKIP("needs root, to run a peer as user nobody");
    }
    CHECK_OK(shi_tcp_listen("127.0.0.1", 0, 4, &lfd, &port));
    CHECK_OK(
        shi_tcp_connect("127.0.0.1", port, shi_deadline_in_ms(2000), &cfd));
    sfd = accept_within(lfd);
    if (shi_tcp_peer_uid(sfd, &uid, &is_local) == SHOAL_ENOTSUP) {
        SKIP("%s", shi_error_text());
    }
    close(sfd);
    close(cfd);
    close(lfd);
}

// In a forked child: drops root for user nobody, or exits 2.
static void
become_nobody(void)
{
    if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0
        || setuid(NOBODY) != 0) {
        _exit(2);
    }
}

// In a forked child: reports rc and this thread's error text through
// `wfd`, then exits.
static void
child_report(int wfd, int rc)
{
    child_result r = { .rc = rc };

    snprintf(r.text, sizeof(r.text), "%s", shi_error_text());
    _exit(write(wfd, &r, sizeof(r)) == (ssize_t) sizeof(r) ? 0 : 3);
}

// Collects a child's report and its exit.
static void
child_collect(pid_t pid, int rfd, child_result *r)
{
    int status;

    memset(r, 0, sizeof(*r));
    CHECK_OK(shi_read_all(rfd, r, sizeof(*r), shi_deadline_in_ms(5000)));
    close(rfd);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "child status 0x%x", status);
}

// A client of user nobody; the server (us, root) runs the handshake with
// `secret`. Returns the server's status; the client's is in *cli.
static int
serve_nobody(const char *secret, child_result *cli, char *srv_text)
{
    shi_secret s;
    int        lfd, port, sfd, pfd[2], rc;
    pid_t      pid;

    CHECK_OK(shi_secret_from_string(&s, secret));
    CHECK_OK(shi_tcp_listen("127.0.0.1", 0, 4, &lfd, &port));
    CHECK(pipe(pfd) == 0);
    if ((pid = fork()) == 0) {
        int fd;
        close(pfd[0]);
        become_nobody();
        rc = shi_tcp_connect("127.0.0.1", port, shi_deadline_in_ms(5000), &fd);
        if (rc == SHOAL_OK) {
            rc = shi_auth_client(
                fd, &s, "test server", shi_deadline_in_ms(5000));
        }
        child_report(pfd[1], rc);
    }
    CHECK(pid > 0);
    close(pfd[1]);
    sfd = accept_within(lfd);
    rc  = shi_auth_server(sfd, &s, "test client", shi_deadline_in_ms(5000));
    snprintf(srv_text, SHI_ERROR_TEXT_MAX, "%s", shi_error_text());
    close(sfd);
    close(lfd);
    child_collect(pid, pfd[0], cli);
    return rc;
}

TEST(auth_other_user_on_this_host_refused_without_secret)
{
    child_result cli;
    char         srv[SHI_ERROR_TEXT_MAX];
    int          rc;

    need_root_and_sock_diag();
    rc = serve_nobody(NULL, &cli, srv);
    CHECK_MSG(rc == SHOAL_EAUTH, "server: %s %s", shoal_status_name(rc), srv);
    CHECK_MSG(strstr(srv, "user 65534") != NULL
            && strstr(srv, "set the same SHOAL_SECRET") != NULL,
        "%s", srv);
    CHECK_MSG(cli.rc == SHOAL_EAUTH, "client: %s %s",
        shoal_status_name(cli.rc), cli.text);
    CHECK_MSG(strstr(cli.text, "runs as another user (65534)") != NULL
            && strstr(cli.text, "SHOAL_SECRET") != NULL,
        "%s", cli.text);
}

// With a secret, the proof decides: users may differ.
TEST(auth_other_user_with_the_secret_succeeds)
{
    child_result cli;
    char         srv[SHI_ERROR_TEXT_MAX];
    int          rc;

    need_root_and_sock_diag();
    rc = serve_nobody("shared", &cli, srv);
    CHECK_MSG(rc == SHOAL_OK, "server: %s %s", shoal_status_name(rc), srv);
    CHECK_MSG(cli.rc == SHOAL_OK, "client: %s %s", shoal_status_name(cli.rc),
        cli.text);
}

// In a forked child of user nobody: serves one handshake on lfd the way a
// stranger would, accepting any client, then waits for it to hang up.
static void
impostor_serve(int lfd, int wfd)
{
    unsigned char ns[SHI_AUTH_NONCE_LEN], hello[SHI_AUTH_HELLO_LEN];
    unsigned char proof[SHI_AUTH_PROOF_LEN], reply[SHI_AUTH_REPLY_LEN];
    shi_secret    none;
    int64_t       deadline = shi_deadline_in_ms(5000);
    int           fd, rc;

    become_nobody();
    shi_secret_from_string(&none, NULL);
    fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC); // owned by nobody
    rc = fd < 0 ? SHOAL_ESYS : shi_auth_make_hello(&none, ns, hello);
    if (rc == SHOAL_OK) {
        rc = shi_write_all(fd, hello, sizeof(hello), deadline);
    }
    if (rc == SHOAL_OK) {
        rc = shi_read_all(fd, proof, sizeof(proof), deadline);
    }
    if (rc == SHOAL_OK) {
        rc = shi_auth_check_proof(&none, ns, proof, reply, "victim");
    }
    if (rc == SHOAL_OK) {
        rc = shi_write_all(fd, reply, sizeof(reply), deadline);
    }
    if (rc == SHOAL_OK) {
        // The client's verdict needs this socket open; EPEER when it hangs up.
        rc = shi_read_all(fd, proof, 1, deadline);
    }
    child_report(wfd, rc);
}

// Another user listening where a rank or the store should be: a client
// without a secret refuses it.
TEST(auth_server_of_other_user_refused_by_client_without_secret)
{
    child_result imp;
    shi_secret   none;
    int          lfd, port, cfd, pfd[2], rc;
    pid_t        pid;

    need_root_and_sock_diag();
    CHECK_OK(shi_secret_from_string(&none, NULL));
    CHECK_OK(shi_tcp_listen("127.0.0.1", 0, 4, &lfd, &port));
    CHECK(pipe(pfd) == 0);
    if ((pid = fork()) == 0) {
        close(pfd[0]);
        impostor_serve(lfd, pfd[1]);
    }
    CHECK(pid > 0);
    close(pfd[1]);
    close(lfd);
    CHECK_OK(
        shi_tcp_connect("127.0.0.1", port, shi_deadline_in_ms(5000), &cfd));
    rc = shi_auth_client(
        cfd, &none, "rank 0 at 127.0.0.1", shi_deadline_in_ms(5000));
    CHECK_MSG(rc == SHOAL_EAUTH, "client: %s %s", shoal_status_name(rc),
        shi_error_text());
    CHECK_MSG(
        strstr(shi_error_text(), "served by a process of user 65534") != NULL,
        "%s", shi_error_text());
    close(cfd);
    child_collect(pid, pfd[0], &imp);
    CHECK_MSG(imp.rc == SHOAL_EPEER, "impostor: %s %s",
        shoal_status_name(imp.rc), imp.text);
}
