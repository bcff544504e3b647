// What an algorithm may call of the collective layer above it (src/coll).
// Only the host-aware family composes collectives: each of its stages is
// a non-blocking reduce, all-reduce or broadcast on the per-host or the
// between-host communicator, started through the public entry points,
// which choose that communicator's algorithm (algo/common/hier.c).
// They are declared again here, exactly as in shoal.h (the compiler checks
// that the two agree), so that this file is the whole list:
// scripts/check-calls.py allows exactly these calls to run upward.
#ifndef SHI_ALGO_UPCALLS_H
#define SHI_ALGO_UPCALLS_H

#include "shoal.h"

int shoal_ireduce(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t count, shoal_dtype dtype, shoal_reduce_op op, int root,
    shoal_request **req);
int shoal_iall_reduce(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t count, shoal_dtype dtype, shoal_reduce_op op, shoal_request **req);
int shoal_ibroadcast(shoal_comm *comm, void *buf, size_t count,
    shoal_dtype dtype, int root, shoal_request **req);

#endif
