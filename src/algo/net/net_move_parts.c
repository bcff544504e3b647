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
// The pieces shared by the data-moving schedules (each algorithm's own
// file says its steps: algo/allgather/, algo/alltoall/, algo/gather/,
// algo/scatter/, algo/broadcast/, algo/barrier/).
#include "algo/net/net_move_parts.h"

#include <stdint.h>

#include "algo/registry.h"
#include "base/error.h"

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
net_loc
net_ag_own(const net_gen *g, const net_blocks *b)
{
    return g->c->in_place ? net_at(SHI_SBUF_RECV, b->off[g->r] * g->es)
                          : net_at(SHI_SBUF_SEND, 0);
}

void
net_flat_blocks_cost(const shi_cost_call *c, shi_cost *out)
{
    double n = shi_cost_ranks(c), s = (double) c->bytes;

    *out = (shi_cost) { .alpha = 1, .beta = (n - 1) * s / n, .gamma = 0 };
}
