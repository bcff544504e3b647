// Harness for the collective tests (see ref.h): one collective call with
// guarded buffers, every output element checked against the reference,
// inputs and bytes outside the written region checked untouched.
#include <sched.h>
#include <string.h>

#include "mptest.h"
#include "ref.h"

#define CC_GUARD       64 // keeps shoal_alloc's 64-byte alignment
#define CC_GUARD_BYTE  0xA5
#define CC_SENTINEL    0x5C // unwritten output
#define CC_SCRIBBLE    0xEE // input buffer reused after completion
#define CC_MAX_REPORTS 4

long cc_shm_fallbacks;

static const char *const cc_names[CC_COLL_COUNT] = { "all_reduce", "reduce",
    "all_gather", "all_gather_v", "reduce_scatter", "reduce_scatter_v",
    "all_to_all", "all_to_all_v", "gather", "scatter" };

const char *
cc_coll_name(cc_coll c)
{
    return (unsigned) c < CC_COLL_COUNT ? cc_names[c] : "unknown";
}

int
cc_is_reduction(cc_coll c)
{
    return c == CC_ALL_REDUCE || c == CC_REDUCE || c == CC_REDUCE_SCATTER
        || c == CC_REDUCE_SCATTER_V;
}

int
cc_is_rooted(cc_coll c)
{
    return c == CC_REDUCE || c == CC_GATHER || c == CC_SCATTER;
}

int
cc_has_inplace(cc_coll c)
{
    return c != CC_ALL_TO_ALL && c != CC_ALL_TO_ALL_V;
}

void
cc_spec_init(cc_spec *s, cc_coll coll, shoal_dtype dt, int op_kind,
    size_t count, uint64_t seed)
{
    memset(s, 0, sizeof(*s));
    s->coll  = coll;
    s->dtype = dt;
    s->op    = SHOAL_REDUCE_OP(op_kind < 0 ? SHOAL_SUM : op_kind);
    s->cls   = cc_is_reduction(coll) ? ref_class_of(op_kind) : REF_MOVE;
    s->count = count;
    s->seed  = seed;
}

void
cc_describe(const cc_spec *s, char *buf, size_t len)
{
    static const char *const modes[] = { "blocking", "i+wait", "i+test" };
    static const char *const bufs[]  = { "malloc", "shm-even", "shm-all" };
    char                     op[48] = "", root[24] = "", mis[24] = "";

    if (cc_is_reduction(s->coll)) {
        if (s->op.kind == SHOAL_PREMUL_SUM) {
            snprintf(op, sizeof(op), " premul_sum(%g)", s->op.scalar);
        } else {
            snprintf(op, sizeof(op), " %s", shoal_op_name(s->op.kind));
        }
    }
    if (cc_is_rooted(s->coll)) {
        snprintf(root, sizeof(root), " root=%d", s->root);
    }
    if (s->misalign) {
        snprintf(mis, sizeof(mis), " misaligned+%d", s->misalign);
    }
    snprintf(buf, len, "%s %s%s count=%zu%s %s %s %s%s%s%s seed=%llu",
        cc_coll_name(s->coll), shoal_dtype_name(s->dtype), op, s->count, root,
        s->inplace ? "in-place" : "out-of-place", modes[s->mode % 3],
        bufs[s->bufs % 3], mis, s->null_empty ? " null-empty" : "",
        s->cls == REF_SPECIAL ? " nan/inf" : "", (unsigned long long) s->seed);
}

// ---------------------------------------------------------------------------
// Guarded buffers
// ---------------------------------------------------------------------------

