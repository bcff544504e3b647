// All-reduce across hosts, ring: a message schedule (algo/net).
//
// all_reduce ring: ring reduce-scatter, then ring all-gather of the
// reduced blocks straight into recvbuf (a receive waits for the last
// send out of that place). Cost: 2 (n-1) alpha + 2 (n-1)/n S beta +
// (n-1)/n S gamma, plus (P - 1) piece times to fill the pipeline.
// Preconditions: none; bandwidth-optimal, for large messages.
//
// all_reduce ring and rhd on float16 and bfloat16: rank r reduces block r
// from raw inputs into recvbuf, then sends each reduced piece to every
// rank as it is made (in place, a piece is received only once this rank's
// input there has been sent). Cost: 2 alpha + 2 (n-1)/n S beta + S gamma,
// the ring's bytes in two rounds of n - 1 messages.
#include <stdint.h>

#include "algo/net/net_reduce_parts.h"
#include "algo/registry.h"
#include "base/error.h"

int
net_allreduce_ring(net_gen *g)
{
    uint64_t   bytes = g->c->count * g->es;
    net_blocks b;
    net_inputs in;

    if (bytes == 0) {
        return SHOAL_OK;
    }
    if (g->n == 1) {
        return net_reduce_alone(g, net_at(SHI_SBUF_RECV, 0),
            net_input_at(g->c->in_place, 0), bytes);
    }
    if (net_is_half(g)) {
        return net_allreduce_raw(g);
    }
    int st = net_blocks_split(g, &b, g->c->count);
    if (st != SHOAL_OK) {
        return st;
    }
    net_set_piece(g, b.max);
    size_t  *base = net_piece_base(g, &b);
    net_loc *orig = net_tmp(g, (size_t) g->n, sizeof(net_loc));
    if (base == NULL || orig == NULL) {
        return SHOAL_ENOMEM;
    }
    for (int c = 0; c < g->n; c++) {
        orig[c] = net_input_at(g->c->in_place, b.off[c] * g->es);
    }
    st = net_inputs_make(g, &in, &b, orig, 1);
    if (st != SHOAL_OK) {
        return st;
    }
    ring_rs rs = { .b = &b,
        .base         = base,
        .in           = &in,
        .shift        = 0,
        .mode         = in.in_recv ? RING_POOL : RING_DIRECT };
    st         = ring_rs_run(g, &rs);
    if (st != SHOAL_OK) {
        return st;
    }
    return net_ring_allgather(g, &b, 1, rs.fin_loc, rs.fin, rs.touch, base);
}

void
net_allreduce_ring_cost(const shi_cost_call *c, shi_cost *out)
{
    double n = shi_cost_ranks(c), s = (double) c->bytes;

    *out = (shi_cost) { .alpha = 2 * (n - 1),
        .beta                  = 2 * (n - 1) / n * s,
        .gamma                 = (n - 1) / n * s };
}
