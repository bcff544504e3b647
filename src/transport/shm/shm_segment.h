// Layout of a communicator's shared-memory segment.
//
// Rank 0 of the communicator creates one memfd segment and passes its
// descriptor to every other rank over their unix socket; each rank maps it
// and closes the descriptor. No name exists anywhere, so the memory is freed
// when the last rank unmaps it or dies, even under SIGKILL.
//
// Every word written by one rank and polled by others sits on its own cache
// line (single-writer lines), and counters only ever grow, so nothing has to
// be reset between operations.
//
//   header | abort | ctl[nranks] | p2p channels[nranks][nranks] |
//   outbox[nranks]
//
// p2p channel (s -> r): a ring of `p2p_slots` slots of `p2p_slot_bytes`;
// slot i is published by the sender storing seq = i + 1 in its header after
// the data, and released by the receiver storing tail = i + 1.
// outbox (one per rank, for collectives it roots): a ring of `box_slots`
// slots read by every other rank, each with its own tail line.
// counts: per rank, the per-peer counts of its current v-collective.
// slabs: per rank, two staging buffers of `slab_bytes` for collectives that
// copy through shared memory (used alternately, so that no closing barrier
// is needed). heap: per rank, `heap_bytes` of memory handed out by
// shoal_alloc; pages exist only once touched.
#ifndef SHI_SHM_SEGMENT_H
#define SHI_SHM_SEGMENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SHM_LINE       64
#define SHM_MAGIC      0x73686f616c736567ull // "shoalseg"
#define SHM_DESC_RING  32
#define SHM_ABORT_TEXT 960

#define SHM_ALIGNED __attribute__((aligned(SHM_LINE)))

struct shm_header {
    uint64_t magic;
    uint64_t total_bytes;
    uint32_t nranks;
    uint32_t p2p_slots;
    uint32_t p2p_slot_bytes;
    uint32_t box_slots;
    uint32_t box_slot_bytes;
    uint64_t slab_bytes;
    uint64_t heap_bytes;
} SHM_ALIGNED;

// Written once by the first rank that aborts the communicator.
struct shm_abort {
    _Atomic uint32_t state; // 0 fine, 1 text being written, 2 aborted
    int32_t          status;
    int32_t          by_rank;
    char             text[SHM_ABORT_TEXT];
} SHM_ALIGNED;

// What a rank called at collective number `seq`, for mismatch checks.
struct shm_desc {
    _Atomic uint32_t seq; // written last; equals the slot's collective number
    uint32_t         kind;
    int32_t          root;
    uint32_t         dtype;
    uint64_t         count;
    uint32_t         redop;
    uint32_t         algo;
    uint64_t         counts_hash; // v-collectives: hash of the counts
};

// What a rank exposes to its peers for the current collective (written by
// the owner before it passes its first sync point).
struct shm_expose {
    uint64_t send_addr; // addresses in the owner's process
    uint64_t recv_addr;
    uint64_t send_heap; // offset + 1 in the owner's heap, or 0: not in it
    uint64_t recv_heap;
};

// Per-rank control block.
struct shm_ctl {
    // Written by the owner only: last collective entered, and the hash of
    // its descriptor by the number's parity (written before coll_seq), so
    // that a barrier checks the call in the line it waits on.
    _Atomic uint32_t coll_seq SHM_ALIGNED;
    uint64_t                  coll_hash[2];
    // The CPU + 1 the rank's last waiting application thread ran on
    // (0: not known yet), written by the owner when a wait begins.
    _Atomic uint32_t cpu;
    // Futex word others bump to wake this rank, and how many of this rank's
    // threads sleep on it (writers skip the syscall when zero).
    _Atomic uint32_t doorbell SHM_ALIGNED;
    _Atomic uint32_t          sleepers;
    struct shm_desc           desc[SHM_DESC_RING] SHM_ALIGNED;
    // Sync points passed (collectives' phases), and staging uses finished.
    _Atomic uint64_t sync SHM_ALIGNED;
    // Hash of the descriptor of the collective this rank is in, by its
    // number's parity: read with `sync` (same line), it lets the first sync
    // point check the ranks agree without reading the descriptor ring.
    uint64_t                   desc_hash[2];
    _Atomic uint64_t slab_done SHM_ALIGNED;
    struct shm_expose expose   SHM_ALIGNED;
    // Tiny all-reduce: the data travels with its flag, one line per use,
    // two lines used alternately (see allreduce_inline.c).
    struct shm_inline {
        _Atomic uint64_t use;
        uint64_t         desc_hash;
        unsigned char    data[SHM_LINE - 16];
    } inline_slot[2] SHM_ALIGNED;
};

