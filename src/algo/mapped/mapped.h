// The mapped-memory family's algorithms: the step function and cost
// formula of each registry row it owns (one file per algorithm in this
// folder; the registry, registry.c, names them). A step advances the head
// collective `req` as far as it can without waiting (algo/common/algos.h),
// returns the units of progress made, and completes the request when done.
#ifndef SHI_MAPPED_H
#define SHI_MAPPED_H

#include "core/comm.h"

struct shi_cost_call;
struct shi_cost;

int shi_oneshot_step(shoal_comm *comm, shoal_request *req);
int shi_inline_fits(const shoal_request *req);
int shi_inline_step(shoal_comm *comm, shoal_request *req);
int shi_twoshot_step(shoal_comm *comm, shoal_request *req);
int shi_allreduce_direct_step(shoal_comm *comm, shoal_request *req);
int shi_reduce_direct_step(shoal_comm *comm, shoal_request *req);
int shi_reduce_scatter_direct_step(shoal_comm *comm, shoal_request *req);
int shi_move_direct_step(shoal_comm *comm, shoal_request *req);
int shi_staged_step(shoal_comm *comm, shoal_request *req);
int shi_barrier_flags_step(shoal_comm *comm, shoal_request *req);
int shi_bcast_outbox_step(shoal_comm *comm, shoal_request *req);
// One-shot and staging, with the inline path for a cache line's worth.
int shi_oneshot_run(shoal_comm *comm, shoal_request *req);
int shi_staged_run(shoal_comm *comm, shoal_request *req);

// Cost formulas (registry.h), each beside its algorithm.
void shi_oneshot_cost(const struct shi_cost_call *c, struct shi_cost *out);
void shi_twoshot_cost(const struct shi_cost_call *c, struct shi_cost *out);
void shi_allreduce_direct_cost(
    const struct shi_cost_call *c, struct shi_cost *out);
void shi_reduce_direct_cost(
    const struct shi_cost_call *c, struct shi_cost *out);
void shi_reduce_scatter_direct_cost(
    const struct shi_cost_call *c, struct shi_cost *out);
void shi_move_direct_cost(const struct shi_cost_call *c, struct shi_cost *out);
void shi_staged_cost(const struct shi_cost_call *c, struct shi_cost *out);
void shi_bcast_outbox_cost(
    const struct shi_cost_call *c, struct shi_cost *out);
void shi_barrier_flags_cost(
    const struct shi_cost_call *c, struct shi_cost *out);

#endif
