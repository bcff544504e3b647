// All-reduce across hosts, recursive doubling: a message schedule
// (algo/net).
//
// all_reduce rhd (recursive doubling on whole buffers): with p2 the
// largest power of two <= n, rank r >= p2 sends its input to r - p2 and
// gets the result back from it; ranks below p2 first fold that input in,
// then for each bit k exchange their whole partial with r ^ 2^k and
// reduce (lower rank's partial first on both sides, so partners agree
// bitwise). Cost: (log2 p2 + 2 [n not a power of two]) (alpha + S beta)
// + log2 p2 S gamma. Scratch 2 S. For small messages (latency-bound).
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
net_allreduce_rhd(net_gen *g)
{
    uint64_t   bytes = g->c->count * g->es;
    int        n = g->n, r = g->r, p2 = 1;
    net_blocks b;
    net_inputs in;
    net_loc    recv = net_at(SHI_SBUF_RECV, 0);

    if (bytes == 0) {
        return SHOAL_OK;
    }
    if (n == 1) {
        return net_reduce_alone(
            g, recv, net_input_at(g->c->in_place, 0), bytes);
    }
    if (net_is_half(g)) {
        return net_allreduce_raw(g);
    }
    while (p2 * 2 <= n) {
        p2 *= 2;
    }
    int st = net_blocks_one(g, &b, g->c->count);
    if (st != SHOAL_OK) {
        return st;
    }
    net_loc orig = net_input_at(g->c->in_place, 0);
    st           = net_inputs_make(g, &in, &b, &orig, 1);
    if (st != SHOAL_OK) {
        return st;
    }
    net_loc acc = in.loc[0];
    int     dep = in.dep[0];

    if (r >= p2) {
        // An extra rank: its partner does its share.
        int snd = net_send(g, r - p2, acc, bytes, dep, SHI_SOP_NODEP);
        net_recv(g, r - p2, recv, bytes,
            acc.buf == SHI_SBUF_RECV ? snd : SHI_SOP_NODEP, SHI_SOP_NODEP);
        return g->nomem ? SHOAL_ENOMEM : SHOAL_OK;
    }

    // Two scratch slots: round i receives into slot i % 2 once round
    // i - 2's reduction has read it.
    uint64_t scr    = net_scratch(g, 2 * bytes);
    int      red[2] = { SHI_SOP_NODEP, SHI_SOP_NODEP };
    int      round  = 0;
    if (r + p2 < n) {
        net_loc sl = net_at(SHI_SBUF_SCRATCH, scr);
        int rcv = net_recv(g, r + p2, sl, bytes, SHI_SOP_NODEP, SHI_SOP_NODEP);
        dep     = net_reduce(g, recv, acc, sl, bytes, dep, rcv);
        acc     = recv;
        red[0]  = dep;
        round   = 1;
    }
    for (int mask = 1; mask < p2; mask <<= 1, round++) {
        int     q = r ^ mask;
        net_loc sl
            = net_at(SHI_SBUF_SCRATCH, scr + (uint64_t) (round % 2) * bytes);
        int snd = net_send(g, q, acc, bytes, dep, SHI_SOP_NODEP);
        int rcv = net_recv(g, q, sl, bytes, red[round % 2], SHI_SOP_NODEP);
        // Lower rank's partial first on both partners: bitwise equal.
        dep            = r < q ? net_reduce(g, recv, acc, sl, bytes, snd, rcv)
                               : net_reduce(g, recv, sl, acc, bytes, snd, rcv);
        acc            = recv;
        red[round % 2] = dep;
    }
    if (net_is_avg(g)) {
        dep = net_avg(g, recv, bytes, dep);
    }
    if (r + p2 < n) {
        net_send(g, r + p2, recv, bytes, dep, SHI_SOP_NODEP);
    }
    return g->nomem ? SHOAL_ENOMEM : SHOAL_OK;
}

void
net_allreduce_rhd_cost(const shi_cost_call *c, shi_cost *out)
{
    int    n = c->nranks > 1 ? c->nranks : 1, p2 = 1;
    double s = (double) c->bytes, rounds;

    while (p2 * 2 <= n) {
        p2 *= 2;
    }
    rounds = shi_cost_log2(p2) + (p2 != n ? 2 : 0);
    *out   = (shi_cost) {
          .alpha = rounds, .beta = rounds * s, .gamma = shi_cost_log2(p2) * s
    };
}
