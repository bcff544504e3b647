// Store frame encoding and validation (see wire.h).
#include "store/wire.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "shoal.h"

void
shi_wire_buf_free(shi_wire_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

static int
wire_reserve(shi_wire_buf *b, size_t more)
{
    size_t         cap;
    unsigned char *p;

    if (b->len + more <= b->cap) {
        return SHOAL_OK;
    }
    cap = b->cap ? b->cap : 256;
    while (cap < b->len + more) {
        cap *= 2;
    }
    p = realloc(b->data, cap);
    if (p == NULL) {
        return shi_error(
            SHOAL_ENOMEM, "out of memory for a %zu-byte frame", b->len + more);
    }
    b->data = p;
    b->cap  = cap;
    return SHOAL_OK;
}

int
shi_wire_buf_append(shi_wire_buf *b, const void *p, size_t n)
{
    int rc = wire_reserve(b, n);

    if (rc == SHOAL_OK && n > 0) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
    }
    return rc;
}

void
shi_wire_put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char) (v >> 24);
    p[1] = (unsigned char) (v >> 16);
    p[2] = (unsigned char) (v >> 8);
    p[3] = (unsigned char) v;
}

uint32_t
shi_wire_get_u32(const unsigned char *p)
{
    return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8
        | (uint32_t) p[3];
}

static void
wire_put_u64(unsigned char *p, uint64_t v)
{
    shi_wire_put_u32(p, (uint32_t) (v >> 32));
    shi_wire_put_u32(p + 4, (uint32_t) v);
}

static uint64_t
wire_get_u64(const unsigned char *p)
{
    return (uint64_t) shi_wire_get_u32(p) << 32 | shi_wire_get_u32(p + 4);
}

// Appends u32 n and n bytes (space already reserved).
static void
wire_put_bytes(shi_wire_buf *b, const void *p, size_t n)
{
    shi_wire_put_u32(b->data + b->len, (uint32_t) n);
    if (n > 0) {
        memcpy(b->data + b->len + 4, p, n);
    }
    b->len += 4 + n;
}

size_t
shi_wire_key_size(const char *key)
{
    return 4 + strlen(key);
}

// Size of the body (after cmd and id) that encodes `m`.
static size_t
wire_body_size(const shi_wire_msg *m)
{
    size_t n = 0;

    if (m->cmd & SHI_WIRE_REPLY) {
        if (m->status != 0) {
            return 4 + 4 + m->vlen;
        }
        switch (m->cmd & ~SHI_WIRE_REPLY) {
            case SHI_WIRE_GET:
                return 4 + 4 + m->vlen;
            case SHI_WIRE_ADD:
            case SHI_WIRE_DELETE:
                return 4 + 8;
            default:
                return 4;
        }
    }
    switch (m->cmd) {
        case SHI_WIRE_SET:
        case SHI_WIRE_WILL:
            return 4 + m->klen + 4 + m->vlen;
        case SHI_WIRE_ADD:
            return 4 + m->klen + 8;
        case SHI_WIRE_GET:
            return 4 + m->klen + 4;
        case SHI_WIRE_WAIT:
            n = 4 + 4;
            for (uint32_t i = 0; i < m->nkeys; i++) {
                n += shi_wire_key_size(m->keys[i]);
            }
            return n;
        default:
            return 4 + m->klen;
    }
}

