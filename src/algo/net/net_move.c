// Schedules of the data-moving collectives across hosts: all-gather and
// its v-form (flat, ring), all-to-all and its v-form (flat), gather and
// scatter (flat), broadcast (flat, pipelined chain) and the barrier
// (dissemination). B is one rank's block in bytes, S the whole message,
// P the pieces of a block; alpha is a message's latency, beta the time
// per byte on a link. Receives are posted at once wherever their place is
// free, and every rank sends to r + 1, r + 2, ... in turn (receiving from
// r - 1, r - 2, ...) so that ranks do not all start on the same peer.
// One rank alone only copies.
//
// all_gather(_v) flat: rank r sends its block to every other rank and
// receives theirs into place; its own block is copied unless in place.
// Cost: alpha + (n-1) B beta. For small messages.
//
// all_gather(_v) ring: at step t (0 .. n-2) rank r sends block r - t to
// r + 1 (its own at t = 0, else the one received at step t - 1, piece by
// piece as each arrives) and receives block r - t - 1 from r - 1. Cost:
// (n-1) alpha + (n-1) B beta, plus (P - 1) piece times. For large ones.
//
// all_to_all(_v) flat: every pair at once: rank r sends block p of
// sendbuf to p and receives p's block r into block p of recvbuf; its own
// block is copied. Cost: alpha + (n-1) B beta. Preconditions: sendbuf and
// recvbuf do not overlap (no in-place form).
//
// gather flat: every rank sends its block to the root, which receives
// them into place. scatter flat: the root sends block p to p. Cost:
// alpha + (n-1) B beta on the root's link.
//
// broadcast flat: the root sends the buffer to every rank. Cost: alpha +
// (n-1) S beta on the root's link. For small messages.
//
// broadcast ring: a pipelined chain root -> root + 1 -> ... -> root - 1 in
// pieces: every rank forwards piece j as soon as it has received it.
// Cost: (n - 2 + P) (alpha + S / P beta), about S beta for many pieces.
//
// barrier rhd (dissemination): in round k (2^k < n) rank r sends an
// empty message to r + 2^k and receives one from r - 2^k; round k's send
// waits for round k - 1's receive and send (so for every earlier
// receive), so after the last round every rank has heard, directly or
// not, from every other; receives are all posted at once. Cost:
// ceil(log2 n) alpha.
#include <stdint.h>

#include "algo/net/net_gen.h"
#include "algo/registry.h"
#include "core/error.h"
#include "core/request.h"

static int
net_done(const net_gen *g)
{
    return g->nomem ? SHOAL_ENOMEM : SHOAL_OK;
}

int
net_ring_allgather(net_gen *g, const net_blocks *b, int shift, net_loc first,
    const int *first_dep, const int *touch, const size_t *base)
{
    int    n = g->n, r = g->r, o = r + shift;
    int    right = net_mod(r + 1, n), left = net_mod(r - 1, n);
    size_t es = g->es, pe = g->pe;
    int   *got = net_tmp_deps(g, net_npieces(g, b->max));

    if (got == NULL) {
        return SHOAL_ENOMEM;
    }
    for (int t = 0; t < n - 1; t++) {
        int cs = net_mod(o - t, n), cr = net_mod(o - t - 1, n);
        for (size_t j = 0; j < net_npieces(g, b->cnt[cs]); j++) {
            net_loc src = t == 0
                ? net_plus(first, j * pe * es)
                : net_at(SHI_SBUF_RECV, (b->off[cs] + j * pe) * es);
            int     dep = t > 0         ? got[j]
                    : first_dep != NULL ? first_dep[j]
                                        : SHI_SOP_NODEP;
            net_send(g, right, src, net_piece_cnt(g, b->cnt[cs], j) * es, dep,
                SHI_SOP_NODEP);
        }
        for (size_t j = 0; j < net_npieces(g, b->cnt[cr]); j++) {
            got[j] = net_recv(g, left,
                net_at(SHI_SBUF_RECV, (b->off[cr] + j * pe) * es),
                net_piece_cnt(g, b->cnt[cr], j) * es,
                touch != NULL ? touch[base[cr] + j] : SHI_SOP_NODEP,
                SHI_SOP_NODEP);
        }
    }
    return net_done(g);
}

// This rank's block of an all-gather: sendbuf, or its place in recvbuf.
static net_loc
net_ag_own(const net_gen *g, const net_blocks *b)
{
    return g->c->in_place ? net_at(SHI_SBUF_RECV, b->off[g->r] * g->es)
                          : net_at(SHI_SBUF_SEND, 0);
}

