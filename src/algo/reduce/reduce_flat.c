// Reduce across hosts, flat: a message schedule (algo/net).
//
// reduce flat: every rank sends its input to the root, which receives
// them all at once into scratch and reduces them from raw inputs. Cost:
// alpha + (n-1) S beta (the root's link) + n S gamma; scratch
// (n-1) S on the root. For small messages.
#include <stdint.h>

#include "algo/net/net_reduce_parts.h"
#include "algo/registry.h"
#include "base/error.h"

int
net_reduce_flat(net_gen *g)
{
    uint64_t bytes = g->c->count * g->es;

    if (bytes == 0) {
        return SHOAL_OK;
    }
    if (g->n == 1) {
        return net_reduce_alone(g, net_at(SHI_SBUF_RECV, 0),
            net_input_at(g->c->in_place, 0), bytes);
    }
    return net_reduce_raw(g, 0);
}

void
net_reduce_flat_cost(const shi_cost_call *c, shi_cost *out)
{
    double n = shi_cost_ranks(c), s = (double) c->bytes;

    *out = (shi_cost) { .alpha = 1, .beta = (n - 1) * s, .gamma = n * s };
}
