// Tiny all-reduce, all-gather, all-to-all and reduce-scatter: the data
// rides in the same cache line as its flag.
//
// Steps: (1) rank r writes its whole input (at most SHM_INLINE_BYTES) and
// the hash of its call into its inline line for this use (two lines, used
// alternately), then publishes the use number in that line; (2) it waits
// until every peer's line shows the same use, checks that the hashes agree
// (a mismatch falls back to the full descriptor comparison), and then
// reduces the n lines in rank order into recvbuf (all-reduce), copies line
// q to block q of recvbuf (all-gather), copies block r of line q to block
// q (all-to-all), or reduces block r of the n lines (reduce-scatter).
// Reuse: rank r rewrites a line two uses later; by then it has read every
// peer's line of the use in between, which each peer wrote only after
// finishing the use before, so nobody still reads the old contents. This
// holds because every rank reads every line (so not for gather or
// scatter, where only the root reads or writes).
// Preconditions: each rank's input at most SHM_INLINE_BYTES; the same
// count on every rank (not the v-collectives).
// Cost: alpha (one line moved from each peer) + gamma n S (reductions) or
// beta n S (movement); no staging copy, no separate flag, no closing sync.
#include <string.h>

#include "algo/common/algos.h"
#include "algo/kernels/reduce.h"
#include "algo/common/mapped_driver.h"
#include "core/engine.h"

// This algorithm's state in its request.
struct inline_state {
    int      phase; // 0: lines not published yet
    uint64_t use; // the inline use (comm->inline_use) of this call
};

static inline struct inline_state *
inline_of(shoal_request *req)
{
    return shi_algo_state(req, struct inline_state);
}

// Bytes of one rank's input: all-to-all and reduce-scatter send a block
// (req->count elements) to every rank.
static size_t
input_bytes(const shoal_request *req, int nranks)
{
    size_t bytes = req->count * shi_req_esize(req);

    if (req->kind == SHI_OP_ALLTOALL || req->kind == SHI_OP_REDUCE_SCATTER) {
        bytes *= (size_t) nranks;
    }
    return bytes;
}

int
shi_inline_fits(const shoal_request *req)
{
    switch (req->kind) {
        case SHI_OP_ALLREDUCE:
        case SHI_OP_ALLGATHER:
        case SHI_OP_ALLTOALL:
        case SHI_OP_REDUCE_SCATTER:
            return req->count <= SHM_INLINE_BYTES
                && input_bytes(req, req->comm->size) <= SHM_INLINE_BYTES;
        default:
            return 0;
    }
}

static void
publish_line(shoal_comm *comm, shoal_request *req)
{
    struct shm_inline *mine
        = &comm->my_ctl->inline_slot[inline_of(req)->use % 2];
    size_t bytes = input_bytes(req, comm->size);

    if (bytes > 0) {
        memcpy(mine->data, req->sendbuf, bytes);
    }
    mine->desc_hash = __atomic_load_n(
        &comm->my_ctl->desc_hash[req->seq % 2], __ATOMIC_RELAXED);
    atomic_store_explicit(
        &mine->use, inline_of(req)->use, memory_order_release);
    shi_ring_peers(comm);
}

// 1 when every peer's line holds this use.
static int
lines_ready(shoal_comm *comm, shoal_request *req)
{
    for (int p = 0; p < comm->size; p++) {
        struct shm_inline *line = &shm_ctl_of(comm->mapped, p)
                                       ->inline_slot[inline_of(req)->use % 2];
        if (atomic_load_explicit(&line->use, memory_order_acquire)
            != inline_of(req)->use) {
            req->blocked_on = p;
            shi_coll_peer_differs(comm, p, (uint32_t) req->seq);
            return 0;
        }
    }
    req->blocked_on = -1;
    return 1;
}

// The call's result from the n lines in comm->inputs.
static void
take_lines(shoal_comm *comm, shoal_request *req)
{
    size_t block = req->count * shi_req_esize(req);
    size_t mine  = (size_t) comm->rank * block;

    switch (req->kind) {
        case SHI_OP_ALLGATHER:
            for (int q = 0; q < comm->size && block > 0; q++) {
                memcpy(req->buf + (size_t) q * block, comm->inputs[q], block);
            }
            return;
        case SHI_OP_ALLTOALL:
            for (int q = 0; q < comm->size && block > 0; q++) {
                memcpy(req->buf + (size_t) q * block,
                    (const unsigned char *) comm->inputs[q] + mine, block);
            }
            return;
        case SHI_OP_REDUCE_SCATTER:
            for (int q = 0; q < comm->size; q++) {
                comm->inputs[q]
                    = (const unsigned char *) comm->inputs[q] + mine;
            }
            break;
        default:
            break;
    }
    shi_reduce(
        req->dtype, req->op, req->buf, comm->inputs, comm->size, req->count);
}

int
shi_inline_step(shoal_comm *comm, shoal_request *req)
{
    int agree = 1;

    if (inline_of(req)->phase == 0) {
        inline_of(req)->use = ++comm->inline_use;
        publish_line(comm, req);
        inline_of(req)->phase = 1;
    }
    if (!lines_ready(comm, req)) {
        return 0;
    }
    uint64_t want
        = comm->my_ctl->inline_slot[inline_of(req)->use % 2].desc_hash;
    for (int p = 0; p < comm->size; p++) {
        struct shm_inline *line = &shm_ctl_of(comm->mapped, p)
                                       ->inline_slot[inline_of(req)->use % 2];
        comm->inputs[p] = line->data;
        agree &= line->desc_hash == want;
    }
    if (!agree && shi_coll_verify(comm, (uint32_t) req->seq)) {
        return 1;
    }
    if (!agree) {
        shi_comm_abort(comm, SHOAL_EMISMATCH,
            "%s #%llu does not match across ranks (the ranks' calls differ "
            "in count, dtype or op)",
            shi_op_kind_name(req->kind), (unsigned long long) req->seq);
        return 1;
    }
    take_lines(comm, req);
    shi_engine_complete(comm, req, SHOAL_OK);
    return 1;
}
