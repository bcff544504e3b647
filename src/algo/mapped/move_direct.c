// Single-copy data movement (all_gather(_v), all_to_all(_v), gather,
// scatter, broadcast): every rank copies what it needs straight from its
// peers' send buffers (a broadcast: the root's buffer) into its receive
// buffer.
//
// Steps: (1) expose the buffers (and, for all_to_all_v, the send counts);
// sync point (descriptors checked); (2) for every peer q, copy the range
// this rank takes from q (move_plan.c), in place from the shared heap or
// through process_vm_readv; (3) sync point, so that no rank reuses its
// send buffer while a peer still reads it.
// Preconditions: as for the direct all-reduce.
// Cost: 2 alpha + beta (bytes received); one copy per byte, against two
// through staging memory (a broadcast's outbox: the root copies in, every
// reader copies out, pipelined in slots).
#include <string.h>

#include "algo/common/algos.h"
#include "algo/mapped/direct.h"
#include "algo/mapped/mapped.h"
#include "algo/mapped/move_plan.h"
#include "algo/mapped/xfer.h"
#include "algo/registry.h"

static int
copy_from_peers(shoal_comm *comm, shoal_request *req)
{
    int side = shi_move_source_side(req);

    for (int i = 0; i < comm->size; i++) {
        // Start with the next rank, so that ranks do not all read rank 0
        // at the same time.
        int    q = (comm->rank + i) % comm->size;
        size_t src, len, dst;
        if (shi_move_range(comm, req, q, &src, &len, &dst)) {
            return 1;
        }
        if (len == 0
            || (q == comm->rank && req->sendbuf + src == req->buf + dst)) {
            continue; // nothing, or in place
        }
        if (shi_peer_read(comm, q, side, src, req->buf + dst, len)
            != SHOAL_OK) {
            return 1;
        }
    }
    return 0;
}

static int
take_from_peers(shoal_comm *comm, shoal_request *req)
{
    shi_move_snapshot(comm, req);
    return copy_from_peers(comm, req) ? SHOAL_EPEER : SHOAL_OK;
}

static const shi_direct_ops move_direct = {
    .publish = shi_move_publish,
    .work    = take_from_peers,
};

int
shi_move_direct_step(shoal_comm *comm, shoal_request *req)
{
    return shi_direct_run(comm, req, &move_direct);
}

void
shi_move_direct_cost(const shi_cost_call *c, shi_cost *out)
{
    *out = (shi_cost) { .alpha = 2, .beta = (double) c->bytes, .gamma = 0 };
}
