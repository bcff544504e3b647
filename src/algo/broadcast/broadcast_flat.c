// Broadcast across hosts, flat: a message schedule (algo/net).
//
// broadcast flat: the root sends the buffer to every rank. Cost: alpha +
// (n-1) S beta on the root's link. For small messages.
#include <stdint.h>

#include "algo/net/net_gen.h"
#include "algo/registry.h"
#include "base/error.h"
#include "core/request.h"

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

void
net_bcast_flat_cost(const shi_cost_call *c, shi_cost *out)
{
    double n = shi_cost_ranks(c), s = (double) c->bytes;

    *out = (shi_cost) { .alpha = 1, .beta = (n - 1) * s, .gamma = 0 };
}
