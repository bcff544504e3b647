// TCP store server: one background thread, one epoll set, non-blocking
// sockets, level-triggered events.
//
// Every connection is a small state machine:
//   HANDSHAKE  hello sent; reading the client's proof (auth_msg.h) until
//              its deadline. Bytes that cannot start a proof end it at once.
//   READY      reading frames (wire.h). A GET or WAIT whose keys are
//              missing is "parked": its frame stays in the read buffer,
//              reading pauses, and every SET or ADD retries it, until
//              the request's wait_ms runs out (then it is answered
//              SHOAL_ETIMEDOUT and the connection reads on).
//   CLOSING    a refusal is being sent; closed once it is out (or soon).
// Reading also pauses while a reply is still being sent, so one client
// cannot make the server buffer without bound. A connection that fails the
// handshake or sends anything malformed is logged (naming its address) and
// closed; nothing one connection does can block the others.
//
// A connection may leave last wills (WILL, wire.h): keys the server sets
// when the connection closes before taking them back, so that the ranks
// waiting in a rendezvous learn of a peer's death from the store itself.
//
// Connections closed while a batch of events is handled are only unlinked
// and kept on a "dead" list until the batch ends, since later events of the
// same batch may still point at them.
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "platform/auth_msg.h"
#include "platform/net.h"
#include "platform/tcp_peers.h"
#include "shoal.h"
#include "store/store_impl.h"
#include "store/table.h"
#include "store/wire.h"

#define SERVER_EVENTS          64
#define SERVER_FRAMES_PER_TURN 16 // then let other connections have a go
#define SERVER_ACCEPT_PAUSE_NS 100000000 // out of fds: retry after 100 ms
#define SERVER_CLOSING_NS      1000000000 // time to get a refusal out
#define SERVER_KEEP_BYTES      (1u << 20) // larger idle buffers are freed
// Without a job secret anyone may connect: frames are kept small, so
// strangers cannot pin much memory (a secret lifts it to the wire's limit).
#define SERVER_OPEN_FRAME_MAX (1u << 20)
// Wills one connection may hold: one per rendezvous under way in the
// client, so a handful; the bound keeps a client from pinning memory.
#define SERVER_WILLS_MAX 64

// A connection that has not finished its handshake holds a descriptor
// and has proved nothing: at most this many in all, and from one address;
// past that the oldest is closed, so that a stranger who opens silent
// connections by the thousand runs the server out of neither descriptors
// nor room for the ranks (each of which finishes its handshake at once).
#define SERVER_HANDSHAKES_MAX      256
#define SERVER_HANDSHAKES_PER_ADDR 32

enum conn_state {
    CONN_HANDSHAKE,
    CONN_READY,
    CONN_CLOSING,
    CONN_DEAD,
};

typedef struct will {
    struct will   *next;
    char          *key;
    size_t         klen;
    unsigned char *value;
    size_t         vlen;
} will;

typedef struct conn {
    struct conn   *next, *prev;
    will          *wills;
    int            nwills;
    int            fd;
    int            state;
    int            parked;
    uint32_t       events; // as registered with epoll
    int64_t        deadline; // HANDSHAKE, CLOSING and a partial frame end then
    unsigned char  ns[SHI_AUTH_NONCE_LEN];
    char           peer[64];
    unsigned char *rbuf; // the proof, or the frame being read
    size_t         rlen, rcap;
    uint32_t       flen; // frame length once its prefix is in, else 0
    shi_wire_buf   out;
    size_t         out_off; // bytes of out already sent
} conn;

struct shi_store_server {
    int        listen_fd, epfd, wake_fd, port;
    shi_secret secret;
    atomic_int auth_timeout_ms;
    atomic_int frame_idle_ms; // a frame half sent, then silence: dropped
    pthread_t  thread;
    conn      *conns; // live connections
    conn      *dead; // closed in this batch, freed after it
    shi_table  table;
    int64_t    accept_paused_until; // 0: accepting
    int        wake_pending; // a will set keys: retry parked requests
    int        stopping; // closing every connection: wills do not fire
    atomic_int stop_asked; // shi_store_server_stop
    // What the wait at exit looks at (shi_store_servers_foreign_peers):
    // when a request last came, and the connections waiting for a key.
    _Atomic int64_t last_request_ns;
    atomic_int      parked_now;
    atomic_int      released; // shi_store_server_release: stop once unused
    pid_t           pid; // the process whose thread serves
    struct shi_store_server *next_running; // running_servers
};

