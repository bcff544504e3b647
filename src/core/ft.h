// Surviving a lost rank: who is gone (failed.c), the fault-tolerant
// agreement (agree.c) and the shrink built on it (shrink.c).
//
// Deaths are facts of the store: every process leaves a last will on its
// store connection, a "gone" key named by its host identity and pid, which
// the store server sets when that connection closes without an orderly
// close (the process died, or lost the store). An orderly close takes it
// back. A rank that destroyed its communicator is not dead: it said
// goodbye over the transport (SHI_PEER_LEFT).
#ifndef SHI_CORE_FT_H
#define SHI_CORE_FT_H

#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"

struct shi_store;

// A 64-bit hash of a host identity (base/hostid.h).
uint64_t shi_host_hash(const char *host_id);

// The "gone" key of the process `pid` on the host whose identity hashes
// to host_hash.
void shi_gone_key(char *buf, size_t len, uint64_t host_hash, int pid);

// Leaves this process's "gone" will on a store handle.
int shi_gone_will(struct shi_store *st, int64_t deadline);

// Whether `peer`'s process is known dead by the store: its "gone" key is
// set (one look). 1 or 0; a failing store gives 0. What agreements go by:
// the store orders it after everything that process set there.
int shi_process_gone(shoal_comm *comm, int peer);

// shi_process_gone, or the transport saw the peer's connection drop.
int shi_peer_gone(shoal_comm *comm, int peer);

// Agreement number `k` on comm (agree.c): joins it with `flag` and waits
// until every rank has joined or is gone. *flag becomes the AND of the
// joined ranks' flags and joined[r] (comm->size bytes) says who joined;
// every live rank gets the same answer.
int shi_ft_agree(shoal_comm *comm, int k, int *flag, unsigned char *joined,
    int64_t deadline);

// Counts this rank done with agreement k; the last of its `members`
// deletes the agreement's keys.
void shi_ft_forget(shoal_comm *comm, int k, int members, int64_t deadline);

// The key `what` ("in/3") of agreement k on comm, into buf.
void shi_ft_key(
    const shoal_comm *comm, int k, const char *what, char *buf, size_t len);

// A 0-wait look at key: 1 with its value in *value (malloc'd, or NULL
// when value is NULL), 0 when it is not set.
int shi_ft_look(shoal_comm *comm, const char *key, char **value);

#endif
