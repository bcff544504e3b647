// Reducing a range of every rank's send buffer, reading peers' memory
// directly (shared heap in place, else process_vm_readv into scratch), in
// pieces small enough to stay in cache.
#ifndef SHI_DIRECT_REDUCE_H
#define SHI_DIRECT_REDUCE_H

#include "core/comm.h"

// recv[i] = reduction over every rank q of q's sendbuf element (first + i),
// for i < elems. With `push`, each reduced piece is also copied into every
// peer's receive buffer at element (first + i) while it is still in the
// cache. Returns SHOAL_OK or an error (the comm is aborted).
int shi_direct_reduce_range(shoal_comm *comm, shoal_request *req, size_t first,
    size_t elems, unsigned char *recv, int push);

#endif
