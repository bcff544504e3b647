// Schedules: a collective across hosts as data.
//
// A schedule is one rank's list of operations (send to a peer, receive
// from a peer, reduce, copy, scale) with dependencies on earlier ones. The
// generators (net_*.c, pure functions of the call) build it; one executor
// (net_exec.c) runs any schedule over the message transport. Messages
// match by position: the k-th SEND to peer p in rank r's schedule is the
// k-th RECV from r in p's schedule, so every generator must produce, for
// each ordered pair of ranks, the same number of messages of the same
// sizes in the same order on both sides. Operations may run in any order
// their dependencies allow; sends and receives without dependencies start
// at once, so receives are posted before data arrives.
//
// Buffers are named, not pointed to: offsets into the call's send buffer,
// receive buffer or a scratch area the schedule sizes itself, so a
// schedule can be built, printed and checked without any memory.
#ifndef SHI_NET_SCHED_H
#define SHI_NET_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "shoal.h"

enum shi_sop_kind {
    SHI_SOP_SEND = 1, // bytes from (src, src_off) to `peer`
    SHI_SOP_RECV, // bytes from `peer` into (dst, dst_off)
    SHI_SOP_REDUCE, // dst[i] = src[i] op src2[i], i < count (op: SUM
                    // for AVG and PREMUL_SUM, see below)
    SHI_SOP_COPY, // bytes from (src, src_off) to (dst, dst_off)
    SHI_SOP_PREMUL, // dst[i] = src[i] * scalar (PREMUL_SUM's inputs)
    SHI_SOP_AVG, // dst[i] /= nranks in place (AVG's last step)
    SHI_SOP_REDUCE_ALL, // dst[i] = x_0[i] op ... op x_{nranks-1}[i] with
                        // the call's op itself (shi_reduce over every
                        // rank's input, as shared memory reduces), x_rank
                        // at src, the others in rank order at src2,
                        // src2 + step, ...
    SHI_SOP_JOIN, // nothing: done once its dependencies are (an operation
                  // waiting for more than two waits for a chain of these)
};

enum shi_sbuf {
    SHI_SBUF_SEND = 0, // the call's send buffer (read only)
    SHI_SBUF_RECV, // the call's receive buffer
    SHI_SBUF_SCRATCH, // schedule-owned scratch of `scratch_bytes`
};

#define SHI_SOP_NODEP (-1)

typedef struct shi_sop {
    uint8_t  kind; // shi_sop_kind
    uint8_t  dst, src, src2; // shi_sbuf of each operand
    int32_t  peer; // SEND, RECV
    int32_t  dep[2]; // earlier operations that must finish first
    uint64_t dst_off, src_off, src2_off; // bytes
    uint64_t step; // REDUCE_ALL: bytes between the others' inputs
    uint64_t bytes; // SEND, RECV, COPY: bytes; REDUCE, PREMUL, AVG,
                    // REDUCE_ALL: bytes too (count = bytes / element
                    // size); JOIN: 0
} shi_sop;

// What a generator needs to know about the call. Counts are in elements;
// `counts` (v-collectives: per-rank block counts; all_to_all_v: what this
// rank sends to each rank) and `rcounts` (all_to_all_v: what it receives
// from each) have nranks entries or are NULL. The buffers' layout is the
// one shoal.h documents for each collective, with the in-place forms
// described by `in_place`.
typedef struct shi_sched_call {
    int           kind; // shi_op_kind (request.h)
    int           algo; // shi_algo (select.h)
    int           rank, nranks, root;
    int           dtype; // shoal_dtype (16-bit floats: see net_reduce_parts.c)
    size_t        count, esize;
    const size_t *counts, *rcounts;
    shoal_reduce_op op;
    int             in_place;
    size_t          piece_bytes; // pipelining unit (>= 64 KiB for TCP)
} shi_sched_call;

typedef struct shi_sched {
    shi_sop *ops;
    int      nops, cap;
    size_t   scratch_bytes;
    int      nomem; // a push ran out of memory (cleared by the build)
} shi_sched;

// Builds rank call->rank's schedule for the call into s (emptied first;
// its array is reused). Errors: SHOAL_ENOMEM; SHOAL_ENOTSUP when no
// network algorithm runs call->kind with call->algo.
int shi_sched_build(shi_sched *s, const shi_sched_call *call);

void shi_sched_free(shi_sched *s);

// Appends one operation; returns its index, or -1 when out of memory
// (the schedule remembers it and shi_sched_build fails).
int shi_sched_push(shi_sched *s, const shi_sop *op);

// Prints the schedule, one operation per line (SHOAL_DEBUG=TRACE).
void shi_sched_dump(const shi_sched *s, const char *title);

#endif
