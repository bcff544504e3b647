// All-gather (and its v-form) across hosts, Bruck's dissemination: a
// message schedule (algo/net).
//
// Steps: rank r keeps the blocks it holds in scratch in rotated order
// (slot j holds block r + j mod n; its own is slot 0). In round k, with
// d = 2^k < n, it sends its slots [0, m) to rank r - d as one message and
// receives rank r + d's slots [0, m) as its own slots [d, d + m), where
// m = min(d, n - d). After ceil(log2 n) rounds it holds every block; two
// copies then put slots 1 .. n-1 in place in the receive buffer (blocks
// r+1 .. n-1, then 0 .. r-1), and its own block is copied there directly.
// Every receive is posted at once; a round's send waits for the receives
// of the rounds before it, whose blocks it forwards.
// Preconditions: n >= 2; every rank knows every block's count (the
// v-form's counts are the call's). Scratch: S bytes.
// Cost, S bytes gathered: ceil(log2 n) alpha + (n-1)/n S beta on the wire,
// plus about S beta of copies out of scratch. Against flat (n - 1
// messages a rank) it pays the copy to send log2 n messages instead: for
// small blocks on many hosts.
#include <stdint.h>

#include "algo/net/net_gen.h"
#include "algo/net/net_move_parts.h"
#include "algo/registry.h"
#include "base/error.h"
#include "core/request.h"

int
net_all_gather_bruck(net_gen *g)
{
    int        n = g->n, r = g->r;
    net_blocks b;

    int st = net_blocks_per_rank(g, &b, g->c->counts);
    if (st != SHOAL_OK) {
        return st;
    }
    // slot[j]: where slot j starts in the rotated scratch, in bytes.
    uint64_t *slot = net_tmp(g, (size_t) n + 1, sizeof(*slot));
    if (slot == NULL) {
        return net_done(g);
    }
    for (int j = 0; j < n; j++) {
        slot[j + 1] = slot[j] + b.cnt[(r + j) % n] * g->es;
    }
    net_loc own   = net_ag_own(g, &b);
    net_loc slots = net_at(SHI_SBUF_SCRATCH, net_scratch(g, slot[n]));
    net_copy(g, net_at(SHI_SBUF_RECV, b.off[r] * g->es), own, slot[1],
        SHI_SOP_NODEP, SHI_SOP_NODEP);
    int have = net_copy(g, slots, own, slot[1], SHI_SOP_NODEP, SHI_SOP_NODEP);

    for (int d = 1; d < n; d *= 2) {
        int m   = d < n - d ? d : n - d;
        int rcv = net_recv_data(g, net_mod(r + d, n), net_plus(slots, slot[d]),
            slot[d + m] - slot[d], SHI_SOP_NODEP, SHI_SOP_NODEP);
        net_send_data(
            g, net_mod(r - d, n), slots, slot[m], have, SHI_SOP_NODEP);
        have = net_join(g, have, rcv);
    }
    // Slots 1 .. n-r-1 are blocks r+1 .. n-1; slots n-r .. n-1 blocks
    // 0 .. r-1.
    net_copy(g, net_at(SHI_SBUF_RECV, (b.off[r] + b.cnt[r]) * g->es),
        net_plus(slots, slot[1]), slot[n - r] - slot[1], have, SHI_SOP_NODEP);
    net_copy(g, net_at(SHI_SBUF_RECV, 0), net_plus(slots, slot[n - r]),
        slot[n] - slot[n - r], have, SHI_SOP_NODEP);
    return net_done(g);
}

void
net_all_gather_bruck_cost(const shi_cost_call *c, shi_cost *out)
{
    double n = shi_cost_ranks(c), s = (double) c->bytes;

    *out = (shi_cost) { .alpha = shi_cost_log2(c->nranks),
        .beta                  = (n - 1) * s / n + s,
        .gamma                 = 0 };
}
