// Scatter across hosts, flat: a message schedule (algo/net).
//
// scatter flat: the root sends block p to p. Cost: alpha + (n-1) B beta
// on the root's link.
#include <stdint.h>

#include "algo/net/net_gen.h"
#include "base/error.h"
#include "core/request.h"

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
