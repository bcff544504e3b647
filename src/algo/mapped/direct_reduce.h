// Reducing a range of every rank's send buffer, reading peers' memory
// directly (shared heap in place, else process_vm_readv into scratch), in
// pieces small enough to stay in cache, and optionally pushing each reduced
// piece into peers' receive buffers while it is still in the cache.
#ifndef SHI_DIRECT_REDUCE_H
#define SHI_DIRECT_REDUCE_H

#include "core/comm.h"

// Where reduced pieces go besides `recv`.
enum {
    SHI_PUSH_NONE = -2, // nowhere
    SHI_PUSH_ALL  = -1, // every peer's receive buffer
    // a rank >= 0: that rank's receive buffer only (if not this rank)
};

// recv[i] = reduction over every rank q of q's sendbuf element (first + i),
// for i < elems; recv NULL: pieces are reduced into scratch (for pushing).
// Each piece is then copied to element (first + i) of the receive buffer
// of the peers `push` names. For a direct algorithm's phase 2 only: it
// goes on from shi_direct_done and pauses between pieces when the engine
// asks (shi_engine_pause_long_work). Returns SHOAL_OK, SHOAL_INPROGRESS
// when paused, or an error (the comm is aborted).
int shi_direct_reduce_range(shoal_comm *comm, shoal_request *req, size_t first,
    size_t elems, unsigned char *recv, int push);

#endif
