// The driver of the single-copy algorithms (see direct.h).
#include "algo/mapped/direct.h"

#include "algo/mapped/xfer.h"
#include "core/engine.h"

// The driver's state in the request.
struct direct_state {
    int phase; // DIRECT_EXPOSE, DIRECT_WORK, DIRECT_CLOSE
};

static inline struct direct_state *
direct_of(shoal_request *req)
{
    return shi_algo_state(req, struct direct_state);
}

enum { DIRECT_EXPOSE = 0, DIRECT_WORK, DIRECT_CLOSE };

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
        if (ops->work(comm, req) != SHOAL_OK) {
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