int
net_all_gather_flat(net_gen *g)
{
    int        n = g->n, r = g->r;
    size_t     es = g->es;
    net_blocks b;

    int st = net_blocks_per_rank(g, &b, g->c->counts);
    if (st != SHOAL_OK) {
        return st;
    }
    net_loc own = net_ag_own(g, &b);
    for (int i = 1; i < n; i++) {
        int p = net_mod(r - i, n);
        net_recv_data(g, p, net_at(SHI_SBUF_RECV, b.off[p] * es),
            b.cnt[p] * es, SHI_SOP_NODEP, SHI_SOP_NODEP);
    }
    for (int i = 1; i < n; i++) {
        net_send_data(g, net_mod(r + i, n), own, b.cnt[r] * es, SHI_SOP_NODEP,
            SHI_SOP_NODEP);
    }
    net_copy(g, net_at(SHI_SBUF_RECV, b.off[r] * es), own, b.cnt[r] * es,
        SHI_SOP_NODEP, SHI_SOP_NODEP);
    return net_done(g);
}

int
net_all_gather_ring(net_gen *g)
{
    net_blocks b;

    int st = net_blocks_per_rank(g, &b, g->c->counts);
    if (st != SHOAL_OK) {
        return st;
    }
    net_set_piece(g, b.max);
    net_loc own = net_ag_own(g, &b);
    // The copy into place and the sends both only read `own`.
    net_copy(g, net_at(SHI_SBUF_RECV, b.off[g->r] * g->es), own,
        b.cnt[g->r] * g->es, SHI_SOP_NODEP, SHI_SOP_NODEP);
    return net_ring_allgather(g, &b, 0, own, NULL, NULL, NULL);
}

int
net_all_to_all_flat(net_gen *g)
{
    int        n = g->n, r = g->r;
    size_t     es = g->es;
    net_blocks sb, rb;

    int st = net_blocks_per_rank(g, &sb, g->c->counts);
    if (st == SHOAL_OK) {
        st = net_blocks_per_rank(g, &rb,
            g->c->kind == SHI_OP_ALLTOALLV ? g->c->rcounts : g->c->counts);
    }
    if (st != SHOAL_OK) {
        return st;
    }
    if (sb.cnt[r] != rb.cnt[r]) {
        return shi_error(SHOAL_EINVAL,
            "net schedule: all_to_all_v on rank %d sends %zu elements to "
            "itself but receives %zu",
            r, sb.cnt[r], rb.cnt[r]);
    }
    for (int i = 1; i < n; i++) {
        int p = net_mod(r - i, n);
        net_recv_data(g, p, net_at(SHI_SBUF_RECV, rb.off[p] * es),
            rb.cnt[p] * es, SHI_SOP_NODEP, SHI_SOP_NODEP);
    }
    for (int i = 1; i < n; i++) {
        int p = net_mod(r + i, n);
        net_send_data(g, p, net_at(SHI_SBUF_SEND, sb.off[p] * es),
            sb.cnt[p] * es, SHI_SOP_NODEP, SHI_SOP_NODEP);
    }
    net_copy(g, net_at(SHI_SBUF_RECV, rb.off[r] * es),
        net_at(SHI_SBUF_SEND, sb.off[r] * es), sb.cnt[r] * es, SHI_SOP_NODEP,
        SHI_SOP_NODEP);
    return net_done(g);
}

int
net_gather_flat(net_gen *g)
{
    int      n = g->n, r = g->r, root = g->c->root;
    uint64_t bytes = g->c->count * g->es;

    if (r != root) {
        net_send_data(g, root, net_at(SHI_SBUF_SEND, 0), bytes, SHI_SOP_NODEP,
            SHI_SOP_NODEP);
        return net_done(g);
    }
    for (int i = 1; i < n; i++) {
        int p = net_mod(root + i, n);
        net_recv_data(g, p, net_at(SHI_SBUF_RECV, (uint64_t) p * bytes), bytes,
            SHI_SOP_NODEP, SHI_SOP_NODEP);
    }
    if (!g->c->in_place) {
        net_copy(g, net_at(SHI_SBUF_RECV, (uint64_t) root * bytes),
            net_at(SHI_SBUF_SEND, 0), bytes, SHI_SOP_NODEP, SHI_SOP_NODEP);
    }
    return net_done(g);
}

int
net_scatter_flat(net_gen *g)
{
    int      n = g->n, r = g->r, root = g->c->root;
    uint64_t bytes = g->c->count * g->es;

    if (r != root) {
        net_recv_data(g, root, net_at(SHI_SBUF_RECV, 0), bytes, SHI_SOP_NODEP,
            SHI_SOP_NODEP);
        return net_done(g);
    }
    for (int i = 1; i < n; i++) {
        int p = net_mod(root + i, n);
        net_send_data(g, p, net_at(SHI_SBUF_SEND, (uint64_t) p * bytes), bytes,
            SHI_SOP_NODEP, SHI_SOP_NODEP);
    }
    if (!g->c->in_place) {
        net_copy(g, net_at(SHI_SBUF_RECV, 0),
            net_at(SHI_SBUF_SEND, (uint64_t) root * bytes), bytes,
            SHI_SOP_NODEP, SHI_SOP_NODEP);
    }
    return net_done(g);
}

