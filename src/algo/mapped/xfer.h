// Building blocks of the collectives over shared memory: sync points,
// exposing buffers to peers, reading peers' buffers (in place when they lie
// in the shared heap, through process_vm_readv otherwise), staging slabs,
// and splitting work into per-rank segments.
//
// Sync points: every rank counts the sync points it has passed in its own
// line (`ctl.sync`). A collective that starts when the comm's count is B
// passes points B+1, B+2, ...; every rank runs the same algorithm, so the
// same number of points, and waiting for point k means waiting until every
// peer's count is >= B+k. The first point also compares the ranks'
// descriptors, so a mismatch is reported before any data is used.
#ifndef SHI_XFER_H
#define SHI_XFER_H

#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"

enum shi_side { SHI_SEND = 0, SHI_RECV = 1 };

// Publishes sync point k (idempotent) and returns 1 once every peer has
// passed it (else 0, with req->blocked_on set). k = 1 also verifies the
// descriptors (returns 0 after aborting on a mismatch).
int shi_sync_all(shoal_comm *comm, shoal_request *req, int k);

// Publishes sync point k and returns 1 once peer `p` has passed it.
int shi_sync_peer(shoal_comm *comm, shoal_request *req, int p, int k);

// Ends the collective: the comm's count moves past its last point k.
void shi_sync_finish(shoal_comm *comm, shoal_request *req, int k);

// Publishes this rank's send and receive buffers for its peers.
void shi_expose(shoal_comm *comm, const void *send, const void *recv);

// Peer p's exposed buffer at byte `off` (`len` bytes), if it is mapped
// here (shared heap, checked against the heap), else NULL.
const unsigned char *shi_peer_view(
    shoal_comm *comm, int p, int side, size_t off, size_t len);

// Copies len bytes at byte `off` of peer p's exposed buffer into dst (for
// p == this rank: from its own buffer), through the transport's mem_read.
// Aborts the comm and returns an error if the copy fails.
int shi_peer_read(
    shoal_comm *comm, int p, int side, size_t off, void *dst, size_t len);

// Copies len bytes from src to byte `off` of peer p's exposed buffer (p is
// not this rank), through the transport's mem_write (in place in the
// shared heap, else through the kernel). Aborts the comm and returns an
// error if the copy fails.
int shi_peer_write(shoal_comm *comm, int p, int side, size_t off,
    const void *src, size_t len);

// Returns a readable pointer to len bytes at `off` of p's buffer: in place
// when possible, else copied into `scratch` (len bytes). NULL on error.
const unsigned char *shi_peer_bytes(shoal_comm *comm, int p, int side,
    size_t off, size_t len, unsigned char *scratch);

// Staging: begins the next use of the slabs (returns its number) and tells
// whether every peer finished reading the use two before (the slab this
// one overwrites).
uint64_t shi_slab_next(shoal_comm *comm);
int      shi_slab_free(shoal_comm *comm, shoal_request *req, uint64_t use);
unsigned char *shi_slab_of(shoal_comm *comm, int rank, uint64_t use);
void           shi_slab_done(shoal_comm *comm, uint64_t use);

// Element range [lo, hi) of segment i when `count` elements of `esize`
// bytes are split in n parts (cut at 64-byte multiples where possible).
void shi_segment(
    size_t count, size_t esize, int n, int i, size_t *lo, size_t *hi);

// Grows the comm's scratch buffer to at least `bytes`; NULL if out of
// memory (the comm is aborted).
unsigned char *shi_scratch(shoal_comm *comm, size_t bytes);

#endif
