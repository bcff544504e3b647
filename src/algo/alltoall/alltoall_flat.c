// All-to-all (and its v-form) across hosts, flat: a message schedule
// (algo/net).
//
// all_to_all(_v) flat: every pair at once: rank r sends block p of
// sendbuf to p and receives p's block r into block p of recvbuf; its own
// block is copied. Cost: alpha + (n-1) B beta. Preconditions: sendbuf and
// recvbuf do not overlap (no in-place form).
#include <stdint.h>

#include "algo/net/net_gen.h"
#include "base/error.h"
#include "core/request.h"

int
net_all_to_all_flat(net_gen *g)
{
    int        n = g->n, r = g->r;
    size_t     es = g->es;
    net_blocks sb, rb;

    int st = net_blocks_per_rank(g, &sb, g->c->counts);
    if (st == SHOAL_OK) {
        st = net_blocks_per_rank(g, &rb,
            g->c->kind == SHI_OP_ALLTOALLV ? g->c->rcounts : g->c->counts);
    }
    if (st != SHOAL_OK) {
        return st;
    }
    if (sb.cnt[r] != rb.cnt[r]) {
        return shi_error(SHOAL_EINVAL,
            "net schedule: all_to_all_v on rank %d sends %zu elements to "
            "itself but receives %zu",
            r, sb.cnt[r], rb.cnt[r]);
    }
    for (int i = 1; i < n; i++) {
        int p = net_mod(r - i, n);
        net_recv_data(g, p, net_at(SHI_SBUF_RECV, rb.off[p] * es),
            rb.cnt[p] * es, SHI_SOP_NODEP, SHI_SOP_NODEP);
    }
    for (int i = 1; i < n; i++) {
        int p = net_mod(r + i, n);
        net_send_data(g, p, net_at(SHI_SBUF_SEND, sb.off[p] * es),
            sb.cnt[p] * es, SHI_SOP_NODEP, SHI_SOP_NODEP);
    }
    net_copy(g, net_at(SHI_SBUF_RECV, rb.off[r] * es),
        net_at(SHI_SBUF_SEND, sb.off[r] * es), sb.cnt[r] * es, SHI_SOP_NODEP,
        SHI_SOP_NODEP);
    return net_done(g);
}
