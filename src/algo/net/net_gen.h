// Private to the schedule generators (sched.c and every builder):
// the generator context, operation helpers, block layouts and pieces.
//
// A generator appends one rank's operations through the helpers below.
// Each helper returns the new operation's index, to be used as a later
// operation's dependency; an operation that moves no data is not emitted
// and the helper returns SHI_SOP_NODEP, so "depends on it" stays correct.
// Out of memory is remembered by the schedule (shi_sched_push) and
// reported once by shi_sched_build.
#ifndef SHI_NET_GEN_H
#define SHI_NET_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "algo/net/sched.h"

// At most this many pieces per block: a tiny piece_bytes on a huge buffer
// grows the pieces instead of the schedule.
#define NET_MAX_PIECES 1024
// Receive slots of the in-place ring's reduce-scatter (pieces in flight).
// Enough slots that a block's pieces up to 64 (64 MiB at the default 1 MiB
// piece) are all posted at once: a piece that arrives before its slot is
// free lands in a buffer of the transport and is copied again (in-place
// all-reduce of 64 MiB on 2 ranks: 8 slots 64.6 ms, 64 slots see note).
#define NET_POOL_SLOTS 64
// Scratch regions start on cache lines.
#define NET_SCRATCH_ALIGN 64
// Temporary arrays one generator may hold at once.
#define NET_MAX_TMP 16

// A place in one of the schedule's buffers (offset in bytes).
typedef struct net_loc {
    uint8_t  buf; // shi_sbuf
    uint64_t off;
} net_loc;

static inline net_loc
net_at(int buf, uint64_t off)
{
    return (net_loc) { .buf = (uint8_t) buf, .off = off };
}

static inline net_loc
net_plus(net_loc l, uint64_t bytes)
{
    return net_at(l.buf, l.off + bytes);
}

typedef struct net_gen {
    shi_sched            *s;
    const shi_sched_call *c;
    int                   r, n; // this rank, ranks
    size_t                es; // element size
    size_t                pe; // elements per piece (ring algorithms)
    int                   nomem;
    void                 *tmp[NET_MAX_TMP]; // freed by shi_sched_build
    int                   ntmp;
} net_gen;

// Blocks of a buffer, in elements: block b is [off[b], off[b] + cnt[b]).
typedef struct net_blocks {
    int     n;
    size_t *off, *cnt;
    size_t  total, max;
} net_blocks;

// This rank's input for block c after any premultiplication: where it is,
// the operation that wrote it (or SHI_SOP_NODEP) and whether it lies in the
// receive buffer (then it is overwritten by the result).
typedef struct net_inputs {
    net_loc *loc;
    int     *dep;
    int      in_recv; // block of this rank's own that lies in RECV
} net_inputs;

static inline int
net_mod(int a, int n)
{
    return ((a % n) + n) % n;
}

// Zeroed temporary memory living until the build ends; NULL (and
// g->nomem set) when out of memory.
void *net_tmp(net_gen *g, size_t n, size_t size);

// n operation indices, all SHI_SOP_NODEP; NULL when out of memory.
int *net_tmp_deps(net_gen *g, size_t n);

// Reserves `bytes` of scratch; returns its offset.
uint64_t net_scratch(net_gen *g, uint64_t bytes);

// Operations. Sends and receives of zero bytes are emitted (barrier);
// the *_data forms and the local operations skip empty ones.
int net_send(
    net_gen *g, int peer, net_loc src, uint64_t bytes, int d0, int d1);
int net_recv(
    net_gen *g, int peer, net_loc dst, uint64_t bytes, int d0, int d1);
int net_send_data(
    net_gen *g, int peer, net_loc src, uint64_t bytes, int d0, int d1);
int net_recv_data(
    net_gen *g, int peer, net_loc dst, uint64_t bytes, int d0, int d1);
int net_reduce(net_gen *g, net_loc dst, net_loc a, net_loc b, uint64_t bytes,
    int d0, int d1);
int net_copy(
    net_gen *g, net_loc dst, net_loc src, uint64_t bytes, int d0, int d1);
int net_premul(
    net_gen *g, net_loc dst, net_loc src, uint64_t bytes, int d0, int d1);
int net_avg(net_gen *g, net_loc dst, uint64_t bytes, int d0);
// REDUCE_ALL: dst = every rank's input combined in rank order with the
// call's op; this rank's at `own`, the others' at `others` + k * step
// (k = 0 .. n-2, rank order without this rank).
int net_reduce_all(net_gen *g, net_loc dst, net_loc own, net_loc others,
    uint64_t step, uint64_t bytes, int d0, int d1);
