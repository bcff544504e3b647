// Job-secret handshake: both ends over a socketpair, the server side in a
// thread.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/auth.h"
#include "core/auth_msg.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "platform/net.h"
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

// Runs a handshake between a server knowing `srv_secret` and a client
// knowing `cli_secret` (NULL: none).
static void
handshake(const char *srv_secret, const char *cli_secret, side *srv, side *cli)
{
    int       sv[2];
    pthread_t th;

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    memset(srv, 0, sizeof(*srv));
    memset(cli, 0, sizeof(*cli));
    srv->fd       = sv[0];
    cli->fd       = sv[1];
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
