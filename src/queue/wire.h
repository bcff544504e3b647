// The records a queue channel carries (channel.h). Every record starts
// with this header, is a multiple of 8 bytes, and lies whole inside one
// ring (a record that would cross the ring's end is preceded by PAD up
// to it). The sender raises one signal per record, after writing it, so
// the n-th signal says the n-th record is complete. Records come from
// peers: the reader checks every field before use (drain.c).
#ifndef SHI_QUEUE_WIRE_H
#define SHI_QUEUE_WIRE_H

#include <stdint.h>

#include "shoal.h"

enum shi_q_type {
    SHI_Q_PAD = 1, // skip to the ring's end
    SHI_Q_ITEM, // an item's first piece: meta, then data
    SHI_Q_CHUNK, // the next piece of the sender's item in flight
    SHI_Q_ASK, // a remote get, wait or size: answered by ANSWER / ITEM
    SHI_Q_ANSWER, // a number for an ASK: a size, or "empty"
};

enum {
    SHI_Q_F_MORE   = 1u << 0, // ITEM: a transaction item, more follow
    SHI_Q_F_OBJECT = 1u << 1, // ITEM: bytes, not a tensor
    SHI_Q_F_REPLY  = 1u << 2, // ITEM: answers ASK `queue` (its ask id)
    // ITEM: the data stays in the sender's memory, which the location reads
    // itself (one copy instead of two); the record carries its region.
    SHI_Q_F_PULL = 1u << 3,
};

enum shi_q_ask_what {
    SHI_Q_ASK_TAKE = 1, // take the next item (ITEM reply, or ANSWER empty)
    SHI_Q_ASK_WAIT, // answer once the queue holds an item, or empty
    SHI_Q_ASK_SIZE, // answer the number of items now
};

#define SHI_Q_EMPTY UINT64_MAX // ANSWER value: the time ran out

struct shi_q_rec {
    uint32_t type;
    uint32_t bytes; // the whole record, header included
    uint64_t queue; // the queue's id (an ITEM reply, ANSWER: the ask id)
    uint64_t total; // ITEM: the item's bytes; ASK: its id; ANSWER: value
    uint64_t part; // ITEM, CHUNK: bytes of data after this header
    uint32_t flags; // ITEM: SHI_Q_F_*; ASK: enum shi_q_ask_what
    int32_t  dtype; // ITEM: a tensor's dtype
    int32_t  ndim; // ITEM: a tensor's dimensions
    int32_t  arg; // ASK: ms the location may wait (-1: always); ITEM
                 // reply: the rank that put the item
    int64_t shape[SHOAL_QUEUE_MAX_DIMS]; // ITEM
};

_Static_assert(sizeof(struct shi_q_rec) % 8 == 0, "records stay aligned");

#endif