// Every server this process runs, for the wait at exit (store_keep.c).
static pthread_mutex_t          running_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shi_store_server *running_servers;

// epoll tags for the two fds that are not connections.
static char server_listen_tag, server_wake_tag;

static void
conn_update_events(shi_store_server *srv, conn *c)
{
    uint32_t           ev      = EPOLLRDHUP;
    int                pending = c->out_off < c->out.len;
    struct epoll_event e       = { 0 };

    if (pending) {
        ev |= EPOLLOUT;
    } else if (!c->parked && c->state != CONN_CLOSING) {
        ev |= EPOLLIN;
    }
    if (ev == c->events) {
        return;
    }
    e.events   = ev;
    e.data.ptr = c;
    epoll_ctl(srv->epfd, EPOLL_CTL_MOD, c->fd, &e);
    c->events = ev;
}

// Strangers can knock as often as they like: their warnings come at most
// once per interval and cause, with a count of those held back.
static shi_log_limit drop_limit, refuse_limit, accept_limit;

static void
will_free(will *w)
{
    free(w->key);
    free(w->value);
    free(w);
}

// The connection closed with wills outstanding: its client died (or lost
// the connection) in the middle of a rendezvous. Sets their keys; the
// parked requests are retried once the current batch of events is done.
static void
conn_fire_wills(shi_store_server *srv, conn *c)
{
    while (c->wills != NULL) {
        will *w  = c->wills;
        c->wills = w->next;
        SHI_INFO("store server: %s closed its connection with a will: "
                 "setting '%s'",
            c->peer, w->key);
        if (shi_table_put(&srv->table, w->key, w->klen, w->value, w->vlen)
            != SHOAL_OK) {
            shi_log(SHI_LOG_WARN, "store server: will of %s lost: %s", c->peer,
                shi_error_text());
        }
        srv->wake_pending = 1;
        will_free(w);
    }
    c->nwills = 0;
}

