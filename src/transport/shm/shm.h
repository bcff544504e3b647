// The shared-memory transport's private state and its parts (only files of
// this folder include this header). Every rank of the communicator is on
// this host; rank 0 creates the segment (shm_segment.h) and passes it to
// the others over unix sockets, which then stay open so that a peer's
// death is seen the moment its socket closes (shm_watch.c).
#ifndef SHI_SHM_H
#define SHI_SHM_H

#include <pthread.h>

#include "core/comm.h"
#include "transport/shm/shm_segment.h"

struct shi_shm {
    shm_segment seg; // comm->mapped once mapped
    int *fds; // per rank: unix socket to that peer (-1: none, ourselves)
    // Liveness watcher (shm_watch.c).
    pthread_t watch_thread;
    int       watch_started;
    int       watch_stop_fd;
    int       watch_ep; // its epoll set
};

static inline struct shi_shm *
shi_shm_of(const shoal_comm *comm)
{
    return (struct shi_shm *) comm->tp_state;
}

// Connecting (shm_setup.c): the unix-socket mesh, then the segment (a
// single rank makes its own).
int shi_shm_setup(
    shoal_comm *comm, const struct shi_tp_boot *boot, int64_t deadline);

// Point to point over the segment's channels (shm_p2p.c).
void shi_shm_p2p_post(shoal_comm *comm, shoal_request *req);
int  shi_shm_p2p_step(shoal_comm *comm);
void shi_shm_p2p_discard(shoal_comm *comm);

// Liveness watcher (shm_watch.c).
int  shi_shm_watch_start(shoal_comm *comm);
void shi_shm_watch_stop(shoal_comm *comm);

// Memory operations (shm_mem.c; contracts in transport.h).
void  shi_shm_mem_expose(shoal_comm *comm, const void *base, size_t bytes,
     struct shi_tp_region *out);
void *shi_shm_mem_view(
    shoal_comm *comm, const struct shi_tp_region *r, size_t off, size_t bytes);
int shi_shm_mem_read(shoal_comm *comm, const struct shi_tp_region *r,
    size_t off, void *dst, size_t bytes);
int shi_shm_mem_write(shoal_comm *comm, const struct shi_tp_region *r,
    size_t off, const void *src, size_t bytes);
// Reads the `bytes`-byte stream of layout `src`, whose base lies at
// `base_off` of peer region r, into the stream of `dst` (NULL: dense) at
// `to`: one pass, through the heap mapping or the kernel (many pieces per
// process_vm_readv). Checks src and base_off against the region.
int shi_shm_mem_read_strided(shoal_comm *comm, const struct shi_tp_region *r,
    uint64_t base_off, const shi_strided *src, uint64_t bytes,
    unsigned char *to, const shi_strided *dst);

// Adopts an abort another rank published in the segment; 1 if there was
// one (shm_transport.c).
int shi_shm_adopt_abort(shoal_comm *comm);

#endif
