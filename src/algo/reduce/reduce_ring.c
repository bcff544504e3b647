// Reduce across hosts, ring: a message schedule (algo/net).
//
// reduce ring: the ring reduce-scatter, then every rank sends its reduced
// block to the root, which receives them into recvbuf. Cost: n alpha +
// 2 (n-1)/n S beta + (n-1)/n S gamma. For large messages. On float16 and
// bfloat16, rank p reduces block p from raw inputs instead (into scratch
// off the root) and sends it to the root. Cost: 2 alpha + 2 (n-1)/n S
// beta + S gamma.
#include <stdint.h>

#include "algo/net/net_reduce_parts.h"
#include "algo/registry.h"
#include "base/error.h"

int
net_reduce_ring(net_gen *g)
{
    uint64_t   bytes = g->c->count * g->es;
    int        n = g->n, r = g->r, root = g->c->root;
    size_t     es = g->es;
    net_blocks b;
    net_inputs in;

    if (bytes == 0) {
        return SHOAL_OK;
    }
    if (n == 1) {
        return net_reduce_alone(g, net_at(SHI_SBUF_RECV, 0),
            net_input_at(g->c->in_place, 0), bytes);
    }
    if (net_is_half(g)) {
        return net_reduce_raw(g, 1);
    }
    int st = net_blocks_split(g, &b, g->c->count);
    if (st != SHOAL_OK) {
        return st;
    }
    net_set_piece(g, b.max);
    size_t *base = net_piece_base(g, &b);
    if (base == NULL) {
        return SHOAL_ENOMEM;
    }
    st = net_reduce_inputs(g, &in, &b);
    if (st != SHOAL_OK) {
        return st;
    }
    // Only the root has a receive buffer: the others keep partials in
    // scratch.
    ring_rs rs = { .b = &b,
        .base         = base,
        .in           = &in,
        .shift        = 0,
        .mode         = r != root ? RING_STEP2
                    : in.in_recv  ? RING_POOL
                                  : RING_DIRECT };
    st         = ring_rs_run(g, &rs);
    if (st != SHOAL_OK) {
        return st;
    }
    if (r != root) {
        int c = net_mod(r + 1, n); // the block this rank reduced
        for (size_t j = 0; j < net_npieces(g, b.cnt[c]); j++) {
            net_send(g, root, net_plus(rs.fin_loc, j * g->pe * es),
                net_piece_cnt(g, b.cnt[c], j) * es, rs.fin[j], SHI_SOP_NODEP);
        }
        return g->nomem ? SHOAL_ENOMEM : SHOAL_OK;
    }
    // Rank p reduced block p + 1; the root's own is already in place.
    for (int i = 1; i < n; i++) {
        int p = net_mod(root + i, n), c = net_mod(p + 1, n);
        for (size_t j = 0; j < net_npieces(g, b.cnt[c]); j++) {
            net_recv(g, p, net_at(SHI_SBUF_RECV, (b.off[c] + j * g->pe) * es),
                net_piece_cnt(g, b.cnt[c], j) * es, rs.touch[base[c] + j],
                SHI_SOP_NODEP);
        }
    }
    return g->nomem ? SHOAL_ENOMEM : SHOAL_OK;
}

void
net_reduce_ring_cost(const shi_cost_call *c, shi_cost *out)
{
    double n = shi_cost_ranks(c), s = (double) c->bytes;

    *out = (shi_cost) {
        .alpha = n, .beta = 2 * (n - 1) / n * s, .gamma = (n - 1) / n * s
    };
}
