// Reduce-scatter (and its v-form) across hosts, ring: a message
// schedule (algo/net).
//
// reduce_scatter(_v) ring: the ring reduce-scatter arranged so that rank
// r ends with block r, its last reduction writing recvbuf. Cost: (n-1)
// (alpha + B beta + B gamma); scratch 2 B (+ S for PREMUL_SUM). On
// float16 and bfloat16: block r from raw inputs, in pieces.
#include <stdint.h>

#include "algo/net/net_reduce_parts.h"
#include "algo/registry.h"
#include "base/error.h"

int
net_reduce_scatter_ring(net_gen *g)
{
    net_blocks b;
    net_inputs in;

    if (g->n == 1) {
        return net_rs_alone(g);
    }
    if (net_is_half(g)) {
        return net_rs_raw(g, 1);
    }
    int st = net_rs_inputs(g, &in, &b);
    if (st != SHOAL_OK) {
        return st;
    }
    net_set_piece(g, b.max);
    size_t *base = net_piece_base(g, &b);
    if (base == NULL) {
        return SHOAL_ENOMEM;
    }
    // shift -1: rank r ends with block r, reduced straight into recvbuf.
    ring_rs rs = { .b = &b,
        .base         = base,
        .in           = &in,
        .shift        = -1,
        .mode         = RING_STEP2,
        .fin_to_recv  = 1 };
    return ring_rs_run(g, &rs);
}

void
net_reduce_scatter_ring_cost(const shi_cost_call *c, shi_cost *out)
{
    double n = shi_cost_ranks(c), b = (double) c->bytes / n;

    *out = (shi_cost) {
        .alpha = n - 1, .beta = (n - 1) * b, .gamma = (n - 1) * b
    };
}
