// What core calls of the collective layer above it (src/coll): the
// collectives' part of a communicator's creation and destruction, and
// nothing else. Creation (bootstrap.c) and destruction (comm.c) run these
// steps at fixed points; every other call goes downward.
// scripts/check-calls.py allows exactly these calls to run upward.
#ifndef SHI_CORE_UPCALLS_H
#define SHI_CORE_UPCALLS_H

#include <stdint.h>

#include "shoal.h"
#include "transport/transport.h"

// Before a mapped transport's setup: the room the collectives need in the
// memory every rank maps (transport.h: shi_tp_area), from this rank's
// environment (the creating rank's plan wins).
int shi_coll_area_plan(shoal_comm *comm, struct shi_tp_area *area);

// Rank 0's algorithm table, through the store. Creation over TCP asks for
// it early, before the mesh (while every rank still reads the store);
// shi_coll_setup then skips it.
int shi_coll_agree_table(shoal_comm *comm, int64_t deadline);

// After the transport connected the peers: agree on single-copy support
// and on the algorithm table, allocate the collectives' state, and pick
// the driver of the transport's class.
int shi_coll_setup(shoal_comm *comm, int64_t deadline);

// After the engine started: the per-host and between-host communicators
// of the host-aware collectives, where wanted.
int shi_coll_start(shoal_comm *comm);

// At destruction: frees what shi_coll_setup allocated.
void shi_coll_teardown(shoal_comm *comm);

#endif
