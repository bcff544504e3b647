// What each rank takes from each peer in the data-movement collectives
// (all_gather(_v), all_to_all(_v), gather, scatter, broadcast): a byte
// range of the peer's source buffer and where it lands in this rank's
// receive buffer. The direct and the staged algorithms both run from this
// description (broadcast: the direct one only; the outbox stages it).
#ifndef SHI_MOVE_PLAN_H
#define SHI_MOVE_PLAN_H

#include <stddef.h>

#include "core/comm.h"

// Publishes what peers need to plan (all_to_all_v: this rank's send
// counts). Called before the first sync point.
void shi_move_publish(shoal_comm *comm, shoal_request *req);

// Copies the peers' published counts (all_to_all_v) right after the first
// sync point: a peer that finishes early may publish its next call's
// counts while this rank still plans from these.
void shi_move_snapshot(shoal_comm *comm, shoal_request *req);

// The range rank `me` takes from peer q: *src_off bytes into q's send
// buffer, *len bytes, landing at *dst_off in me's receive buffer. *len is 0
// when nothing comes from q. Returns 0, or 1 after aborting the comm on a
// count mismatch (all_to_all_v). Valid after shi_move_snapshot.
int shi_move_range(shoal_comm *comm, shoal_request *req, int q,
    size_t *src_off, size_t *len, size_t *dst_off);

// Which of a peer's exposed buffers the ranges above lie in: its send
// buffer, or for a broadcast (in place) the root's only buffer, the one
// the call names buf (SHI_RECV).
int shi_move_source_side(const shoal_request *req);

// Bytes of rank q's send buffer that anyone reads (the staged algorithm
// streams that much of it). Valid after shi_move_snapshot.
size_t shi_move_send_bytes(shoal_comm *comm, shoal_request *req, int q);

#endif
