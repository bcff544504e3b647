// Schedules across hosts (src/algo/net), pure logic: every collective and
// algorithm is built for every rank of 1 to 8-rank worlds and checked
// without a transport.
//
// Static checks of each rank's schedule: operation fields, dependencies
// on earlier operations only, every access inside its buffer (scratch
// inside scratch_bytes), no write to the send buffer, element alignment,
// REDUCE/COPY/PREMUL operands equal or disjoint, and no two operations
// that touch the same bytes (one writing; a SEND reads until it completes,
// a RECV writes until it completes) left unordered by the dependencies,
// whatever the order the executor picks. Across ranks: the k-th SEND from
// r to p and the k-th RECV from r in p's schedule exist together and have
// the same size.
//
// Then a simulator runs all ranks together, choosing at random (seeded)
// among operations that may start and transfers that may complete: a SEND
// snapshots its source when it starts and checks at completion that it
// did not change; a RECV poisons its destination when it starts and
// writes the data when it completes; a transfer completes only once its
// partner has started (rendezvous) or, with odd seeds, a SEND at any time
// (eager). Every operation must finish (no deadlock), the results must
// equal a reference computed with shi_reduce_scalar over all ranks' inputs
// (small integer inputs: float sums are exact in any order), and send
// buffers must be unchanged. The barrier is checked for causality: every
// rank finishes only after hearing, directly or not, from every rank.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/kernels/reduce.h"
#include "algo/kernels/reduce_impl.h"
#include "algo/net/net_gen.h"
#include "algo/net/sched.h"
#include "coll/select.h"
#include "base/error.h"
#include "core/request.h"
#include "test.h"
#include "../../tools/perf/mix.h"

#define SIM_MAXR 8
#define SIM_NBUF 3

static const int sim_nranks[] = { 1, 2, 3, 4, 5, 8 };
static const int sim_red_dtypes[]
    = { SHOAL_FLOAT32, SHOAL_INT32, SHOAL_BFLOAT16, SHOAL_INT8 };
static const int sim_ops[]
    = { SHOAL_SUM, SHOAL_MAX, SHOAL_AVG, SHOAL_PREMUL_SUM };
#define SIM_SCALAR 0.5 // PREMUL_SUM's: keeps small integers exact

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

// ---------------------------------------------------------------------------
// Random numbers and inputs
// ---------------------------------------------------------------------------

typedef struct sim_rng {
    uint64_t s;
} sim_rng;

static uint64_t
sim_next(sim_rng *g)
{
    g->s += 0x9e3779b97f4a7c15ull;
    return perf_mix64(g->s);
}

static void
sim_put(int dtype, void *p, size_t i, int v)
{
    switch (dtype) {
        case SHOAL_INT8:
            ((int8_t *) p)[i] = (int8_t) v;
            break;
        case SHOAL_INT32:
            ((int32_t *) p)[i] = v;
            break;
        case SHOAL_FLOAT32:
            ((float *) p)[i] = (float) v;
            break;
        case SHOAL_BFLOAT16:
            ((uint16_t *) p)[i] = shi_f32_to_bf16((float) v);
            break;
        case SHOAL_FLOAT16:
            ((uint16_t *) p)[i] = shi_f32_to_f16((float) v);
            break;
        default:
            CHECK(!"dtype not used by this test");
    }
}

// ---------------------------------------------------------------------------
// One case
// ---------------------------------------------------------------------------

typedef struct sim_case {
    int             kind, algo, n, root, dtype, in_place;
    shoal_reduce_op op;
    size_t          count; // whole (all_reduce, reduce, broadcast) or per rank
    size_t          piece_bytes;
    int fuzz; // inputs not exact in float: compare ranks with each other
    int exact; // fuzz, and still equal to the reference bit for bit
} sim_case;

typedef struct sim_rank {
    shi_sched      s;
    shi_sched_call call;
    size_t         counts[SIM_MAXR], rcounts[SIM_MAXR];
    unsigned char *mem[SIM_NBUF]; // send area, receive area, scratch
    size_t         memsz[SIM_NBUF];
    int            bmem[SIM_NBUF]; // per shi_sbuf: which area
    size_t         bbase[SIM_NBUF], bsize[SIM_NBUF];
    unsigned char *input; // this rank's input (send view), or root's bcast
    size_t         input_bytes;
    unsigned char *send_before; // the send area after initialisation
    // Execution.
    uint8_t        *st; // 0 waiting, 1 in flight, 2 done
    int            *pend, *match, *dfirst, *dlist;
    uint8_t        *inset;
    unsigned char **snap;
    uint32_t       *know; // barrier: ranks heard from, per operation
} sim_rank;

typedef struct sim_world {
    sim_case c;
    size_t   es;
    sim_rank rk[SIM_MAXR];
    char     name[200];
} sim_world;

static int
sim_reduces(int kind)
{
    return kind == SHI_OP_ALLREDUCE || kind == SHI_OP_REDUCE
        || kind == SHI_OP_REDUCE_SCATTER || kind == SHI_OP_REDUCE_SCATTERV;
}

// Per-rank counts of the v-collectives: some zero, the others unequal.
static size_t
sim_vcount(size_t count, int p)
{
    return count == 0 || p % 3 == 1 ? 0 : count + (size_t) p;
}

// all_to_all_v: elements rank r sends to rank p.
static size_t
sim_a2a(const sim_case *c, int r, int p)
{
    if (c->kind == SHI_OP_ALLTOALL) {
        return c->count;
    }
    return c->count == 0 || (r + 2 * p) % 3 == 0
        ? 0
        : c->count + (size_t) r + 2 * (size_t) p;
}

static size_t
sim_block(const sim_world *w, int p)
{
    const sim_case *c = &w->c;

    if (c->kind == SHI_OP_ALLGATHERV || c->kind == SHI_OP_REDUCE_SCATTERV) {
        return sim_vcount(c->count, p);
    }
    return c->count;
}

static size_t
sim_displ(const sim_world *w, int p)
{
    size_t d = 0;

    for (int q = 0; q < p; q++) {
        d += sim_block(w, q);
    }
    return d;
}

// Sizes (bytes) and aliasing of each rank's three buffers.
static void
sim_layout(sim_world *w, int r)
{
    const sim_case *c  = &w->c;
    sim_rank       *R  = &w->rk[r];
    size_t          es = w->es, n = (size_t) c->n;
    size_t total = sim_displ(w, c->n) * es, own = sim_block(w, r) * es;
    size_t send = 0, recv = 0;
    int    root = r == c->root, ip = c->in_place;
    // In place: which view lies inside the other's area, and where.
    int    send_in_recv = 0, recv_in_send = 0;
    size_t alias = 0;

    switch (c->kind) {
        case SHI_OP_ALLREDUCE:
            send = recv  = c->count * es;
            send_in_recv = ip;
            break;
        case SHI_OP_REDUCE:
            send         = c->count * es;
            recv         = root ? c->count * es : 0;
            send_in_recv = ip && root;
            break;
        case SHI_OP_ALLGATHER:
        case SHI_OP_ALLGATHERV:
            send         = own;
            recv         = total;
            send_in_recv = ip;
            alias        = sim_displ(w, r) * es;
            break;
        case SHI_OP_REDUCE_SCATTER:
        case SHI_OP_REDUCE_SCATTERV:
            send         = total;
            recv         = own;
            recv_in_send = ip;
            alias        = sim_displ(w, r) * es;
            break;
        case SHI_OP_ALLTOALL:
        case SHI_OP_ALLTOALLV:
            for (int p = 0; p < c->n; p++) {
                send += sim_a2a(c, r, p) * es;
                recv += sim_a2a(c, p, r) * es;
            }
            break;
        case SHI_OP_GATHER:
            send         = c->count * es;
            recv         = root ? n * c->count * es : 0;
            send_in_recv = ip && root;
            alias        = (size_t) c->root * c->count * es;
            break;
        case SHI_OP_SCATTER:
            send         = root ? n * c->count * es : 0;
            recv         = c->count * es;
            recv_in_send = ip && root;
            alias        = (size_t) c->root * c->count * es;
            break;
        case SHI_OP_BCAST:
            recv = c->count * es;
            break;
        default: // barrier
            break;
    }
    R->bsize[SHI_SBUF_SEND] = send;
    R->bsize[SHI_SBUF_RECV] = recv;
    R->bmem[SHI_SBUF_SEND]  = 0;
    R->bmem[SHI_SBUF_RECV]  = 1;
    R->memsz[0]             = send;
    R->memsz[1]             = recv;
    if (send_in_recv) {
        R->bmem[SHI_SBUF_SEND]  = 1;
        R->bbase[SHI_SBUF_SEND] = alias;
        R->memsz[0]             = 0;
    }
    if (recv_in_send) {
        R->bmem[SHI_SBUF_RECV]  = 0;
        R->bbase[SHI_SBUF_RECV] = alias;
        R->memsz[1]             = 0;
    }
    R->bmem[SHI_SBUF_SCRATCH] = 2;
}