// Closes c, logging `why` at `level` (0: not at all).
static void
conn_drop(shi_store_server *srv, conn *c, int level, const char *why)
{
    if (c->state == CONN_DEAD) {
        return;
    }
    if (!srv->stopping) {
        conn_fire_wills(srv, c);
    }
    if (level != 0) {
        shi_log_limited(&drop_limit, level,
            "store server: closing connection from %s: %s", c->peer, why);
    }
    epoll_ctl(srv->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd    = -1;
    c->state = CONN_DEAD;
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        srv->conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    c->prev   = NULL;
    c->next   = srv->dead;
    srv->dead = c;
}

static void
conn_free(conn *c)
{
    while (c->wills != NULL) {
        will *w  = c->wills;
        c->wills = w->next;
        will_free(w);
    }
    free(c->rbuf);
    shi_wire_buf_free(&c->out);
    free(c);
}

// Sends what it can of c's output.
static void
conn_flush(shi_store_server *srv, conn *c)
{
    while (c->out_off < c->out.len) {
        ssize_t n = send(c->fd, c->out.data + c->out_off,
            c->out.len - c->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n >= 0) {
            c->out_off += (size_t) n;
            continue;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            break;
        }
        conn_drop(srv, c, SHI_LOG_INFO, strerror(errno));
        return;
    }
    if (c->out_off == c->out.len) {
        c->out.len = c->out_off = 0;
        if (c->out.cap > SERVER_KEEP_BYTES) {
            shi_wire_buf_free(&c->out);
        }
        if (c->state == CONN_CLOSING) {
            conn_drop(srv, c, 0, "");
            return;
        }
    }
    conn_update_events(srv, c);
}

// Queues a reply to request `req`: status, then for success the value (GET)
// or number (ADD); for failure this thread's error text.
static void
conn_reply(shi_store_server *srv, conn *c, const shi_wire_msg *req, int status,
    const void *value, size_t vlen, int64_t num)
{
    shi_wire_msg rep = { .cmd = req->cmd | SHI_WIRE_REPLY,
        .id                   = req->id,
        .status               = status,
        .value                = value,
        .vlen                 = vlen,
        .num                  = num };

    if (status != SHOAL_OK) {
        rep.value = (const unsigned char *) shi_error_text();
        rep.vlen  = strlen(shi_error_text());
    }
    if (shi_wire_encode(&c->out, &rep) != SHOAL_OK) {
        conn_drop(srv, c, SHI_LOG_WARN, shi_error_text());
        return;
    }
    conn_flush(srv, c);
}

// Forgets the frame just answered, and a large read buffer with it.
static void
conn_frame_done(conn *c)
{
    c->rlen = c->flen = 0;
    if (c->rcap > SERVER_KEEP_BYTES) {
        free(c->rbuf);
        c->rbuf = NULL;
        c->rcap = 0;
    }
}

// Leaves (or replaces) the will for m's key on c.
static int
conn_add_will(conn *c, const shi_wire_msg *m)
{
    will *w;

    for (w = c->wills; w != NULL; w = w->next) {
        if (w->klen == m->klen && memcmp(w->key, m->key, m->klen) == 0) {
            break;
        }
    }
    if (w == NULL && c->nwills >= SERVER_WILLS_MAX) {
        return shi_error(SHOAL_EINVAL,
            "a connection may leave at most %d wills", SERVER_WILLS_MAX);
    }
    unsigned char *value = malloc(m->vlen + 1);
    if (value == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory for a will");
    }
    if (m->vlen > 0) {
        memcpy(value, m->value, m->vlen);
    }
    if (w == NULL) {
        if ((w = calloc(1, sizeof(*w))) == NULL
            || (w->key = strndup(m->key, m->klen)) == NULL) {
            free(w);
            free(value);
            return shi_error(SHOAL_ENOMEM, "out of memory for a will");
        }
        w->klen  = m->klen;
        w->next  = c->wills;
        c->wills = w;
        c->nwills++;
    }
    free(w->value);
    w->value = value;
    w->vlen  = m->vlen;
    return SHOAL_OK;
}

// Takes back c's will for m's key (none: nothing to do).
static void
conn_drop_will(conn *c, const shi_wire_msg *m)
{
    for (will **link = &c->wills; *link != NULL; link = &(*link)->next) {
        will *w = *link;
        if (w->klen == m->klen && memcmp(w->key, m->key, m->klen) == 0) {
            *link = w->next;
            will_free(w);
            c->nwills--;
            return;
        }
    }
}

// Answers `m` if it can; returns 0 if it must wait for keys (parked).
static int
server_answer(shi_store_server *srv, conn *c, const shi_wire_msg *m)
{
    atomic_store(&srv->last_request_ns, shi_now_ns());
    const shi_table_entry *e;
    const unsigned char   *blob;
    const char            *key;
    size_t                 left, klen, tlen;
    char                   name[SHI_STORE_KEY_MAX + 1];
    char                   text[SHI_STORE_INT_TEXT];
    int64_t                sum = 0;
    int                    rc;

    switch (m->cmd) {
        case SHI_WIRE_SET:
            rc = shi_table_put(
                &srv->table, m->key, m->klen, m->value, m->vlen);
            conn_reply(srv, c, m, rc, NULL, 0, 0);
            return 1;
        case SHI_WIRE_GET:
            e = shi_table_get(&srv->table, m->key, m->klen);
            if (e == NULL) {
                return 0;
            }
            conn_reply(srv, c, m, SHOAL_OK, e->value, e->vlen, 0);
            return 1;
        case SHI_WIRE_ADD:
            e = shi_table_get(&srv->table, m->key, m->klen);
            memcpy(name, m->key, m->klen);
            name[m->klen] = '\0';
            rc            = shi_store_add_value(name, e ? e->value : NULL,
                e ? e->vlen : 0, e != NULL, m->num, &sum, text, &tlen);
            if (rc == SHOAL_OK) {
                rc = shi_table_put(&srv->table, m->key, m->klen, text, tlen);
            }
            conn_reply(srv, c, m, rc, NULL, 0, sum);
            return 1;
        case SHI_WIRE_WILL:
            conn_reply(srv, c, m, conn_add_will(c, m), NULL, 0, 0);
            return 1;
        case SHI_WIRE_UNWILL:
            conn_drop_will(c, m);
            conn_reply(srv, c, m, SHOAL_OK, NULL, 0, 0);
            return 1;
        case SHI_WIRE_DELETE:
            sum = (int64_t) shi_table_delete_prefix(
                &srv->table, m->key, m->klen);
            conn_reply(srv, c, m, SHOAL_OK, NULL, 0, sum);
            return 1;
        default: // SHI_WIRE_WAIT
            blob = m->keyblob;
            left = m->keyblob_len;
            while (shi_wire_next_key(&blob, &left, &key, &klen)) {
                if (shi_table_get(&srv->table, key, klen) == NULL) {
                    return 0;
                }
            }
            conn_reply(srv, c, m, SHOAL_OK, NULL, 0, 0);
            return 1;
    }
}

// Retries every parked request (after a SET or ADD).
static void
server_wake(shi_store_server *srv)
{
    shi_wire_msg m;
    conn        *c, *next;

    for (c = srv->conns; c != NULL; c = next) {
        next = c->next;
        if (!c->parked) {
            continue;
        }
        // Decoded before it was parked, so it decodes again.
        shi_wire_decode(c->rbuf + SHI_WIRE_LEN_BYTES, c->flen, &m);
        if (server_answer(srv, c, &m)) {
            c->parked   = 0;
            c->deadline = SHI_NO_DEADLINE;
            conn_frame_done(c);
            if (c->state != CONN_DEAD) {
                conn_update_events(srv, c);
            }
        }
    }
}

// Handles the complete frame in c->rbuf.
static void
conn_request(shi_store_server *srv, conn *c)
{
    shi_wire_msg m;
    int          rc;

    c->deadline = SHI_NO_DEADLINE; // the frame is whole (it may park)
    rc          = shi_wire_decode(c->rbuf + SHI_WIRE_LEN_BYTES, c->flen, &m);
    if (rc == SHOAL_OK && (m.cmd & SHI_WIRE_REPLY)) {
        rc = shi_error(SHOAL_EPROTO, "client sent a reply frame");
    }
    if (rc != SHOAL_OK) {
        conn_drop(srv, c, SHI_LOG_WARN, shi_error_text());
        return;
    }
    if (!server_answer(srv, c, &m)) {
        c->parked = 1;
        if (m.wait_ms != SHI_WIRE_WAIT_FOREVER) {
            c->deadline = shi_now_ns() + (int64_t) m.wait_ms * 1000000;
        }
        conn_update_events(srv, c);
        return;
    }
    conn_frame_done(c);
    if (m.cmd == SHI_WIRE_SET || m.cmd == SHI_WIRE_ADD) {
        server_wake(srv);
    }
}

// The client's proof is in: check it, answer, and go on or refuse.
static void
conn_handshake(shi_store_server *srv, conn *c)
{
    unsigned char reply[SHI_AUTH_REPLY_LEN];
    char          who[80];
    int           rc;

    snprintf(who, sizeof(who), "client %s", c->peer);
    rc = shi_auth_check_proof_fd(
        c->fd, &srv->secret, c->ns, c->rbuf, reply, who);
    c->rlen = 0;
    if (rc == SHOAL_OK) {
        c->state    = CONN_READY;
        c->deadline = SHI_NO_DEADLINE;
        SHI_TRACE("store server: %s connected", c->peer);
    } else {
        shi_log_limited(&refuse_limit, SHI_LOG_WARN,
            "store server: refusing a connection: %s", shi_error_text());
        c->state    = CONN_CLOSING;
        c->deadline = shi_now_ns() + SERVER_CLOSING_NS;
    }
    if (shi_wire_buf_append(&c->out, reply, sizeof(reply)) != SHOAL_OK) {
        conn_drop(srv, c, SHI_LOG_WARN, shi_error_text());
        return;
    }
    conn_flush(srv, c);
}

// Bytes c needs in rbuf before it can act.
static size_t
conn_want(const conn *c)
{
    if (c->state == CONN_HANDSHAKE) {
        return SHI_AUTH_PROOF_LEN;
    }
    if (c->rlen < SHI_WIRE_LEN_BYTES) {
        return SHI_WIRE_LEN_BYTES;
    }
    return SHI_WIRE_LEN_BYTES + (size_t) c->flen;
}

// Makes room in rbuf for more of a `want`-byte message; the buffer grows
// with what arrives, not with what the length prefix claims.
static int
conn_room(conn *c, size_t want)
{
    size_t         cap;
    unsigned char *p;

    if (c->rlen < c->rcap) {
        return 1;
    }
    cap = c->rcap ? c->rcap * 2 : 1024;
    if (cap > want) {
        cap = want;
    }
    p = realloc(c->rbuf, cap);
    if (p == NULL) {
        return 0;
    }
    c->rbuf = p;
    c->rcap = cap;
    return 1;
}

// Acts on what has arrived; returns 1 if a whole message was handled.
static int
conn_got(shi_store_server *srv, conn *c)
{
    if (c->state == CONN_HANDSHAKE) {
        if (!shi_auth_prefix_ok(c->rbuf, c->rlen)) {
            conn_drop(srv, c, SHI_LOG_WARN,
                "it sent bytes that are not a shoal handshake (not a shoal "
                "client?)");
            return 0;
        }
        if (c->rlen < SHI_AUTH_PROOF_LEN) {
            return 0;
        }
        conn_handshake(srv, c);
        return 1;
    }
    if (c->rlen == SHI_WIRE_LEN_BYTES && c->flen == 0) {
        if (shi_wire_frame_length(c->rbuf, &c->flen) != SHOAL_OK) {
            conn_drop(srv, c, SHI_LOG_WARN, shi_error_text());
        } else if (!srv->secret.set && c->flen > SERVER_OPEN_FRAME_MAX) {
            char why[160];
            snprintf(why, sizeof(why),
                "a %u-byte frame; a store without a job secret takes at "
                "most %u bytes a frame (set SHOAL_SECRET for larger values)",
                c->flen, SERVER_OPEN_FRAME_MAX);
            conn_drop(srv, c, SHI_LOG_WARN, why);
        }
        return 0;
    }
    if (c->rlen < conn_want(c)) {
        return 0;
    }
    conn_request(srv, c);
    return 1;
}

static void
conn_read(shi_store_server *srv, conn *c)
{
    int frames = 0;

    while (frames < SERVER_FRAMES_PER_TURN
        && (c->state == CONN_HANDSHAKE || c->state == CONN_READY) && !c->parked
        && c->out_off == c->out.len) {
        size_t  want = conn_want(c);
        ssize_t n;

        if (!conn_room(c, want)) {
            conn_drop(srv, c, SHI_LOG_WARN, "out of memory");
            return;
        }
        n = recv(c->fd, c->rbuf + c->rlen,
            (want < c->rcap ? want : c->rcap) - c->rlen, MSG_DONTWAIT);
        if (n == 0) {
            conn_drop(srv, c,
                c->state == CONN_HANDSHAKE ? SHI_LOG_INFO : SHI_LOG_TRACE,
                c->state == CONN_HANDSHAKE
                    ? "closed by the client during the handshake"
                    : "closed by the client");
            return;
        }
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                conn_drop(srv, c, SHI_LOG_INFO, strerror(errno));
            }
            return;
        }
        c->rlen += (size_t) n;
        if (c->state == CONN_READY) { // a frame under way must keep moving
            c->deadline = shi_now_ns()
                + (int64_t) atomic_load(&srv->frame_idle_ms) * 1000000;
        }
        frames += conn_got(srv, c);
    }
}

