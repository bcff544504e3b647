// The driver of the host-aware collectives (hier.c): stages, each a
// non-blocking operation on the per-host or between-host communicator.
#ifndef SHI_HIER_H
#define SHI_HIER_H

#include "core/comm.h"

// The stages, in order.
enum { HIER_LOCAL_REDUCE = 0, HIER_LEADERS, HIER_BCAST, HIER_DONE };

// The driver's state in the request: the current stage.
struct shi_hier_state {
    int stage;
};

static inline int *
shi_hier_stage(shoal_request *req)
{
    return &shi_algo_state(req, struct shi_hier_state)->stage;
}

// Starts stage *shi_hier_stage(req) of `req`; leaves *sub NULL where this rank
// has nothing to do in it. Returns SHOAL_OK or the error of the start.
typedef int (*shi_hier_stage_fn)(
    shoal_comm *comm, shoal_request *req, shoal_request **sub);

// One step of a host-aware collective whose stages `start` starts.
int shi_hier_run(
    shoal_comm *comm, shoal_request *req, shi_hier_stage_fn start);

// Splits the per-host and between-host communicators (after the engine
// started); offers the host-aware algorithms once they exist.
int shi_hier_setup(shoal_comm *comm, int host_index, int local_rank);

// After an abort: the stage in flight fails too (its communicators are
// aborted), so that nothing writes the caller's buffers any more.
void shi_hier_abandon(shoal_comm *comm);

#endif