static void
sim_fill_random(unsigned char *p, size_t bytes, sim_rng *g)
{
    for (size_t i = 0; i < bytes; i++) {
        p[i] = (unsigned char) sim_next(g);
    }
}

static unsigned char *
sim_ptr(sim_rank *R, int buf, uint64_t off)
{
    return R->mem[R->bmem[buf]] + R->bbase[buf] + off;
}

// Input element i of a fuzz case: sums that round, and signed zeros for
// MIN/MAX, whose results depend on the order of the operands.
static void
sim_fuzz_input(const sim_case *c, unsigned char *input, size_t i, sim_rng *g)
{
    static const float pick[] = { -0.0f, 0.0f, 1.0f, -1.0f };
    int   minmax = c->op.kind == SHOAL_MIN || c->op.kind == SHOAL_MAX;
    float f = !minmax ? (float) ((int) (sim_next(g) % 20001) - 10000) / 997.0f
                      : pick[sim_next(g) % 4];

    if (c->dtype == SHOAL_FLOAT32) {
        memcpy(input + i * sizeof(f), &f, sizeof(f));
    } else if (c->dtype == SHOAL_FLOAT16) {
        ((uint16_t *) input)[i] = shi_f32_to_f16(f);
    } else {
        ((uint16_t *) input)[i] = shi_f32_to_bf16(f);
    }
}

// Builds every rank's schedule and its memory with inputs in place.
static void
sim_setup(sim_world *w, uint64_t seed)
{
    const sim_case *c = &w->c;
    sim_rng         g = { seed * 0x10001 + (uint64_t) c->n * 77 + c->count };

    w->es = shoal_dtype_size(c->dtype);
    for (int r = 0; r < c->n; r++) {
        sim_rank *R = &w->rk[r];
        memset(R, 0, sizeof(*R));
        sim_layout(w, r);
        for (int p = 0; p < c->n; p++) {
            R->counts[p]  = c->kind == SHI_OP_ALLTOALLV ? sim_a2a(c, r, p)
                                                        : sim_block(w, p);
            R->rcounts[p] = sim_a2a(c, p, r);
        }
        int v = c->kind == SHI_OP_ALLGATHERV
            || c->kind == SHI_OP_REDUCE_SCATTERV
            || c->kind == SHI_OP_ALLTOALLV;
        R->call = (shi_sched_call) { .kind = c->kind,
            .algo                          = c->algo,
            .rank                          = r,
            .nranks                        = c->n,
            .root                          = c->root,
            .dtype                         = c->dtype,
            .count                         = c->count,
            .esize                         = w->es,
            .counts                        = v ? R->counts : NULL,
            .rcounts     = c->kind == SHI_OP_ALLTOALLV ? R->rcounts : NULL,
            .op          = c->op,
            .in_place    = c->in_place,
            .piece_bytes = c->piece_bytes };
        int st  = shi_sched_build(&R->s, &R->call);
        CHECK_MSG(st == SHOAL_OK, "%s rank %d: build failed: %s: %s", w->name,
            r, shoal_status_name(st), shi_error_text());
        R->memsz[2]                = R->s.scratch_bytes;
        R->bsize[SHI_SBUF_SCRATCH] = R->s.scratch_bytes;
        for (int m = 0; m < SIM_NBUF; m++) {
            R->mem[m] = malloc(R->memsz[m] + 1);
            CHECK(R->mem[m] != NULL);
            sim_fill_random(R->mem[m], R->memsz[m], &g);
        }

        // The input: the send view, or the root's buffer of a broadcast.
        int in_buf = c->kind == SHI_OP_BCAST ? SHI_SBUF_RECV : SHI_SBUF_SEND;
        R->input_bytes
            = c->kind == SHI_OP_BCAST && r != c->root ? 0 : R->bsize[in_buf];
        R->input = malloc(R->input_bytes + 1);
        CHECK(R->input != NULL);
        for (size_t i = 0; i < R->input_bytes / w->es; i++) {
            if (c->fuzz) {
                sim_fuzz_input(c, R->input, i, &g);
            } else if (sim_reduces(c->kind)) {
                int val = (int) (sim_next(&g) % 17) - 8;
                sim_put(c->dtype, R->input, i, val);
            } else {
                sim_fill_random(R->input + i * w->es, w->es, &g);
            }
        }
        memcpy(sim_ptr(R, in_buf, 0), R->input, R->input_bytes);
        R->send_before = malloc(R->memsz[0] + 1);
        CHECK(R->send_before != NULL);
        memcpy(R->send_before, R->mem[0], R->memsz[0]);
    }
}

static void
sim_teardown(sim_world *w)
{
    for (int r = 0; r < w->c.n; r++) {
        sim_rank *R = &w->rk[r];
        shi_sched_free(&R->s);
        for (int m = 0; m < SIM_NBUF; m++) {
            free(R->mem[m]);
        }
        free(R->input);
        free(R->send_before);
        free(R->st);
        free(R->pend);
        free(R->match);
        free(R->dfirst);
        free(R->dlist);
        free(R->inset);
        if (R->snap != NULL) {
            for (int i = 0; i < R->s.nops; i++) {
                free(R->snap[i]);
            }
        }
        free(R->snap);
        free(R->know);
    }
}

// ---------------------------------------------------------------------------
// Static checks
// ---------------------------------------------------------------------------

typedef struct sim_access {
    int      area, op, write;
    uint64_t lo, hi;
} sim_access;

static int
sim_access_cmp(const void *a, const void *b)
{
    const sim_access *x = a, *y = b;

    if (x->area != y->area) {
        return x->area < y->area ? -1 : 1;
    }
    if (x->lo != y->lo) {
        return x->lo < y->lo ? -1 : 1;
    }
    return x->op < y->op ? -1 : x->op > y->op;
}

static const char *
sim_kind_name(int k)
{
    static const char *const names[] = { "?", "SEND", "RECV", "REDUCE", "COPY",
        "PREMUL", "AVG", "REDUCE_ALL", "JOIN" };

    return k >= 1 && k <= SHI_SOP_JOIN ? names[k] : "?";
}

// One operand: inside its buffer, element-aligned where it holds elements,
// recorded for the hazard check.
static void
sim_operand(sim_world *w, int r, int i, int buf, uint64_t off, uint64_t bytes,
    int write, sim_access *acc, int *nacc)
{
    sim_rank *R = &w->rk[r];

    CHECK_MSG(buf >= 0 && buf < SIM_NBUF, "%s rank %d op %d: buffer %d",
        w->name, r, i, buf);
    CHECK_MSG(off <= R->bsize[buf] && bytes <= R->bsize[buf] - off,
        "%s rank %d op %d (%s): [%llu, +%llu) outside buffer %d of %zu bytes",
        w->name, r, i, sim_kind_name(R->s.ops[i].kind),
        (unsigned long long) off, (unsigned long long) bytes, buf,
        R->bsize[buf]);
    CHECK_MSG(!write || buf != SHI_SBUF_SEND,
        "%s rank %d op %d (%s) writes the send buffer", w->name, r, i,
        sim_kind_name(R->s.ops[i].kind));
    CHECK_MSG(off % w->es == 0 && bytes % w->es == 0,
        "%s rank %d op %d: offset %llu / %llu bytes not whole elements",
        w->name, r, i, (unsigned long long) off, (unsigned long long) bytes);
    if (bytes == 0) {
        return;
    }
    uint64_t lo    = R->bbase[buf] + off;
    acc[(*nacc)++] = (sim_access) { .area = R->bmem[buf],
        .op                               = i,
        .write                            = write,
        .lo                               = lo,
        .hi                               = lo + bytes };
}

