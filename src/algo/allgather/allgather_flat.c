// All-gather (and its v-form) across hosts, flat: a message schedule
// (algo/net).
//
// all_gather(_v) flat: rank r sends its block to every other rank and
// receives theirs into place; its own block is copied unless in place.
// Cost: alpha + (n-1) B beta. For small messages.
#include <stdint.h>

#include "algo/net/net_gen.h"
#include "algo/net/net_move_parts.h"
#include "base/error.h"
#include "core/request.h"

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
