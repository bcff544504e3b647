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
//   header | abort | rank lines[nranks] | p2p channels[nranks][nranks] |
//   collective area | heaps[nranks]
//
// rank lines: the CPU a rank waits on and its doorbell.
// p2p channel (s -> r): a ring of `p2p_slots` slots of `p2p_slot_bytes`;
// slot i is published by the sender storing seq = i + 1 in its header after
// the data, and released by the receiver storing tail = i + 1.
// collective area: `area_bytes` the collective layer asked for at creation
// (transport.h: shi_tp_area) and lays out itself; the transport writes only
// its first line, the creator's, and hands it out (coll_area).
// heap: per rank, `heap_bytes` of memory handed out by shoal_alloc; pages
// exist only once touched.
#ifndef SHI_SHM_SEGMENT_H
#define SHI_SHM_SEGMENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

#define SHM_LINE       64
#define SHM_MAGIC      0x73686f616c736567ull // "shoalseg"
#define SHM_ABORT_TEXT 960

#define SHM_ALIGNED __attribute__((aligned(SHM_LINE)))

struct shm_header {
    uint64_t magic;
    uint64_t total_bytes;
    uint32_t nranks;
    uint32_t p2p_slots;
    uint32_t p2p_slot_bytes;
    uint64_t area_bytes;
    uint64_t heap_bytes;
} SHM_ALIGNED;

// Written once by the first rank that aborts the communicator.
struct shm_abort {
    _Atomic uint32_t state; // 0 fine, 1 text being written, 2 aborted
    int32_t          status;
    int32_t          by_rank;
    char             text[SHM_ABORT_TEXT];
} SHM_ALIGNED;

// Per-rank lines: how peers find and wake this rank.
struct shm_rank {
    // The CPU + 1 the rank's last waiting application thread ran on
    // (0: not known yet), written by the owner when a wait begins.
    _Atomic uint32_t cpu SHM_ALIGNED;
    // Futex word others bump to wake this rank, and how many of this rank's
    // threads sleep on it (writers skip the syscall when zero).
    _Atomic uint32_t doorbell SHM_ALIGNED;
    _Atomic uint32_t          sleepers;
};

struct shm_slot_header {
    _Atomic uint64_t seq; // i + 1 once slot i holds data
    uint64_t         msg_bytes;
    uint32_t         tag;
    uint32_t         flags; // SHM_FIRST, SHM_LAST, SHM_READ
    uint32_t         chunk_bytes;
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
    uint64_t           area_bytes, heap_bytes;
    size_t             p2p_slot_stride; // header + data, line aligned
    size_t             p2p_chan_bytes;
    size_t             rank_off, p2p_off, area_off, heap_off;
    size_t             staging_end; // everything before the heaps
} shm_segment;

// Sizes chosen for `nranks` and a collective area of `area_bytes`;
// SHOAL_SHM_SLOT_BYTES and SHOAL_SHM_SLOTS override the p2p ring,
// SHOAL_SHM_HEAP_BYTES the heaps.
int shm_segment_plan(shm_segment *seg, int nranks, uint64_t area_bytes);

// Creates and maps a fresh segment (rank 0) with room for `area`, whose
// head it writes; returns its memfd in *fd (the caller passes it on, then
// closes it).
int shm_segment_create(
    shm_segment *seg, int nranks, const struct shi_tp_area *area, int *fd);

// Maps a segment received from rank 0 and checks its header.
int shm_segment_attach(shm_segment *seg, int fd, int nranks);

void shm_segment_unmap(shm_segment *seg);

struct shm_abort *shm_abort_of(const shm_segment *seg);

// The lookups below run at every look at a peer: inline, and no division
// for the usual power-of-two slot count.
static inline struct shm_rank *
shm_rank_of(const shm_segment *seg, int rank)
{
    return (struct shm_rank *) (seg->base + seg->rank_off) + rank;
}

// Channel from `src` to `dst`: its tail line and slot i (i counts from 0
// forever; the slot is i % p2p_slots).
static inline unsigned char *
shm_p2p_chan(const shm_segment *seg, int src, int dst)
{
    size_t idx = (size_t) src * (size_t) seg->nranks + (size_t) dst;

    return seg->base + seg->p2p_off + idx * seg->p2p_chan_bytes;
}

static inline struct shm_ring_tail *
shm_p2p_tail(const shm_segment *seg, int src, int dst)
{
    return (struct shm_ring_tail *) shm_p2p_chan(seg, src, dst);
}

static inline struct shm_slot_header *
shm_p2p_slot(const shm_segment *seg, int src, int dst, uint64_t i)
{
    uint32_t n = seg->p2p_slots;
    uint64_t k = (n & (n - 1)) == 0 ? i & (n - 1) : i % n;

    return (struct shm_slot_header *) (shm_p2p_chan(seg, src, dst) + SHM_LINE
        + k * seg->p2p_slot_stride);
}

// The collective area in this process's mapping.
unsigned char *shm_area_of(const shm_segment *seg);

// Start of rank `rank`'s heap in this process's mapping.
unsigned char *shm_heap_of(const shm_segment *seg, int rank);

// Payload bytes following a slot header.
static inline unsigned char *
shm_slot_data(struct shm_slot_header *h)
{
    return (unsigned char *) h + SHM_LINE;
}

#endif