// Two operands of one operation: the same place or disjoint.
static void
sim_same_or_apart(sim_world *w, int r, int i, int b1, uint64_t o1, int b2,
    uint64_t o2, uint64_t bytes)
{
    sim_rank *R = &w->rk[r];
    uint64_t  x = R->bbase[b1] + o1, y = R->bbase[b2] + o2;

    if (R->bmem[b1] != R->bmem[b2] || x == y) {
        return;
    }
    CHECK_MSG(x + bytes <= y || y + bytes <= x,
        "%s rank %d op %d (%s): operands overlap partly", w->name, r, i,
        sim_kind_name(R->s.ops[i].kind));
}

// REDUCE_ALL: this rank's input, the n - 1 others', the result (each of
// those the result's place or apart from it).
static void
sim_check_reduce_all(sim_world *w, int r, int i, sim_access *acc, int *nacc)
{
    const shi_sop *o = &w->rk[r].s.ops[i];

    CHECK(sim_reduces(w->c.kind));
    CHECK(o->bytes > 0);
    sim_operand(w, r, i, o->src, o->src_off, o->bytes, 0, acc, nacc);
    sim_operand(w, r, i, o->dst, o->dst_off, o->bytes, 1, acc, nacc);
    sim_same_or_apart(
        w, r, i, o->dst, o->dst_off, o->src, o->src_off, o->bytes);
    for (int k = 0; k + 1 < w->c.n; k++) {
        uint64_t off = o->src2_off + (uint64_t) k * o->step;
        CHECK(k == 0 || o->step >= o->bytes);
        sim_operand(w, r, i, o->src2, off, o->bytes, 0, acc, nacc);
        sim_same_or_apart(w, r, i, o->dst, o->dst_off, o->src2, off, o->bytes);
    }
}

static void
sim_check_rank(sim_world *w, int r)
{
    sim_rank   *R    = &w->rk[r];
    int         nops = R->s.nops;
    sim_access *acc
        = malloc(sizeof(*acc) * (size_t) ((SIM_MAXR + 1) * nops + 1));
    int nacc = 0;

    CHECK(acc != NULL);
    for (int i = 0; i < nops; i++) {
        const shi_sop *o = &R->s.ops[i];
        for (int d = 0; d < 2; d++) {
            CHECK_MSG(o->dep[d] == SHI_SOP_NODEP
                    || (o->dep[d] >= 0 && o->dep[d] < i),
                "%s rank %d op %d: dependency %d", w->name, r, i,
                (int) o->dep[d]);
        }
        switch (o->kind) {
            case SHI_SOP_SEND:
            case SHI_SOP_RECV:
                CHECK_MSG(o->peer >= 0 && o->peer < w->c.n && o->peer != r,
                    "%s rank %d op %d: peer %d", w->name, r, i, (int) o->peer);
                if (o->kind == SHI_SOP_SEND) {
                    sim_operand(
                        w, r, i, o->src, o->src_off, o->bytes, 0, acc, &nacc);
                } else {
                    sim_operand(
                        w, r, i, o->dst, o->dst_off, o->bytes, 1, acc, &nacc);
                }
                break;
            case SHI_SOP_REDUCE:
                CHECK(sim_reduces(w->c.kind));
                CHECK(o->bytes > 0);
                sim_operand(
                    w, r, i, o->src, o->src_off, o->bytes, 0, acc, &nacc);
                sim_operand(
                    w, r, i, o->src2, o->src2_off, o->bytes, 0, acc, &nacc);
                sim_operand(
                    w, r, i, o->dst, o->dst_off, o->bytes, 1, acc, &nacc);
                sim_same_or_apart(
                    w, r, i, o->dst, o->dst_off, o->src, o->src_off, o->bytes);
                sim_same_or_apart(w, r, i, o->dst, o->dst_off, o->src2,
                    o->src2_off, o->bytes);
                break;
            case SHI_SOP_COPY:
            case SHI_SOP_PREMUL:
                CHECK(o->kind == SHI_SOP_COPY
                    || w->c.op.kind == SHOAL_PREMUL_SUM);
                CHECK(o->bytes > 0);
                sim_operand(
                    w, r, i, o->src, o->src_off, o->bytes, 0, acc, &nacc);
                sim_operand(
                    w, r, i, o->dst, o->dst_off, o->bytes, 1, acc, &nacc);
                sim_same_or_apart(
                    w, r, i, o->dst, o->dst_off, o->src, o->src_off, o->bytes);
                break;
            case SHI_SOP_AVG:
                CHECK(w->c.op.kind == SHOAL_AVG);
                CHECK(o->bytes > 0);
                sim_operand(
                    w, r, i, o->dst, o->dst_off, o->bytes, 1, acc, &nacc);
                break;
            case SHI_SOP_REDUCE_ALL:
                sim_check_reduce_all(w, r, i, acc, &nacc);
                break;
            case SHI_SOP_JOIN:
                CHECK(o->bytes == 0 && o->dep[1] != SHI_SOP_NODEP);
                break;
            default:
                CHECK_MSG(0, "%s rank %d op %d: kind %d", w->name, r, i,
                    (int) o->kind);
        }
    }

    // Ancestors of every operation, as bit sets.
    size_t    words = (size_t) nops / 64 + 1;
    uint64_t *anc   = calloc((size_t) nops * words + 1, sizeof(uint64_t));
    CHECK(anc != NULL);
    for (int i = 0; i < nops; i++) {
        for (int d = 0; d < 2; d++) {
            int p = R->s.ops[i].dep[d];
            if (p < 0) {
                continue;
            }
            for (size_t k = 0; k < words; k++) {
                anc[(size_t) i * words + k] |= anc[(size_t) p * words + k];
            }
            anc[(size_t) i * words + (size_t) p / 64] |= 1ull << (p % 64);
        }
    }
    // Overlapping accesses, one a write, of different operations: the
    // later must depend on the earlier.
    qsort(acc, (size_t) nacc, sizeof(*acc), sim_access_cmp);
    for (int a = 0; a < nacc; a++) {
        for (int b = a + 1;
             b < nacc && acc[b].area == acc[a].area && acc[b].lo < acc[a].hi;
             b++) {
            if (acc[a].op == acc[b].op || (!acc[a].write && !acc[b].write)) {
                continue;
            }
            int lo = acc[a].op < acc[b].op ? acc[a].op : acc[b].op;
            int hi = acc[a].op < acc[b].op ? acc[b].op : acc[a].op;
            CHECK_MSG(
                anc[(size_t) hi * words + (size_t) lo / 64] >> (lo % 64) & 1,
                "%s rank %d: ops %d (%s) and %d (%s) touch the same bytes "
                "(area %d, [%llu, %llu)) without an order",
                w->name, r, lo, sim_kind_name(R->s.ops[lo].kind), hi,
                sim_kind_name(R->s.ops[hi].kind), acc[a].area,
                (unsigned long long) acc[b].lo,
                (unsigned long long) acc[a].hi);
        }
    }
    free(anc);
    free(acc);
}

// The k-th SEND from r to p pairs with the k-th RECV from r at p: same
// number, same sizes. Fills match[] on both sides.
static void
sim_pair(sim_world *w)
{
    int n = w->c.n;

    for (int r = 0; r < n; r++) {
        sim_rank *R = &w->rk[r];
        R->match    = malloc(sizeof(int) * (size_t) (R->s.nops + 1));
        CHECK(R->match != NULL);
        for (int i = 0; i < R->s.nops; i++) {
            R->match[i] = -1;
        }
    }
    for (int r = 0; r < n; r++) {
        for (int p = 0; p < n; p++) {
            sim_rank *S = &w->rk[r], *D = &w->rk[p];
            int       i = 0, j = 0, k = 0;
            for (;;) {
                while (i < S->s.nops
                    && !(S->s.ops[i].kind == SHI_SOP_SEND
                        && S->s.ops[i].peer == p)) {
                    i++;
                }
                while (j < D->s.nops
                    && !(D->s.ops[j].kind == SHI_SOP_RECV
                        && D->s.ops[j].peer == r)) {
                    j++;
                }
                if (i == S->s.nops || j == D->s.nops) {
                    break;
                }
                CHECK_MSG(S->s.ops[i].bytes == D->s.ops[j].bytes,
                    "%s: message %d from %d to %d: %llu bytes sent (op %d), "
                    "%llu received (op %d)",
                    w->name, k, r, p, (unsigned long long) S->s.ops[i].bytes,
                    i, (unsigned long long) D->s.ops[j].bytes, j);
                S->match[i] = j;
                D->match[j] = i;
                i++, j++, k++;
            }
            CHECK_MSG(i == S->s.nops && j == D->s.nops,
                "%s: %d to %d: %s after %d paired messages", w->name, r, p,
                i < S->s.nops ? "a SEND without a RECV"
                              : "a RECV without a SEND",
                k);
        }
    }
}

