// The driver of the single-copy algorithms (see direct.h).
#include "algo/mapped/direct.h"

#include <string.h>

#include "algo/mapped/driver.h"
#include "algo/mapped/xfer.h"
#include "algo/registry.h"
#include "core/engine.h"
#include "core/op_props.h"

// The driver's state in the request.
struct direct_state {
    int    phase; // DIRECT_EXPOSE ... DIRECT_CLOSE
    size_t done; // shi_direct_done
};

static inline struct direct_state *
direct_of(shoal_request *req)
{
    return shi_algo_state(req, struct direct_state);
}

// DIRECT_WORK waits at sync point 1, DIRECT_PIECES runs phase 2 (over as
// many steps as it pauses).
enum { DIRECT_EXPOSE = 0, DIRECT_WORK, DIRECT_PIECES, DIRECT_CLOSE };

size_t *
shi_direct_done(shoal_request *req)
{
    return &direct_of(req)->done;
}

// Whether every rank's buffers lie in the shared heap (single copy in
// place). Read after sync point 1, when every exposure is visible: the
// same answer on every rank.
static int
all_in_heap(shoal_comm *comm)
{
    for (int p = 0; p < comm->size; p++) {
        const struct shi_expose *e = &shi_ctl_of(comm, p)->expose;
        if (e->send_heap == 0 || e->recv_heap == 0) {
            return 0;
        }
    }
    return 1;
}

// Hands the call to the staged algorithm right after sync point 1, where
// every rank decided alike. No sync point is needed before it: a rank that
// goes ahead exposes the buffers of its next call only once this call is
// done, which takes every rank past the staged algorithm's first sync
// point, so past its own decision (its reading of the exposures). The
// staged algorithm's sync points count on from sync point 1, its state
// starts afresh, and its registry row runs every later step.
static int
hand_over(shoal_comm *comm, shoal_request *req)
{
    const shi_algo_desc *row = shi_algo_find(shi_coll_of_op(req->kind),
        ((const shi_algo_desc *) req->impl)->hand_over);

    shi_sync_finish(comm, req, 1);
    req->sync_base += 1;
    req->impl = row;
    memset(req->algo_state, 0, sizeof(req->algo_state));
    return 1 + row->step(comm, req);
}

int
shi_direct_run(shoal_comm *comm, shoal_request *req, const shi_direct_ops *ops)
{
    int moved = 0; // 1 once this call did work (waiting is not progress)

    if (direct_of(req)->phase == DIRECT_EXPOSE) {
        shi_expose(comm, req->sendbuf, req->buf);
        if (ops->publish != NULL) {
            ops->publish(comm, req);
        }
        direct_of(req)->phase = DIRECT_WORK;
    }
    if (direct_of(req)->phase == DIRECT_WORK) {
        if (!shi_sync_all(comm, req, 1)) {
            return 0;
        }
        if (req->may_hand_over && !all_in_heap(comm)) {
            return 1 + hand_over(comm, req);
        }
        direct_of(req)->phase = DIRECT_PIECES;
    }
    if (direct_of(req)->phase == DIRECT_PIECES) {
        size_t before = direct_of(req)->done;
        int    st     = ops->work(comm, req);
        if (st == SHOAL_INPROGRESS) { // paused: progress if a piece was done
            return direct_of(req)->done != before;
        }
        if (st != SHOAL_OK) {
            return 1; // the comm is aborted; the engine fails req
        }
        direct_of(req)->phase = DIRECT_CLOSE;
        moved                 = 1;
    }
    if (!shi_sync_all(comm, req, 2)) {
        return moved;
    }
    shi_sync_finish(comm, req, 2);
    shi_engine_complete(comm, req, SHOAL_OK);
    return 1;
}
