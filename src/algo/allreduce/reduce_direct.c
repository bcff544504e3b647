// Single-copy reduce to a root: the root reads every rank's buffer
// directly and reduces.
//
// Steps: (1) every rank exposes its send buffer; sync point (descriptors
// checked); (2) the root reduces all n send buffers piece by piece, reading
// peers in place (shared heap) or through process_vm_readv, into recvbuf;
// (3) sync point: the others keep their buffers until the root is done.
// Preconditions: as for the direct all-reduce.
// Cost: 2 alpha + gamma n S on the root; the others only wait. Fine for
// 2-4 ranks; a reduce-scatter + gather would spread the work for more.
#include "algo/common/algos.h"
#include "algo/common/direct_reduce.h"
#include "algo/common/xfer.h"
#include "core/engine.h"

int
shi_reduce_direct_step(shoal_comm *comm, shoal_request *req)
{
    if (req->state == 0) {
        shi_expose(comm, req->sendbuf, req->buf);
        req->state = 1;
    }
    if (req->state == 1) {
        if (!shi_sync_all(comm, req, 1)) {
            return 0;
        }
        if (comm->rank == req->peer
            && shi_direct_reduce_range(comm, req, 0, req->count, req->buf, 0)
                != SHOAL_OK) {
            return 1;
        }
        req->state = 2;
    }
    if (!shi_sync_all(comm, req, 2)) {
        return 1;
    }
    shi_sync_finish(comm, req, 2);
    shi_engine_complete(comm, req, SHOAL_OK);
    return 1;
}
