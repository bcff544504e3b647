// Single-copy reduce-scatter: rank r reads block r of every rank's send
// buffer directly and reduces it into its recvbuf.
//
// Steps: (1) expose the send buffer; sync point (descriptors checked);
// (2) reduce block r over all ranks, piece by piece, reading peers in
// place (shared heap) or through process_vm_readv; (3) sync point, so that
// no rank reuses its send buffer while a peer reads it.
// Preconditions: as for the direct all-reduce. Blocks may differ in size
// (reduce_scatter_v).
// Cost: 2 alpha + gamma S/n per rank reading n inputs; traffic about
// (n + 1) S/n per rank.
#include "algo/common/algos.h"
#include "algo/common/direct_reduce.h"
#include "algo/common/xfer.h"
#include "core/engine.h"

int
shi_reduce_scatter_direct_step(shoal_comm *comm, shoal_request *req)
{
    int moved = 0; // 1 once this call did work (waiting is not progress)
    if (req->state == 0) {
        shi_expose(comm, req->sendbuf, req->buf);
        req->state = 1;
    }
    if (req->state == 1) {
        if (!shi_sync_all(comm, req, 1)) {
            return 0;
        }
        if (shi_direct_reduce_range(comm, req,
                shi_block_displ(req, comm->rank),
                shi_block_count(req, comm->rank), req->buf, SHI_PUSH_NONE)
            != SHOAL_OK) {
            return 1;
        }
        req->state = 2;
        moved      = 1;
    }
    if (!shi_sync_all(comm, req, 2)) {
        return moved;
    }
    shi_sync_finish(comm, req, 2);
    shi_engine_complete(comm, req, SHOAL_OK);
    return 1;
}
