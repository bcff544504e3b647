// Ranges of the data-movement collectives (see move_plan.h).
#include "algo/mapped/move_plan.h"

#include <string.h>

#include "algo/common/algos.h"
#include "algo/mapped/driver.h"
#include "algo/mapped/mapped.h"
#include "algo/mapped/xfer.h"
#include "core/engine.h"

void
shi_move_publish(shoal_comm *comm, shoal_request *req)
{
    if (req->kind != SHI_OP_ALLTOALLV) {
        return;
    }
    uint64_t *mine = shi_area_counts(shi_area_of(comm), comm->rank);
    for (int p = 0; p < comm->size; p++) {
        mine[p] = req->counts[p];
    }
}

// all_to_all_v: q sends counts_q[me] elements from displacement
// sum(counts_q[0..me)); they must match our recvcounts[q].
static int
alltoallv_range(shoal_comm *comm, shoal_request *req, int q, size_t *src,
    size_t *len, size_t *dst)
{
    const uint64_t *theirs = comm->peer_counts + (size_t) q * comm->size;
    size_t          es = shi_req_esize(req), sd = 0, rd = 0;

    for (int p = 0; p < comm->rank; p++) {
        sd += theirs[p];
    }
    for (int p = 0; p < q; p++) {
        rd += req->rcounts[p];
    }
    if (theirs[comm->rank] != req->rcounts[q]) {
        shi_comm_abort(comm, SHOAL_EMISMATCH,
            "all_to_all_v #%llu: rank %d sends %llu elements to "
            "rank %d, which expects %zu (recvcounts[%d])",
            (unsigned long long) req->seq, q,
            (unsigned long long) theirs[comm->rank], comm->rank,
            req->rcounts[q], q);
        return 1;
    }
    *src = sd * es;
    *len = req->rcounts[q] * es;
    *dst = rd * es;
    return 0;
}

void
shi_move_snapshot(shoal_comm *comm, shoal_request *req)
{
    if (req->kind != SHI_OP_ALLTOALLV) {
        return;
    }
    for (int q = 0; q < comm->size; q++) {
        memcpy(comm->peer_counts + (size_t) q * comm->size,
            shi_area_counts(shi_area_of(comm), q),
            (size_t) comm->size * sizeof(uint64_t));
    }
}

int
shi_move_range(shoal_comm *comm, shoal_request *req, int q, size_t *src,
    size_t *len, size_t *dst)
{
    size_t es = shi_req_esize(req), me = (size_t) comm->rank;
    size_t block = req->count * es;

    *src = *len = *dst = 0;
    switch (req->kind) {
        case SHI_OP_ALLGATHER:
        case SHI_OP_ALLGATHERV:
            *len = shi_block_count(req, q) * es;
            *dst = shi_block_displ(req, q) * es;
            return 0;
        case SHI_OP_ALLTOALL:
            *src = me * block;
            *len = block;
            *dst = (size_t) q * block;
            return 0;
        case SHI_OP_ALLTOALLV:
            return alltoallv_range(comm, req, q, src, len, dst);
        case SHI_OP_GATHER:
            if (comm->rank == req->peer) {
                *len = block;
                *dst = (size_t) q * block;
            }
            return 0;
        case SHI_OP_SCATTER:
            if (q == req->peer) {
                *src = me * block;
                *len = block;
            }
            return 0;
        case SHI_OP_BCAST:
            if (q == req->peer && comm->rank != req->peer) {
                *len = block;
            }
            return 0;
    }
    return 0;
}

int
shi_move_source_side(const shoal_request *req)
{
    return req->kind == SHI_OP_BCAST ? SHI_RECV : SHI_SEND;
}

size_t
shi_move_send_bytes(shoal_comm *comm, shoal_request *req, int q)
{
    size_t es = shi_req_esize(req), total = 0;

    switch (req->kind) {
        case SHI_OP_ALLGATHER:
        case SHI_OP_ALLGATHERV:
            return shi_block_count(req, q) * es;
        case SHI_OP_ALLTOALL:
            return req->count * es * (size_t) comm->size;
        case SHI_OP_ALLTOALLV: {
            const uint64_t *theirs
                = comm->peer_counts + (size_t) q * comm->size;
            for (int p = 0; p < comm->size; p++) {
                total += theirs[p];
            }
            return total * es;
        }
        case SHI_OP_GATHER:
            return req->count * es;
        case SHI_OP_SCATTER:
            return q == req->peer ? req->count * es * (size_t) comm->size : 0;
        case SHI_OP_REDUCE_SCATTER:
        case SHI_OP_REDUCE_SCATTERV:
            return shi_block_displ(req, comm->size) * es;
    }
    return 0;
}