// A body of `bytes` starting `pre` bytes past a 64-byte boundary (a
// misaligned start for the SIMD kernels' heads), with guards either side.
static int
cc_buf_alloc(shoal_comm *comm, cc_buf *b, size_t bytes, int shm, size_t pre)
{
    size_t total = bytes + 2 * CC_GUARD + pre;

    memset(b, 0, sizeof(*b));
    b->bytes = bytes;
    b->pre   = CC_GUARD + pre;
    if (shm) {
        void *p  = NULL;
        int   st = shoal_alloc(comm, total, &p);
        if (st == SHOAL_OK) {
            b->raw = p;
            b->shm = 1;
        } else if (st == SHOAL_ENOSPACE) {
            cc_shm_fallbacks++;
        } else {
            fprintf(stderr, "rank %d: shoal_alloc(%zu) returned %s: %s\n",
                shoal_comm_rank(comm), total, shoal_status_name(st),
                shoal_last_error());
            return -1;
        }
    }
    if (b->raw == NULL && (b->raw = malloc(total)) == NULL) {
        fprintf(stderr, "malloc(%zu) failed\n", total);
        return -1;
    }
    memset(b->raw, CC_GUARD_BYTE, b->pre);
    memset(b->raw + b->pre + bytes, CC_GUARD_BYTE, CC_GUARD);
    memset(b->raw + b->pre, CC_SENTINEL, bytes);
    b->p = b->raw + b->pre;
    return 0;
}

static int
cc_buf_free(shoal_comm *comm, cc_buf *b)
{
    int rc = 0;

    if (b->shm) {
        int st = shoal_free(comm, b->raw);
        if (st != SHOAL_OK) {
            fprintf(stderr, "rank %d: shoal_free returned %s: %s\n",
                shoal_comm_rank(comm), shoal_status_name(st),
                shoal_last_error());
            rc = -1;
        }
    } else {
        free(b->raw);
    }
    memset(b, 0, sizeof(*b));
    return rc;
}

// Offset (from the body's start, negative before it) of the first changed
// guard byte, or 0 with *ok = 1.
static long
cc_guard_damage(const cc_buf *b, int *ok)
{
    *ok = 1;
    if (b->raw == NULL) {
        return 0;
    }
    for (size_t i = 0; i < b->pre; i++) {
        if (b->raw[i] != CC_GUARD_BYTE) {
            *ok = 0;
            return (long) i - (long) b->pre;
        }
    }
    for (size_t i = 0; i < CC_GUARD; i++) {
        if (b->p[b->bytes + i] != CC_GUARD_BYTE) {
            *ok = 0;
            return (long) (b->bytes + i);
        }
    }
    return 0;
}

// ---------------------------------------------------------------------------
// Layout of one call
// ---------------------------------------------------------------------------

enum {
    CC_SEPARATE = 0, // send and recv are separate buffers
    CC_RECV_IN_SEND, // recvptr = sendptr + off elements
    CC_SEND_IN_RECV, // sendptr = recvptr + off elements
};

typedef struct cc_layout {
    int    kind;
    size_t off; // in-place offset, elements
    size_t send_n, recv_n; // elements of input and of output
    int    send_src; // rank whose stream the input is
    int    send_ignored, recv_ignored; // buffer passed but must be unused
} cc_layout;

static size_t
cc_sum(const size_t *v, int n, int upto)
{
    size_t s = 0;

    for (int i = 0; i < n && i < upto; i++) {
        s += v[i];
    }
    return s;
}

