// Small all-reduce, all-gather, all-to-all, reduce-scatter, reduce, gather
// and scatter: the data rides with its flag, in the cache lines that begin
// with it (a slot of SHI_INLINE_LINES lines).
//
// Steps: (1) rank r writes its whole input (at most SHI_INLINE_BYTES) and
// the hash of its call into its inline slot for this use (two slots, used
// alternately), then publishes the use number in that slot; (2) it waits
// until the lines it reads show the same use, checks that the hashes agree
// (a mismatch falls back to the full descriptor comparison), and then
// reduces the n lines in rank order into recvbuf (all-reduce), copies line
// q to block q of recvbuf (all-gather), copies block r of line q to block
// q (all-to-all), or reduces block r of the n lines (reduce-scatter).
// Reduce, gather and scatter are rooted: only the non-roots' lines (reduce,
// gather) or the root's (scatter) carry data, the others publish the use
// alone; the root of a reduce or gather and the non-roots of a scatter
// wait for those lines, the writers finish once theirs is published (the
// root of a reduce reduces its own input from sendbuf).
// Reuse: rank r rewrites a line two uses later, once every peer has
// entered the use in between (its line shows that use), so has finished
// reading r's line of the use before. After a call that read every
// peer's line this is known without looking; after a rooted call it is
// checked (a rank that only wrote has not seen its readers move on).
// Preconditions: each rank's input at most SHI_INLINE_BYTES; the same
// count on every rank (not the v-collectives).
// Cost: alpha (one slot moved from each peer: its lines travel together)
// + gamma n S (reductions) or beta n S (movement); no staging copy, no
// separate flag, no closing sync.
#include <string.h>

#include "algo/common/algos.h"
#include "algo/kernels/reduce.h"
#include "algo/mapped/driver.h"
#include "algo/mapped/mapped.h"
#include "core/engine.h"

// This algorithm's state in its request.
struct inline_state {
    int      phase; // 0: not begun, 1: waiting to publish, 2: published
    uint64_t use; // the inline use (the family's inline_use) of this call
    size_t   line; // bytes this rank's line carries (line_bytes)
};

static inline struct inline_state *
inline_of(shoal_request *req)
{
    return shi_algo_state(req, struct inline_state);
}

// Bytes of one rank's input: all-to-all and reduce-scatter send a block
// (req->count elements) to every rank.
static size_t
input_bytes(const shoal_request *req, int nranks)
{
    size_t bytes = req->count * shi_req_esize(req);

    if (req->kind == SHI_OP_ALLTOALL || req->kind == SHI_OP_REDUCE_SCATTER
        || req->kind == SHI_OP_SCATTER) {
        bytes *= (size_t) nranks;
    }
    return bytes;
}

// Reduce, gather and scatter: one side writes, the other reads.
static int
rooted(const shoal_request *req)
{
    return req->kind == SHI_OP_REDUCE || req->kind == SHI_OP_GATHER
        || req->kind == SHI_OP_SCATTER;
}

// Bytes this rank's line carries: none where a rooted call only reads.
static size_t
line_bytes(const shoal_comm *comm, const shoal_request *req)
{
    int root    = comm->rank == req->peer;
    int to_root = req->kind != SHI_OP_SCATTER; // the non-roots write

    if (rooted(req) && to_root == root) {
        return 0;
    }
    return input_bytes(req, comm->size);
}

int
shi_inline_fits(const shoal_request *req)
{
    switch (req->kind) {
        case SHI_OP_ALLREDUCE:
        case SHI_OP_REDUCE:
        case SHI_OP_ALLGATHER:
        case SHI_OP_ALLTOALL:
        case SHI_OP_REDUCE_SCATTER:
        case SHI_OP_GATHER:
        case SHI_OP_SCATTER:
            return req->count <= SHI_INLINE_BYTES
                && input_bytes(req, req->comm->size) <= SHI_INLINE_BYTES;
        default:
            return 0;
    }
}

static void
publish_line(shoal_comm *comm, shoal_request *req)
{
    struct shi_inline_line *mine
        = &shi_my_ctl(comm)->inline_slot[inline_of(req)->use % 2];
    size_t bytes = inline_of(req)->line;

    if (bytes > 0) {
        memcpy(mine->data, req->sendbuf, bytes);
    }
    mine->desc_hash = __atomic_load_n(
        &shi_my_ctl(comm)->desc_hash[req->seq % 2], __ATOMIC_RELAXED);
    atomic_store_explicit(
        &mine->use, inline_of(req)->use, memory_order_release);
    shi_ring_peers(comm);
}

// 1 when rank p's line of `use` shows that use (at_least: or a later one).
static int
line_shows(
    shoal_comm *comm, shoal_request *req, int p, uint64_t use, int at_least)
{
    uint64_t seen = atomic_load_explicit(
        &shi_ctl_of(comm, p)->inline_slot[use % 2].use, memory_order_acquire);

    if (seen == use || (at_least && seen > use)) {
        return 1;
    }
    req->blocked_on = p;
    shi_coll_peer_differs(comm, p, (uint32_t) req->seq);
    return 0;
}

// Whether this rank reads rank p's line in this call: every peer's, but
// only the root's for a scatter (whose other lines carry nothing).
static int
reads_line_of(const shoal_request *req, int p)
{
    return req->kind != SHI_OP_SCATTER || p == req->peer;
}