// ---------------------------------------------------------------------------
// The simulator
// ---------------------------------------------------------------------------

typedef struct sim_item {
    int r, i;
} sim_item;

typedef struct sim_run {
    sim_world *w;
    sim_rng    g;
    int        eager;
    sim_item  *cand;
    int        ncand;
} sim_run;

static void
sim_add(sim_run *x, int r, int i)
{
    sim_rank *R = &x->w->rk[r];

    if (!R->inset[i]) {
        R->inset[i]         = 1;
        x->cand[x->ncand++] = (sim_item) { r, i };
    }
}

static void
sim_finish(sim_run *x, int r, int i)
{
    sim_rank *R = &x->w->rk[r];

    R->st[i] = 2;
    for (int k = R->dfirst[i]; k < R->dfirst[i + 1]; k++) {
        int d = R->dlist[k];
        if (--R->pend[d] == 0) {
            sim_add(x, r, d);
        }
    }
}

// The partner of a transfer (r, i) just started: who may complete now.
static void
sim_started_transfer(sim_run *x, int r, int i)
{
    sim_rank      *R = &x->w->rk[r];
    const shi_sop *o = &R->s.ops[i];
    int            p = o->peer, j = R->match[i];
    sim_rank      *P = &x->w->rk[p];

    if (o->kind == SHI_SOP_SEND && x->eager) {
        sim_add(x, r, i);
    }
    if (P->st[j] >= 1) {
        sim_add(x, r, i);
        if (P->st[j] == 1) {
            sim_add(x, p, j);
        }
    }
}

static void
sim_start(sim_run *x, int r, int i)
{
    sim_world     *w   = x->w;
    sim_rank      *R   = &w->rk[r];
    const shi_sop *o   = &R->s.ops[i];
    size_t         cnt = o->bytes / w->es;
    int            n   = w->c.n;

    switch (o->kind) {
        case SHI_SOP_SEND:
            R->snap[i] = malloc(o->bytes + 1);
            CHECK(R->snap[i] != NULL);
            memcpy(R->snap[i], sim_ptr(R, o->src, o->src_off), o->bytes);
            R->st[i] = 1;
            sim_started_transfer(x, r, i);
            return;
        case SHI_SOP_RECV:
            sim_fill_random(sim_ptr(R, o->dst, o->dst_off), o->bytes, &x->g);
            R->st[i] = 1;
            sim_started_transfer(x, r, i);
            return;
        case SHI_SOP_REDUCE: {
            shoal_reduce_op op = w->c.op;
            if (op.kind == SHOAL_AVG || op.kind == SHOAL_PREMUL_SUM) {
                op = SHOAL_REDUCE_OP(SHOAL_SUM);
            }
            const void *in[2] = { sim_ptr(R, o->src, o->src_off),
                sim_ptr(R, o->src2, o->src2_off) };
            shi_reduce_scalar(
                w->c.dtype, op, sim_ptr(R, o->dst, o->dst_off), in, 2, cnt);
            break;
        }
        case SHI_SOP_COPY:
            memmove(sim_ptr(R, o->dst, o->dst_off),
                sim_ptr(R, o->src, o->src_off), o->bytes);
            break;
        case SHI_SOP_PREMUL: {
            const void *in[1] = { sim_ptr(R, o->src, o->src_off) };
            shi_reduce_scalar(w->c.dtype, SHOAL_PREMUL_SUM_OP(w->c.op.scalar),
                sim_ptr(R, o->dst, o->dst_off), in, 1, cnt);
            break;
        }
        case SHI_SOP_AVG:
            shi_reduce_divide(
                w->c.dtype, sim_ptr(R, o->dst, o->dst_off), cnt, n);
            break;
        case SHI_SOP_REDUCE_ALL: {
            const void *in[SIM_MAXR];
            for (int q = 0, k = 0; q < n; q++) {
                in[q] = q == r ? sim_ptr(R, o->src, o->src_off)
                               : sim_ptr(R, o->src2,
                                   o->src2_off + o->step * (uint64_t) k++);
            }
            shi_reduce_scalar(w->c.dtype, w->c.op,
                sim_ptr(R, o->dst, o->dst_off), in, n, cnt);
            break;
        }
        case SHI_SOP_JOIN:
            break;
        default:
            CHECK(0);
    }
    sim_finish(x, r, i);
}

static void
sim_complete(sim_run *x, int r, int i)
{
    sim_world     *w = x->w;
    sim_rank      *R = &w->rk[r];
    const shi_sop *o = &R->s.ops[i];

    if (o->kind == SHI_SOP_SEND) {
        CHECK_MSG(
            memcmp(R->snap[i], sim_ptr(R, o->src, o->src_off), o->bytes) == 0,
            "%s rank %d: the source of SEND %d changed while in flight",
            w->name, r, i);
    } else {
        const sim_rank *P = &w->rk[o->peer];
        memcpy(sim_ptr(R, o->dst, o->dst_off), P->snap[R->match[i]], o->bytes);
    }
    sim_finish(x, r, i);
}

static void
sim_execute(sim_world *w, uint64_t seed)
{
    int     n     = w->c.n;
    int     total = 0;
    sim_run x     = { .w = w, .g = { seed * 7919 + 1 }, .eager = seed & 1 };

    for (int r = 0; r < n; r++) {
        sim_rank *R    = &w->rk[r];
        int       nops = R->s.nops;
        total += nops;
        free(R->st);
        free(R->pend);
        free(R->inset);
        free(R->dfirst);
        free(R->dlist);
        if (R->snap != NULL) {
            for (int i = 0; i < nops; i++) {
                free(R->snap[i]);
            }
            free(R->snap);
        }
        R->st     = calloc((size_t) nops + 1, 1);
        R->inset  = calloc((size_t) nops + 1, 1);
        R->pend   = calloc((size_t) nops + 1, sizeof(int));
        R->dfirst = calloc((size_t) nops + 2, sizeof(int));
        R->dlist  = calloc((size_t) 2 * nops + 1, sizeof(int));
        R->snap   = calloc((size_t) nops + 1, sizeof(*R->snap));
        CHECK(
            R->st && R->inset && R->pend && R->dfirst && R->dlist && R->snap);
        // Dependents, as compressed lists.
        for (int i = 0; i < nops; i++) {
            const int32_t *d = R->s.ops[i].dep;
            for (int k = 0; k < 2; k++) {
                if (d[k] >= 0 && (k == 0 || d[1] != d[0])) {
                    R->dfirst[d[k] + 1]++;
                    R->pend[i]++;
                }
            }
        }
        for (int i = 0; i < nops; i++) {
            R->dfirst[i + 1] += R->dfirst[i];
        }
        int *fill = calloc((size_t) nops + 1, sizeof(int));
        CHECK(fill != NULL);
        for (int i = 0; i < nops; i++) {
            const int32_t *d = R->s.ops[i].dep;
            for (int k = 0; k < 2; k++) {
                if (d[k] >= 0 && (k == 0 || d[1] != d[0])) {
                    R->dlist[R->dfirst[d[k]] + fill[d[k]]++] = i;
                }
            }
        }
        free(fill);
    }
    x.cand = malloc(sizeof(sim_item) * ((size_t) total + 1));
    CHECK(x.cand != NULL);
    for (int r = 0; r < n; r++) {
        for (int i = 0; i < w->rk[r].s.nops; i++) {
            if (w->rk[r].pend[i] == 0) {
                sim_add(&x, r, i);
            }
        }
    }
    while (x.ncand > 0) {
        int      k              = (int) (sim_next(&x.g) % (uint64_t) x.ncand);
        sim_item it             = x.cand[k];
        x.cand[k]               = x.cand[--x.ncand];
        w->rk[it.r].inset[it.i] = 0;
        if (w->rk[it.r].st[it.i] == 0) {
            sim_start(&x, it.r, it.i);
        } else {
            sim_complete(&x, it.r, it.i);
        }
    }
    free(x.cand);
    for (int r = 0; r < n; r++) {
        for (int i = 0; i < w->rk[r].s.nops; i++) {
            CHECK_MSG(w->rk[r].st[i] == 2,
                "%s (seed %llu, %s): deadlock: rank %d op %d (%s) %s", w->name,
                (unsigned long long) seed, x.eager ? "eager" : "rendezvous", r,
                i, sim_kind_name(w->rk[r].s.ops[i].kind),
                w->rk[r].st[i] ? "never completed" : "never started");
        }
    }
}