static void
cc_layout_of(const cc_call *c, cc_layout *l)
{
    const cc_spec *s  = &c->s;
    int            me = c->rank, n = c->size, root = s->root;
    size_t         cnt = s->count;

    memset(l, 0, sizeof(*l));
    l->send_src = me;
    switch (s->coll) {
        case CC_ALL_REDUCE:
            l->send_n = l->recv_n = cnt;
            l->kind               = s->inplace ? CC_RECV_IN_SEND : CC_SEPARATE;
            break;
        case CC_REDUCE:
            l->send_n = cnt;
            if (me == root) {
                l->recv_n = cnt;
                l->kind   = s->inplace ? CC_RECV_IN_SEND : CC_SEPARATE;
            } else if (s->inplace) {
                l->kind = CC_RECV_IN_SEND; // sendbuf == recvbuf, no output
            } else {
                l->recv_ignored = 1;
                l->recv_n       = cnt;
            }
            break;
        case CC_ALL_GATHER:
            l->send_n = cnt;
            l->recv_n = (size_t) n * cnt;
            l->kind   = s->inplace ? CC_SEND_IN_RECV : CC_SEPARATE;
            l->off    = (size_t) me * cnt;
            break;
        case CC_ALL_GATHER_V:
            l->send_n = c->counts[me];
            l->recv_n = cc_sum(c->counts, n, n);
            l->kind   = s->inplace ? CC_SEND_IN_RECV : CC_SEPARATE;
            l->off    = cc_sum(c->counts, n, me);
            break;
        case CC_REDUCE_SCATTER:
            l->send_n = (size_t) n * cnt;
            l->recv_n = cnt;
            l->kind   = s->inplace ? CC_RECV_IN_SEND : CC_SEPARATE;
            l->off    = (size_t) me * cnt;
            break;
        case CC_REDUCE_SCATTER_V:
            l->send_n = cc_sum(c->counts, n, n);
            l->recv_n = c->counts[me];
            l->kind   = s->inplace ? CC_RECV_IN_SEND : CC_SEPARATE;
            l->off    = cc_sum(c->counts, n, me);
            break;
        case CC_ALL_TO_ALL:
            l->send_n = l->recv_n = (size_t) n * cnt;
            break;
        case CC_ALL_TO_ALL_V:
            l->send_n = cc_sum(c->counts, n, n);
            l->recv_n = cc_sum(c->rcounts, n, n);
            break;
        case CC_GATHER:
            l->send_n = cnt;
            l->recv_n = (size_t) n * cnt;
            if (me == root) {
                l->kind = s->inplace ? CC_SEND_IN_RECV : CC_SEPARATE;
                l->off  = (size_t) root * cnt;
            } else {
                l->recv_ignored = 1;
            }
            break;
        case CC_SCATTER:
            l->send_n   = (size_t) n * cnt;
            l->recv_n   = cnt;
            l->send_src = root;
            if (me == root) {
                l->kind = s->inplace ? CC_RECV_IN_SEND : CC_SEPARATE;
                l->off  = (size_t) root * cnt;
            } else {
                l->send_ignored = 1;
            }
            break;
        default:
            break;
    }
}

// Output block b of this rank's recv region: src = -1 for a reduction over
// every rank of element idx0 + j, else element idx0 + j of rank src's
// stream. Returns the number of blocks.
static int
cc_out_block(const cc_call *c, int b, int *src, size_t *idx0, size_t *len)
{
    const cc_spec *s  = &c->s;
    int            me = c->rank, n = c->size;
    size_t         cnt = s->count;

    *src  = b;
    *idx0 = 0;
    *len  = cnt;
    switch (s->coll) {
        case CC_ALL_REDUCE:
        case CC_REDUCE:
            *src = -1;
            return 1;
        case CC_REDUCE_SCATTER:
            *src  = -1;
            *idx0 = (size_t) me * cnt;
            return 1;
        case CC_REDUCE_SCATTER_V:
            *src  = -1;
            *idx0 = cc_sum(c->counts, n, me);
            *len  = c->counts[me];
            return 1;
        case CC_ALL_GATHER:
        case CC_GATHER:
            return n;
        case CC_ALL_GATHER_V:
            *len = c->counts[b];
            return n;
        case CC_ALL_TO_ALL:
            *idx0 = (size_t) me * cnt;
            return n;
        case CC_ALL_TO_ALL_V: {
            size_t off = 0;
            for (int q = 0; q < me; q++) {
                off += ref_a2a_count(s->seed, b, q, n, cnt);
            }
            *idx0 = off;
            *len  = c->rcounts[b];
            return n;
        }
        case CC_SCATTER:
            *src  = s->root;
            *idx0 = (size_t) me * cnt;
            return 1;
        default:
            return 0;
    }
}

// ---------------------------------------------------------------------------
// Start
// ---------------------------------------------------------------------------

