// Single-copy all-reduce: ranks read each other's buffers directly.
//
// Steps: (1) every rank exposes its send and receive buffers; sync point
// (descriptors checked); (2) rank r reduces segment r of all n send
// buffers, reading peers' memory in place when it lies in the shared heap
// (shoal_alloc) and through process_vm_readv otherwise, into segment r of
// its own recvbuf; sync point; (3) rank r copies segment q of rank q's
// recvbuf into its own, for every q; (4) sync point, so that no rank
// returns (and reuses its buffers) while a peer still reads them.
// Preconditions: the kernel lets ranks read each other's memory (checked
// once at communicator creation, for every pair) or the buffers are in the
// shared heap.
// Cost: 3 alpha + gamma S (each rank reduces S/n from n inputs) + beta S
// (the all-gather copies); memory traffic about 2.5 S per rank for n = 2
// (no copy into staging memory), against 5 S for staged two-shot.
#include "algo/common/algos.h"
#include "algo/common/direct_reduce.h"
#include "algo/common/xfer.h"
#include "core/engine.h"

static int
gather_segments(shoal_comm *comm, shoal_request *req)
{
    size_t es = shi_req_esize(req), lo, hi;

    for (int q = 0; q < comm->size; q++) {
        shi_segment(req->count, es, comm->size, q, &lo, &hi);
        if (q == comm->rank || hi == lo) {
            continue;
        }
        int st = shi_peer_read(
            comm, q, SHI_RECV, lo * es, req->buf + lo * es, (hi - lo) * es);
        if (st != SHOAL_OK) {
            return st;
        }
    }
    return SHOAL_OK;
}

int
shi_allreduce_direct_step(shoal_comm *comm, shoal_request *req)
{
    size_t es = shi_req_esize(req), lo, hi;

    if (req->state == 0) {
        shi_expose(comm, req->sendbuf, req->buf);
        req->state = 1;
    }
    if (req->state == 1) {
        if (!shi_sync_all(comm, req, 1)) {
            return 0;
        }
        shi_segment(req->count, es, comm->size, comm->rank, &lo, &hi);
        if (shi_direct_reduce_range(comm, req, lo, hi - lo, req->buf + lo * es)
            != SHOAL_OK) {
            return 1;
        }
        req->state = 2;
    }
    if (req->state == 2) {
        if (!shi_sync_all(comm, req, 2)) {
            return 1;
        }
        if (gather_segments(comm, req) != SHOAL_OK) {
            return 1;
        }
        req->state = 3;
    }
    if (!shi_sync_all(comm, req, 3)) {
        return 1;
    }
    shi_sync_finish(comm, req, 3);
    shi_engine_complete(comm, req, SHOAL_OK);
    return 1;
}