static void
conn_event(shi_store_server *srv, conn *c, uint32_t ev)
{
    if (c->state == CONN_DEAD) {
        return;
    }
    if (ev & EPOLLERR) {
        conn_drop(srv, c, SHI_LOG_INFO, "socket error");
        return;
    }
    if (ev & EPOLLOUT) {
        conn_flush(srv, c);
        if (c->state == CONN_DEAD) {
            return;
        }
    }
    if ((c->events & EPOLLIN) && (ev & (EPOLLIN | EPOLLHUP | EPOLLRDHUP))) {
        conn_read(srv, c); // reads what is left, then sees the end
    } else if (ev & (EPOLLHUP | EPOLLRDHUP)) {
        conn_drop(srv, c, SHI_LOG_TRACE, "closed by the client");
    }
}

static void
server_pause_accept(shi_store_server *srv, int err)
{
    struct epoll_event e = { .events = 0, .data.ptr = &server_listen_tag };

    shi_log(SHI_LOG_WARN,
        "store server: cannot accept connections: %s; retrying in 100 ms "
        "(raise the open-file limit, ulimit -n)",
        strerror(err));
    epoll_ctl(srv->epfd, EPOLL_CTL_MOD, srv->listen_fd, &e);
    srv->accept_paused_until = shi_now_ns() + SERVER_ACCEPT_PAUSE_NS;
}