// 1 when the lines this rank reads hold this use.
static int
lines_ready(shoal_comm *comm, shoal_request *req)
{
    uint64_t use = inline_of(req)->use;

    for (int p = 0; p < comm->size; p++) {
        if (!reads_line_of(req, p)) {
            continue;
        }
        if (!line_shows(comm, req, p, use, 0)) {
            return 0;
        }
    }
    req->blocked_on = -1;
    return 1;
}

// 1 once every peer has entered the use before this one, so none still
// reads this rank's line of two uses ago.
static int
readers_moved_on(shoal_comm *comm, shoal_request *req)
{
    uint64_t before = inline_of(req)->use - 1;

    if (shi_mapped_of(comm)->inline_seen >= before) {
        return 1;
    }
    for (int p = 0; p < comm->size; p++) {
        if (!line_shows(comm, req, p, before, 1)) {
            return 0;
        }
    }
    req->blocked_on                  = -1;
    shi_mapped_of(comm)->inline_seen = before;
    return 1;
}

// The call's result from the n lines in comm->inputs.
static void
take_lines(shoal_comm *comm, shoal_request *req)
{
    size_t block = req->count * shi_req_esize(req);
    size_t mine  = (size_t) comm->rank * block;

    switch (req->kind) {
        case SHI_OP_ALLGATHER:
            for (int q = 0; q < comm->size && block > 0; q++) {
                memcpy(req->buf + (size_t) q * block, comm->inputs[q], block);
            }
            return;
        case SHI_OP_ALLTOALL:
            for (int q = 0; q < comm->size && block > 0; q++) {
                memcpy(req->buf + (size_t) q * block,
                    (const unsigned char *) comm->inputs[q] + mine, block);
            }
            return;
        case SHI_OP_REDUCE_SCATTER:
            for (int q = 0; q < comm->size; q++) {
                comm->inputs[q]
                    = (const unsigned char *) comm->inputs[q] + mine;
            }
            break;
        case SHI_OP_GATHER: // the root: every block, its own from sendbuf
            for (int q = 0; q < comm->size && block > 0; q++) {
                memmove(req->buf + (size_t) q * block,
                    q == comm->rank ? req->sendbuf : comm->inputs[q], block);
            }
            return;
        case SHI_OP_REDUCE: // the root: its own input from sendbuf
            comm->inputs[comm->rank] = req->sendbuf;
            break;
        case SHI_OP_SCATTER: // a non-root: its block of the root's line
            if (block > 0) {
                memcpy(req->buf,
                    (const unsigned char *) comm->inputs[req->peer] + mine,
                    block);
            }
            return;
        default:
            break;
    }
    shi_reduce(
        req->dtype, req->op, req->buf, comm->inputs, comm->size, req->count);
}

// A rooted call's writers are done once their line is out; the root of a
// scatter takes its own block from its input.
static int
finish_writer(shoal_comm *comm, shoal_request *req)
{
    size_t block = req->count * shi_req_esize(req);

    if (req->kind == SHI_OP_SCATTER && block > 0) {
        memmove(req->buf, req->sendbuf + (size_t) comm->rank * block, block);
    }
    shi_engine_complete(comm, req, SHOAL_OK);
    return 1;
}

// 1 when this rank reads lines in this call (all but a rooted call's
// writers).
static int
reads_lines(shoal_request *req)
{
    return !rooted(req) || inline_of(req)->line == 0;
}

int
shi_inline_step(shoal_comm *comm, shoal_request *req)
{
    int agree = 1;

    if (inline_of(req)->phase == 0) {
        inline_of(req)->use   = ++shi_mapped_of(comm)->inline_use;
        inline_of(req)->line  = line_bytes(comm, req);
        inline_of(req)->phase = 1;
    }
    if (inline_of(req)->phase == 1) {
        if (!readers_moved_on(comm, req)) {
            return 0;
        }
        publish_line(comm, req);
        inline_of(req)->phase = 2;
        if (!reads_lines(req)) {
            return finish_writer(comm, req);
        }
    }
    if (!lines_ready(comm, req)) {
        return 0;
    }
    uint64_t want
        = shi_my_ctl(comm)->inline_slot[inline_of(req)->use % 2].desc_hash;
    for (int p = 0; p < comm->size; p++) {
        struct shi_inline_line *line
            = &shi_ctl_of(comm, p)->inline_slot[inline_of(req)->use % 2];
        if (!reads_line_of(req, p)) {
            continue;
        }
        comm->inputs[p] = line->data;
        agree &= line->desc_hash == want;
    }
    if (req->kind != SHI_OP_SCATTER) {
        shi_mapped_of(comm)->inline_seen
            = inline_of(req)->use; // every line read
    }
    if (!agree && shi_coll_verify(comm, (uint32_t) req->seq)) {
        return 1;
    }
    if (!agree) {
        shi_comm_abort(comm, SHOAL_EMISMATCH,
            "%s #%llu does not match across ranks (the ranks' calls differ "
            "in count, dtype or op)",
            shi_op_kind_name(req->kind), (unsigned long long) req->seq);
        return 1;
    }
    take_lines(comm, req);
    shi_engine_complete(comm, req, SHOAL_OK);
    return 1;
}
