// The shared-memory transport's private state and its parts (only files of
// this folder include this header). Every rank of the communicator is on
// this host; rank 0 creates the segment (shm_segment.h) and passes it to
// the others over unix sockets, which then stay open so that a peer's
// death is seen the moment its socket closes (shm_watch.c).
#ifndef SHI_SHM_H
#define SHI_SHM_H

#include <pthread.h>

#include "transport/shm/shm_segment.h"

// A message that arrived before its receive was posted (small ones only).
struct shi_unexpected {
    struct shi_unexpected *next;
    uint64_t               arrival; // comm->p2p_arrivals when first seen
    int                    tag;
    size_t                 bytes;
    unsigned char          data[];
};

// Point-to-point state per peer (shm_p2p.c), under the comm lock.
struct shi_shm_peer {
    shi_req_queue          sends; // sends to this peer, in issue order
    shi_req_queue          recvs; // posted receives from it, in post order
    struct shi_unexpected *unexpected, *unexpected_tail;
    shoal_request         *active_recv; // consuming a multi-slot message
    // Arrival number of the message waiting at the head of the channel for
    // its receive (too large to buffer), 0 if none: any-source receives
    // take messages in arrival order, buffered or not.
    uint64_t head_seen;
    uint64_t send_slot; // next slot we write to it
    uint64_t send_free; // slots known free up to (exclusive)
    uint64_t recv_slot; // next slot we read from it
};

struct shi_shm {
    shm_segment      seg;
    struct shm_rank *me; // this rank's lines, once the segment is mapped
    int *fds; // per rank: unix socket to that peer (-1: none, ourselves)
    // Point to point (shm_p2p.c), under the comm lock.
    struct shi_shm_peer *peers; // per rank
    shi_req_queue        any_recvs; // any-source receives not matched
    uint64_t             p2p_arrivals; // messages seen before their receive
    int64_t              unexpected_bytes; // buffered, all peers
    // Liveness watcher (shm_watch.c).
    pthread_t watch_thread;
    int       watch_started;
    int       watch_stop_fd;
    int       watch_ep; // its epoll set
};

static inline struct shi_shm *
shi_shm_of(const shoal_comm *comm)
{
    return (struct shi_shm *) shi_tp_comm(comm)->tp_state;
}

static inline shm_segment *
shi_shm_seg(const shoal_comm *comm)
{
    return &shi_shm_of(comm)->seg;
}

// The state once the segment is mapped, else NULL (nobody to wake yet).
static inline struct shi_shm *
shi_shm_mapped(const shoal_comm *comm)
{
    struct shi_shm *sh = shi_shm_of(comm);

    return sh != NULL && sh->me != NULL ? sh : NULL;
}

// Prefers this rank's NUMA node for its heap's pages (SHOAL_SHM_NUMA,
// shm_numa.c), once the segment is mapped.
int shm_place_heap(shoal_comm *comm);

// Connecting (shm_setup.c): the unix-socket mesh, then the segment (a
// single rank makes its own).
int shi_shm_setup(
    shoal_comm *comm, const struct shi_tp_boot *boot, int64_t deadline);

// Point to point over the segment's channels (shm_p2p.c).
int  shi_shm_p2p_post(shoal_comm *comm, shoal_request *req);
int  shi_shm_p2p_now(shoal_comm *comm, shoal_request *req);
int  shi_shm_p2p_step(shoal_comm *comm);
void shi_shm_p2p_discard(shoal_comm *comm);
// Takes a request that ends before the channel finished it (a failure)
// out of the queues (transport.h: p2p_forget).
void shi_shm_p2p_forget(shoal_comm *comm, shoal_request *req);

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
