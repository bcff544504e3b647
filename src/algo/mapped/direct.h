// The driver of the single-copy ("direct") algorithms, which all run the
// same three phases: (1) expose this rank's buffers to its peers (and
// whatever else the algorithm publishes); sync point 1, which also checks
// that the ranks called the same collective; (2) the algorithm's work,
// reading (and writing) peers' buffers in place or through the kernel;
// (3) sync point 2, so that no rank returns, and reuses its buffers, while
// a peer still reads or writes them.
// An algorithm's registry row may name a staged one to run the call
// instead when some rank's buffer lies outside the shared heap (single
// copy then goes through the kernel, which pins every page on every call)
// and the built-in table chose the direct one: a named algorithm runs as
// named. Whether a call may hand over is part of its descriptor, so every
// rank agrees (or fails with a mismatch); every rank sees every exposure
// at sync point 1, so all decide alike; the staged algorithm starts there,
// as if the call had just begun (direct.c says why no sync point is
// needed between).
#ifndef SHI_DIRECT_H
#define SHI_DIRECT_H

#include "core/comm.h"

typedef struct shi_direct_ops {
    // Publishes what the algorithm needs besides the buffers (NULL: none).
    void (*publish)(shoal_comm *comm, shoal_request *req);
    // Phase 2; returns SHOAL_OK, SHOAL_INPROGRESS when it paused between
    // two pieces (shi_engine_pause_long_work; it goes on from
    // shi_direct_done at the next step), or an error after aborting the
    // comm.
    int (*work)(shoal_comm *comm, shoal_request *req);
} shi_direct_ops;

// One step of a direct algorithm (a shi_step_fn with its ops).
int shi_direct_run(
    shoal_comm *comm, shoal_request *req, const shi_direct_ops *ops);

// How much of phase 2 is done, for a work function that runs in pieces,
// in its own unit (elements reduced, bytes moved; 0 when the phase begins).
size_t *shi_direct_done(shoal_request *req);

#endif
