// Two-shot all-reduce through staging slabs: reduce-scatter in shared
// memory, then all-gather.
//
// Steps, per chunk of one slab: (1) wait until the slab this chunk reuses
// is free; copy the chunk into this rank's slab, all but segment r (only
// rank r reads segment r, and it reads its own from sendbuf); (2) sync
// point; (3) rank r reduces segment r of the chunk, its own part from
// sendbuf and the others from their slabs, in rank order, into its
// recvbuf, and copies the result into segment r of its slab (peers only
// read their own segments now); (4) sync point; (5) every rank copies
// segment q of the chunk from rank q's slab into recvbuf, for every other
// q; marks the slab read.
// Preconditions: none. Better than one-shot when n is large, and on 2
// ranks from a few tens of KiB (half the copying of one-shot).
// Cost per chunk of S bytes: 2 alpha + beta S (n-1)/n (copy in) + gamma S
// (each rank reduces S/n from n inputs) + beta S (copy out); memory
// traffic about (3 + 1/n) S per rank, against (n + 2) S for one-shot.
#include <string.h>

#include "algo/common/algos.h"
#include "algo/kernels/reduce.h"
#include "algo/mapped/driver.h"
#include "algo/mapped/mapped.h"
#include "algo/mapped/xfer.h"
#include "algo/registry.h"
#include "base/copy_shared.h"
#include "core/engine.h"

// This algorithm's state in its request.
struct twoshot_state {
    int      phase; // within the current chunk
    size_t   chunk; // chunks done
    uint64_t use; // staging use of the current chunk
};

static inline struct twoshot_state *
twoshot_of(shoal_request *req)
{
    return shi_algo_state(req, struct twoshot_state);
}

// Copies the chunk into this rank's slab at the same offsets, except this
// rank's own segment: the two stretches before and after it.
static void
stage_others_segments(
    shoal_comm *comm, shoal_request *req, size_t first, size_t elems)
{
    size_t         es   = shi_req_esize(req), lo, hi;
    unsigned char *slab = shi_slab_of(comm, comm->rank, twoshot_of(req)->use);
    const unsigned char *src = req->sendbuf + first * es;

    shi_segment(elems, es, comm->size, comm->rank, &lo, &hi);
    if (lo > 0) {
        shi_copy_shared(slab, src, lo * es);
    }
    if (elems > hi) {
        shi_copy_shared(slab + hi * es, src + hi * es, (elems - hi) * es);
    }
}

// Rank r's segment of the chunk, reduced straight into its recvbuf (its
// own memory: no peer holds those lines), then copied into its slab for
// the others to read.
static void
reduce_my_segment(
    shoal_comm *comm, shoal_request *req, size_t first, size_t elems)
{
    size_t         es = shi_req_esize(req), lo, hi;
    unsigned char *out;

    shi_segment(elems, es, comm->size, comm->rank, &lo, &hi);
    if (hi == lo) {
        return; // buf may be NULL for no elements
    }
    for (int q = 0; q < comm->size; q++) {
        comm->inputs[q] = q == comm->rank
            ? req->sendbuf + (first + lo) * es
            : shi_slab_of(comm, q, twoshot_of(req)->use) + lo * es;
    }
    out = req->buf + (first + lo) * es;
    shi_reduce(req->dtype, req->op, out, comm->inputs, comm->size, hi - lo);
    shi_copy_shared(
        shi_slab_of(comm, comm->rank, twoshot_of(req)->use) + lo * es, out,
        (hi - lo) * es);
}

// Every other rank's reduced segment, from its slab into recvbuf.
static void
gather_segments(
    shoal_comm *comm, shoal_request *req, size_t first, size_t elems)
{
    size_t es = shi_req_esize(req), lo, hi;

    for (int q = 0; q < comm->size; q++) {
        shi_segment(elems, es, comm->size, q, &lo, &hi);
        if (q != comm->rank && hi > lo) {
            memcpy(req->buf + (first + lo) * es,
                shi_slab_of(comm, q, twoshot_of(req)->use) + lo * es,
                (hi - lo) * es);
        }
    }
}

int
shi_twoshot_step(shoal_comm *comm, shoal_request *req)
{
    size_t es = shi_req_esize(req), per = shi_area_of(comm)->slab_bytes / es;
    size_t chunks = req->count == 0 ? 1 : (req->count + per - 1) / per;
    int    n      = 0;

    while (twoshot_of(req)->chunk < chunks) {
        size_t first = twoshot_of(req)->chunk * per;
        size_t elems = req->count - first < per ? req->count - first : per;
        int    k     = 2 * (int) twoshot_of(req)->chunk + 1;
        if (twoshot_of(req)->phase == 0) {
            if (twoshot_of(req)->use == 0) {
                twoshot_of(req)->use = shi_slab_next(comm);
            }
            if (!shi_slab_free(comm, req, twoshot_of(req)->use)) {
                return n;
            }
            stage_others_segments(comm, req, first, elems);
            twoshot_of(req)->phase = 1;
            n++;
        }
        if (twoshot_of(req)->phase == 1) {
            if (!shi_sync_all(comm, req, k)) {
                return n;
            }
            reduce_my_segment(comm, req, first, elems);
            twoshot_of(req)->phase = 2;
            n++;
        }
        if (!shi_sync_all(comm, req, k + 1)) {
            return n;
        }
        gather_segments(comm, req, first, elems);
        shi_slab_done(comm, twoshot_of(req)->use);
        twoshot_of(req)->use   = 0;
        twoshot_of(req)->phase = 0;
        twoshot_of(req)->chunk++;
        n++;
    }
    shi_sync_finish(comm, req, 2 * (int) chunks);
    shi_engine_complete(comm, req, SHOAL_OK);
    return n + 1;
}

void
shi_twoshot_cost(const shi_cost_call *c, shi_cost *out)
{
    double n = c->nranks > 0 ? c->nranks : 1, s = (double) c->bytes;

    *out = (shi_cost) { .alpha = 2 * shi_cost_chunks(c),
        .beta                  = s * (n - 1) / n + s,
        .gamma                 = s };
}