// ---------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------

static void
sim_expect(sim_world *w, int r, const unsigned char *want, size_t bytes,
    const char *what)
{
    sim_rank            *R   = &w->rk[r];
    const unsigned char *got = sim_ptr(R, SHI_SBUF_RECV, 0);

    CHECK_MSG(
        R->bsize[SHI_SBUF_RECV] >= bytes, "%s: receive buffer size", w->name);
    for (size_t b = 0; b < bytes; b++) {
        CHECK_MSG(got[b] == want[b],
            "%s rank %d: %s: byte %zu (element %zu) is %02x, want %02x",
            w->name, r, what, b, b / w->es, got[b], want[b]);
    }
}

// Reduction over all ranks' inputs of `cnt` elements at element `at`.
static void
sim_reference(sim_world *w, unsigned char *out, size_t at, size_t cnt)
{
    const void *in[SIM_MAXR];

    for (int p = 0; p < w->c.n; p++) {
        in[p] = w->rk[p].input + at * w->es;
    }
    shi_reduce_scalar(w->c.dtype, w->c.op, out, in, w->c.n, cnt);
}

static void
sim_verify(sim_world *w)
{
    const sim_case *c  = &w->c;
    int             n  = c->n;
    size_t          es = w->es;

    if (c->fuzz && !c->exact) {
        // Every rank the same bits (not rank 0's own order necessarily).
        for (int r = 1; r < n; r++) {
            sim_expect(w, r, sim_ptr(&w->rk[0], SHI_SBUF_RECV, 0),
                c->count * es, "same bits as rank 0");
        }
        return;
    }
    for (int r = 0; r < n; r++) {
        sim_rank      *R     = &w->rk[r];
        size_t         bytes = 0;
        unsigned char *want
            = malloc(R->bsize[SHI_SBUF_RECV] + c->count * es + 1);
        CHECK(want != NULL);
        switch (c->kind) {
            case SHI_OP_ALLREDUCE:
            case SHI_OP_REDUCE:
                if (c->kind == SHI_OP_ALLREDUCE || r == c->root) {
                    bytes = c->count * es;
                    sim_reference(w, want, 0, c->count);
                }
                break;
            case SHI_OP_REDUCE_SCATTER:
            case SHI_OP_REDUCE_SCATTERV:
                bytes = sim_block(w, r) * es;
                sim_reference(w, want, sim_displ(w, r), sim_block(w, r));
                break;
            case SHI_OP_ALLGATHER:
            case SHI_OP_ALLGATHERV:
            case SHI_OP_GATHER:
                if (c->kind == SHI_OP_GATHER && r != c->root) {
                    break;
                }
                for (int p = 0; p < n; p++) {
                    memcpy(want + bytes, w->rk[p].input, w->rk[p].input_bytes);
                    bytes += w->rk[p].input_bytes;
                }
                break;
            case SHI_OP_ALLTOALL:
            case SHI_OP_ALLTOALLV:
                for (int p = 0; p < n; p++) {
                    size_t from = 0;
                    for (int q = 0; q < r; q++) {
                        from += sim_a2a(c, p, q) * es;
                    }
                    memcpy(want + bytes, w->rk[p].input + from,
                        sim_a2a(c, p, r) * es);
                    bytes += sim_a2a(c, p, r) * es;
                }
                break;
            case SHI_OP_SCATTER:
                bytes = c->count * es;
                memcpy(want, w->rk[c->root].input + (size_t) r * bytes, bytes);
                break;
            case SHI_OP_BCAST:
                bytes = c->count * es;
                memcpy(want, w->rk[c->root].input, bytes);
                break;
            default: // barrier
                break;
        }
        sim_expect(w, r, want, bytes, "result");
        free(want);
        // Send buffers are read only (in place, the send view is results).
        if (!c->in_place) {
            CHECK_MSG(memcmp(R->send_before, R->mem[0], R->memsz[0]) == 0,
                "%s rank %d: the send buffer changed", w->name, r);
        }
    }
}

// Barrier: a rank finishes after hearing, through messages and
// dependencies, from every rank.
static void
sim_check_barrier(sim_world *w)
{
    int      n = w->c.n, changed = 1;
    uint32_t all = (1u << n) - 1;

    for (int r = 0; r < n; r++) {
        sim_rank *R = &w->rk[r];
        R->know     = calloc((size_t) R->s.nops + 1, sizeof(uint32_t));
        CHECK(R->know != NULL);
    }
    while (changed) {
        changed = 0;
        for (int r = 0; r < n; r++) {
            sim_rank *R = &w->rk[r];
            for (int i = 0; i < R->s.nops; i++) {
                const shi_sop *o = &R->s.ops[i];
                uint32_t       k = 1u << r;
                for (int d = 0; d < 2; d++) {
                    if (o->dep[d] >= 0) {
                        k |= R->know[o->dep[d]];
                    }
                }
                if (o->kind == SHI_SOP_RECV) {
                    k |= w->rk[o->peer].know[R->match[i]];
                }
                if (k != R->know[i]) {
                    R->know[i] = k;
                    changed    = 1;
                }
            }
        }
    }
    for (int r = 0; r < n; r++) {
        uint32_t k = 1u << r;
        for (int i = 0; i < w->rk[r].s.nops; i++) {
            k |= w->rk[r].know[i];
        }
        CHECK_MSG(k == all, "%s rank %d: finishes knowing only ranks %#x",
            w->name, r, k);
    }
}

// ---------------------------------------------------------------------------
// Driver
// ---------------------------------------------------------------------------

typedef struct sim_stats {
    long cases, ops, max_ops;
    long max_scratch;
} sim_stats;

static void
sim_one(const sim_case *c, int seeds, sim_stats *stats)
{
    sim_world *w = calloc(1, sizeof(*w));

    CHECK(w != NULL);
    w->c = *c;
    snprintf(w->name, sizeof(w->name),
        "%s/%s n=%d root=%d %s %s count=%zu piece=%zu%s",
        shi_op_kind_name(c->kind), shi_algo_name(c->algo), c->n, c->root,
        shoal_dtype_name(c->dtype), shoal_op_name(c->op.kind), c->count,
        c->piece_bytes, c->in_place ? " in-place" : "");
    sim_setup(w, 0);
    for (int r = 0; r < c->n; r++) {
        sim_check_rank(w, r);
        stats->ops += w->rk[r].s.nops;
        if (w->rk[r].s.nops > stats->max_ops) {
            stats->max_ops = w->rk[r].s.nops;
        }
        if ((long) w->rk[r].s.scratch_bytes > stats->max_scratch) {
            stats->max_scratch = (long) w->rk[r].s.scratch_bytes;
        }
    }
    sim_pair(w);
    if (c->kind == SHI_OP_BARRIER) {
        sim_check_barrier(w);
    }
    for (int seed = 0; seed < seeds; seed++) {
        if (seed > 0) {
            // Fresh inputs and garbage for the next run.
            sim_teardown(w);
            sim_setup(w, (uint64_t) seed);
            sim_pair(w);
        }
        sim_execute(w, (uint64_t) seed + 1);
        sim_verify(w);
    }
    sim_teardown(w);
    free(w);
    stats->cases++;
}

