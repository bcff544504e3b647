// The message-schedule side of the collectives, as the collective layer
// sees it: the driver (comm->coll_step on a message transport) and the
// host-aware communicators.
#ifndef SHI_NET_DRIVER_H
#define SHI_NET_DRIVER_H

#include "core/comm.h"

// One pass over the head collectives, under the comm lock; returns units
// of progress (net_exec.c).
int shi_net_coll_step(shoal_comm *comm);
// Frees the executor's state (net_exec.c).
void shi_net_exec_free(shoal_comm *comm);

// Host-aware collectives (net_hier.c): splits the per-host and
// between-host communicators; one step of a host-aware request; after an
// abort, fails the stage in flight.
int  shi_hier_setup(shoal_comm *comm, int host_index, int local_rank);
int  shi_hier_step(shoal_comm *comm, shoal_request *req);
void shi_hier_abandon(shoal_comm *comm);

#endif