// Whether two "address:port" names share their address.
static int
same_address(const char *a, const char *b)
{
    const char *ca = strrchr(a, ':'), *cb = strrchr(b, ':');
    size_t      la = ca != NULL ? (size_t) (ca - a) : strlen(a);
    size_t      lb = cb != NULL ? (size_t) (cb - b) : strlen(b);

    return la == lb && memcmp(a, b, la) == 0;
}

// After `newest` joined: closes the oldest unfinished handshake of its
// address, or of all, where there are more than the bounds allow.
static void
server_shed_handshakes(shi_store_server *srv, const conn *newest)
{
    static shi_log_limit shed_limit;
    conn                *oldest = NULL, *oldest_here = NULL;
    int                  total = 0, here = 0;

    for (conn *c = srv->conns; c != NULL; c = c->next) { // newest first
        if (c->state == CONN_HANDSHAKE) {
            total++;
            oldest = c;
            if (same_address(c->peer, newest->peer)) {
                here++;
                oldest_here = c;
            }
        }
    }
    conn *victim = here > SERVER_HANDSHAKES_PER_ADDR ? oldest_here
        : total > SERVER_HANDSHAKES_MAX              ? oldest
                                                     : NULL;
    if (victim != NULL) {
        shi_log_limited(&shed_limit, SHI_LOG_WARN,
            "store server: %d connections without a finished handshake (%d "
            "from %s's address): closing the oldest, from %s (a stranger "
            "flooding the store?)",
            total, here, newest->peer, victim->peer);
        conn_drop(srv, victim, 0, NULL);
    }
}

