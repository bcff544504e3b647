// All-gather (and its v-form) across hosts, ring: a message schedule
// (algo/net).
//
// all_gather(_v) ring: at step t (0 .. n-2) rank r sends block r - t to
// r + 1 (its own at t = 0, else the one received at step t - 1, piece by
// piece as each arrives) and receives block r - t - 1 from r - 1. Cost:
// (n-1) alpha + (n-1) B beta, plus (P - 1) piece times. For large ones.
#include <stdint.h>

#include "algo/net/net_gen.h"
#include "algo/net/net_move_parts.h"
#include "algo/registry.h"
#include "base/error.h"
#include "core/request.h"

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

void
net_all_gather_ring_cost(const shi_cost_call *c, shi_cost *out)
{
    double n = shi_cost_ranks(c), s = (double) c->bytes;

    *out = (shi_cost) { .alpha = n - 1, .beta = (n - 1) * s / n, .gamma = 0 };
}
