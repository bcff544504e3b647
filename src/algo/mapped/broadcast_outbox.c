// Broadcast through the root's outbox: one writer, many readers.
//
// Steps: the root cuts the buffer into chunks of one outbox slot, copies
// each into the next free slot and publishes it (slot seq = index + 1);
// every other rank copies each published chunk out and releases it with
// its own tail line. The root reuses a slot once every reader's tail has
// passed it, so copying in and copying out overlap (pipelining) and the
// staging memory is bounded by the ring (box_slots x box_slot_bytes).
// Every chunk header repeats what the root called; readers check it
// against their own call (SHOAL_EMISMATCH otherwise).
// Preconditions: every rank calls broadcast with the same root, count and
// dtype; a zero-byte broadcast still sends one empty chunk so that such a
// mismatch is seen.
// Cost: alpha * (1 + chunks / ring) + beta * S on the root (one copy in)
// and on each reader (one copy out); readers read the same slot, so the
// root writes S once whatever the number of ranks.
#include <string.h>

#include "algo/common/algos.h"
#include "algo/mapped/driver.h"
#include "algo/mapped/mapped.h"
#include "algo/registry.h"
#include "base/copy_shared.h"
#include "core/engine.h"

// This algorithm's state in its request.
struct outbox_state {
    uint64_t slot; // next slot of the root's outbox
    uint64_t slot_end; // one past the call's last slot
};

static inline struct outbox_state *
outbox_of(shoal_request *req)
{
    return shi_algo_state(req, struct outbox_state);
}

static uint64_t
chunks_of(const shoal_comm *comm, size_t bytes)
{
    size_t slot = shi_area_of(comm)->box_slot_bytes;

    return bytes == 0 ? 1 : (bytes + slot - 1) / slot;
}

// Lowest tail over all readers of our outbox; sets *slowest.
static uint64_t
min_reader_tail(shoal_comm *comm, int *slowest)
{
    uint64_t low = UINT64_MAX;

    for (int r = 0; r < comm->size; r++) {
        if (r == comm->rank) {
            continue;
        }
        uint64_t t = atomic_load_explicit(
            &shi_area_box_tail(shi_area_of(comm), comm->rank, r)->tail,
            memory_order_acquire);
        if (t < low) {
            low      = t;
            *slowest = r;
        }
    }
    return low;
}

// Whether every reader has released slot `slot` of our outbox's previous
// round. Tails only grow, so the lowest one seen last time stands until
// the root gets that far: most small broadcasts read no reader's line.
static int
slot_free(shoal_comm *comm, uint64_t slot, int *slowest)
{
    struct shi_mapped_state *m    = shi_mapped_of(comm);
    uint64_t                 ring = shi_area_of(comm)->box_slots;

    if (m->box_tail_seen + ring > slot) {
        return 1;
    }
    m->box_tail_seen = min_reader_tail(comm, slowest);
    return m->box_tail_seen + ring > slot;
}

static int
root_step(shoal_comm *comm, shoal_request *req)
{
    size_t slot_bytes = shi_area_of(comm)->box_slot_bytes;
    int    n          = 0;

    while (outbox_of(req)->slot < outbox_of(req)->slot_end) {
        int slowest = -1;
        if (!slot_free(comm, outbox_of(req)->slot, &slowest)) {
            // A reader that called another broadcast (another root) never
            // reads ours: its descriptor says so at once.
            req->blocked_on = slowest;
            shi_coll_peer_differs(comm, slowest, (uint32_t) req->seq);
            return n;
        }
        struct shi_box_slot *h = shi_area_box_slot(
            shi_area_of(comm), comm->rank, outbox_of(req)->slot);
        size_t chunk = req->bytes - req->done < slot_bytes
            ? req->bytes - req->done
            : slot_bytes;
        if (chunk > 0) { // buf may be NULL for a zero-byte broadcast
            shi_copy_shared(shi_box_data(h), req->buf + req->done, chunk);
        }
        h->msg_bytes   = req->bytes;
        h->chunk_bytes = (uint32_t) chunk;
        h->coll_seq    = (uint32_t) req->seq;
        h->kind        = SHI_OP_BCAST;
        h->dtype       = (uint32_t) req->dtype;
        h->count       = req->count;
        atomic_store_explicit(
            &h->seq, outbox_of(req)->slot + 1, memory_order_release);
        shi_ring_peers(comm);
        req->done += chunk;
        outbox_of(req)->slot++;
        n++;
    }
    return n;
}

