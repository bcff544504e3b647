// Barrier over collective counters in shared memory.
//
// Steps: (1) on entering collective s, every rank stores s in its own
// counter line (done by driver.c when the collective starts) and wakes
// sleeping peers; (2) it waits until every peer's counter is >= s;
// (3) it checks that every peer called a barrier too (a barrier against a
// broadcast is a mismatch, not a pass): by the descriptor hash in the same
// line as the counter, and by the full descriptors when a hash differs or
// a peer has moved on.
// Preconditions: none (any number of ranks; 1 rank returns at once).
// Cost: alpha * 1 flag round (each rank reads n-1 lines); no payload.
#include "algo/common/algos.h"
#include "algo/mapped/driver.h"
#include "algo/mapped/mapped.h"
#include "algo/registry.h"
#include "core/engine.h"

int
shi_barrier_flags_step(shoal_comm *comm, shoal_request *req)
{
    uint32_t s     = (uint32_t) req->seq;
    uint64_t mine  = shi_my_ctl(comm)->coll_hash[s % 2];
    int      agree = 1;

    for (int peer = 0; peer < comm->size; peer++) {
        if (peer == comm->rank) {
            continue;
        }
        struct shi_mapped_ctl *ctl = shi_ctl_of(comm, peer);
        uint32_t               got
            = atomic_load_explicit(&ctl->coll_seq, memory_order_acquire);
        if (shi_seq_diff(got, s) < 0) {
            req->blocked_on = peer;
            return 0;
        }
        agree &= got == s
            && __atomic_load_n(&ctl->coll_hash[s % 2], __ATOMIC_RELAXED)
                == mine;
    }
    req->blocked_on = -1;
    // Every peer entered this barrier, so has finished every collective
    // before it: none still reads a line of the inline uses so far.
    shi_mapped_of(comm)->inline_seen = shi_mapped_of(comm)->inline_use;
    if (agree || !shi_coll_verify(comm, s)) {
        shi_engine_complete(comm, req, SHOAL_OK);
    }
    return 1;
}

void
shi_barrier_flags_cost(const shi_cost_call *c, shi_cost *out)
{
    (void) c;
    *out = (shi_cost) { .alpha = 1, .beta = 0, .gamma = 0 };
}