// One dependency standing for both d0 and d1 (a JOIN where both are
// operations, else the one that is).
int net_join(net_gen *g, int d0, int d1);

// The op needs a premultiplication of the inputs / a final division.
int net_is_premul(const net_gen *g);
int net_is_avg(const net_gen *g);
// The dtype is float16 or bfloat16 (see net_reduce_parts.c: reduced from raw
// inputs on one rank).
int net_is_half(const net_gen *g);

// Block layouts: `counts` (nranks entries) when the call has them, else
// `count` for every block; or `total` split into n blocks as evenly as
// possible (the first total % n get one more); or one block of `total`.
int net_blocks_per_rank(net_gen *g, net_blocks *b, const size_t *counts);
int net_blocks_split(net_gen *g, net_blocks *b, size_t total);
int net_blocks_one(net_gen *g, net_blocks *b, size_t total);

// Pieces: g->pe from piece_bytes for blocks of at most `max_cnt` elements;
// how many pieces a block of `cnt` elements has; the elements of piece j.
void   net_set_piece(net_gen *g, size_t max_cnt);
size_t net_npieces(const net_gen *g, size_t cnt);
size_t net_piece_cnt(const net_gen *g, size_t cnt, size_t j);

// Index of block c's first piece among all blocks' pieces (n + 1 entries:
// the last is the total); NULL when out of memory.
size_t *net_piece_base(net_gen *g, const net_blocks *b);

// The all-gather ring over blocks `b` of RECV (layout b->off): rank r
// starts with block o = r + shift (mod n); at step t (0 .. n-2) it sends
// block o - t to r + 1 and receives block o - t - 1 from r - 1 into RECV.
// Piece j of block o is at `first` + j pieces, ready after first_dep[j]
// (NULL: at once). touch[base[c] + j] is the last earlier operation on
// RECV's piece j of block c (NULL: none): the receive waits for it.
int net_ring_allgather(net_gen *g, const net_blocks *b, int shift,
    net_loc first, const int *first_dep, const int *touch, const size_t *base);

// This rank's inputs per block of `b`: originally at `orig[c]`; for
// PREMUL_SUM premultiplied into RECV at the same place when `recv_full`
// (this rank's receive buffer has the layout of `b`) or the block already
// lies in RECV, else into scratch. in->in_recv says whether any input
// block lies in RECV afterwards.
int net_inputs_make(net_gen *g, net_inputs *in, const net_blocks *b,
    const net_loc *orig, int recv_full);

// SHOAL_OK, or SHOAL_ENOMEM if the schedule ran out of memory.
static inline int
net_done(const net_gen *g)
{
    return g->nomem ? SHOAL_ENOMEM : SHOAL_OK;
}

// Generators, one file each in the collective's folder (algo/allreduce/
// allreduce_ring.c, ...). n >= 2 unless noted; they return SHOAL_OK or an
// error from shi_error.
int net_allreduce_ring(net_gen *g);
int net_allreduce_rhd(net_gen *g);
int net_reduce_flat(net_gen *g);
int net_reduce_ring(net_gen *g);
int net_reduce_scatter_flat(net_gen *g);
int net_reduce_scatter_ring(net_gen *g);
int net_all_gather_flat(net_gen *g);
int net_all_gather_ring(net_gen *g);
int net_all_gather_bruck(net_gen *g);
int net_all_to_all_flat(net_gen *g);
int net_gather_flat(net_gen *g);
int net_scatter_flat(net_gen *g);
int net_bcast_flat(net_gen *g);
int net_bcast_ring(net_gen *g);
int net_barrier_rhd(net_gen *g);

// Their cost formulas (registry.h), as each file's header states them
// (net_hier_cost: the host-aware all-reduce and broadcast).
struct shi_cost_call;
struct shi_cost;
#define NET_COST(name)                                                        \
    void name(const struct shi_cost_call *c, struct shi_cost *out)
NET_COST(net_allreduce_ring_cost);
NET_COST(net_allreduce_rhd_cost);
NET_COST(net_reduce_flat_cost);
NET_COST(net_reduce_ring_cost);
NET_COST(net_reduce_scatter_flat_cost);
NET_COST(net_reduce_scatter_ring_cost);
NET_COST(net_all_gather_ring_cost);
NET_COST(net_all_gather_bruck_cost);
// alpha + (n - 1) B beta: every flat data movement (all_gather(_v),
// all_to_all(_v), gather, scatter; net_move_parts.c).
NET_COST(net_flat_blocks_cost);
NET_COST(net_bcast_flat_cost);
NET_COST(net_bcast_ring_cost);
NET_COST(net_barrier_rhd_cost);
NET_COST(net_hier_cost);

#endif