int
shi_wire_encode(shi_wire_buf *b, const shi_wire_msg *m)
{
    size_t body = wire_body_size(m);
    size_t vlen = m->vlen;
    int    rc;

    if ((m->cmd & SHI_WIRE_REPLY) && m->status != 0
        && vlen > SHI_WIRE_MESSAGE_MAX) {
        vlen = SHI_WIRE_MESSAGE_MAX;
        body = 4 + 4 + vlen;
    }
    if (SHI_WIRE_HEAD_BYTES + body > SHI_WIRE_FRAME_MAX) {
        return shi_error(SHOAL_EINVAL,
            "request of %zu bytes exceeds the store's frame limit of %u",
            SHI_WIRE_HEAD_BYTES + body, (unsigned) SHI_WIRE_FRAME_MAX);
    }
    rc = wire_reserve(b, SHI_WIRE_LEN_BYTES + SHI_WIRE_HEAD_BYTES + body);
    if (rc != SHOAL_OK) {
        return rc;
    }
    shi_wire_put_u32(
        b->data + b->len, (uint32_t) (SHI_WIRE_HEAD_BYTES + body));
    b->data[b->len + 4] = m->cmd;
    shi_wire_put_u32(b->data + b->len + 5, m->id);
    b->len += SHI_WIRE_LEN_BYTES + SHI_WIRE_HEAD_BYTES;
    if (m->cmd & SHI_WIRE_REPLY) {
        shi_wire_put_u32(b->data + b->len, (uint32_t) m->status);
        b->len += 4;
        if (m->status != 0 || (m->cmd & ~SHI_WIRE_REPLY) == SHI_WIRE_GET) {
            wire_put_bytes(b, m->value, vlen);
        } else if ((m->cmd & ~SHI_WIRE_REPLY) == SHI_WIRE_ADD
            || (m->cmd & ~SHI_WIRE_REPLY) == SHI_WIRE_DELETE) {
            wire_put_u64(b->data + b->len, (uint64_t) m->num);
            b->len += 8;
        }
        return SHOAL_OK;
    }
    if (m->cmd == SHI_WIRE_WAIT) {
        shi_wire_put_u32(b->data + b->len, m->wait_ms);
        shi_wire_put_u32(b->data + b->len + 4, m->nkeys);
        b->len += 8;
        for (uint32_t i = 0; i < m->nkeys; i++) {
            wire_put_bytes(b, m->keys[i], strlen(m->keys[i]));
        }
        return SHOAL_OK;
    }
    wire_put_bytes(b, m->key, m->klen);
    if (m->cmd == SHI_WIRE_SET || m->cmd == SHI_WIRE_WILL) {
        wire_put_bytes(b, m->value, m->vlen);
    } else if (m->cmd == SHI_WIRE_ADD) {
        wire_put_u64(b->data + b->len, (uint64_t) m->num);
        b->len += 8;
    } else if (m->cmd == SHI_WIRE_GET) {
        shi_wire_put_u32(b->data + b->len, m->wait_ms);
        b->len += 4;
    }
    return SHOAL_OK;
}

int
shi_wire_frame_length(const unsigned char prefix[4], uint32_t *len)
{
    *len = shi_wire_get_u32(prefix);
    if (*len < SHI_WIRE_HEAD_BYTES || *len > SHI_WIRE_FRAME_MAX) {
        return shi_error(SHOAL_EPROTO,
            "frame length %u is outside the allowed %u..%u bytes", *len,
            (unsigned) SHI_WIRE_HEAD_BYTES, (unsigned) SHI_WIRE_FRAME_MAX);
    }
    return SHOAL_OK;
}

// A cursor over a frame being decoded; `bad` names the first field that
// did not fit.
typedef struct wire_rd {
    const unsigned char *p;
    size_t               left;
    const char          *bad;
} wire_rd;

static int
wire_take(wire_rd *r, size_t n, const char *what, const unsigned char **out)
{
    if (r->bad != NULL || n > r->left) {
        if (r->bad == NULL) {
            r->bad = what;
        }
        return 0;
    }
    *out = r->p;
    r->p += n;
    r->left -= n;
    return 1;
}

static uint32_t
wire_u32(wire_rd *r, const char *what)
{
    const unsigned char *p;

    return wire_take(r, 4, what, &p) ? shi_wire_get_u32(p) : 0;
}

static int64_t
wire_i64(wire_rd *r, const char *what)
{
    const unsigned char *p;

    return wire_take(r, 8, what, &p) ? (int64_t) wire_get_u64(p) : 0;
}

// Reads u32 n and n bytes, n at most `max`.
static const unsigned char *
wire_bytes(wire_rd *r, size_t max, const char *what, size_t *n)
{
    const unsigned char *p = NULL;

    *n = wire_u32(r, what);
    if (r->bad == NULL && *n > max) {
        r->bad = what;
        return NULL;
    }
    wire_take(r, *n, what, &p);
    return p;
}

