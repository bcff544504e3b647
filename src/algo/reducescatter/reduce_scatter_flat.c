// Reduce-scatter (and its v-form) across hosts, flat: a message
// schedule (algo/net).
//
// reduce_scatter(_v) flat: rank r sends block p of its input to p for
// every p and reduces block r from raw inputs, one piece. Cost: alpha +
// (n-1) B beta + n B gamma; scratch (n-1) B.
#include <stdint.h>

#include "algo/net/net_reduce_parts.h"
#include "algo/registry.h"
#include "base/error.h"

int
net_reduce_scatter_flat(net_gen *g)
{
    return g->n == 1 ? net_rs_alone(g) : net_rs_raw(g, 0);
}

void
net_reduce_scatter_flat_cost(const shi_cost_call *c, shi_cost *out)
{
    double n = shi_cost_ranks(c), b = (double) c->bytes / n;

    *out = (shi_cost) { .alpha = 1, .beta = (n - 1) * b, .gamma = n * b };
}
