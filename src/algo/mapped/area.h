// The mapped-memory family's area: the part of the transport's shared
// segment that the collectives own (transport.h: coll_area). The transport
// makes room for it and hands it out; only this family reads or writes it.
//
//   geometry | ctl[nranks] | outbox[nranks] | counts[nranks][nranks] |
//   slabs[nranks][2]
//
// geometry: the creating rank's sizes (its environment wins; every rank
// lays the area out from this line, written before any peer maps it).
// ctl: per rank, what it called and how far it got (single-writer lines).
// outbox (one per rank, for the broadcasts it roots): a ring of
// `box_slots` slots read by every other rank, each reader with its own
// tail line. counts: per rank, the per-peer counts of its current
// v-collective. slabs: per rank, two staging buffers of `slab_bytes` for
// collectives that copy through shared memory (used alternately, so that
// no closing barrier is needed).
//
// Every word written by one rank and polled by others sits on its own cache
// line, and counters only ever grow, so nothing is reset between calls.
#ifndef SHI_MAPPED_AREA_H
#define SHI_MAPPED_AREA_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "algo/common/call_desc.h"
#include "transport/transport.h"

#define SHI_LINE       64
#define SHI_LINE_ALIGN __attribute__((aligned(SHI_LINE)))
#define SHI_DESC_RING  32
#define SHI_PAGE       4096 // the per-rank parts of the area start on a page

// The area's first line: how the creating rank sized it.
struct shi_area_geometry {
    uint64_t magic;
    uint32_t nranks;
    uint32_t box_slots;
    uint32_t box_slot_bytes;
    uint32_t pad;
    uint64_t slab_bytes;
};

// What a rank exposes to its peers for the current collective (written by
// the owner before it passes its first sync point).
struct shi_expose {
    uint64_t send_addr; // addresses in the owner's process
    uint64_t recv_addr;
    uint64_t send_heap; // offset + 1 in the owner's heap, or 0: not in it
    uint64_t recv_heap;
};

// Small collectives: the data travels with its flag, in the lines that
// begin with it, one slot per use, two slots used alternately (see
// inline.c). A call touches only the lines its bytes fill: an 8-byte one
// moves one line, a 256-byte one five.
#define SHI_INLINE_LINES 5
struct shi_inline_line {
    _Atomic uint64_t use;
    uint64_t         desc_hash;
    unsigned char    data[SHI_INLINE_LINES * SHI_LINE - 16];
};

#define SHI_INLINE_BYTES (SHI_INLINE_LINES * SHI_LINE - 16)

// Per-rank control block.
struct shi_mapped_ctl {
    // Written by the owner only: last collective entered, and the hash of
    // its descriptor by the number's parity (written before coll_seq), so
    // that a barrier checks the call in the line it waits on.
    _Atomic uint32_t coll_seq SHI_LINE_ALIGN;
    uint64_t                  coll_hash[2];
    struct shi_call_desc      desc[SHI_DESC_RING] SHI_LINE_ALIGN;
    // Sync points passed (collectives' phases).
    _Atomic uint64_t sync SHI_LINE_ALIGN;
    // Hash of the descriptor of the collective this rank is in, by its
    // number's parity: read with `sync` (same line), it lets the first sync
    // point check the ranks agree without reading the descriptor ring.
    uint64_t                   desc_hash[2];
    _Atomic uint64_t slab_done SHI_LINE_ALIGN; // staging uses finished
    struct shi_expose expose   SHI_LINE_ALIGN;
    struct shi_inline_line     inline_slot[2] SHI_LINE_ALIGN;
};

// One slot of an outbox: what the root called (checked by every reader)
// and the chunk, which follows the header's line.
struct shi_box_slot {
    _Atomic uint64_t seq; // i + 1 once slot i holds data
    uint64_t         msg_bytes;
    uint32_t         chunk_bytes;
    uint32_t         coll_seq; // the collective this chunk belongs to
    uint32_t         kind;
    uint32_t         dtype;
    uint64_t         count;
};

// A reader's tail of an outbox, on its own line.
struct shi_box_tail {
    _Atomic uint64_t tail SHI_LINE_ALIGN;
};

// The area as mapped here, with the offsets of its parts.
struct shi_area {
    unsigned char *base;
    uint64_t       bytes;
    int            nranks;
    uint32_t       box_slots, box_slot_bytes;
    uint64_t       slab_bytes;
    size_t         box_slot_stride; // header line + data, line aligned
    size_t         box_bytes; // one rank's outbox
    size_t         ctl_off, box_off, counts_off, slab_off;
};

// Sizes the area for `nranks` from the environment (SHOAL_SHM_BYTES: each
// rank's two slabs; SHOAL_SHM_BCAST_SLOT_BYTES: an outbox slot), for the
// transport to make room for; `out->head` holds the geometry line.
int shi_area_plan(int nranks, struct shi_tp_area *out);

// Lays out the area at `base` (`bytes` long, as the transport handed it
// out) from the geometry line the creating rank wrote there, checking it
// against the communicator's size and the area's size.
int shi_area_bind(
    struct shi_area *a, unsigned char *base, uint64_t bytes, int nranks);

// On a machine of several NUMA nodes (SHOAL_SHM_NUMA), moves the parts of
// the area rank `rank` writes, its two slabs and its outbox, to its own
// node; the creating rank backed them all at creation. A refusal is an
// error under SHOAL_SHM_NUMA=on, a warning otherwise.
int shi_area_place(const struct shi_area *a, int rank);

static inline struct shi_mapped_ctl *
shi_area_ctl(const struct shi_area *a, int rank)
{
    return (struct shi_mapped_ctl *) (a->base + a->ctl_off) + rank;
}

// Outbox of `root`: the tail line of reader `rank`, and slot i (i counts
// from 0 forever; the slot is i % box_slots) with its data.
struct shi_box_tail *shi_area_box_tail(
    const struct shi_area *a, int root, int rank);
struct shi_box_slot *shi_area_box_slot(
    const struct shi_area *a, int root, uint64_t i);

static inline unsigned char *
shi_box_data(struct shi_box_slot *s)
{
    return (unsigned char *) s + SHI_LINE;
}

// Rank `rank`'s counts (nranks entries) and its staging slab `which`.
uint64_t      *shi_area_counts(const struct shi_area *a, int rank);
unsigned char *shi_area_slab(const struct shi_area *a, int rank, int which);

#endif