#define SHM_INLINE_BYTES (SHM_LINE - 16)

struct shm_slot_header {
    _Atomic uint64_t seq; // i + 1 once slot i holds data
    uint64_t         msg_bytes;
    uint32_t         tag;
    uint32_t         flags; // SHM_FIRST, SHM_LAST, SHM_READ
    uint32_t         chunk_bytes;
    uint32_t         coll_seq; // outbox: the collective this chunk belongs to
    // Outbox only: what the root called (checked by every reader).
    uint32_t kind;
    uint32_t dtype;
    uint64_t count;
};

#define SHM_FIRST 1u
#define SHM_LAST  2u
// Point-to-point: the slot carries a descriptor of the sender's message
// (struct shm_read_desc, shm_p2p.c) instead of data; the receiver reads it
// from there (single copy) and consumes the slot when done, which completes
// the send.
#define SHM_READ 4u

// A ring written by one rank. Readers' tails each have their own line.
struct shm_ring_tail {
    _Atomic uint64_t tail SHM_ALIGNED;
};

// Address arithmetic over a mapped segment.
typedef struct shm_segment {
    unsigned char     *base;
    size_t             bytes;
    struct shm_header *hdr;
    int                nranks;
    uint32_t           p2p_slots, p2p_slot_bytes; // geometry
    uint32_t           box_slots, box_slot_bytes;
    uint64_t           slab_bytes, heap_bytes;
    size_t             p2p_slot_stride; // header + data, line aligned
    size_t             p2p_chan_bytes;
    size_t             box_slot_stride;
    size_t             box_bytes;
    size_t             ctl_off, p2p_off, box_off;
    size_t             counts_off, slab_off, heap_off;
    size_t             staging_end; // everything before the heaps
} shm_segment;

// Sizes chosen for `nranks`; SHOAL_SHM_SLOT_BYTES and SHOAL_SHM_SLOTS
// override the p2p ring, SHOAL_SHM_BCAST_SLOT_BYTES the outbox slots.
int shm_segment_plan(shm_segment *seg, int nranks);

// Creates and maps a fresh segment (rank 0); returns its memfd in *fd (the
// caller passes it on, then closes it).
int shm_segment_create(shm_segment *seg, int nranks, int *fd);

// Maps a segment received from rank 0 and checks its header.
int shm_segment_attach(shm_segment *seg, int fd, int nranks);

void shm_segment_unmap(shm_segment *seg);

struct shm_abort *shm_abort_of(const shm_segment *seg);
struct shm_ctl   *shm_ctl_of(const shm_segment *seg, int rank);

// Channel from `src` to `dst`: its tail line and slot i (i counts from 0
// forever; the slot is i % p2p_slots).
struct shm_ring_tail   *shm_p2p_tail(const shm_segment *seg, int src, int dst);
struct shm_slot_header *shm_p2p_slot(
    const shm_segment *seg, int src, int dst, uint64_t i);

// Outbox of `root`: the tail line of reader `rank`, and slot i.
struct shm_ring_tail *shm_box_tail(const shm_segment *seg, int root, int rank);
struct shm_slot_header *shm_box_slot(
    const shm_segment *seg, int root, uint64_t i);

// Rank `rank`'s counts area (nranks entries) and staging slab `which`.
uint64_t      *shm_counts_of(const shm_segment *seg, int rank);
unsigned char *shm_slab(const shm_segment *seg, int rank, int which);

// Start of rank `rank`'s heap in this process's mapping.
unsigned char *shm_heap_of(const shm_segment *seg, int rank);

// Payload bytes following a slot header.
static inline unsigned char *
shm_slot_data(struct shm_slot_header *h)
{
    return (unsigned char *) h + SHM_LINE;
}

#endif