static void
server_accept(shi_store_server *srv)
{
    unsigned char hello[SHI_AUTH_HELLO_LEN];

    for (;;) {
        struct epoll_event e   = { 0 };
        int                one = 1;
        conn              *c;
        int                fd = accept4(
                           srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS
                || errno == ENOMEM) {
                server_pause_accept(srv, errno);
            }
            return;
        }
        c = calloc(1, sizeof(*c));
        if (c == NULL) {
            close(fd);
            server_pause_accept(srv, ENOMEM);
            return;
        }
        c->fd = fd;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        shi_socket_peer_name(fd, c->peer, sizeof(c->peer));
        c->state    = CONN_HANDSHAKE;
        c->deadline = shi_now_ns()
            + (int64_t) atomic_load(&srv->auth_timeout_ms) * 1000000;
        c->events  = EPOLLIN | EPOLLRDHUP;
        e.events   = c->events;
        e.data.ptr = c;
        if (shi_auth_make_hello(&srv->secret, c->ns, hello) != SHOAL_OK
            || shi_wire_buf_append(&c->out, hello, sizeof(hello)) != SHOAL_OK
            || epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &e) != 0) {
            shi_log_limited(&accept_limit, SHI_LOG_WARN,
                "store server: dropping connection from %s: %s", c->peer,
                shi_error_text());
            close(fd);
            conn_free(c);
            continue;
        }
        c->next = srv->conns;
        if (srv->conns != NULL) {
            srv->conns->prev = c;
        }
        srv->conns = c;
        SHI_TRACE("store server: connection from %s", c->peer);
        server_shed_handshakes(srv, c);
        conn_flush(srv, c);
    }
}

// A parked GET or WAIT whose wait_ms ran out: answered "not yet".
static void
conn_unpark_late(shi_store_server *srv, conn *c)
{
    shi_wire_msg m;

    shi_wire_decode(c->rbuf + SHI_WIRE_LEN_BYTES, c->flen, &m);
    shi_error(SHOAL_ETIMEDOUT, "not set within %u ms", m.wait_ms);
    c->parked   = 0;
    c->deadline = SHI_NO_DEADLINE;
    conn_reply(srv, c, &m, SHOAL_ETIMEDOUT, NULL, 0, 0);
    conn_frame_done(c);
}

