// Staged data movement and reduce-scatter, for when ranks cannot read each
// other's memory: every rank streams its send buffer through its staging
// slabs, chunk by chunk, and every rank takes from each chunk what it
// needs.
//
// Steps: (1) all_to_all_v only, whose send counts only their senders
// know: publish them; sync point (descriptors checked); (2) the number of
// chunks is the largest send buffer over the ranks divided by the slab
// size; (3) per chunk c: wait until the slab it reuses is free; copy bytes
// [c*S, (c+1)*S) of the send buffer into this rank's slab; sync point (for
// the first chunk of the other collectives, also the one where the
// descriptors are checked: a small call takes one round); from every
// rank's slab copy (or, for reduce-scatter, reduce in rank order) the part
// of the chunk this rank needs; mark the slab read. Slabs alternate, so
// copying chunk c+1 in overlaps peers reading chunk c.
// Preconditions: none.
// Cost: chunks alpha (all_to_all_v: one more) + beta (send bytes, copied
// in) + beta (bytes received, copied out); about twice the traffic of the
// direct algorithms.
#include <string.h>

#include "algo/common/algos.h"
#include "algo/kernels/reduce.h"
#include "algo/mapped/driver.h"
#include "algo/mapped/mapped.h"
#include "algo/mapped/move_plan.h"
#include "algo/mapped/xfer.h"
#include "algo/registry.h"
#include "base/copy_shared.h"
#include "core/engine.h"

// This algorithm's state in its request.
struct staged_state {
    int      phase;
    int      first_sync; // the sync point of chunk 0 (1 or 2, see above)
    size_t   chunk; // chunks done
    size_t   chunks; // chunks in all (the largest send buffer's)
    uint64_t use; // staging use of the current chunk
};

static inline struct staged_state *
staged_of(shoal_request *req)
{
    return shi_algo_state(req, struct staged_state);
}

static size_t
count_chunks(shoal_comm *comm, shoal_request *req)
{
    size_t most = 0, slab = shi_area_of(comm)->slab_bytes;

    for (int q = 0; q < comm->size; q++) {
        size_t b = shi_move_send_bytes(comm, req, q);
        most     = b > most ? b : most;
    }
    return most == 0 ? 1 : (most + slab - 1) / slab;
}

static void
stage_chunk(shoal_comm *comm, shoal_request *req, size_t c)
{
    size_t slab = shi_area_of(comm)->slab_bytes, first = c * slab;
    size_t mine = shi_move_send_bytes(comm, req, comm->rank);

    if (first < mine) {
        size_t len = mine - first < slab ? mine - first : slab;
        shi_copy_shared(shi_slab_of(comm, comm->rank, staged_of(req)->use),
            req->sendbuf + first, len);
    }
}

// Intersection of [lo, lo + len) with chunk c; returns its length.
static size_t
overlap(size_t lo, size_t len, size_t c, size_t slab, size_t *start)
{
    size_t a = lo > c * slab ? lo : c * slab;
    size_t b = lo + len < (c + 1) * slab ? lo + len : (c + 1) * slab;

    *start = a;
    return b > a ? b - a : 0;
}

static void
reduce_chunk(shoal_comm *comm, shoal_request *req, size_t c)
{
    size_t es = shi_req_esize(req), slab = shi_area_of(comm)->slab_bytes, a;
    size_t lo = shi_block_displ(req, comm->rank) * es;
    size_t len
        = overlap(lo, shi_block_count(req, comm->rank) * es, c, slab, &a);

    if (len == 0) {
        return;
    }
    for (int q = 0; q < comm->size; q++) {
        comm->inputs[q]
            = shi_slab_of(comm, q, staged_of(req)->use) + (a - c * slab);
    }
    shi_reduce(req->dtype, req->op, req->buf + (a - lo), comm->inputs,
        comm->size, len / es);
}

static int
take_chunk(shoal_comm *comm, shoal_request *req, size_t c)
{
    size_t slab = shi_area_of(comm)->slab_bytes;

    if (req->kind == SHI_OP_REDUCE_SCATTER
        || req->kind == SHI_OP_REDUCE_SCATTERV) {
        reduce_chunk(comm, req, c);
        return 0;
    }
    for (int q = 0; q < comm->size; q++) {
        size_t src, len, dst, a;
        if (shi_move_range(comm, req, q, &src, &len, &dst)) {
            return 1;
        }
        size_t n = overlap(src, len, c, slab, &a);
        if (n > 0) {
            memcpy(req->buf + dst + (a - src),
                shi_slab_of(comm, q, staged_of(req)->use) + (a - c * slab), n);
        }
    }
    return 0;
}

int
shi_staged_step(shoal_comm *comm, shoal_request *req)
{
    int n = 0;

    if (staged_of(req)->phase == 0) {
        if (req->kind == SHI_OP_ALLTOALLV) {
            shi_move_publish(comm, req);
            staged_of(req)->first_sync = 2;
            staged_of(req)->phase      = 1;
        } else {
            staged_of(req)->first_sync = 1;
            staged_of(req)->chunks     = count_chunks(comm, req);
            staged_of(req)->phase      = 2;
        }
    }
    if (staged_of(req)->phase == 1) {
        if (!shi_sync_all(comm, req, 1)) {
            return 0;
        }
        shi_move_snapshot(comm, req);
        staged_of(req)->chunks = count_chunks(comm, req);
        staged_of(req)->phase  = 2;
        n++;
    }
    while (staged_of(req)->chunk < staged_of(req)->chunks) {
        if (staged_of(req)->phase == 2) {
            if (staged_of(req)->use == 0) {
                staged_of(req)->use = shi_slab_next(comm);
            }
            if (!shi_slab_free(comm, req, staged_of(req)->use)) {
                return n;
            }
            stage_chunk(comm, req, staged_of(req)->chunk);
            staged_of(req)->phase = 3;
            n++;
        }
        if (!shi_sync_all(comm, req,
                staged_of(req)->first_sync + (int) staged_of(req)->chunk)) {
            return n;
        }
        if (take_chunk(comm, req, staged_of(req)->chunk)) {
            return n + 1;
        }
        shi_slab_done(comm, staged_of(req)->use);
        staged_of(req)->use   = 0;
        staged_of(req)->phase = 2;
        staged_of(req)->chunk++;
        n++;
    }
    shi_sync_finish(comm, req,
        staged_of(req)->first_sync + (int) staged_of(req)->chunks - 1);
    shi_engine_complete(comm, req, SHOAL_OK);
    return n + 1;
}

// A call of at most SHI_INLINE_BYTES per rank goes inline (its data in
// the lines of its flag, inline.c); everything else through the slabs as
// above.
int
shi_staged_run(shoal_comm *comm, shoal_request *req)
{
    return shi_inline_fits(req) ? shi_inline_step(comm, req)
                                : shi_staged_step(comm, req);
}

void
shi_staged_cost(const shi_cost_call *c, shi_cost *out)
{
    *out = (shi_cost) {
        .alpha = shi_cost_chunks(c), .beta = 2 * (double) c->bytes, .gamma = 0
    };
}