static int
cc_issue(shoal_comm *comm, cc_call *c)
{
    const cc_spec  *s    = &c->s;
    const void     *sp   = c->sendptr;
    void           *rp   = c->recvptr;
    size_t          cnt  = s->count;
    shoal_dtype     dt   = s->dtype;
    shoal_reduce_op op   = s->op;
    int             root = s->root;
    shoal_request **req  = s->mode == CC_BLOCKING ? NULL : &c->req;

    switch (s->coll) {
        case CC_ALL_REDUCE:
            return req ? shoal_iall_reduce(comm, sp, rp, cnt, dt, op, req)
                       : shoal_all_reduce(comm, sp, rp, cnt, dt, op);
        case CC_REDUCE:
            return req ? shoal_ireduce(comm, sp, rp, cnt, dt, op, root, req)
                       : shoal_reduce(comm, sp, rp, cnt, dt, op, root);
        case CC_ALL_GATHER:
            return req ? shoal_iall_gather(comm, sp, rp, cnt, dt, req)
                       : shoal_all_gather(comm, sp, rp, cnt, dt);
        case CC_ALL_GATHER_V:
            return req ? shoal_iall_gather_v(comm, sp, rp, c->counts, dt, req)
                       : shoal_all_gather_v(comm, sp, rp, c->counts, dt);
        case CC_REDUCE_SCATTER:
            return req ? shoal_ireduce_scatter(comm, sp, rp, cnt, dt, op, req)
                       : shoal_reduce_scatter(comm, sp, rp, cnt, dt, op);
        case CC_REDUCE_SCATTER_V:
            return req
                ? shoal_ireduce_scatter_v(comm, sp, rp, c->counts, dt, op, req)
                : shoal_reduce_scatter_v(comm, sp, rp, c->counts, dt, op);
        case CC_ALL_TO_ALL:
            return req ? shoal_iall_to_all(comm, sp, rp, cnt, dt, req)
                       : shoal_all_to_all(comm, sp, rp, cnt, dt);
        case CC_ALL_TO_ALL_V:
            return req
                ? shoal_iall_to_all_v(
                    comm, sp, c->counts, rp, c->rcounts, dt, req)
                : shoal_all_to_all_v(comm, sp, c->counts, rp, c->rcounts, dt);
        case CC_GATHER:
            return req ? shoal_igather(comm, sp, rp, cnt, dt, root, req)
                       : shoal_gather(comm, sp, rp, cnt, dt, root);
        case CC_SCATTER:
            return req ? shoal_iscatter(comm, sp, rp, cnt, dt, root, req)
                       : shoal_scatter(comm, sp, rp, cnt, dt, root);
        default:
            return SHOAL_EINVAL;
    }
}

// Pointer `off` elements into b's body, or NULL for an empty buffer passed
// as NULL.
static unsigned char *
cc_ptr(const cc_call *c, const cc_buf *b, size_t off, size_t n)
{
    if (b->p == NULL || (n == 0 && c->s.null_empty)) {
        return NULL;
    }
    return b->p + off * c->es;
}

