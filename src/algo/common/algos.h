// Step functions of the host-aware algorithms (in their collective's
// folder; algo/common/hier.c drives them) and the helpers every family
// shares. A step advances the head collective `req` as far as it can
// without waiting, returns the units of progress made, and completes the
// request when done. The mapped-memory family declares its own in
// algo/mapped/mapped.h.
#ifndef SHI_ALGOS_H
#define SHI_ALGOS_H

#include "core/comm.h"

// Host-aware all-reduce and broadcast (algo/common/hier.c drives them).
int shi_allreduce_hier_step(shoal_comm *comm, shoal_request *req);
int shi_allreduce_hier_accepts(const shoal_request *req);
int shi_bcast_hier_step(shoal_comm *comm, shoal_request *req);
// Helpers shared by the algorithms: element size, the per-rank count and
// displacement (in elements) of v-collectives (coll_layout.c).
static inline size_t
shi_req_esize(const shoal_request *req)
{
    return req->esize;
}
size_t shi_block_count(const shoal_request *req, int rank);
size_t shi_block_displ(const shoal_request *req, int rank);

#endif
