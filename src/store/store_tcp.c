// TCP store client. One request at a time on one connection; each request
// carries an id the reply must echo. After any failure that may leave the
// connection out of step (a deadline passing while a reply is still due,
// a lost connection, a malformed reply) the connection is closed, and the
// next call opens and authenticates a new one, so a late reply to an
// abandoned request can never be taken for the answer to a later one.
// Requests are never retried by themselves: an ADD may have been applied.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "platform/net.h"
#include "shoal.h"
#include "store/store_impl.h"
#include "store/wire.h"

#define TCP_RECONNECT_NS 500000000
// Time an orderly close gives the server to take back our wills.
#define TCP_CLOSE_NS 1000000000

// A will this handle left: sent again on a new connection, taken back
// before an orderly close (else the server would take the close for a
// death).
typedef struct kept_will {
    struct kept_will *next;
    char             *key;
    void             *value;
    size_t            len;
} kept_will;

typedef struct store_tcp {
    shi_store    base; // first: the handle is cast to and from it
    char         host[256];
    int          port;
    char         peer[300]; // "store at host:port", for the handshake
    shi_secret   secret;
    int          fd; // -1: not connected
    int          was_connected; // a server answered here before
    int          gone; // it went away: every call fails at once
    uint32_t     next_id;
    shi_wire_buf out;
    kept_will   *wills;
} store_tcp;

static int tcp_call(store_tcp *t, shi_wire_msg *req, shi_wire_msg *rep,
    unsigned char **frame, const char *waiting, int64_t deadline);

static void
tcp_disconnect(store_tcp *t)
{
    if (t->fd >= 0) {
        close(t->fd);
        t->fd = -1;
    }
}

static int
tcp_connect(store_tcp *t, int64_t deadline)
{
    int rc = shi_tcp_connect(t->host, t->port, deadline, &t->fd);

    if (rc != SHOAL_OK) {
        return rc;
    }
    rc = shi_auth_client(t->fd, &t->secret, t->peer, deadline);
    if (rc == SHOAL_ETIMEDOUT) {
        // Accepted but unanswered: the server is too busy to read us.
        rc = shi_error_wrap(rc,
            "the store at %s took the connection but did not answer the "
            "handshake in time: it is overloaded, or flooded with "
            "connections that never finish theirs (its log names their "
            "addresses)",
            t->peer);
    }
    if (rc != SHOAL_OK) {
        tcp_disconnect(t);
    }
    t->was_connected |= rc == SHOAL_OK;
    return rc;
}

// Connects again after a failure. A server that answered before and now
// refuses for half a second has gone (the launcher or the rank serving it
// ended): waiting for the deadline would only hang the job.
static int
tcp_reconnect(store_tcp *t, int64_t deadline)
{
    int64_t soon = shi_now_ns() + TCP_RECONNECT_NS;

    if (!t->was_connected || deadline < soon) {
        return tcp_connect(t, deadline);
    }
    int rc = tcp_connect(t, soon);
    if (rc == SHOAL_ECONNECT) {
        t->gone = 1;
        return shi_error(rc,
            "%s went away (%s): the process serving it (the launcher, or "
            "rank 0 when no launcher serves it) has ended",
            t->peer, shi_error_text());
    }
    // The old connection's close fired our wills; leave them again (the
    // keys set meanwhile are what a lost connection looks like).
    for (kept_will *w = t->wills; w != NULL && rc == SHOAL_OK; w = w->next) {
        shi_wire_msg   req = { .cmd = SHI_WIRE_WILL,
              .key                  = w->key,
              .klen                 = strlen(w->key),
              .value                = w->value,
              .vlen                 = w->len };
        shi_wire_msg   rep;
        unsigned char *frame;
        rc = tcp_call(t, &req, &rep, &frame, NULL, deadline);
        free(frame);
    }
    return rc;
}