int
cc_start(shoal_comm *comm, cc_call *c, const cc_spec *s)
{
    cc_layout l;
    char      desc[256];

    memset(c, 0, sizeof(*c));
    c->s    = *s;
    c->rank = shoal_comm_rank(comm);
    c->size = shoal_comm_size(comm);
    c->es   = shoal_dtype_size(s->dtype);
    if (c->size > CC_MAX_RANKS) {
        fprintf(stderr, "more than %d ranks\n", CC_MAX_RANKS);
        return CC_ERROR;
    }
    if (s->coll == CC_ALL_GATHER_V || s->coll == CC_REDUCE_SCATTER_V) {
        ref_v_counts(s->seed, c->size, s->count, c->counts);
    } else if (s->coll == CC_ALL_TO_ALL_V) {
        for (int p = 0; p < c->size; p++) {
            c->counts[p]
                = ref_a2a_count(s->seed, c->rank, p, c->size, s->count);
            c->rcounts[p]
                = ref_a2a_count(s->seed, p, c->rank, c->size, s->count);
        }
    }
    cc_layout_of(c, &l);
    // SHOAL_COLL_NO_SHM=1 (diagnosis only): malloc for every buffer.
    static int no_shm = -1;
    if (no_shm < 0) {
        const char *env = getenv("SHOAL_COLL_NO_SHM");
        no_shm          = env != NULL && strcmp(env, "1") == 0;
    }
    int shm = !no_shm
        && (s->bufs == CC_SHM_ALL
            || (s->bufs == CC_SHM_EVEN && c->rank % 2 == 0));
    size_t pre = (size_t) s->misalign * c->es;
    // Ignored buffers are passed as NULL on every other call.
    int      pass_ignored = (s->seed >> 1) & 1;
    uint64_t key          = ref_key(s->seed, s->cls, l.send_src);
    int      rc           = 0;

    switch (l.kind) {
        case CC_RECV_IN_SEND:
            rc = cc_buf_alloc(comm, &c->send, l.send_n * c->es, shm, pre);
            if (rc == 0) {
                ref_fill(s->dtype, s->cls, key, 0, c->send.p, l.send_n);
                c->sendptr = cc_ptr(c, &c->send, 0, l.send_n);
                c->recvptr = c->sendptr == NULL
                    ? NULL
                    : (unsigned char *) c->send.p + l.off * c->es;
            }
            break;
        case CC_SEND_IN_RECV:
            rc = cc_buf_alloc(comm, &c->recv, l.recv_n * c->es, shm, pre);
            if (rc == 0) {
                ref_fill(s->dtype, s->cls, key, 0, c->recv.p + l.off * c->es,
                    l.send_n);
                c->recvptr = cc_ptr(c, &c->recv, 0, l.recv_n);
                c->sendptr = c->recvptr == NULL
                    ? NULL
                    : (unsigned char *) c->recv.p + l.off * c->es;
            }
            break;
        default:
            if (!l.send_ignored || pass_ignored) {
                rc = cc_buf_alloc(comm, &c->send, l.send_n * c->es, shm, pre);
                if (rc == 0 && !l.send_ignored) {
                    ref_fill(s->dtype, s->cls, key, 0, c->send.p, l.send_n);
                }
                c->sendptr = cc_ptr(c, &c->send, 0, l.send_n);
            }
            if (rc == 0 && (!l.recv_ignored || pass_ignored)) {
                rc = cc_buf_alloc(comm, &c->recv, l.recv_n * c->es, shm, pre);
                c->recvptr = cc_ptr(c, &c->recv, 0, l.recv_n);
            }
            break;
    }
    if (rc != 0) {
        cc_buf_free(comm, &c->send);
        cc_buf_free(comm, &c->recv);
        return CC_ERROR;
    }
    c->req = (shoal_request *) c; // must be replaced or cleared
    int st = cc_issue(comm, c);
    if (s->mode == CC_BLOCKING) {
        c->req = NULL;
    }
    if (st != SHOAL_OK) {
        cc_describe(s, desc, sizeof(desc));
        fprintf(stderr, "rank %d: FAIL %s: returned %s: %s\n", c->rank, desc,
            shoal_status_name(st), shoal_last_error());
        if (c->req != NULL) {
            fprintf(stderr, "rank %d: and *req is not NULL after the error\n",
                c->rank);
        }
        cc_buf_free(comm, &c->send);
        cc_buf_free(comm, &c->recv);
        return CC_ERROR;
    }
    if (s->mode != CC_BLOCKING && c->req == NULL) {
        cc_describe(s, desc, sizeof(desc));
        fprintf(stderr, "rank %d: FAIL %s: returned OK without a request\n",
            c->rank, desc);
        cc_buf_free(comm, &c->send);
        cc_buf_free(comm, &c->recv);
        return CC_ERROR;
    }
    c->started = 1;
    return CC_PASS;
}

// ---------------------------------------------------------------------------
// Finish and check
// ---------------------------------------------------------------------------

typedef struct cc_report {
    const cc_call *c;
    size_t         bad; // wrong elements or bytes
    int            printed;
    char           desc[256];
} cc_report;

// Counts one wrong element; prints the first few.
static int
cc_bad(cc_report *r)
{
    r->bad++;
    return r->printed++ < CC_MAX_REPORTS;
}

