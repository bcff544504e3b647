// The message-schedule side of the collectives, as the collective layer
// sees it: the driver (comm->coll_step on a message transport).
#ifndef SHI_NET_DRIVER_H
#define SHI_NET_DRIVER_H

#include "core/comm.h"

// One pass over the head collectives, under the comm lock; returns units
// of progress (net_exec.c).
int shi_net_coll_step(shoal_comm *comm);
// Frees the executor's state (net_exec.c).
void shi_net_exec_free(shoal_comm *comm);

#endif