// Sends `req` and waits for its reply, decoded into `rep` (pointing into
// *frame, which the caller frees). A failure status sent by the server is
// returned with its message; the connection stays usable then. `waiting`
// (NULL for requests answered at once) says what a deadline passing while
// the reply is due means ("key not set").
static int
tcp_call(store_tcp *t, shi_wire_msg *req, shi_wire_msg *rep,
    unsigned char **frame, const char *waiting, int64_t deadline)
{
    unsigned char prefix[SHI_WIRE_LEN_BYTES];
    uint32_t      len;
    int           rc;

    *frame = NULL;
    if (deadline != SHI_NO_DEADLINE && shi_now_ns() >= deadline) {
        // Not sent at all: sent, its reply could not be waited for, and
        // the connection (with the wills it carries) would have to go.
        return shi_error(
            SHOAL_ETIMEDOUT, "deadline passed before the request");
    }
    if (t->gone) {
        return shi_error(SHOAL_ECONNECT,
            "%s went away earlier: the process serving it (the launcher, or "
            "rank 0 when no launcher serves it) has ended",
            t->peer);
    }
    if (t->fd < 0) {
        SHI_TRACE("connecting to %s", t->peer);
        rc = tcp_reconnect(t, deadline);
        if (rc != SHOAL_OK) {
            return rc;
        }
    }
    req->id    = ++t->next_id;
    t->out.len = 0;
    rc         = shi_wire_encode(&t->out, req);
    if (rc != SHOAL_OK) {
        return rc;
    }
    rc = shi_write_all(t->fd, t->out.data, t->out.len, deadline);
    if (rc == SHOAL_OK) {
        rc = shi_read_all(t->fd, prefix, sizeof(prefix), deadline);
        if (rc == SHOAL_ETIMEDOUT && waiting != NULL) {
            rc = shi_error(rc,
                "%s before the deadline; the rank that should set it may "
                "be slow, stuck or dead (%s)",
                waiting, t->peer);
        }
    }
    if (rc == SHOAL_OK) {
        rc = shi_wire_frame_length(prefix, &len);
    }
    if (rc == SHOAL_OK) {
        *frame = malloc(len);
        rc     = *frame ? shi_read_all(t->fd, *frame, len, deadline)
                        : shi_error(SHOAL_ENOMEM,
                            "out of memory for a %u-byte reply", len);
    }
    if (rc == SHOAL_OK) {
        rc = shi_wire_decode(*frame, len, rep);
    }
    if (rc == SHOAL_OK
        && (rep->cmd != (req->cmd | SHI_WIRE_REPLY) || rep->id != req->id)) {
        rc = shi_error(SHOAL_EPROTO,
            "reply (command %u, id %u) does not match the request (command "
            "%u, id %u)",
            (unsigned) rep->cmd, rep->id, (unsigned) req->cmd, req->id);
    }
    if (rc == SHOAL_EPEER) { // the connection closed under us
        char cause[SHI_ERROR_TEXT_MAX];
        snprintf(cause, sizeof(cause), "%s", shi_error_text());
        rc = shi_error(rc,
            "%s; the store's server (the launcher, or rank 0 when no "
            "launcher serves it) may have ended",
            cause);
    }
    if (rc != SHOAL_OK) {
        tcp_disconnect(t);
        free(*frame);
        *frame = NULL;
        return rc;
    }
    if (rep->status != SHOAL_OK) {
        rc = shi_error(
            rep->status, "%.*s", (int) rep->vlen, (const char *) rep->value);
        free(*frame);
        *frame = NULL;
    }
    return rc;
}

// The server holds a GET or WAIT until the deadline, then answers "not
// yet"; we read a little longer than that, so its answer (which keeps the
// connection in step) comes before our own deadline (which does not).
#define TCP_REPLY_GRACE_NS 2000000000

static uint32_t
tcp_wait_ms(int64_t deadline)
{
    if (deadline == SHI_NO_DEADLINE) {
        return SHI_WIRE_WAIT_FOREVER;
    }
    int64_t ms = (deadline - shi_now_ns()) / 1000000;
    if (ms < 0) {
        return 0;
    }
    return ms >= (int64_t) SHI_WIRE_WAIT_FOREVER ? SHI_WIRE_WAIT_FOREVER - 1
                                                 : (uint32_t) ms;
}

static int64_t
tcp_read_deadline(int64_t deadline)
{
    return deadline == SHI_NO_DEADLINE ? deadline
                                       : deadline + TCP_REPLY_GRACE_NS;
}

