// The driver of the mapped-memory collectives: ordering, descriptors and
// the dispatch to each algorithm's step (its registry row).
//
// Collectives of a communicator run one at a time in issue order. When one
// starts, the rank publishes what it called (kind, root, count, dtype) in
// its descriptor ring in shared memory and bumps its collective counter;
// ranks compare each other's descriptors for every collective number both
// have reached, so ranks that call different operations, roots, counts or
// dtypes at the same point get SHOAL_EMISMATCH naming both sides, no later
// than the next collective that synchronizes them.
#ifndef SHI_MAPPED_DRIVER_H
#define SHI_MAPPED_DRIVER_H

#include "algo/mapped/area.h"
#include "core/comm.h"

// What the mapped-memory algorithms keep across calls on a communicator:
// the family's own, held by the communicator as comm->mapped_state
// (NULL on other transports).
struct shi_mapped_state {
    struct shi_area        area; // the family's part of the shared memory
    struct shi_mapped_ctl *my_ctl; // this rank's control block in it
    uint64_t               sync_count; // sync points passed (xfer.c)
    uint64_t               slab_use; // staging uses so far (xfer.c)
    uint64_t               inline_use; // tiny collectives so far (inline.c)
    uint64_t inline_seen; // the last inline use every peer entered
    uint64_t box_tail_seen; // the lowest reader tail of my outbox, last read
    struct shi_mapped_peer {
        uint64_t box_slot; // next slot of this peer's outbox
        uint32_t coll_checked; // collectives verified against this peer
        shoal_peer_stats late; // its arrivals (lateness.c)
    } * peers; // per rank
    uint32_t late_next; // the next collective lateness.c accounts (0: none)
};

static inline struct shi_mapped_state *
shi_mapped_of(const shoal_comm *comm)
{
    return comm->mapped_state;
}

static inline struct shi_area *
shi_area_of(const shoal_comm *comm)
{
    return &comm->mapped_state->area;
}

static inline struct shi_mapped_ctl *
shi_my_ctl(shoal_comm *comm)
{
    return comm->mapped_state->my_ctl;
}

static inline struct shi_mapped_ctl *
shi_ctl_of(shoal_comm *comm, int rank)
{
    return shi_area_ctl(&comm->mapped_state->area, rank);
}

// Creates and frees comm's mapped_state (collective setup and teardown):
// binds the area the transport made room for (transport.h: coll_area).
int  shi_mapped_state_new(shoal_comm *comm);
void shi_mapped_state_free(shoal_comm *comm);

// Compares our descriptors with every peer's, up to collective `upto`.
// Aborts the communicator on a mismatch; returns 1 if it did.
int shi_coll_verify(shoal_comm *comm, uint32_t upto);

// Fast agreement check at a collective's first sync point: compares the
// peers' descriptor hashes, falling back to shi_coll_verify when one
// differs. Returns 1 if the ranks agree, 0 after aborting on a mismatch.
int shi_coll_agree(shoal_comm *comm, uint32_t seq);

// While waiting for peer p in collective `seq`: if p has entered the same
// collective number with a different call (e.g. a count that made it pick
// another algorithm, which would never meet ours), aborts with the mismatch
// and returns 1.
int shi_coll_peer_differs(shoal_comm *comm, int p, uint32_t seq);

// Who arrives last (lateness.c): while waiting in collective `current`,
// accounts the arrivals of one earlier collective; the summary SHOAL_DEBUG
// =INFO prints when the communicator goes.
void shi_lateness_account(shoal_comm *comm, uint32_t current);
void shi_lateness_summary(shoal_comm *comm);

// One pass over the head collectives (comm->coll_step on a mapped-memory
// transport), under the comm lock; returns units of progress.
int shi_coll_step(shoal_comm *comm);

// Signed distance a - b between wrapping 32-bit collective numbers.
static inline int32_t
shi_seq_diff(uint32_t a, uint32_t b)
{
    return (int32_t) (a - b);
}

#endif
