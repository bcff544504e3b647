// Python pickle protocol 2, written (see pickle.h). Containers are built
// as an empty one, a MARK, the items and one SETITEMS or APPENDS, so the
// writer keeps no stack of its own.
#include "base/pickle.h"

#include <stdlib.h>
#include <string.h>

enum {
    OP_PROTO      = 0x80,
    OP_STOP       = '.',
    OP_MARK       = '(',
    OP_EMPTY_DICT = '}',
    OP_SETITEMS   = 'u',
    OP_EMPTY_LIST = ']',
    OP_APPENDS    = 'e',
    OP_TUPLE2     = 0x86,
    OP_BINUNICODE = 'X',
    OP_BININT     = 'J',
    OP_LONG1      = 0x8a,
    OP_NONE       = 'N',
    OP_NEWTRUE    = 0x88,
    OP_NEWFALSE   = 0x89,
};

static void
put(shi_pickle *p, const void *bytes, size_t n)
{
    if (p->failed) {
        return;
    }
    if (p->len + n > p->cap) {
        size_t         cap  = p->cap ? p->cap * 2 : 4096;
        unsigned char *grow = NULL;
        while (cap < p->len + n) {
            cap *= 2;
        }
        if ((grow = realloc(p->data, cap)) == NULL) {
            p->failed = 1;
            return;
        }
        p->data = grow;
        p->cap  = cap;
    }
    memcpy(p->data + p->len, bytes, n);
    p->len += n;
}

static void
op(shi_pickle *p, unsigned char code)
{
    put(p, &code, 1);
}

// n as 4 little-endian bytes.
static void
u32(shi_pickle *p, uint32_t n)
{
    unsigned char b[4] = { (unsigned char) n, (unsigned char) (n >> 8),
        (unsigned char) (n >> 16), (unsigned char) (n >> 24) };

    put(p, b, 4);
}

void
shi_pickle_begin(shi_pickle *p)
{
    unsigned char head[2] = { OP_PROTO, 2 };

    memset(p, 0, sizeof(*p));
    put(p, head, 2);
}

void
shi_pickle_end(shi_pickle *p)
{
    op(p, OP_STOP);
}

void
shi_pickle_free(shi_pickle *p)
{
    free(p->data);
    memset(p, 0, sizeof(*p));
}

void
shi_pickle_str(shi_pickle *p, const char *s)
{
    size_t n = strlen(s);

    op(p, OP_BINUNICODE);
    u32(p, (uint32_t) n);
    put(p, s, n);
}

void
shi_pickle_int(shi_pickle *p, int64_t v)
{
    if (v >= INT32_MIN && v <= INT32_MAX) {
        op(p, OP_BININT);
        u32(p, (uint32_t) (int32_t) v);
        return;
    }
    // LONG1: 8 bytes of two's complement, little-endian.
    unsigned char b[10] = { OP_LONG1, 8 };
    uint64_t      u     = (uint64_t) v;
    for (int i = 0; i < 8; i++) {
        b[2 + i] = (unsigned char) (u >> (8 * i));
    }
    put(p, b, sizeof(b));
}

void
shi_pickle_bool(shi_pickle *p, int v)
{
    op(p, v ? OP_NEWTRUE : OP_NEWFALSE);
}

void
shi_pickle_none(shi_pickle *p)
{
    op(p, OP_NONE);
}

void
shi_pickle_dict_open(shi_pickle *p)
{
    op(p, OP_EMPTY_DICT);
    op(p, OP_MARK);
}

void
shi_pickle_dict_close(shi_pickle *p)
{
    op(p, OP_SETITEMS);
}

void
shi_pickle_list_open(shi_pickle *p)
{
    op(p, OP_EMPTY_LIST);
    op(p, OP_MARK);
}

void
shi_pickle_list_close(shi_pickle *p)
{
    op(p, OP_APPENDS);
}

void
shi_pickle_tuple2(shi_pickle *p)
{
    op(p, OP_TUPLE2);
}