// A request answered at once (SET, WILL, UNWILL, DELETE); *num (may be
// NULL) gets the reply's number.
static int
tcp_simple(shi_store *st, uint8_t cmd, const char *key, const void *value,
    size_t len, int64_t *num, int64_t deadline)
{
    store_tcp     *t   = (store_tcp *) st;
    shi_wire_msg   req = { .cmd = cmd,
          .key                  = key,
          .klen                 = strlen(key),
          .value                = value,
          .vlen                 = len };
    shi_wire_msg   rep;
    unsigned char *frame;
    int            rc = tcp_call(t, &req, &rep, &frame, NULL, deadline);

    if (rc == SHOAL_OK && num != NULL) {
        *num = rep.num;
    }
    free(frame);
    return rc;
}

static int
tcp_set(shi_store *st, const char *key, const void *value, size_t len,
    int64_t deadline)
{
    return tcp_simple(st, SHI_WIRE_SET, key, value, len, NULL, deadline);
}

static int
tcp_get(shi_store *st, const char *key, void **value, size_t *len,
    int64_t deadline)
{
    store_tcp     *t   = (store_tcp *) st;
    shi_wire_msg   req = { .cmd = SHI_WIRE_GET,
          .key                  = key,
          .klen                 = strlen(key),
          .wait_ms              = tcp_wait_ms(deadline) };
    shi_wire_msg   rep;
    unsigned char *frame, *copy;
    int            rc = tcp_call(
                   t, &req, &rep, &frame, "key not set", tcp_read_deadline(deadline));

    if (rc != SHOAL_OK) {
        return rc;
    }
    // The value sits inside the frame: move it to the front and keep the
    // buffer (one byte spare for the NUL: the value is shorter than the
    // frame by at least its header).
    memmove(frame, rep.value, rep.vlen);
    frame[rep.vlen] = '\0';
    copy            = realloc(frame, rep.vlen + 1);
    *value          = copy ? copy : frame;
    *len            = rep.vlen;
    return SHOAL_OK;
}

static int
tcp_add(shi_store *st, const char *key, int64_t delta, int64_t *result,
    int64_t deadline)
{
    store_tcp   *t   = (store_tcp *) st;
    shi_wire_msg req = {
        .cmd = SHI_WIRE_ADD, .key = key, .klen = strlen(key), .num = delta
    };
    shi_wire_msg   rep;
    unsigned char *frame;
    int            rc = tcp_call(t, &req, &rep, &frame, NULL, deadline);

    if (rc == SHOAL_OK) {
        *result = rep.num;
    }
    free(frame);
    return rc;
}

static int
tcp_wait(
    shi_store *st, const char *const *keys, size_t nkeys, int64_t deadline)
{
    store_tcp     *t = (store_tcp *) st;
    shi_wire_msg   req, rep;
    unsigned char *frame;
    size_t         i  = 0, n, bytes;
    int            rc = SHOAL_OK;

    // As many keys per frame as fit; waiting for each batch in turn waits
    // for all.
    while (i < nkeys && rc == SHOAL_OK) {
        bytes = SHI_WIRE_HEAD_BYTES + 8;
        for (n = 0; i + n < nkeys && n < UINT32_MAX; n++) {
            size_t k = shi_wire_key_size(keys[i + n]);
            if (bytes + k > SHI_WIRE_FRAME_MAX) {
                break;
            }
            bytes += k;
        }
        req = (shi_wire_msg) { .cmd = SHI_WIRE_WAIT,
            .nkeys                  = (uint32_t) n,
            .keys                   = keys + i,
            .wait_ms                = tcp_wait_ms(deadline) };
        rc  = tcp_call(t, &req, &rep, &frame, "keys not all set",
             tcp_read_deadline(deadline));
        free(frame);
        i += n;
    }
    return rc;
}

// Forgets the will for key in the handle's list.
static void
tcp_forget_will(store_tcp *t, const char *key)
{
    for (kept_will **link = &t->wills; *link != NULL; link = &(*link)->next) {
        kept_will *w = *link;
        if (strcmp(w->key, key) == 0) {
            *link = w->next;
            free(w->key);
            free(w->value);
            free(w);
            return;
        }
    }
}