// Every (rank count, dtype, op, count, in place, root) of one kind and
// algorithm. Reductions use sim_red_dtypes and every valid op; data
// movement float16 and int8 (bytes are bytes).
static void
sim_matrix(int kind, int algo, const size_t *counts, size_t ncounts,
    int rooted, int has_in_place)
{
    static const int move_dtypes[] = { SHOAL_FLOAT16, SHOAL_INT8 };
    int              red           = sim_reduces(kind);
    const int       *dts           = red ? sim_red_dtypes : move_dtypes;
    size_t           ndts = red ? NELEMS(sim_red_dtypes) : NELEMS(move_dtypes);
    size_t           nops = red ? NELEMS(sim_ops) : 1;
    sim_stats        stats = { 0 };

    for (size_t a = 0; a < NELEMS(sim_nranks); a++) {
        int n = sim_nranks[a];
        for (size_t d = 0; d < ndts; d++) {
            for (size_t o = 0; o < nops; o++) {
                shoal_reduce_op op = SHOAL_REDUCE_OP(sim_ops[o]);
                if (sim_ops[o] == SHOAL_PREMUL_SUM) {
                    op = SHOAL_PREMUL_SUM_OP(SIM_SCALAR);
                }
                if (red && shi_reduce_check(dts[d], op) != SHOAL_OK) {
                    continue;
                }
                for (size_t k = 0; k < ncounts; k++) {
                    for (int ip = 0; ip <= has_in_place; ip++) {
                        for (int rt = 0; rt <= rooted && rt < n; rt++) {
                            sim_case c = { .kind = kind,
                                .algo            = algo,
                                .n               = n,
                                .root        = rt == 0 ? 0 : n - 1 - (n > 2),
                                .dtype       = dts[d],
                                .in_place    = ip,
                                .op          = op,
                                .count       = counts[k],
                                .piece_bytes = 64 };
                            // Vary the piece size now and then: 0 (no
                            // pieces) and an odd number of bytes.
                            if ((k + d + (size_t) ip) % 4 == 3) {
                                c.piece_bytes = (k % 2) ? 0 : 100;
                            }
                            // Seeds: every case twice (rendezvous, eager),
                            // the small worlds more often.
                            sim_one(&c, n <= 4 ? 3 : 2, &stats);
                        }
                    }
                }
            }
        }
    }
    printf("%s/%s: %ld cases, %ld operations, at most %ld per rank, "
           "scratch at most %ld bytes\n",
        shi_op_kind_name(kind), shi_algo_name(algo), stats.cases, stats.ops,
        stats.max_ops, stats.max_scratch);
}

// Whole-buffer counts (all_reduce, reduce, broadcast) and per-rank counts.
// The last of each needs several 64-byte pieces per block at 8 ranks.
static const size_t whole_counts[] = { 0, 1, 7, 1000, 2600 };
static const size_t rank_counts[]  = { 0, 1, 7, 1000 };

TEST(sched_allreduce)
{
    sim_matrix(SHI_OP_ALLREDUCE, SHI_ALGO_RING, whole_counts,
        NELEMS(whole_counts), 0, 1);
    sim_matrix(SHI_OP_ALLREDUCE, SHI_ALGO_RHD, whole_counts,
        NELEMS(whole_counts), 0, 1);
}

// Partners of recursive doubling, and all ranks of the ring, end with the
// same bits even where the order of operands matters: rounded float sums,
// MIN/MAX of -0.0 and 0.0.
TEST(sched_allreduce_same_bits)
{
    static const int    algos[] = { SHI_ALGO_RING, SHI_ALGO_RHD };
    static const int    ops[]   = { SHOAL_SUM, SHOAL_MIN, SHOAL_MAX };
    static const size_t cnts[]  = { 7, 1000 };
    sim_stats           stats   = { 0 };

    for (size_t a = 0; a < NELEMS(algos); a++) {
        for (size_t k = 1; k < NELEMS(sim_nranks); k++) {
            for (size_t o = 0; o < NELEMS(ops); o++) {
                for (size_t c = 0; c < NELEMS(cnts); c++) {
                    for (int ip = 0; ip <= 1; ip++) {
                        sim_case sc = { .kind = SHI_OP_ALLREDUCE,
                            .algo             = algos[a],
                            .n                = sim_nranks[k],
                            .dtype            = SHOAL_FLOAT32,
                            .in_place         = ip,
                            .op               = SHOAL_REDUCE_OP(ops[o]),
                            .count            = cnts[c],
                            .piece_bytes      = 64,
                            .fuzz             = 1 };
                        sim_one(&sc, 2, &stats);
                    }
                }
            }
        }
    }
}

// float16 and bfloat16 reduce like shared memory: every result equals
// shi_reduce over all ranks' inputs in rank order (float32 accumulation,
// one rounding) bit for bit, with inputs whose partial sums round.
TEST(sched_half_same_bits)
{
    static const int kinds[][2] = { { SHI_OP_ALLREDUCE, SHI_ALGO_RING },
        { SHI_OP_ALLREDUCE, SHI_ALGO_RHD }, { SHI_OP_REDUCE, SHI_ALGO_FLAT },
        { SHI_OP_REDUCE, SHI_ALGO_RING },
        { SHI_OP_REDUCE_SCATTER, SHI_ALGO_FLAT },
        { SHI_OP_REDUCE_SCATTER, SHI_ALGO_RING },
        { SHI_OP_REDUCE_SCATTERV, SHI_ALGO_RING } };
    static const int dts[]      = { SHOAL_FLOAT16, SHOAL_BFLOAT16 };
    static const int ops[]
        = { SHOAL_SUM, SHOAL_AVG, SHOAL_PREMUL_SUM, SHOAL_PROD, SHOAL_MIN };
    static const size_t cnts[] = { 7, 300 };
    sim_stats           stats  = { 0 };

    for (size_t k = 0; k < NELEMS(kinds); k++) {
        for (size_t a = 1; a < NELEMS(sim_nranks); a++) {
            for (size_t d = 0; d < NELEMS(dts); d++) {
                for (size_t o = 0; o < NELEMS(ops); o++) {
                    for (size_t c = 0; c < NELEMS(cnts); c++) {
                        sim_case sc = { .kind = kinds[k][0],
                            .algo             = kinds[k][1],
                            .n                = sim_nranks[a],
                            .root             = sim_nranks[a] - 1,
                            .dtype            = dts[d],
                            .in_place         = (int) (c + o) % 2,
                            .op               = SHOAL_REDUCE_OP(ops[o]),
                            .count            = cnts[c],
                            .piece_bytes      = 64,
                            .fuzz             = 1,
                            .exact            = 1 };
                        if (ops[o] == SHOAL_PREMUL_SUM) {
                            sc.op = SHOAL_PREMUL_SUM_OP(1.0 / 3.0);
                        }
                        sim_one(&sc, 2, &stats);
                    }
                }
            }
        }
    }
    printf("float16/bfloat16 as shared memory: %ld cases\n", stats.cases);
}

TEST(sched_reduce)
{
    sim_matrix(SHI_OP_REDUCE, SHI_ALGO_FLAT, whole_counts,
        NELEMS(whole_counts), 1, 1);
    sim_matrix(SHI_OP_REDUCE, SHI_ALGO_RING, whole_counts,
        NELEMS(whole_counts), 1, 1);
}

TEST(sched_reduce_scatter)
{
    sim_matrix(SHI_OP_REDUCE_SCATTER, SHI_ALGO_FLAT, rank_counts,
        NELEMS(rank_counts), 0, 1);
    sim_matrix(SHI_OP_REDUCE_SCATTER, SHI_ALGO_RING, rank_counts,
        NELEMS(rank_counts), 0, 1);
    sim_matrix(SHI_OP_REDUCE_SCATTERV, SHI_ALGO_FLAT, rank_counts,
        NELEMS(rank_counts), 0, 1);
    sim_matrix(SHI_OP_REDUCE_SCATTERV, SHI_ALGO_RING, rank_counts,
        NELEMS(rank_counts), 0, 1);
}