// Closes connections past their deadline, answers parked requests whose
// wait ran out; resumes accepting after a pause.
// Returns the poll timeout until the next deadline.
static int
server_timers(shi_store_server *srv)
{
    int64_t now  = shi_now_ns();
    int64_t next = SHI_NO_DEADLINE;
    conn   *c, *following;
    char    why[128];

    for (c = srv->conns; c != NULL; c = following) {
        following = c->next;
        if (c->deadline == SHI_NO_DEADLINE) {
            continue;
        }
        if (now >= c->deadline && c->parked) {
            conn_unpark_late(srv, c);
        } else if (now >= c->deadline && c->state == CONN_READY) {
            snprintf(why, sizeof(why),
                "it sent part of a frame, then nothing for %d ms",
                atomic_load(&srv->frame_idle_ms));
            conn_drop(srv, c, SHI_LOG_WARN, why);
        } else if (now >= c->deadline) {
            snprintf(why, sizeof(why),
                "no complete handshake within %d ms (a silent or slow "
                "client, or not a shoal client)",
                atomic_load(&srv->auth_timeout_ms));
            conn_drop(
                srv, c, c->state == CONN_HANDSHAKE ? SHI_LOG_WARN : 0, why);
        } else if (c->deadline < next) {
            next = c->deadline;
        }
    }
    if (srv->accept_paused_until != 0) {
        if (now >= srv->accept_paused_until) {
            struct epoll_event e
                = { .events = EPOLLIN, .data.ptr = &server_listen_tag };
            epoll_ctl(srv->epfd, EPOLL_CTL_MOD, srv->listen_fd, &e);
            srv->accept_paused_until = 0;
        } else if (srv->accept_paused_until < next) {
            next = srv->accept_paused_until;
        }
    }
    return shi_poll_timeout_ms(next);
}

static void
server_reap(shi_store_server *srv)
{
    while (srv->dead != NULL) {
        conn *c   = srv->dead;
        srv->dead = c->next;
        conn_free(c);
    }
}

static void
server_free(shi_store_server *srv)
{
    pthread_mutex_lock(&running_lock);
    for (shi_store_server **p = &running_servers; *p != NULL;
         p                    = &(*p)->next_running) {
        if (*p == srv) {
            *p = srv->next_running;
            break;
        }
    }
    pthread_mutex_unlock(&running_lock);
    if (srv->listen_fd >= 0) {
        close(srv->listen_fd);
    }
    if (srv->epfd >= 0) {
        close(srv->epfd);
    }
    if (srv->wake_fd >= 0) {
        close(srv->wake_fd);
    }
    shi_table_free(&srv->table);
    free(srv);
}

static int
server_parked(const shi_store_server *srv)
{
    int n = 0;

    for (const conn *c = srv->conns; c != NULL; c = c->next) {
        n += c->parked;
    }
    return n;
}

static void *
server_main(void *arg)
{
    shi_store_server  *srv = arg;
    struct epoll_event events[SERVER_EVENTS];
    int                stop = 0;

    shi_log_never_block(); // a stalled stderr must not stall the store

    while (!stop) {
        int n
            = epoll_wait(srv->epfd, events, SERVER_EVENTS, server_timers(srv));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            shi_log(SHI_LOG_WARN,
                "store server: epoll_wait failed: %s; the store stops serving",
                strerror(errno));
            break;
        }
        for (int i = 0; i < n; i++) {
            void *tag = events[i].data.ptr;
            if (tag == &server_wake_tag) {
                uint64_t count;
                while (read(srv->wake_fd, &count, sizeof(count)) < 0
                    && errno == EINTR) { }
                stop = atomic_load(&srv->stop_asked);
            } else if (tag == &server_listen_tag) {
                server_accept(srv);
            } else {
                conn_event(srv, tag, events[i].events);
            }
        }
        if (srv->wake_pending) {
            srv->wake_pending = 0;
            server_wake(srv);
        }
        server_reap(srv);
        stop |= atomic_load(&srv->released) && srv->conns == NULL;
        atomic_store(&srv->parked_now, server_parked(srv));
    }
    srv->stopping = 1;
    while (srv->conns != NULL) {
        conn_drop(srv, srv->conns, 0, "");
    }
    server_reap(srv);
    if (atomic_load(&srv->released) && !atomic_load(&srv->stop_asked)) {
        SHI_INFO("store server on port %d: its last client left; stopped",
            srv->port);
        server_free(srv); // nobody joins a released server's thread
    }
    return NULL;
}