int
net_bcast_flat(net_gen *g)
{
    int      n = g->n, r = g->r, root = g->c->root;
    uint64_t bytes = g->c->count * g->es;
    net_loc  buf   = net_at(SHI_SBUF_RECV, 0);

    if (r != root) {
        net_recv_data(g, root, buf, bytes, SHI_SOP_NODEP, SHI_SOP_NODEP);
        return net_done(g);
    }
    for (int i = 1; i < n; i++) {
        net_send_data(
            g, net_mod(root + i, n), buf, bytes, SHI_SOP_NODEP, SHI_SOP_NODEP);
    }
    return net_done(g);
}

int
net_bcast_ring(net_gen *g)
{
    int    n = g->n, r = g->r, root = g->c->root;
    int    v  = net_mod(r - root, n); // place in the chain
    size_t es = g->es, count = g->c->count;

    net_set_piece(g, count);
    for (size_t j = 0; j < net_npieces(g, count); j++) {
        net_loc  at    = net_at(SHI_SBUF_RECV, j * g->pe * es);
        uint64_t bytes = net_piece_cnt(g, count, j) * es;
        int      got   = SHI_SOP_NODEP;
        if (v > 0) {
            got = net_recv(
                g, net_mod(r - 1, n), at, bytes, SHI_SOP_NODEP, SHI_SOP_NODEP);
        }
        if (v < n - 1) {
            net_send(g, net_mod(r + 1, n), at, bytes, got, SHI_SOP_NODEP);
        }
    }
    return net_done(g);
}

int
net_barrier_rhd(net_gen *g)
{
    int     n = g->n, r = g->r, got = SHI_SOP_NODEP, sent = SHI_SOP_NODEP;
    net_loc none = net_at(SHI_SBUF_SCRATCH, 0);

    // Round k's send waits for round k - 1's receive and (through round
    // k - 1's send) for every earlier one: what it says covers them all.
    for (int d = 1; d < n; d *= 2) {
        sent = net_send(g, net_mod(r + d, n), none, 0, got, sent);
        got  = net_recv(
             g, net_mod(r - d, n), none, 0, SHI_SOP_NODEP, SHI_SOP_NODEP);
    }
    return net_done(g);
}

// ---------------------------------------------------------------------------
// Costs (the formulas of the header; S = c->bytes, B = S / n)
// ---------------------------------------------------------------------------

// The pieces a broadcast ring pipelines (SHOAL_NET_PIECE_BYTES' default).
#define NET_COST_PIECE (1u << 20)

static double
ranks_of(const shi_cost_call *c)
{
    return c->nranks > 1 ? c->nranks : 1;
}

// alpha + (n - 1) B beta: every flat data movement.
static void
flat_blocks(const shi_cost_call *c, shi_cost *out)
{
    double n = ranks_of(c);

    *out = (shi_cost) {
        .alpha = 1, .beta = (n - 1) * (double) c->bytes / n, .gamma = 0
    };
}

void
net_all_gather_flat_cost(const shi_cost_call *c, shi_cost *out)
{
    flat_blocks(c, out);
}

void
net_all_to_all_flat_cost(const shi_cost_call *c, shi_cost *out)
{
    flat_blocks(c, out);
}

void
net_rooted_flat_cost(const shi_cost_call *c, shi_cost *out)
{
    flat_blocks(c, out);
}

void
net_all_gather_ring_cost(const shi_cost_call *c, shi_cost *out)
{
    double n = ranks_of(c);

    *out = (shi_cost) {
        .alpha = n - 1, .beta = (n - 1) * (double) c->bytes / n, .gamma = 0
    };
}

void
net_bcast_flat_cost(const shi_cost_call *c, shi_cost *out)
{
    *out = (shi_cost) {
        .alpha = 1, .beta = (ranks_of(c) - 1) * (double) c->bytes, .gamma = 0
    };
}

void
net_bcast_ring_cost(const shi_cost_call *c, shi_cost *out)
{
    double pieces = c->bytes > NET_COST_PIECE
        ? (double) ((c->bytes + NET_COST_PIECE - 1) / NET_COST_PIECE)
        : 1;
    double steps  = ranks_of(c) - 2 + pieces;

    *out = (shi_cost) {
        .alpha = steps, .beta = steps * (double) c->bytes / pieces, .gamma = 0
    };
}

void
net_barrier_rhd_cost(const shi_cost_call *c, shi_cost *out)
{
    *out = (shi_cost) {
        .alpha = shi_cost_log2(c->nranks), .beta = 0, .gamma = 0
    };
}
