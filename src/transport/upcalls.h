// What a transport may call above it: the only upward calls in the
// library (scripts/check-calls.py allows these and nothing else). The
// core and the window layer provide them. A transport includes
// transport.h, msg.h and this header, and nothing of the layers above.
#ifndef SHI_TRANSPORT_UPCALLS_H
#define SHI_TRANSPORT_UPCALLS_H

#include <stddef.h>
#include <stdint.h>

#include "shoal.h"

struct shoal_comm;
struct shi_store;

// --- requests and failures -----------------------------------------------
// Completes a point-to-point or one-sided request with `status` (under
// the lock).
void shi_transport_complete(
    struct shoal_comm *comm, shoal_request *req, int status);

// Aborts the communicator on every rank with an outside fault: pending and
// later operations fail. The first abort wins; later ones are ignored.
// Callable with or without the engine lock held.
void shi_comm_abort(struct shoal_comm *comm, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

// Wakes rank `rank`'s sleeping threads if any (or always when `force`):
// this rank's own after the transport's thread saw something arrive.
void shi_ring(struct shoal_comm *comm, int rank, int force);

// --- creation: the store and the rendezvous ------------------------------
// The store this communicator was created through.
struct shi_store *shi_comm_store(struct shoal_comm *comm);

// Waits for creation key `key` (shi_rdv_key names them) in the store, but
// fails as soon as the parent communicator fails or another rank's
// creation failed or died.
int shi_rdv_get(struct shoal_comm *comm, const char *key, char **value,
    size_t *len, int64_t deadline);

// Blocking steps of a creation (connecting, accepting) wait in slices:
// until = shi_rdv_until(deadline) ends the next one; after a step failed
// with `st`, shi_rdv_sliced says SHOAL_INPROGRESS to go on with another
// slice, or the status to return (st itself, or the rendezvous' failure).
int64_t shi_rdv_until(int64_t deadline);
int     shi_rdv_sliced(
        struct shoal_comm *comm, int st, int64_t until, int64_t deadline);

// --- windows -------------------------------------------------------------
// A put from rank `origin` of `bytes` at byte `off` of this rank's window
// `win` starts arriving (rma_send's target side, under the lock): where
// its bytes go. NULL, with the error's text recorded (shi_error), when no
// window `win` is registered here or the range lies outside it: the
// transport then aborts the communicator.
unsigned char *shi_transport_put_target(struct shoal_comm *comm, int origin,
    uint32_t win, uint64_t off, uint64_t bytes);

// Signal counter `which` (see rma_send) of rank `origin` on this rank's
// window `win` went up by one (under the lock). Returns SHOAL_OK, or an
// error with its text recorded (no such window, no such counter).
int shi_transport_signal_arrived(
    struct shoal_comm *comm, int origin, uint32_t win, uint64_t which);

#endif