TEST(sched_data_movement)
{
    static const int ag[] = { SHI_OP_ALLGATHER, SHI_OP_ALLGATHERV };
    for (size_t i = 0; i < NELEMS(ag); i++) {
        sim_matrix(
            ag[i], SHI_ALGO_FLAT, rank_counts, NELEMS(rank_counts), 0, 1);
        sim_matrix(
            ag[i], SHI_ALGO_RING, rank_counts, NELEMS(rank_counts), 0, 1);
        sim_matrix(
            ag[i], SHI_ALGO_BRUCK, rank_counts, NELEMS(rank_counts), 0, 1);
    }
    sim_matrix(SHI_OP_ALLTOALL, SHI_ALGO_FLAT, rank_counts,
        NELEMS(rank_counts), 0, 0);
    sim_matrix(SHI_OP_ALLTOALLV, SHI_ALGO_FLAT, rank_counts,
        NELEMS(rank_counts), 0, 0);
    sim_matrix(
        SHI_OP_GATHER, SHI_ALGO_FLAT, rank_counts, NELEMS(rank_counts), 1, 1);
    sim_matrix(
        SHI_OP_SCATTER, SHI_ALGO_FLAT, rank_counts, NELEMS(rank_counts), 1, 1);
    sim_matrix(
        SHI_OP_BCAST, SHI_ALGO_FLAT, whole_counts, NELEMS(whole_counts), 1, 0);
    sim_matrix(
        SHI_OP_BCAST, SHI_ALGO_RING, whole_counts, NELEMS(whole_counts), 1, 0);
}

TEST(sched_barrier)
{
    static const size_t none[] = { 0 };

    sim_matrix(SHI_OP_BARRIER, SHI_ALGO_RHD, none, 1, 0, 0);
    // Every world size up to 8: ceil(log2 n) rounds of one message each.
    for (int n = 1; n <= SIM_MAXR; n++) {
        shi_sched_call call
            = { .kind = SHI_OP_BARRIER, .algo = SHI_ALGO_RHD, .nranks = n };
        for (int r = 0; r < n; r++) {
            shi_sched s      = { 0 };
            int       rounds = 0;
            call.rank        = r;
            CHECK_OK(shi_sched_build(&s, &call));
            while ((1 << rounds) < n) {
                rounds++;
            }
            CHECK(s.nops == 2 * rounds);
            CHECK(s.scratch_bytes == 0);
            shi_sched_free(&s);
        }
        sim_case  c  = { .kind = SHI_OP_BARRIER,
              .algo            = SHI_ALGO_RHD,
              .n               = n,
              .dtype           = SHOAL_INT8 };
        sim_stats st = { 0 };
        sim_one(&c, 3, &st);
    }
}

// Unsupported (kind, algorithm) pairs fail with a message naming both;
// bad calls fail with SHOAL_EINVAL.
TEST(sched_unsupported)
{
    static const struct {
        int kind, algo;
    } bad[] = {
        { SHI_OP_ALLREDUCE, SHI_ALGO_FLAT },
        { SHI_OP_ALLREDUCE, SHI_ALGO_ONESHOT },
        { SHI_OP_REDUCE, SHI_ALGO_RHD },
        { SHI_OP_ALLTOALL, SHI_ALGO_RING },
        { SHI_OP_GATHER, SHI_ALGO_RING },
        { SHI_OP_SCATTER, SHI_ALGO_RING },
        { SHI_OP_BCAST, SHI_ALGO_RHD },
        { SHI_OP_BARRIER, SHI_ALGO_FLAT },
        { SHI_OP_BARRIER, SHI_ALGO_FLAGS },
        { SHI_OP_SEND, SHI_ALGO_RING },
    };
    shi_sched s = { 0 };

    for (size_t i = 0; i < NELEMS(bad); i++) {
        shi_sched_call call = { .kind = bad[i].kind,
            .algo                     = bad[i].algo,
            .nranks                   = 2,
            .count                    = 4,
            .esize                    = 4,
            .piece_bytes              = 64 };
        CHECK_ST(shi_sched_build(&s, &call), SHOAL_ENOTSUP);
        CHECK_MSG(
            strstr(shi_error_text(), shi_op_kind_name(bad[i].kind)) != NULL
                && strstr(shi_error_text(), shi_algo_name(bad[i].algo))
                    != NULL,
            "message '%s' names neither %s nor %s", shi_error_text(),
            shi_op_kind_name(bad[i].kind), shi_algo_name(bad[i].algo));
        CHECK(s.nops == 0);
    }
    shi_sched_call call = { .kind = SHI_OP_ALLREDUCE,
        .algo                     = SHI_ALGO_RING,
        .rank                     = 2,
        .nranks                   = 2,
        .count                    = 4,
        .esize                    = 4 };
    CHECK_ST(shi_sched_build(&s, &call), SHOAL_EINVAL);
    call.rank = 0;
    call.kind = SHI_OP_REDUCE; // a root matters only where there is one
    call.root = 5;
    CHECK_ST(shi_sched_build(&s, &call), SHOAL_EINVAL);
    call.kind = SHI_OP_ALLREDUCE;
    CHECK_ST(shi_sched_build(&s, &call), SHOAL_OK);
    call.root = 0;
    call.kind = SHI_OP_ALLGATHERV;
    call.algo = SHI_ALGO_FLAT;
    CHECK_ST(shi_sched_build(&s, &call), SHOAL_EINVAL); // no counts
    call.kind  = SHI_OP_ALLREDUCE;
    call.algo  = SHI_ALGO_RING;
    call.esize = 0;
    CHECK_ST(shi_sched_build(&s, &call), SHOAL_EINVAL);
    shi_sched_free(&s);
}

// Operation counts and scratch of the ring all-reduce at real sizes; every
// message at most one piece.
static void
sched_ring_size(int nranks, size_t bytes, size_t piece, int in_place,
    int *nops, size_t *scratch, size_t max_msg)
{
    *nops    = 0;
    *scratch = 0;
    for (int r = 0; r < nranks; r++) {
        shi_sched      s    = { 0 };
        shi_sched_call call = { .kind = SHI_OP_ALLREDUCE,
            .algo                     = SHI_ALGO_RING,
            .rank                     = r,
            .nranks                   = nranks,
            .count                    = bytes / 4,
            .esize                    = 4,
            .op                       = SHOAL_REDUCE_OP(SHOAL_SUM),
            .in_place                 = in_place,
            .piece_bytes              = piece };
        CHECK_OK(shi_sched_build(&s, &call));
        for (int i = 0; i < s.nops; i++) {
            CHECK(s.ops[i].bytes <= max_msg);
        }
        if (s.nops > *nops) {
            *nops = s.nops;
        }
        if (s.scratch_bytes > *scratch) {
            *scratch = s.scratch_bytes;
        }
        shi_sched_free(&s);
    }
}

TEST(sched_op_counts)
{
    const size_t mib = 1024 * 1024;
    int          nops;
    size_t       scratch;

    // 2 ranks, 64 MiB, 1 MiB pieces: blocks of 32 MiB = 32 pieces; one
    // reduce-scatter step (send, receive, reduce per piece) and one
    // all-gather step (send, receive per piece).
    sched_ring_size(2, 64 * mib, mib, 0, &nops, &scratch, mib);
    printf("all_reduce ring, 2 ranks, 64 MiB, 1 MiB pieces: %d operations "
           "per rank, %zu scratch bytes\n",
        nops, scratch);
    CHECK(nops == 32 * 5);
    CHECK(scratch == 0);
    sched_ring_size(2, 64 * mib, mib, 1, &nops, &scratch, mib);
    printf("  in place: %d operations, %zu scratch bytes\n", nops, scratch);
    CHECK(nops == 32 * 5);
    // One slot per piece of a block (32), up to NET_POOL_SLOTS.
    CHECK(scratch == (NET_POOL_SLOTS < 32 ? NET_POOL_SLOTS : 32) * mib);
    // 8 ranks: 7 steps of each phase, 8 pieces per block.
    sched_ring_size(8, 64 * mib, mib, 0, &nops, &scratch, mib);
    printf("all_reduce ring, 8 ranks, 64 MiB, 1 MiB pieces: %d operations "
           "per rank\n",
        nops);
    CHECK(nops == 7 * 8 * 5);
    // A tiny piece size on a huge buffer does not explode the schedule.
    sched_ring_size(2, 1024 * mib, 64, 0, &nops, &scratch, mib / 2);
    CHECK(nops <= 5 * 1024 + 8);
}