static int
tcp_remember_will(store_tcp *t, const char *key, const void *value, size_t len)
{
    kept_will *w = calloc(1, sizeof(*w));

    tcp_forget_will(t, key);
    if (w == NULL || (w->key = strdup(key)) == NULL
        || (w->value = malloc(len + 1)) == NULL) {
        if (w != NULL) {
            free(w->key);
        }
        free(w);
        return shi_error(SHOAL_ENOMEM, "out of memory for a will");
    }
    memcpy(w->value, value, len);
    w->len   = len;
    w->next  = t->wills;
    t->wills = w;
    return SHOAL_OK;
}

static int
tcp_will(shi_store *st, const char *key, const void *value, size_t len,
    int64_t deadline)
{
    store_tcp *t = (store_tcp *) st;
    int        rc;

    if (value == NULL) {
        tcp_forget_will(t, key);
        return tcp_simple(st, SHI_WIRE_UNWILL, key, NULL, 0, NULL, deadline);
    }
    rc = tcp_remember_will(t, key, value, len);
    if (rc == SHOAL_OK) {
        rc = tcp_simple(st, SHI_WIRE_WILL, key, value, len, NULL, deadline);
    }
    return rc;
}

static int
tcp_delete_prefix(
    shi_store *st, const char *prefix, int64_t *count, int64_t deadline)
{
    return tcp_simple(st, SHI_WIRE_DELETE, prefix, NULL, 0, count, deadline);
}

static void
tcp_close(shi_store *st)
{
    store_tcp *t        = (store_tcp *) st;
    int64_t    deadline = shi_deadline_in_ms(TCP_CLOSE_NS / 1000000);

    // An orderly close is not a death: take the wills back first.
    while (t->wills != NULL) {
        kept_will *w = t->wills;
        if (t->fd >= 0
            && tcp_simple(st, SHI_WIRE_UNWILL, w->key, NULL, 0, NULL, deadline)
                != SHOAL_OK) {
            SHI_INFO("a will at the %s stays: %s", t->peer, shi_error_text());
        }
        t->wills = w->next;
        free(w->key);
        free(w->value);
        free(w);
    }
    tcp_disconnect(t);
    shi_wire_buf_free(&t->out);
    free(t);
}

static int
tcp_local_ip(shi_store *st, char *buf, size_t len)
{
    store_tcp              *t = (store_tcp *) st;
    struct sockaddr_storage ss;
    socklen_t               sl = sizeof(ss);
    const void             *a;

    if (t->fd < 0 || getsockname(t->fd, (struct sockaddr *) &ss, &sl) != 0) {
        return shi_error(SHOAL_ESYS, "no local address for the %s", t->peer);
    }
    a = ss.ss_family == AF_INET6
        ? (const void *) &((struct sockaddr_in6 *) &ss)->sin6_addr
        : (const void *) &((struct sockaddr_in *) &ss)->sin_addr;
    if (inet_ntop(ss.ss_family, a, buf, (socklen_t) len) == NULL) {
        return shi_error(SHOAL_ESYS, "inet_ntop: %s", strerror(errno));
    }
    return SHOAL_OK;
}

static const shi_store_ops tcp_ops = {
    .set           = tcp_set,
    .get           = tcp_get,
    .add           = tcp_add,
    .wait          = tcp_wait,
    .will          = tcp_will,
    .delete_prefix = tcp_delete_prefix,
    .close         = tcp_close,
    .local_ip      = tcp_local_ip,
};

int
shi_store_tcp_open(shi_store **out, const char *host, int port,
    const shi_secret *secret, int64_t deadline)
{
    store_tcp *t = calloc(1, sizeof(*t));
    int        rc;

    if (t == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory for a store handle");
    }
    t->base.ops = &tcp_ops;
    t->fd       = -1;
    t->port     = port;
    snprintf(t->host, sizeof(t->host), "%s", host);
    snprintf(t->peer, sizeof(t->peer),
        strchr(host, ':') ? "store at [%s]:%d" : "store at %s:%d", host, port);
    snprintf(t->base.where, sizeof(t->base.where), "TCP %s", t->peer);
    if (secret != NULL) {
        t->secret = *secret;
    }
    rc = tcp_connect(t, deadline);
    if (rc != SHOAL_OK) {
        tcp_close(&t->base);
        return rc;
    }
    *out = &t->base;
    return SHOAL_OK;
}
