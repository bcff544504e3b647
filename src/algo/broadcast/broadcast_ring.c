// Broadcast across hosts, pipelined chain: a message schedule (algo/net).
//
// broadcast ring: a pipelined chain root -> root + 1 -> ... -> root - 1 in
// pieces: every rank forwards piece j as soon as it has received it.
// Cost: (n - 2 + P) (alpha + S / P beta), about S beta for many pieces.
#include <stdint.h>

#include "algo/net/net_gen.h"
#include "algo/registry.h"
#include "base/error.h"
#include "core/request.h"

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

// The pieces a ring pipelines (SHOAL_NET_PIECE_BYTES' default).
#define NET_COST_PIECE (1u << 20)

void
net_bcast_ring_cost(const shi_cost_call *c, shi_cost *out)
{
    double pieces = c->bytes > NET_COST_PIECE
        ? (double) ((c->bytes + NET_COST_PIECE - 1) / NET_COST_PIECE)
        : 1;
    double steps  = shi_cost_ranks(c) - 2 + pieces;

    *out = (shi_cost) {
        .alpha = steps, .beta = steps * (double) c->bytes / pieces, .gamma = 0
    };
}