static const char *
wire_key(wire_rd *r, size_t *klen)
{
    const unsigned char *p = wire_bytes(r, SHI_STORE_KEY_MAX, "key", klen);

    if (r->bad == NULL && (*klen == 0 || memchr(p, '\0', *klen) != NULL)) {
        r->bad = "key (empty or containing a NUL byte)";
    }
    return (const char *) p;
}

static void
wire_decode_reply(wire_rd *r, shi_wire_msg *m)
{
    m->status = (int32_t) wire_u32(r, "status");
    if (r->bad == NULL && m->status > 0) {
        r->bad = "status";
    }
    if (m->status != 0) {
        m->value = wire_bytes(r, SHI_WIRE_MESSAGE_MAX, "message", &m->vlen);
        return;
    }
    switch (m->cmd & ~SHI_WIRE_REPLY) {
        case SHI_WIRE_GET:
            m->value = wire_bytes(r, SHI_STORE_VALUE_MAX, "value", &m->vlen);
            break;
        case SHI_WIRE_ADD:
            m->num = wire_i64(r, "result");
            break;
        case SHI_WIRE_DELETE:
            m->num = wire_i64(r, "count");
            break;
        default:
            break;
    }
}

static void
wire_decode_request(wire_rd *r, shi_wire_msg *m)
{
    if (m->cmd == SHI_WIRE_WAIT) {
        size_t klen;
        m->wait_ms     = wire_u32(r, "wait time");
        m->nkeys       = wire_u32(r, "key count");
        m->keyblob     = r->p;
        m->keyblob_len = r->left;
        for (uint32_t i = 0; i < m->nkeys && r->bad == NULL; i++) {
            wire_key(r, &klen);
        }
        return;
    }
    m->key = wire_key(r, &m->klen);
    if (m->cmd == SHI_WIRE_SET || m->cmd == SHI_WIRE_WILL) {
        m->value = wire_bytes(r, SHI_STORE_VALUE_MAX, "value", &m->vlen);
    } else if (m->cmd == SHI_WIRE_ADD) {
        m->num = wire_i64(r, "delta");
    } else if (m->cmd == SHI_WIRE_GET) {
        m->wait_ms = wire_u32(r, "wait time");
    }
}

int
shi_wire_decode(const unsigned char *frame, size_t len, shi_wire_msg *m)
{
    wire_rd              r = { .p = frame, .left = len, .bad = NULL };
    const unsigned char *head;
    uint8_t              base;

    memset(m, 0, sizeof(*m));
    if (!wire_take(&r, SHI_WIRE_HEAD_BYTES, "header", &head)) {
        return shi_error(SHOAL_EPROTO, "frame of %zu bytes is too short", len);
    }
    m->cmd = head[0];
    m->id  = shi_wire_get_u32(head + 1);
    base   = m->cmd & ~SHI_WIRE_REPLY;
    if (base < SHI_WIRE_SET || base > SHI_WIRE_DELETE) {
        return shi_error(
            SHOAL_EPROTO, "unknown store command %u", (unsigned) m->cmd);
    }
    if (m->cmd & SHI_WIRE_REPLY) {
        wire_decode_reply(&r, m);
    } else {
        wire_decode_request(&r, m);
    }
    if (r.bad != NULL) {
        return shi_error(SHOAL_EPROTO,
            "malformed store frame (command %u, %zu bytes): bad %s",
            (unsigned) m->cmd, len, r.bad);
    }
    if (r.left != 0) {
        return shi_error(SHOAL_EPROTO,
            "malformed store frame (command %u): %zu stray bytes at the end",
            (unsigned) m->cmd, r.left);
    }
    return SHOAL_OK;
}

int
shi_wire_next_key(
    const unsigned char **blob, size_t *left, const char **key, size_t *klen)
{
    if (*left < 4) {
        return 0;
    }
    *klen = shi_wire_get_u32(*blob);
    *key  = (const char *) *blob + 4;
    *blob += 4 + *klen;
    *left -= 4 + *klen;
    return 1;
}