static int
chunk_matches(
    shoal_comm *comm, shoal_request *req, const struct shi_box_slot *h)
{
    if (h->coll_seq == (uint32_t) req->seq && h->kind == SHI_OP_BCAST
        && h->count == req->count && h->dtype == (uint32_t) req->dtype) {
        return 1;
    }
    shi_comm_abort(comm, SHOAL_EMISMATCH,
        "broadcast #%llu does not match across ranks: rank %d "
        "called broadcast(root %d, %zu x %s), root %d sent "
        "collective #%u with %llu x %s",
        (unsigned long long) req->seq, comm->rank, req->peer, req->count,
        shoal_dtype_name(req->dtype), req->peer, h->coll_seq,
        (unsigned long long) h->count, shoal_dtype_name((int) h->dtype));
    return 0;
}

static int
reader_step(shoal_comm *comm, shoal_request *req)
{
    int root = req->peer;
    int n    = 0;

    while (outbox_of(req)->slot < outbox_of(req)->slot_end) {
        struct shi_box_slot *h
            = shi_area_box_slot(shi_area_of(comm), root, outbox_of(req)->slot);
        if (atomic_load_explicit(&h->seq, memory_order_acquire)
            != outbox_of(req)->slot + 1) {
            req->blocked_on = root;
            shi_coll_peer_differs(comm, root, (uint32_t) req->seq);
            return n;
        }
        if (!chunk_matches(comm, req, h)) {
            return n + 1;
        }
        if (h->chunk_bytes > 0) {
            memcpy(req->buf + req->done, shi_box_data(h), h->chunk_bytes);
        }
        req->done += h->chunk_bytes;
        outbox_of(req)->slot++;
        atomic_store_explicit(
            &shi_area_box_tail(shi_area_of(comm), root, comm->rank)->tail,
            outbox_of(req)->slot, memory_order_release);
        shi_ring(comm, root, 0);
        n++;
    }
    return n;
}

int
shi_bcast_outbox_step(shoal_comm *comm, shoal_request *req)
{
    int n;

    if (comm->size == 1) {
        shi_engine_complete(comm, req, SHOAL_OK);
        return 1;
    }
    if (outbox_of(req)->slot_end == 0) {
        // Every rank reserves the same slots of the root's outbox.
        struct shi_mapped_peer *root = &shi_mapped_of(comm)->peers[req->peer];
        outbox_of(req)->slot         = root->box_slot;
        outbox_of(req)->slot_end
            = outbox_of(req)->slot + chunks_of(comm, req->bytes);
        root->box_slot = outbox_of(req)->slot_end;
    }
    n = req->peer == comm->rank ? root_step(comm, req)
                                : reader_step(comm, req);
    if (outbox_of(req)->slot == outbox_of(req)->slot_end
        && !atomic_load(&comm->failed)) {
        req->blocked_on = -1;
        if (shi_coll_agree(comm, (uint32_t) req->seq)) {
            shi_engine_complete(comm, req, SHOAL_OK);
        }
        n++;
    }
    return n;
}

void
shi_bcast_outbox_cost(const shi_cost_call *c, shi_cost *out)
{
    *out = (shi_cost) {
        .alpha = 1 + shi_cost_chunks(c), .beta = (double) c->bytes, .gamma = 0
    };
}