// Checks n output elements at base against blocks of the reference.
static void
cc_check_out(cc_report *r, const unsigned char *base)
{
    const cc_call *c = r->c;
    const cc_spec *s = &c->s;
    uint64_t       keys[CC_MAX_RANKS];
    size_t         pos = 0;
    int            src, nb = 1;
    size_t         idx0, len;
    char           got[64], want[64];
    ref_expect     e;

    for (int q = 0; q < c->size; q++) {
        keys[q] = ref_key(s->seed, s->cls, q);
    }
    for (int b = 0; b < nb; b++) {
        nb = cc_out_block(c, b, &src, &idx0, &len);
        for (size_t j = 0; j < len; j++, pos++) {
            uint64_t g = ref_get(s->dtype, base, pos);
            if (src < 0) {
                ref_reduce(
                    s->dtype, s->op, s->cls, c->size, keys, idx0 + j, &e);
            } else {
                e.bits = ref_gen(s->dtype, s->cls, keys[src], idx0 + j);
                if (g == e.bits) {
                    continue;
                }
                if (cc_bad(r)) {
                    ref_format(s->dtype, g, got, sizeof(got));
                    ref_format(s->dtype, e.bits, want, sizeof(want));
                    fprintf(stderr,
                        "rank %d: FAIL %s: output element %zu (block %d, "
                        "element %zu of rank %d's input) is %s, expected "
                        "%s\n",
                        c->rank, r->desc, pos, b, idx0 + j, src, got, want);
                }
                continue;
            }
            if (ref_check(s->dtype, g, &e)) {
                continue;
            }
            if (cc_bad(r)) {
                char tol[64] = "";
                ref_format(s->dtype, g, got, sizeof(got));
                ref_format(s->dtype, e.bits, want, sizeof(want));
                if (ref_is_float(s->dtype) && !e.exact) {
                    snprintf(tol, sizeof(tol), " = %.17g within %.3g", e.value,
                        e.tol);
                }
                fprintf(stderr,
                    "rank %d: FAIL %s: output element %zu (reduction of "
                    "element %zu) is %s, expected %s%s\n",
                    c->rank, r->desc, pos, idx0 + j, got, want, tol);
            }
        }
    }
}

// Checks that elements [from, to) of buf still hold input stream `key`.
static void
cc_check_input(cc_report *r, const unsigned char *buf, uint64_t key,
    size_t from, size_t to)
{
    const cc_spec *s = &r->c->s;
    char           got[64], want[64];

    for (size_t i = from; i < to; i++) {
        uint64_t g = ref_get(s->dtype, buf, i);
        uint64_t w = ref_gen(s->dtype, s->cls, key, i);
        if (g != w && cc_bad(r)) {
            ref_format(s->dtype, g, got, sizeof(got));
            ref_format(s->dtype, w, want, sizeof(want));
            fprintf(stderr,
                "rank %d: FAIL %s: input element %zu was changed to %s from "
                "%s\n",
                r->c->rank, r->desc, i, got, want);
        }
    }
}

static void
cc_check_untouched(cc_report *r, const cc_buf *b, const char *what)
{
    for (size_t i = 0; i < b->bytes; i++) {
        if (b->p[i] != CC_SENTINEL) {
            if (cc_bad(r)) {
                fprintf(stderr,
                    "rank %d: FAIL %s: byte %zu of the %s (ignored on this "
                    "rank) was written\n",
                    r->c->rank, r->desc, i, what);
            }
            return;
        }
    }
}

static void
cc_check_guards(cc_report *r, const cc_buf *b, const char *what)
{
    int  ok;
    long at = cc_guard_damage(b, &ok);

    if (!ok) {
        if (cc_bad(r)) {
            fprintf(stderr,
                "rank %d: FAIL %s: guard byte at offset %ld of the %s (%zu "
                "bytes) was written\n",
                r->c->rank, r->desc, at, what, b->bytes);
        }
    }
}

