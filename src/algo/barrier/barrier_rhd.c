// Barrier across hosts, dissemination: a message schedule (algo/net).
//
// barrier rhd (dissemination): in round k (2^k < n) rank r sends an
// empty message to r + 2^k and receives one from r - 2^k; round k's send
// waits for round k - 1's receive and send (so for every earlier
// receive), so after the last round every rank has heard, directly or
// not, from every other; receives are all posted at once. Cost:
#include <stdint.h>

#include "algo/net/net_gen.h"
#include "algo/registry.h"
#include "base/error.h"
#include "core/request.h"

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

void
net_barrier_rhd_cost(const shi_cost_call *c, shi_cost *out)
{
    *out = (shi_cost) {
        .alpha = shi_cost_log2(c->nranks), .beta = 0, .gamma = 0
    };
}