// Piece sizes: rounded down to whole elements, never below one.
TEST(sched_pieces)
{
    static const size_t pieces[] = { 1, 6, 8, 64, 100 };

    for (size_t k = 0; k < NELEMS(pieces); k++) {
        for (int r = 0; r < 3; r++) {
            shi_sched      s    = { 0 };
            shi_sched_call call = { .kind = SHI_OP_BCAST,
                .algo                     = SHI_ALGO_RING,
                .rank                     = r,
                .nranks                   = 3,
                .root                     = 1,
                .count                    = 50,
                .esize                    = 8,
                .piece_bytes              = pieces[k] };
            size_t         pe   = pieces[k] / 8 > 0 ? pieces[k] / 8 : 1;
            CHECK_OK(shi_sched_build(&s, &call));
            for (int i = 0; i < s.nops; i++) {
                CHECK(s.ops[i].bytes % 8 == 0);
                CHECK(s.ops[i].bytes <= pe * 8);
            }
            // The chain is 1 -> 2 -> 0: rank 2 receives and forwards.
            size_t np = (50 + pe - 1) / pe;
            CHECK((size_t) s.nops == (r == 2 ? 2 * np : np));
            shi_sched_free(&s);
        }
    }
}

// shi_reduce_divide matches shi_reduce's AVG of (x, -0.0, ..., -0.0),
// whose sum is x exactly: the same division, bit for bit.
TEST(sched_reduce_divide)
{
    static const int dts[]
        = { SHOAL_UINT8, SHOAL_INT8, SHOAL_INT16, SHOAL_INT32, SHOAL_INT64,
              SHOAL_FLOAT16, SHOAL_BFLOAT16, SHOAL_FLOAT32, SHOAL_FLOAT64 };
    static const int ks[] = { 1, 2, 3, 5, 7, 8 };
    enum { N = 777 };
    sim_rng g = { 99 };

    for (size_t d = 0; d < NELEMS(dts); d++) {
        size_t         es = shoal_dtype_size(dts[d]);
        unsigned char *x = malloc(N * es), *z = malloc(N * es);
        unsigned char *want = malloc(N * es), *got = malloc(N * es);
        CHECK(x && z && want && got);
        for (size_t kk = 0; kk < NELEMS(ks); kk++) {
            int k = ks[kk];
            sim_fill_random(x, N * es, &g);
            // Some special values among the random bits.
            if (dts[d] == SHOAL_FLOAT32) {
                float sp[] = { 0.0f, -0.0f, 1.0f / 0.0f, -1.0f / 0.0f,
                    0.0f / 0.0f, 1e-45f, 3.0f, -7.0f };
                memcpy(x, sp, sizeof(sp));
            }
            memset(z, 0, N * es);
            for (size_t i = 0; i < N; i++) {
                if (dts[d] == SHOAL_FLOAT16 || dts[d] == SHOAL_BFLOAT16) {
                    ((uint16_t *) z)[i] = 0x8000u;
                } else if (dts[d] == SHOAL_FLOAT32) {
                    ((uint32_t *) z)[i] = 0x80000000u;
                } else if (dts[d] == SHOAL_FLOAT64) {
                    ((uint64_t *) z)[i] = 0x8000000000000000ull;
                }
            }
            const void *in[8] = { x, z, z, z, z, z, z, z };
            shi_reduce_scalar(
                dts[d], SHOAL_REDUCE_OP(SHOAL_AVG), want, in, k, N);
            memcpy(got, x, N * es);
            shi_reduce_divide(dts[d], got, N, k);
            for (size_t i = 0; i < N * es; i++) {
                CHECK_MSG(got[i] == want[i],
                    "%s / %d: element %zu byte %zu: %02x, want %02x",
                    shoal_dtype_name(dts[d]), k, i / es, i % es, got[i],
                    want[i]);
            }
        }
        free(x);
        free(z);
        free(want);
        free(got);
    }
}

// The trace printing covers every operation kind (output on stderr).
TEST(sched_dump)
{
    static const struct {
        int kind, op;
    } cases[] = {
        { SHI_OP_ALLREDUCE, SHOAL_PREMUL_SUM },
        { SHI_OP_ALLREDUCE, SHOAL_AVG },
        { SHI_OP_ALLGATHER, SHOAL_SUM },
    };

    setenv("SHOAL_DEBUG", "TRACE", 1);
    for (size_t i = 0; i < NELEMS(cases); i++) {
        shi_sched      s    = { 0 };
        shi_sched_call call = { .kind = cases[i].kind,
            .algo        = cases[i].kind == SHI_OP_ALLREDUCE ? SHI_ALGO_RING
                                                             : SHI_ALGO_FLAT,
            .nranks      = 2,
            .count       = 3,
            .esize       = 4,
            .op          = SHOAL_PREMUL_SUM_OP(2.0),
            .piece_bytes = 64 };
        call.op.kind        = cases[i].op;
        CHECK_OK(shi_sched_build(&s, &call));
        CHECK(s.nops > 0);
        shi_sched_dump(&s, "sched_dump");
        shi_sched_free(&s);
    }
}

// Pairing only (no simulation), at sizes the matrix above cannot afford:
// every rank's k-th SEND to p has the size of p's k-th RECV from it.
static void
pairing_check(const shi_sched_call *base, int n)
{
    shi_sched s[SIM_MAXR] = { 0 };

    for (int r = 0; r < n; r++) {
        shi_sched_call c = *base;
        c.rank           = r;
        c.nranks         = n;
        CHECK_ST(shi_sched_build(&s[r], &c), SHOAL_OK);
    }
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            int i = 0, j = 0, k = 0;
            for (;;) {
                while (i < s[a].nops
                    && !(s[a].ops[i].kind == SHI_SOP_SEND
                        && s[a].ops[i].peer == b)) {
                    i++;
                }
                while (j < s[b].nops
                    && !(s[b].ops[j].kind == SHI_SOP_RECV
                        && s[b].ops[j].peer == a)) {
                    j++;
                }
                CHECK_MSG((i < s[a].nops) == (j < s[b].nops),
                    "%s/%s n=%d count=%zu piece=%zu: message %d from %d to %d "
                    "exists on one side only",
                    shi_op_kind_name(base->kind), shi_algo_name(base->algo), n,
                    base->count, base->piece_bytes, k, a, b);
                if (i >= s[a].nops) {
                    break;
                }
                CHECK_MSG(s[a].ops[i].bytes == s[b].ops[j].bytes,
                    "%s/%s n=%d count=%zu piece=%zu in_place=%d op=%d: "
                    "message %d from %d to %d: %llu bytes sent, %llu "
                    "received",
                    shi_op_kind_name(base->kind), shi_algo_name(base->algo), n,
                    base->count, base->piece_bytes, base->in_place,
                    base->op.kind, k, a, b,
                    (unsigned long long) s[a].ops[i].bytes,
                    (unsigned long long) s[b].ops[j].bytes);
                i++, j++, k++;
            }
        }
    }
    for (int r = 0; r < n; r++) {
        shi_sched_free(&s[r]);
    }
}

TEST(sched_pairing_large)
{
    static const int    kinds[][2] = { { SHI_OP_ALLREDUCE, SHI_ALGO_RING },
           { SHI_OP_REDUCE, SHI_ALGO_RING }, { SHI_OP_BCAST, SHI_ALGO_RING },
           { SHI_OP_ALLGATHER, SHI_ALGO_RING },
           { SHI_OP_ALLGATHER, SHI_ALGO_BRUCK },
           { SHI_OP_REDUCE_SCATTER, SHI_ALGO_RING } };
    static const size_t counts[]   = { 1048579, 4099, 65536, 300007 };
    static const size_t pieces[]   = { 4096, 1000, 1 << 20, 65536 };
    static const int    ops[] = { SHOAL_SUM, SHOAL_PREMUL_SUM, SHOAL_AVG };

    for (size_t k = 0; k < NELEMS(kinds); k++) {
        for (int n = 2; n <= SIM_MAXR; n++) {
            for (size_t c = 0; c < NELEMS(counts); c++) {
                for (size_t p = 0; p < NELEMS(pieces); p++) {
                    for (size_t o = 0; o < NELEMS(ops); o++) {
                        for (int ip = 0; ip < 2; ip++) {
                            shi_sched_call call = { .kind = kinds[k][0],
                                .algo                     = kinds[k][1],
                                .root                     = n - 1,
                                .count                    = counts[c],
                                .esize                    = 2,
                                .op          = SHOAL_REDUCE_OP(ops[o]),
                                .in_place    = ip,
                                .piece_bytes = pieces[p] };
                            if (ops[o] == SHOAL_PREMUL_SUM) {
                                call.op = SHOAL_PREMUL_SUM_OP(0.5);
                            }
                            pairing_check(&call, n);
                        }
                    }
                }
            }
        }
    }
}