static int
cc_complete(cc_call *c)
{
    int st = SHOAL_OK;

    if (c->req == NULL) {
        return SHOAL_OK;
    }
    if (c->s.mode == CC_WAIT) {
        st = shoal_wait(c->req, -1);
    } else {
        long polls = 0;
        while ((st = shoal_test(c->req)) == SHOAL_INPROGRESS) {
            if (++polls % 1024 == 0) {
                mp_sleep_ms(1);
            } else {
                sched_yield();
            }
        }
    }
    shoal_request_free(c->req);
    c->req = NULL;
    return st;
}

int
cc_finish(shoal_comm *comm, cc_call *c)
{
    cc_report r = { .c = c };
    cc_layout l;
    int       st = cc_complete(c);

    cc_describe(&c->s, r.desc, sizeof(r.desc));
    if (st != SHOAL_OK) {
        fprintf(stderr, "rank %d: FAIL %s: completed with %s: %s\n", c->rank,
            r.desc, shoal_status_name(st), shoal_last_error());
        cc_buf_free(comm, &c->send);
        cc_buf_free(comm, &c->recv);
        return CC_ERROR;
    }
    cc_layout_of(c, &l);
    uint64_t             key = ref_key(c->s.seed, c->s.cls, l.send_src);
    const unsigned char *out = NULL;
    // Reuse the input buffer the moment the call completes: a peer still
    // reading it would then get the scribble instead of the input.
    int scribbled = c->s.scribble && l.kind == CC_SEPARATE && !l.send_ignored
        && c->send.p != NULL;
    if (scribbled) {
        memset(c->send.p, CC_SCRIBBLE, c->send.bytes);
    }
    switch (l.kind) {
        case CC_RECV_IN_SEND:
            out = c->send.p + l.off * c->es;
            cc_check_input(&r, c->send.p, key, 0, l.off);
            cc_check_input(&r, c->send.p, key, l.off + l.recv_n, l.send_n);
            break;
        case CC_SEND_IN_RECV:
            out = c->recv.p;
            break;
        default:
            if (l.send_ignored) {
                cc_check_untouched(&r, &c->send, "sendbuf");
            } else if (!scribbled) {
                cc_check_input(&r, c->send.p, key, 0, l.send_n);
            }
            if (l.recv_ignored) {
                cc_check_untouched(&r, &c->recv, "recvbuf");
            } else {
                out = c->recv.p;
            }
            break;
    }
    if (out != NULL && l.recv_n > 0) {
        cc_check_out(&r, out);
    }
    cc_check_guards(&r, &c->send, "sendbuf");
    cc_check_guards(&r, &c->recv, "recvbuf");
    // Every rank's all_reduce result must be bitwise identical: compare a
    // hash with rank 0's (every rank broadcasts, whatever it found).
    if (c->s.coll == CC_ALL_REDUCE && c->size > 1) {
        uint64_t mine = ref_hash_bytes(out, out ? l.recv_n * c->es : 0);
        int64_t  h0   = (int64_t) mine;
        st            = shoal_broadcast(comm, &h0, 1, SHOAL_INT64, 0);
        if (st != SHOAL_OK) {
            fprintf(stderr, "rank %d: FAIL %s: hash broadcast: %s: %s\n",
                c->rank, r.desc, shoal_status_name(st), shoal_last_error());
            cc_buf_free(comm, &c->send);
            cc_buf_free(comm, &c->recv);
            return CC_ERROR;
        }
        if ((uint64_t) h0 != mine && cc_bad(&r)) {
            fprintf(stderr,
                "rank %d: FAIL %s: result differs bitwise from rank 0's\n",
                c->rank, r.desc);
        }
    }
    if (r.printed > CC_MAX_REPORTS) {
        fprintf(stderr, "rank %d: FAIL %s: %zu wrong in all\n", c->rank,
            r.desc, r.bad);
    }
    if (cc_buf_free(comm, &c->send) != 0 || cc_buf_free(comm, &c->recv) != 0) {
        return CC_ERROR;
    }
    return r.bad ? CC_WRONG : CC_PASS;
}

int
cc_run(shoal_comm *comm, const cc_spec *s)
{
    cc_call c;
    int     rc = cc_start(comm, &c, s);

    return rc != CC_PASS ? rc : cc_finish(comm, &c);
}
