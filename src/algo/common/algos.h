// Step functions of the collective algorithms (one file each under
// src/algo/). Each advances the head collective `req` as far as it can
// without waiting, returns the units of progress made, and completes the
// request when done.
#ifndef SHI_ALGOS_H
#define SHI_ALGOS_H

#include "core/comm.h"

int shi_oneshot_step(shoal_comm *comm, shoal_request *req);
int shi_inline_fits(const shoal_request *req);
int shi_inline_step(shoal_comm *comm, shoal_request *req);
int shi_twoshot_step(shoal_comm *comm, shoal_request *req);
int shi_allreduce_direct_step(shoal_comm *comm, shoal_request *req);
int shi_reduce_direct_step(shoal_comm *comm, shoal_request *req);
int shi_reduce_scatter_direct_step(shoal_comm *comm, shoal_request *req);
int shi_move_direct_step(shoal_comm *comm, shoal_request *req);
int shi_staged_step(shoal_comm *comm, shoal_request *req);

// Helpers shared by the algorithms (coll_layout.c): element size, the
// per-rank count and displacement (in elements) of v-collectives.
size_t shi_req_esize(const shoal_request *req);
size_t shi_block_count(const shoal_request *req, int rank);
size_t shi_block_displ(const shoal_request *req, int rank);

#endif
