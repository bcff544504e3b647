// The flight recorder: each communicator's bounded ring of its recent
// operations (flight.c), dumped in torch's flight-recorder format so that
// `python -m torch.distributed.flight_recorder.fr_trace DIR` can name the
// rank that skipped or mismatched a collective.
//
// Recording happens under the communicator's lock, where the engine
// already is (submission, completion): a few stores into a preallocated
// slot, nothing when the ring is off (SHOAL_FR_ENTRIES=0).
#ifndef SHI_CORE_FLIGHT_H
#define SHI_CORE_FLIGHT_H

#include <stdint.h>

#include "core/comm.h"

// Entries each communicator keeps (SHOAL_FR_ENTRIES; 0 turns it off).
#define SHI_FR_DEFAULT_ENTRIES 2000

// Sets comm's ring up from SHOAL_FR_ENTRIES (at creation); frees it.
int  shi_fr_init(shoal_comm *comm);
void shi_fr_free(shoal_comm *comm);

// Records req, just submitted (its number known), as started (and ended,
// if it already has); and its end. Under the lock.
void shi_fr_record(shoal_comm *comm, shoal_request *req);
void shi_fr_complete(shoal_comm *comm, shoal_request *req, int status);

// Writes comm's ring to <dir>/shoal_trace_rank_<rank> (dir NULL:
// SHOAL_FR_DUMP_DIR; unset: SHOAL_ENOTSUP). Under the lock.
int shi_fr_dump(shoal_comm *comm, const char *dir);

#endif
