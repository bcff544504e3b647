// Host-aware broadcast: a broadcast from root R runs within R's host from
// R (shared memory), among the leaders from R's host's leader (TCP), and
// within every other host from its leader (the stages run by
// algo/common/hier.c); only the leaders' copy crosses the network.
// Preconditions: the per-host and between-host communicators exist.
// Cost: as the host-aware all-reduce's stages, without the reductions.
#include "algo/common/algos.h"
#include "algo/common/hier.h"
#include "algo/net/net_gen.h"
#include "algo/registry.h"
#include "algo/upcalls.h"

// Index of host `first`'s leader among the leaders (ranked by global
// rank: the hosts' first ranks before it).
static int
leader_index(const shoal_comm *comm, int first)
{
    int i = 0;

    for (int r = 0; r < first; r++) {
        i += comm->host_first[r] == r;
    }
    return i;
}

// Starts the current stage (see the top of the file).
static int
broadcast_stage(shoal_comm *comm, shoal_request *req, shoal_request **sub)
{
    int root = req->peer, home = comm->host_first[root];
    int mine = comm->host_index == home;

    switch (*shi_hier_stage(req)) {
        case HIER_LOCAL_REDUCE:
            return !mine ? SHOAL_OK
                         : shoal_ibroadcast(comm->local, req->buf, req->count,
                             req->dtype, comm->local_rank_of[root], sub);
        case HIER_LEADERS:
            return comm->leaders == NULL
                ? SHOAL_OK
                : shoal_ibroadcast(comm->leaders, req->buf, req->count,
                    req->dtype, leader_index(comm, home), sub);
        case HIER_BCAST:
            return mine ? SHOAL_OK
                        : shoal_ibroadcast(comm->local, req->buf, req->count,
                            req->dtype, 0, sub);
    }
    return SHOAL_OK;
}

int
shi_bcast_hier_step(shoal_comm *comm, shoal_request *req)
{
    return shi_hier_run(comm, req, broadcast_stage);
}
