// One-shot all-reduce and reduce: every rank stages its input, every
// reader reduces all of them.
//
// Steps, per chunk of one staging slab: (1) wait until every peer has
// finished reading the slab this chunk reuses (the one of two chunks ago);
// copy the chunk of sendbuf into this rank's slab (a reduce's root reads
// its own from sendbuf instead); (2) sync point; (3) every rank
// (all-reduce) or the root (reduce) reduces the n inputs in rank order
// into recvbuf; mark the slab read. Slabs alternate, so no closing
// barrier is needed.
// Preconditions: none; best when the message fits one slab.
// Cost per chunk of S bytes: alpha (one sync) + beta S (copy in) +
// gamma n S on each reducing rank; memory traffic about (n + 2) S per rank.
#include "algo/common/algos.h"
#include "algo/kernels/reduce.h"
#include "algo/mapped/driver.h"
#include "algo/mapped/mapped.h"
#include "algo/mapped/xfer.h"
#include "algo/registry.h"
#include "base/copy_shared.h"
#include "core/engine.h"

// This algorithm's state in its request.
struct oneshot_state {
    int      phase; // within the current chunk
    size_t   chunk; // chunks done
    uint64_t use; // staging use of the current chunk
};

static inline struct oneshot_state *
oneshot_of(shoal_request *req)
{
    return shi_algo_state(req, struct oneshot_state);
}

static size_t
chunk_elems(const shoal_comm *comm, size_t esize)
{
    return shi_area_of(comm)->slab_bytes / esize;
}

static size_t
chunks_of(const shoal_comm *comm, const shoal_request *req)
{
    size_t per = chunk_elems(comm, shi_req_esize(req));

    return req->count == 0 ? 1 : (req->count + per - 1) / per;
}

// A reduce's root reads its own input where it lies: nobody else reads
// its slab.
static int
reduces_from_sendbuf(const shoal_comm *comm, const shoal_request *req)
{
    return req->kind == SHI_OP_REDUCE && req->peer == comm->rank;
}

int
shi_oneshot_step(shoal_comm *comm, shoal_request *req)
{
    size_t es = shi_req_esize(req), per = chunk_elems(comm, es);
    int    n = 0;

    while (oneshot_of(req)->chunk < chunks_of(comm, req)) {
        size_t first = oneshot_of(req)->chunk * per;
        size_t elems = req->count - first < per ? req->count - first : per;
        int    k     = (int) oneshot_of(req)->chunk + 1;
        if (oneshot_of(req)->phase == 0) {
            if (oneshot_of(req)->use == 0) {
                oneshot_of(req)->use = shi_slab_next(comm);
            }
            if (!shi_slab_free(comm, req, oneshot_of(req)->use)) {
                return n;
            }
            if (elems > 0 && !reduces_from_sendbuf(comm, req)) {
                shi_copy_shared(
                    shi_slab_of(comm, comm->rank, oneshot_of(req)->use),
                    req->sendbuf + first * es, elems * es);
            }
            oneshot_of(req)->phase = 1;
            n++;
        }
        if (!shi_sync_all(comm, req, k)) {
            return n;
        }
        if (req->kind == SHI_OP_ALLREDUCE || req->peer == comm->rank) {
            for (int q = 0; q < comm->size; q++) {
                comm->inputs[q] = shi_slab_of(comm, q, oneshot_of(req)->use);
            }
            if (reduces_from_sendbuf(comm, req)) {
                comm->inputs[comm->rank] = req->sendbuf + first * es;
            }
            shi_reduce(req->dtype, req->op, req->buf + first * es,
                comm->inputs, comm->size, elems);
        }
        shi_slab_done(comm, oneshot_of(req)->use);
        oneshot_of(req)->use   = 0;
        oneshot_of(req)->phase = 0;
        oneshot_of(req)->chunk++;
        n++;
    }
    shi_sync_finish(comm, req, (int) oneshot_of(req)->chunk);
    shi_engine_complete(comm, req, SHOAL_OK);
    return n + 1;
}

// A call of at most SHI_INLINE_BYTES per rank goes inline (its data in
// the lines of its flag, inline.c); everything else as above.
int
shi_oneshot_run(shoal_comm *comm, shoal_request *req)
{
    return shi_inline_fits(req) ? shi_inline_step(comm, req)
                                : shi_oneshot_step(comm, req);
}

void
shi_oneshot_cost(const shi_cost_call *c, shi_cost *out)
{
    double chunks = shi_cost_chunks(c);

    *out = (shi_cost) { .alpha = chunks,
        .beta                  = (double) c->bytes,
        .gamma                 = (double) c->nranks * (double) c->bytes };
}
