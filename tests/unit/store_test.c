// Rendezvous store: the TCP store (server and client) and the file store,
// including hostile and broken peers.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "platform/auth.h"
#include "platform/auth_msg.h"
#include "platform/net.h"
#include "store/store.h"
#include "store/store_impl.h"
#include "store/wire.h"
#include "test.h"

#define ADDR_MAX 600

static shi_secret
secret_of(const char *text)
{
    shi_secret s;

    CHECK_OK(shi_secret_from_string(&s, text));
    return s;
}

static shi_store_server *
server_start(const char *secret_text, char addr[ADDR_MAX])
{
    shi_store_server *srv;
    shi_secret        s = secret_of(secret_text);

    CHECK_OK(shi_store_server_start(&srv, "127.0.0.1", 0, &s));
    snprintf(addr, ADDR_MAX, "127.0.0.1:%d", shi_store_server_port(srv));
    return srv;
}

static shi_store *
store_open(const char *addr, const char *secret_text)
{
    shi_store *st;
    shi_secret s = secret_of(secret_text);

    CHECK_OK(shi_store_open(&st, addr, &s, shi_deadline_in_ms(5000)));
    return st;
}

// A fresh directory for file stores; removed by tmpdir_remove.
static void
tmpdir_make(char dir[ADDR_MAX])
{
    snprintf(dir, ADDR_MAX, "/tmp/shoal-store-test-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
}

static void
tmpdir_remove(const char *dir)
{
    char cmd[ADDR_MAX + 16];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

// Runs `fn` against a TCP store server of our own, or against a file store
// in a fresh directory (whose mode is checked afterwards).
typedef void (*store_case)(const char *addr, const char *secret);

// The server runs in a process of its own, so the test process has no
// threads when cases fork (a fork may copy a lock another thread holds).
static void
on_tcp_store(store_case fn)
{
    char  addr[ADDR_MAX];
    int   up[2], ctl[2], port = 0, status;
    char  byte;
    pid_t pid;

    CHECK(pipe(up) == 0 && pipe(ctl) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(up[0]);
        close(ctl[1]);
        shi_store_server *srv = server_start("s", addr);
        port                  = shi_store_server_port(srv);
        CHECK(write(up[1], &port, sizeof(port)) == sizeof(port));
        CHECK(read(ctl[0], &byte, 1) == 0); // until the test is done
        shi_store_server_stop(srv);
        _exit(0);
    }
    close(up[1]);
    close(ctl[0]);
    CHECK(read(up[0], &port, sizeof(port)) == sizeof(port));
    close(up[0]);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    fn(addr, "s");
    close(ctl[1]);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void
on_file_store(store_case fn)
{
    char        dir[ADDR_MAX], path[ADDR_MAX + 16];
    struct stat sb;

    tmpdir_make(dir);
    snprintf(path, sizeof(path), "%s/store", dir);
    fn(path, NULL);
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
    tmpdir_remove(dir);
}

static double
seconds_since(int64_t start)
{
    return (double) (shi_now_ns() - start) / 1e9;
}

static void
check_value(shi_store *st, const char *key, const char *want)
{
    void  *v;
    size_t len;

    CHECK_OK(shi_store_get(st, key, &v, &len, shi_deadline_in_ms(5000)));
    CHECK_MSG(len == strlen(want) && memcmp(v, want, len) == 0
            && ((char *) v)[len] == '\0',
        "key '%s': got %zu bytes '%.*s', wanted '%s'", key, len, (int) len,
        (char *) v, want);
    free(v);
}

// Set, get, add and wait on any store.
static void
exercise_basics(shi_store *st)
{
    int64_t     dl = shi_deadline_in_ms(5000), sum = 0;
    const char *keys[] = { "a", "n", "empty" };
    void       *v;
    size_t      len = 99;

    CHECK_OK(shi_store_set(st, "a", "hello", 5, dl));
    check_value(st, "a", "hello");
    CHECK_OK(shi_store_set(st, "a", "replaced", 8, dl));
    check_value(st, "a", "replaced");
    CHECK_OK(shi_store_set(st, "empty", NULL, 0, dl));
    CHECK_OK(shi_store_get(st, "empty", &v, &len, dl));
    CHECK(len == 0 && v != NULL && ((char *) v)[0] == '\0');
    free(v);

    CHECK_OK(shi_store_add(st, "n", 5, &sum, dl));
    CHECK(sum == 5);
    CHECK_OK(shi_store_add(st, "n", -7, &sum, dl));
    CHECK(sum == -2);
    CHECK_OK(shi_store_add(st, "n", 0, NULL, dl));
    check_value(st, "n", "-2");
    CHECK_OK(shi_store_wait(st, keys, 3, dl));
    CHECK_OK(shi_store_wait(st, keys, 0, dl));

    // add on a value that is not a number fails, and the handle goes on.
    CHECK_ST(shi_store_add(st, "a", 1, &sum, dl), SHOAL_EINVAL);
    CHECK(strstr(shi_error_text(), "'a'") != NULL);
    CHECK_OK(shi_store_set(st, "big", "9223372036854775807", 19, dl));
    CHECK_ST(shi_store_add(st, "big", 1, &sum, dl), SHOAL_EINVAL);
    CHECK(strstr(shi_error_text(), "overflow") != NULL);
    check_value(st, "a", "replaced");

    // Arguments are checked before anything is sent.
    char long_key[SHI_STORE_KEY_MAX + 2];
    memset(long_key, 'k', sizeof(long_key) - 1);
    long_key[sizeof(long_key) - 1] = '\0';
    CHECK_ST(shi_store_set(st, long_key, "x", 1, dl), SHOAL_EINVAL);
    long_key[SHI_STORE_KEY_MAX] = '\0';
    CHECK_OK(shi_store_set(st, long_key, "x", 1, dl));
    check_value(st, long_key, "x");
    CHECK_ST(shi_store_set(st, "", "x", 1, dl), SHOAL_EINVAL);
    CHECK_ST(shi_store_set(st, NULL, "x", 1, dl), SHOAL_EINVAL);
    CHECK_ST(shi_store_set(st, "x", NULL, 1, dl), SHOAL_EINVAL);
    CHECK_ST(shi_store_set(st, "x", "x", (size_t) SHI_STORE_VALUE_MAX + 1, dl),
        SHOAL_EINVAL);
    CHECK_ST(shi_store_get(st, "x", NULL, &len, dl), SHOAL_EINVAL);

    // A 4 MiB binary value.
    size_t         blen = 4u << 20;
    unsigned char *big  = malloc(blen);
    for (size_t i = 0; i < blen; i++) {
        big[i] = (unsigned char) (i * 31 + (i >> 13));
    }
    CHECK_OK(shi_store_set(st, "blob", big, blen, dl));
    CHECK_OK(shi_store_get(st, "blob", &v, &len, dl));
    CHECK(len == blen && memcmp(v, big, blen) == 0);
    free(v);
    free(big);
}

static void
basics_case(const char *addr, const char *secret)
{
    shi_store *st = store_open(addr, secret);

    exercise_basics(st);
    // A second handle sees the first one's keys.
    shi_store *other = store_open(addr, secret);
    check_value(other, "n", "-2");
    check_value(other, "a", "replaced");
    shi_store_close(other);
    shi_store_close(st);
}

TEST(store_tcp_set_get_add_wait)
{
    on_tcp_store(basics_case);
}

TEST(store_file_set_get_add_wait)
{
    on_file_store(basics_case);
}

TEST(store_open_rejects_bad_addresses)
{
    shi_store *st = (shi_store *) 1;

    CHECK_ST(
        shi_store_open(&st, "", NULL, shi_deadline_in_ms(100)), SHOAL_EINVAL);
    CHECK(st == NULL);
    CHECK_ST(shi_store_open(&st, "nonsense", NULL, shi_deadline_in_ms(100)),
        SHOAL_EINVAL);
    CHECK(strstr(shi_error_text(), "nonsense") != NULL);
    CHECK_ST(shi_store_open(&st, "127.0.0.1:0", NULL, shi_deadline_in_ms(100)),
        SHOAL_EINVAL);
    CHECK_ST(
        shi_store_open(&st, "127.0.0.1:70000", NULL, shi_deadline_in_ms(100)),
        SHOAL_EINVAL);
}

typedef struct setter {
    const char *addr;
    const char *secret;
    int         delay_ms;
    int         rc;
} setter;

static void *
setter_main(void *arg)
{
    setter    *s = arg;
    shi_store *st;
    shi_secret sec;

    usleep((useconds_t) s->delay_ms * 1000);
    shi_secret_from_string(&sec, s->secret);
    s->rc = shi_store_open(&st, s->addr, &sec, shi_deadline_in_ms(5000));
    if (s->rc == SHOAL_OK) {
        s->rc = shi_store_set(st, "late", "here", 4, shi_deadline_in_ms(5000));
        shi_store_close(st);
    }
    return NULL;
}

// get blocks until another thread (own handle) sets the key.
static void
get_waits_for_thread(const char *addr, const char *secret)
{
    shi_store *st = store_open(addr, secret);
    setter     s  = { .addr = addr, .secret = secret, .delay_ms = 300 };
    pthread_t  th;
    int64_t    start = shi_now_ns();

    pthread_create(&th, NULL, setter_main, &s);
    check_value(st, "late", "here");
    CHECK(seconds_since(start) >= 0.25);
    pthread_join(th, NULL);
    CHECK_OK(s.rc);
    shi_store_close(st);
}

TEST(store_tcp_get_waits_for_key_set_later)
{
    on_tcp_store(get_waits_for_thread);
}

TEST(store_file_get_waits_for_key_set_later)
{
    on_file_store(get_waits_for_thread);
}

// nproc processes each add 1 to "counter" `rounds` times and set "done<i>";
// the parent waits for every "done<i>" and checks the sum.
static void
concurrent_adds(const char *addr, const char *secret)
{
    enum { NPROC = 8, ROUNDS = 50 };
    pid_t       pids[NPROC];
    char        names[NPROC][16];
    const char *keys[NPROC];
    shi_store  *st;
    int         status;

    for (int i = 0; i < NPROC; i++) {
        snprintf(names[i], sizeof(names[i]), "done%d", i);
        keys[i] = names[i];
        pids[i] = fork();
        CHECK(pids[i] >= 0);
        if (pids[i] == 0) {
            shi_store *c    = store_open(addr, secret);
            int64_t    last = 0, now;
            for (int r = 0; r < ROUNDS; r++) {
                CHECK_OK(shi_store_add(
                    c, "counter", 1, &now, shi_deadline_in_ms(10000)));
                CHECK(now > last); // never goes back
                last = now;
            }
            CHECK_OK(
                shi_store_set(c, keys[i], "1", 1, shi_deadline_in_ms(10000)));
            shi_store_close(c);
            _exit(0);
        }
    }
    st = store_open(addr, secret);
    CHECK_OK(shi_store_wait(st, keys, NPROC, shi_deadline_in_ms(30000)));
    check_value(st, "counter", "400");
    for (int i = 0; i < NPROC; i++) {
        CHECK(waitpid(pids[i], &status, 0) == pids[i]);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "child %d failed", i);
    }
    shi_store_close(st);
}

TEST(store_tcp_concurrent_adds_from_8_processes)
{
    on_tcp_store(concurrent_adds);
}

TEST(store_file_concurrent_adds_from_8_processes)
{
    on_file_store(concurrent_adds);
}

typedef struct waiter {
    const char *addr;
    int         rc;
} waiter;

static void *
waiter_main(void *arg)
{
    waiter     *w = arg;
    shi_store  *st;
    shi_secret  s;
    const char *keys[] = { "go", "set" };
    void       *v      = NULL;
    size_t      len;

    shi_secret_from_string(&s, "s");
    w->rc = shi_store_open(&st, w->addr, &s, shi_deadline_in_ms(5000));
    if (w->rc != SHOAL_OK) {
        return NULL;
    }
    w->rc = shi_store_get(st, "go", &v, &len, shi_deadline_in_ms(10000));
    if (w->rc == SHOAL_OK) {
        w->rc = len == 2 && memcmp(v, "ok", 2) == 0 ? SHOAL_OK : -1000;
    }
    free(v);
    if (w->rc == SHOAL_OK) {
        w->rc = shi_store_wait(st, keys, 2, shi_deadline_in_ms(10000));
    }
    shi_store_close(st);
    return NULL;
}

// Many requests parked at once are all answered by one SET.
TEST(store_tcp_many_parked_requests)
{
    enum { N = 16 };
    char              addr[ADDR_MAX];
    shi_store_server *srv = server_start("s", addr);
    shi_store        *st  = store_open(addr, "s");
    waiter            w[N];
    pthread_t         th[N];

    for (int i = 0; i < N; i++) {
        w[i] = (waiter) { .addr = addr, .rc = 1 };
        pthread_create(&th[i], NULL, waiter_main, &w[i]);
    }
    usleep(200000);
    CHECK_OK(shi_store_set(st, "set", "", 0, shi_deadline_in_ms(1000)));
    CHECK_OK(shi_store_set(st, "go", "ok", 2, shi_deadline_in_ms(1000)));
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        CHECK_MSG(w[i].rc == SHOAL_OK, "waiter %d: %s", i,
            shoal_status_name(w[i].rc));
    }
    shi_store_close(st);
    shi_store_server_stop(srv);
}

typedef struct adder {
    shi_store *st;
    int        rc;
} adder;

static void *
adder_main(void *arg)
{
    adder *a = arg;

    for (int i = 0; i < 100 && a->rc == SHOAL_OK; i++) {
        a->rc = shi_store_add(
            a->st, "shared", 1, NULL, shi_deadline_in_ms(5000));
    }
    return NULL;
}

// Threads may share one handle: calls are serialized.
TEST(store_tcp_handle_shared_by_threads)
{
    char              addr[ADDR_MAX];
    shi_store_server *srv = server_start("s", addr);
    shi_store        *st  = store_open(addr, "s");
    adder             a[4];
    pthread_t         th[4];

    for (int i = 0; i < 4; i++) {
        a[i] = (adder) { .st = st };
        pthread_create(&th[i], NULL, adder_main, &a[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_OK(a[i].rc);
    }
    check_value(st, "shared", "400");
    shi_store_close(st);
    shi_store_server_stop(srv);
}

TEST(store_tcp_wrong_secret_refused_server_keeps_serving)
{
    char              addr[ADDR_MAX];
    shi_store_server *srv   = server_start("right", addr);
    shi_store        *good  = store_open(addr, "right");
    shi_store        *bad   = NULL;
    shi_secret        wrong = secret_of("wrong");

    CHECK_OK(shi_store_set(good, "k", "v", 1, shi_deadline_in_ms(1000)));
    CHECK_ST(shi_store_open(&bad, addr, &wrong, shi_deadline_in_ms(2000)),
        SHOAL_EAUTH);
    CHECK(bad == NULL);
    CHECK_MSG(strstr(shi_error_text(), "SHOAL_SECRET") != NULL, "%s",
        shi_error_text());
    CHECK(strstr(shi_error_text(), addr) != NULL);
    // The connection made before and a new one both still work.
    check_value(good, "k", "v");
    shi_store *again = store_open(addr, "right");
    check_value(again, "k", "v");
    shi_store_close(again);
    shi_store_close(good);
    shi_store_server_stop(srv);
}

TEST(store_tcp_secret_on_one_side_only_refused)
{
    char              addr[ADDR_MAX];
    shi_store_server *srv  = server_start("only-server", addr);
    shi_store        *st   = NULL;
    shi_secret        none = secret_of(NULL), some = secret_of("only-client");

    CHECK_ST(shi_store_open(&st, addr, &none, shi_deadline_in_ms(2000)),
        SHOAL_EAUTH);
    CHECK(strstr(shi_error_text(), "set the same SHOAL_SECRET on every rank"));
    CHECK_ST(shi_store_open(&st, addr, NULL, shi_deadline_in_ms(2000)),
        SHOAL_EAUTH);
    shi_store_server_stop(srv);

    srv = server_start(NULL, addr);
    CHECK_ST(shi_store_open(&st, addr, &some, shi_deadline_in_ms(2000)),
        SHOAL_EAUTH);
    CHECK(strstr(shi_error_text(), "set the same SHOAL_SECRET on every rank"));
    CHECK(st == NULL);
    shi_store_server_stop(srv);
}

// A raw TCP connection to the store.
static int
raw_connect(const char *addr)
{
    char host[64];
    int  port, fd;

    CHECK_OK(shi_parse_host_port(addr, host, sizeof(host), &port));
    CHECK_OK(shi_tcp_connect(host, port, shi_deadline_in_ms(2000), &fd));
    return fd;
}

// True if the server closes fd within 2 s (reading and dropping whatever
// it sent first).
static int
closed_by_server(int fd)
{
    int64_t deadline = shi_deadline_in_ms(2000);
    char    buf[256];

    for (;;) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        if (poll(&pfd, 1, shi_poll_timeout_ms(deadline)) <= 0) {
            return 0;
        }
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            return 1;
        }
        if (n < 0) {
            return 0;
        }
    }
}

// Authenticates a raw connection with the secret-less server, so what
// follows reaches the frame parser.
static int
raw_authenticated(const char *addr)
{
    int        fd   = raw_connect(addr);
    shi_secret none = secret_of(NULL);

    CHECK_OK(shi_auth_client(fd, &none, "store", shi_deadline_in_ms(2000)));
    return fd;
}

// A get in a thread of its own.
typedef struct blocked_get {
    shi_store  *st;
    const char *key;
    int         rc;
    void       *value;
    size_t      len;
    int64_t     returned_at;
} blocked_get;

static void *
blocked_get_main(void *arg)
{
    blocked_get *b = arg;

    b->rc = shi_store_get(
        b->st, b->key, &b->value, &b->len, shi_deadline_in_ms(10000));
    b->returned_at = shi_now_ns();
    return NULL;
}

TEST(store_tcp_garbage_and_oversized_frames_close_only_that_connection)
{
    char              addr[ADDR_MAX];
    shi_store_server *srv  = server_start(NULL, addr);
    shi_store        *good = store_open(addr, NULL);
    blocked_get       b    = { .st = good, .key = "late" };
    pthread_t         th;
    int64_t           dl = shi_deadline_in_ms(2000);
    unsigned char     frame[64];
    int               fd;

    // A good client is parked in a get while the bad ones come and go.
    pthread_create(&th, NULL, blocked_get_main, &b);
    usleep(100000);

    // Not a shoal client at all.
    fd = raw_connect(addr);
    CHECK_OK(shi_write_all(fd, "GET / HTTP/1.1\r\n\r\n", 18, dl));
    CHECK(closed_by_server(fd));
    close(fd);

    // An oversized length prefix after a good handshake.
    fd = raw_authenticated(addr);
    shi_wire_put_u32(frame, 0xffffffffu);
    CHECK_OK(shi_write_all(fd, frame, 4, dl));
    CHECK(closed_by_server(fd));
    close(fd);

    // Just over the limit.
    fd = raw_authenticated(addr);
    shi_wire_put_u32(frame, SHI_WIRE_FRAME_MAX + 1);
    CHECK_OK(shi_write_all(fd, frame, 4, dl));
    CHECK(closed_by_server(fd));
    close(fd);

    // An unknown command.
    fd = raw_authenticated(addr);
    shi_wire_put_u32(frame, 9);
    frame[4] = 77;
    memset(frame + 5, 0, 8);
    CHECK_OK(shi_write_all(fd, frame, 13, dl));
    CHECK(closed_by_server(fd));
    close(fd);

    // A GET whose key is longer than the limit.
    fd = raw_authenticated(addr);
    shi_wire_put_u32(frame, 9);
    frame[4] = SHI_WIRE_GET;
    shi_wire_put_u32(frame + 5, 1);
    shi_wire_put_u32(frame + 9, SHI_STORE_KEY_MAX + 1);
    CHECK_OK(shi_write_all(fd, frame, 13, dl));
    CHECK(closed_by_server(fd));
    close(fd);

    // A key length running past the end of the frame.
    fd = raw_authenticated(addr);
    shi_wire_put_u32(frame, 10);
    frame[4] = SHI_WIRE_GET;
    shi_wire_put_u32(frame + 5, 1);
    shi_wire_put_u32(frame + 9, 5);
    frame[13] = 'k';
    CHECK_OK(shi_write_all(fd, frame, 14, dl));
    CHECK(closed_by_server(fd));
    close(fd);

    shi_store *other = store_open(addr, NULL);
    CHECK_OK(shi_store_set(other, "late", "here", 4, dl));
    pthread_join(th, NULL);
    CHECK_OK(b.rc);
    CHECK(b.len == 4 && memcmp(b.value, "here", 4) == 0);
    free(b.value);
    shi_store_close(other);
    CHECK_OK(shi_store_set(good, "after", "1", 1, dl));
    check_value(good, "after", "1");
    shi_store_close(good);
    shi_store_server_stop(srv);
}

TEST(store_tcp_silent_client_does_not_block_others)
{
    char              addr[ADDR_MAX];
    shi_store_server *srv = server_start("s", addr);
    unsigned char     hello[SHI_AUTH_HELLO_LEN];
    int64_t           start;
    int               silent, half;

    shi_store_server_set_auth_timeout(srv, 1000);
    silent = raw_connect(addr);
    half   = raw_connect(addr);
    CHECK_OK(
        shi_read_all(half, hello, sizeof(hello), shi_deadline_in_ms(2000)));
    CHECK_OK(shi_write_all(half, hello, 20, shi_deadline_in_ms(2000)));

    start         = shi_now_ns();
    shi_store *st = store_open(addr, "s");
    CHECK_OK(shi_store_set(st, "k", "v", 1, shi_deadline_in_ms(1000)));
    check_value(st, "k", "v");
    CHECK(seconds_since(start) < 0.9); // not held up by the two others

    // Both are dropped once their handshake time is up.
    CHECK(closed_by_server(silent));
    CHECK(closed_by_server(half));
    close(silent);
    close(half);
    check_value(st, "k", "v");
    shi_store_close(st);
    shi_store_server_stop(srv);
}

TEST(store_tcp_unreachable_is_econnect_within_deadline)
{
    int        lfd, port;
    char       addr[ADDR_MAX];
    shi_store *st = NULL;
    int64_t    start;

    CHECK_OK(shi_tcp_listen("127.0.0.1", 0, 1, &lfd, &port));
    close(lfd);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    start = shi_now_ns();
    CHECK_ST(shi_store_open(&st, addr, NULL, shi_deadline_in_ms(300)),
        SHOAL_ECONNECT);
    CHECK(seconds_since(start) < 2.0);
    CHECK(st == NULL);
    CHECK_MSG(strstr(shi_error_text(), addr) != NULL, "%s", shi_error_text());
}

// A server that takes the connection and never answers (flooded, or
// overloaded): the error says so, not only that a deadline passed.
TEST(store_tcp_unanswered_handshake_names_the_likely_cause)
{
    int        lfd, port;
    char       addr[ADDR_MAX];
    shi_store *st = NULL;

    CHECK_OK(shi_tcp_listen("127.0.0.1", 0, 4, &lfd, &port));
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    int st_open = shi_store_open(&st, addr, NULL, shi_deadline_in_ms(300));
    CHECK(st_open != SHOAL_OK && st == NULL);
    CHECK_MSG(strstr(shi_error_text(), "did not answer the handshake") != NULL
            && strstr(shi_error_text(), "flooded") != NULL,
        "%s: %s", shoal_status_name(st_open), shi_error_text());
    close(lfd);
}

static void
get_timeout_then_recover(const char *addr, const char *secret)
{
    shi_store *st = store_open(addr, secret);
    void      *v  = (void *) 1;
    size_t     len;
    int64_t    start = shi_now_ns();

    CHECK_ST(shi_store_get(st, "never-set", &v, &len, shi_deadline_in_ms(200)),
        SHOAL_ETIMEDOUT);
    CHECK(v == NULL);
    CHECK(seconds_since(start) >= 0.15 && seconds_since(start) < 1.5);
    CHECK_MSG(strstr(shi_error_text(), "'never-set'") != NULL, "%s",
        shi_error_text());
    const char *keys[] = { "also-never" };
    CHECK_ST(
        shi_store_wait(st, keys, 1, shi_deadline_in_ms(100)), SHOAL_ETIMEDOUT);
    CHECK_MSG(strstr(shi_error_text(), "'also-never'") != NULL, "%s",
        shi_error_text());

    // The handle is still in step: a set and get answer correctly.
    CHECK_OK(shi_store_set(st, "after", "fine", 4, shi_deadline_in_ms(2000)));
    check_value(st, "after", "fine");
    CHECK_OK(
        shi_store_set(st, "never-set", "now", 3, shi_deadline_in_ms(2000)));
    check_value(st, "never-set", "now");
    shi_store_close(st);
}

TEST(store_tcp_get_timeout_names_key_and_handle_recovers)
{
    on_tcp_store(get_timeout_then_recover);
}

TEST(store_file_get_timeout_names_key_and_handle_recovers)
{
    on_file_store(get_timeout_then_recover);
}

TEST(store_tcp_server_stop_fails_connected_clients)
{
    char              addr[ADDR_MAX];
    shi_store_server *srv  = server_start("s", addr);
    shi_store        *st   = store_open(addr, "s");
    shi_store        *idle = store_open(addr, "s");
    blocked_get       b    = { .st = st, .key = "never" };
    pthread_t         th;
    int64_t           stop_at;

    pthread_create(&th, NULL, blocked_get_main, &b);
    usleep(200000);
    stop_at = shi_now_ns();
    shi_store_server_stop(srv);
    pthread_join(th, NULL);
    CHECK_ST(b.rc, SHOAL_EPEER);
    CHECK((double) (b.returned_at - stop_at) / 1e9 < 1.0);

    // The idle handle finds the server gone, within its deadline.
    int64_t start = shi_now_ns();
    int     rc    = shi_store_set(idle, "k", "v", 1, shi_deadline_in_ms(300));
    CHECK_MSG(rc == SHOAL_EPEER || rc == SHOAL_ECONNECT, "%s: %s",
        shoal_status_name(rc), shi_error_text());
    CHECK(seconds_since(start) < 2.0);
    shi_store_close(idle);
    shi_store_close(st);
}

// A close whose server is gone cannot take its will back; the caller's
// error (a failed creation's cause) must survive it all the same.
TEST(store_tcp_close_keeps_the_callers_error)
{
    char              addr[ADDR_MAX];
    shi_store_server *srv = server_start("s", addr);
    shi_store        *st  = store_open(addr, "s");

    CHECK_OK(shi_store_will(st, "gone/1", "x", 1, shi_deadline_in_ms(1000)));
    shi_store_server_stop(srv);
    shi_error(SHOAL_ETIMEDOUT, "waiting for rank 2 to join 'w'");
    shi_store_close(st);
    CHECK_MSG(strcmp(shi_error_text(), "waiting for rank 2 to join 'w'") == 0,
        "the close replaced the caller's error with: %s", shi_error_text());
}

TEST(store_file_bad_paths)
{
    char       dir[ADDR_MAX], path[ADDR_MAX + 16];
    shi_store *st = NULL;
    FILE      *f;

    tmpdir_make(dir);
    snprintf(path, sizeof(path), "%s/missing/store", dir);
    CHECK_ST(
        shi_store_open(&st, path, NULL, shi_deadline_in_ms(500)), SHOAL_ESYS);
    CHECK(strstr(shi_error_text(), path) != NULL);
    CHECK(st == NULL);

    snprintf(path, sizeof(path), "%s/notes.txt", dir);
    f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("shopping list\n", f);
    fclose(f);
    CHECK_ST(shi_store_open(&st, path, NULL, shi_deadline_in_ms(500)),
        SHOAL_EPROTO);
    CHECK(strstr(shi_error_text(), "not a shoal file store") != NULL);
    tmpdir_remove(dir);
}

// A record left half-written by a writer that died is cut off by the next
// writer; readers ignore it meanwhile.
TEST(store_file_torn_record_is_recovered)
{
    char dir[ADDR_MAX], path[ADDR_MAX + 16];
    int  fd;

    tmpdir_make(dir);
    snprintf(path, sizeof(path), "%s/store", dir);
    shi_store *st = store_open(path, NULL);
    CHECK_OK(shi_store_set(st, "a", "1", 1, shi_deadline_in_ms(1000)));
    shi_store_close(st);

    fd = open(path, O_WRONLY | O_APPEND);
    CHECK(fd >= 0);
    // klen 1, vlen 100, key "b", and only 3 of the 100 value bytes.
    CHECK(write(fd, "\0\0\0\1\0\0\0\144bxyz", 12) == 12);
    close(fd);

    st = store_open(path, NULL);
    check_value(st, "a", "1");
    CHECK_OK(shi_store_set(st, "c", "3", 1, shi_deadline_in_ms(1000)));
    shi_store_close(st);
    st = store_open(path, NULL);
    check_value(st, "a", "1");
    check_value(st, "c", "3");
    CHECK_ST(shi_store_get(st, "b", &(void *) { NULL }, &(size_t) { 0 },
                 shi_deadline_in_ms(50)),
        SHOAL_ETIMEDOUT);
    shi_store_close(st);
    tmpdir_remove(dir);
}

// A port nobody listens on now (a server on port 0 tells it, then stops).
static int
unused_port(void)
{
    char              addr[ADDR_MAX];
    shi_store_server *srv  = server_start("k", addr);
    int               port = shi_store_server_port(srv);

    shi_store_server_stop(srv);
    return port;
}

TEST(store_kept_server_outlives_its_users)
{
    int        port = unused_port();
    char       addr[ADDR_MAX];
    shi_secret s = secret_of("job"), other = secret_of("other");
    shi_store *st;
    pid_t      child;
    int        status;

    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    CHECK_OK(shi_store_server_keep("127.0.0.1", port, &s));
    st = store_open(addr, "job");
    CHECK_OK(shi_store_set(st, "k", "v", 1, shi_deadline_in_ms(1000)));
    shi_store_close(st);
    // Asked again (the next communicator): the same server, keys intact.
    CHECK_OK(shi_store_server_keep("127.0.0.1", port, &s));
    st = store_open(addr, "job");
    check_value(st, "k", "v");
    shi_store_close(st);
    CHECK_ST(shi_store_server_keep("127.0.0.1", port, &other), SHOAL_EAUTH);
    CHECK(strstr(shi_error_text(), "SHOAL_SECRET") != NULL);
    // A forked child does not take its parent's server for its own.
    child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        _exit(shi_store_server_keep("127.0.0.1", port, &s) == SHOAL_OK);
    }
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// Points stderr at a pipe that is already full and that nobody reads: any
// thread that writes a log line synchronously blocks for good. Returns the
// pipe's read end (kept open so writes block rather than fail).
static int
stderr_to_full_pipe(void)
{
    int  fds[2];
    char junk[4096];

    memset(junk, 'x', sizeof(junk));
    CHECK(pipe(fds) == 0);
    CHECK(fcntl(fds[1], F_SETFL, O_NONBLOCK) == 0);
    while (write(fds[1], junk, sizeof(junk)) > 0) { }
    CHECK(fcntl(fds[1], F_SETFL, 0) == 0);
    CHECK(dup2(fds[1], STDERR_FILENO) == STDERR_FILENO);
    close(fds[1]);
    return fds[0];
}

// Strangers make the store warn; with stderr stalled the store must go on
// serving (its loop queues log lines instead of writing them).
TEST(store_tcp_serves_while_stderr_is_stalled)
{
    char              addr[ADDR_MAX];
    shi_store_server *srv   = server_start("right", addr);
    shi_store        *bad   = NULL, *good;
    shi_secret        wrong = secret_of("wrong");
    int               rfd   = stderr_to_full_pipe();

    for (int i = 0; i < 3; i++) {
        CHECK_ST(shi_store_open(&bad, addr, &wrong, shi_deadline_in_ms(2000)),
            SHOAL_EAUTH);
    }
    good = store_open(addr, "right");
    CHECK_OK(shi_store_set(good, "k", "v", 1, shi_deadline_in_ms(3000)));
    check_value(good, "k", "v");
    shi_store_close(good);
    shi_store_server_stop(srv);
    close(rfd);
}

// 20 strangers in a row: one warning line, not 20.
TEST(store_tcp_stranger_warnings_are_rate_limited)
{
    char              addr[ADDR_MAX];
    char              path[] = "/tmp/shoal-log-XXXXXX";
    char              text[65536];
    shi_store_server *srv   = server_start("right", addr);
    shi_store        *bad   = NULL;
    shi_secret        wrong = secret_of("wrong");
    int               fd    = mkstemp(path);
    ssize_t           n;
    int               lines = 0;

    CHECK(fd >= 0);
    unlink(path);
    CHECK(dup2(fd, STDERR_FILENO) == STDERR_FILENO);
    for (int i = 0; i < 20; i++) {
        CHECK_ST(shi_store_open(&bad, addr, &wrong, shi_deadline_in_ms(2000)),
            SHOAL_EAUTH);
    }
    shi_store_server_stop(srv);
    usleep(200 * 1000); // the log's writer thread
    n = pread(fd, text, sizeof(text) - 1, 0);
    CHECK(n >= 0);
    text[n] = '\0';
    for (char *p = text; (p = strstr(p, "refusing a connection")) != NULL;
         p++) {
        lines++;
    }
    CHECK_MSG(lines == 1, "%d warning lines:\n%s", lines, text);
    close(fd);
}

// Without a secret anyone may connect: frames over 1 MiB are refused, and
// a frame left half sent is dropped after the idle timeout, so strangers
// cannot pin memory; a waiting get is not a half-sent frame.
TEST(store_tcp_open_store_bounds_what_strangers_pin)
{
    char              addr[ADDR_MAX];
    shi_store_server *srv  = server_start(NULL, addr);
    shi_store        *good = store_open(addr, NULL);
    blocked_get       b    = { .st = good, .key = "late" };
    int64_t           dl   = shi_deadline_in_ms(2000);
    unsigned char     frame[64];
    pthread_t         th;
    int               fd;

    shi_store_server_set_frame_idle_timeout(srv, 300);
    fd = raw_authenticated(addr);
    shi_wire_put_u32(frame, (1u << 20) + 1);
    CHECK_OK(shi_write_all(fd, frame, 4, dl));
    CHECK(closed_by_server(fd));
    close(fd);
    // Half a frame, then silence: closed after the idle timeout.
    fd = raw_authenticated(addr);
    shi_wire_put_u32(frame, 1000);
    memset(frame + 4, 0, 60);
    CHECK_OK(shi_write_all(fd, frame, 64, dl));
    CHECK(closed_by_server(fd));
    close(fd);
    // A get parked for longer than the idle timeout still gets its value.
    pthread_create(&th, NULL, blocked_get_main, &b);
    usleep(600 * 1000);
    shi_store *other = store_open(addr, NULL);
    CHECK_OK(shi_store_set(other, "late", "v", 1, shi_deadline_in_ms(2000)));
    pthread_join(th, NULL);
    CHECK_OK(b.rc);
    free(b.value);
    shi_store_close(other);
    shi_store_close(good);
    shi_store_server_stop(srv);
}

// A stranger holding hundreds of silent connections (no handshake) cannot
// keep a real client out: the server, in a child whose descriptor limit is
// 300 (hard, so that it cannot raise it), closes the oldest unfinished
// handshakes of an address past its bound, and a client still gets in.
TEST(store_tcp_silent_flood_does_not_lock_clients_out)
{
    int           ports[2], port = 0, nfd = 0, fds[700];
    struct rlimit lim;
    pid_t         pid;

    shi_raise_fd_limit();
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur < 1000) {
        SKIP("this process may not open 1000 descriptors");
    }
    CHECK(pipe(ports) == 0);
    if ((pid = fork()) == 0) {
        struct rlimit     low = { 300, 300 };
        shi_store_server *srv;
        shi_secret        s = secret_of("flood");
        close(ports[0]);
        if (setrlimit(RLIMIT_NOFILE, &low) != 0
            || shi_store_server_start(&srv, "127.0.0.1", 0, &s) != SHOAL_OK) {
            _exit(2);
        }
        int p = shi_store_server_port(srv);
        if (write(ports[1], &p, sizeof(p)) != (ssize_t) sizeof(p)) {
            _exit(3);
        }
        pause(); // until the parent ends it
        _exit(0);
    }
    close(ports[1]);
    CHECK(read(ports[0], &port, sizeof(port)) == (ssize_t) sizeof(port));
    close(ports[0]);
    for (int i = 0; i < 700; i++) {
        if (shi_tcp_connect(
                "127.0.0.1", port, shi_deadline_in_ms(500), &fds[nfd])
            == SHOAL_OK) {
            nfd++;
        }
    }
    char addr[ADDR_MAX];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    shi_store *st = store_open(addr, "flood");
    CHECK_OK(shi_store_set(st, "k", "v", 1, shi_deadline_in_ms(3000)));
    check_value(st, "k", "v");
    shi_store_close(st);
    for (int i = 0; i < nfd; i++) {
        close(fds[i]);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    CHECK_MSG(nfd > 300, "only %d stranger connections got through", nfd);
}
