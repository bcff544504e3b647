// Single-copy reduce to a root: every rank reduces one segment and writes
// it straight into the root's receive buffer.
//
// Steps: (1) every rank exposes its send and receive buffers; sync point
// (descriptors checked); (2) rank r reduces segment r of all n send
// buffers piece by piece, reading peers in place (shared heap) or through
// process_vm_readv; the root reduces into its recvbuf, the others into
// scratch and push each piece, still in the cache, into the root's recvbuf
// (in place, or process_vm_writev); (3) sync point: the root has every
// segment, and nobody reuses a buffer a peer may still read.
// In place (the root's sendbuf is its recvbuf) is safe: segment r of any
// buffer is read only by rank r, which writes a piece after reading it.
// Preconditions: as for the direct all-reduce.
// Cost: 2 alpha + gamma S (each rank reduces S/n from n inputs) + beta S/n
// per rank into the root; the work is spread over all ranks instead of
// the root reducing n S alone.
#include "algo/common/algos.h"
#include "algo/common/direct_reduce.h"
#include "algo/common/xfer.h"
#include "core/engine.h"

int
shi_reduce_direct_step(shoal_comm *comm, shoal_request *req)
{
    int    moved = 0; // 1 once this call did work (waiting is not progress)
    size_t es    = shi_req_esize(req), lo, hi;
    int    root  = req->peer;

    if (req->state == 0) {
        shi_expose(comm, req->sendbuf, req->buf);
        req->state = 1;
    }
    if (req->state == 1) {
        if (!shi_sync_all(comm, req, 1)) {
            return 0;
        }
        shi_segment(req->count, es, comm->size, comm->rank, &lo, &hi);
        unsigned char *mine = comm->rank == root ? req->buf + lo * es : NULL;
        if (shi_direct_reduce_range(comm, req, lo, hi - lo, mine, root)
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