// Creates the epoll set with the listening socket and the wake-up eventfd.
// Every connection is a descriptor: the soft limit goes up to the hard one.
static int
server_setup(shi_store_server *srv)
{
    shi_raise_fd_limit();
    struct epoll_event e = { .events = EPOLLIN };

    srv->epfd    = epoll_create1(EPOLL_CLOEXEC);
    srv->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (srv->epfd < 0 || srv->wake_fd < 0) {
        return shi_error(
            SHOAL_ESYS, "store server: epoll/eventfd: %s", strerror(errno));
    }
    if (fcntl(srv->listen_fd, F_SETFL,
            fcntl(srv->listen_fd, F_GETFL) | O_NONBLOCK)
        != 0) {
        return shi_error(
            SHOAL_ESYS, "store server: fcntl: %s", strerror(errno));
    }
    e.data.ptr = &server_listen_tag;
    if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->listen_fd, &e) != 0) {
        return shi_error(
            SHOAL_ESYS, "store server: epoll_ctl: %s", strerror(errno));
    }
    e.data.ptr = &server_wake_tag;
    if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->wake_fd, &e) != 0) {
        return shi_error(
            SHOAL_ESYS, "store server: epoll_ctl: %s", strerror(errno));
    }
    return SHOAL_OK;
}

int
shi_store_server_start(shi_store_server **out, const char *host, int port,
    const shi_secret *secret)
{
    shi_store_server *srv;
    sigset_t          all, old;
    int               rc;

    if (out == NULL) {
        return shi_error(SHOAL_EINVAL, "store server: out is NULL");
    }
    *out = NULL;
    srv  = calloc(1, sizeof(*srv));
    if (srv == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory for the store server");
    }
    srv->epfd = srv->wake_fd = -1;
    atomic_init(&srv->auth_timeout_ms, SHI_STORE_AUTH_TIMEOUT_MS);
    atomic_init(&srv->frame_idle_ms, SHI_STORE_FRAME_IDLE_MS);
    if (secret != NULL) {
        srv->secret = *secret;
    }
    rc = shi_tcp_listen(host, port, 1024, &srv->listen_fd, &srv->port);
    if (rc != SHOAL_OK) {
        srv->listen_fd = -1;
        server_free(srv);
        return shi_error_wrap(rc, "starting the store server");
    }
    rc = server_setup(srv);
    if (rc != SHOAL_OK) {
        server_free(srv);
        return rc;
    }
    // The thread takes no signals: they stay with the application's threads.
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&srv->thread, NULL, server_main, srv);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        server_free(srv);
        return shi_error(
            SHOAL_ESYS, "store server: pthread_create: %s", strerror(rc));
    }
    SHI_INFO("store server listening on %s:%d", host ? host : "*", srv->port);
    srv->pid = getpid();
    pthread_mutex_lock(&running_lock);
    srv->next_running = running_servers;
    running_servers   = srv;
    pthread_mutex_unlock(&running_lock);
    *out = srv;
    return SHOAL_OK;
}

int
shi_store_server_port(const shi_store_server *srv)
{
    return srv ? srv->port : -1;
}

void
shi_store_server_set_auth_timeout(shi_store_server *srv, int ms)
{
    atomic_store(&srv->auth_timeout_ms, ms);
}

void
shi_store_server_set_frame_idle_timeout(shi_store_server *srv, int ms)
{
    atomic_store(&srv->frame_idle_ms, ms);
}

void
shi_store_server_stop(shi_store_server *srv)
{
    uint64_t one = 1;

    if (srv == NULL) {
        return;
    }
    atomic_store(&srv->stop_asked, 1);
    while (write(srv->wake_fd, &one, sizeof(one)) < 0 && errno == EINTR) { }
    pthread_join(srv->thread, NULL);
    server_free(srv);
}

void
shi_store_server_release(shi_store_server *srv)
{
    uint64_t one = 1;

    if (srv == NULL) {
        return;
    }
    pthread_detach(srv->thread);
    atomic_store(&srv->released, 1);
    while (write(srv->wake_fd, &one, sizeof(one)) < 0 && errno == EINTR) { }
}

int
shi_store_servers_in_use(int64_t idle_ns)
{
    int     ports[64], n = 0, foreign = 0;
    int64_t now = shi_now_ns();

    pthread_mutex_lock(&running_lock);
    for (shi_store_server *s = running_servers; s != NULL && n < 64;
         s                   = s->next_running) {
        if (s->pid == getpid()
            && (atomic_load(&s->parked_now) > 0
                || now - atomic_load(&s->last_request_ns) < idle_ns)) {
            ports[n++] = s->port;
        }
    }
    pthread_mutex_unlock(&running_lock);
    for (int i = 0; i < n; i++) {
        int k = shi_tcp_foreign_peers(ports[i]);
        foreign += k > 0 ? k : 0;
    }
    return foreign;
}
