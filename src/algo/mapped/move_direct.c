// Single-copy data movement (all_gather(_v), all_to_all(_v), gather,
// scatter, broadcast): every rank copies what it needs straight from its
// peers' send buffers (a broadcast: the root's buffer) into its receive
// buffer.
//
// Steps: (1) expose the buffers (and, for all_to_all_v, the send counts);
// sync point (descriptors checked); (2) for every peer q, copy the range
// this rank takes from q (move_plan.c), in place from the shared heap or
// through process_vm_readv, in pieces (between two, the engine may have
// the step pause for a thread that issues); (3) sync point, so that no
// rank reuses its send buffer while a peer still reads it.
// Preconditions: as for the direct all-reduce; staging runs a call the
// built-in table chose below its staging bound (coll/select.c) when any
// rank's buffer lies outside the heap (see direct.h).
// Cost: 2 alpha + beta (bytes received); one copy per byte, against two
// through staging memory (a broadcast's outbox: the root copies in, every
// reader copies out, pipelined in slots).
#include <string.h>

#include "algo/common/algos.h"
#include "algo/mapped/direct.h"
#include "algo/mapped/mapped.h"
#include "algo/mapped/move_plan.h"
#include "algo/mapped/xfer.h"
#include "algo/registry.h"
#include "core/engine.h"

// Bytes copied per piece: large enough that a piece's system call (and
// its page pinning) is a small part of its copy, small enough that a
// thread that issues meanwhile waits about one piece's copy for the lock.
#define PIECE_BYTES ((size_t) 1 << 20)

// Copies one peer's range from byte `at` on, a piece at a time, counting
// the bytes in *done; SHOAL_INPROGRESS when the engine asks to pause
// (shi_engine_pause_long_work) before a piece that is not the last.
static int
copy_range(shoal_comm *comm, shoal_request *req, int q, size_t src, size_t dst,
    size_t len, size_t at)
{
    int     side = shi_move_source_side(req);
    size_t *done = shi_direct_done(req);

    while (at < len) {
        size_t piece = len - at < PIECE_BYTES ? len - at : PIECE_BYTES;
        if (piece < len - at && shi_engine_pause_long_work(comm)) {
            return SHOAL_INPROGRESS;
        }
        if (shi_peer_read(comm, q, side, src + at, req->buf + dst + at, piece)
            != SHOAL_OK) {
            return SHOAL_EPEER;
        }
        at += piece;
        *done += piece;
    }
    return SHOAL_OK;
}

// Copies what this rank takes from its peers, going on from
// shi_direct_done (bytes, counted over the peers in the order below).
static int
copy_from_peers(shoal_comm *comm, shoal_request *req)
{
    size_t before = 0; // bytes of the peers before q in that order

    for (int i = 0; i < comm->size; i++) {
        // Start with the next rank, so that ranks do not all read rank 0
        // at the same time.
        int    q = (comm->rank + i) % comm->size;
        size_t src, len, dst, done = *shi_direct_done(req);
        if (shi_move_range(comm, req, q, &src, &len, &dst)) {
            return SHOAL_EPEER;
        }
        if (q == comm->rank && req->sendbuf + src == req->buf + dst) {
            len = 0; // in place
        }
        if (done < before + len) {
            int st = copy_range(comm, req, q, src, dst, len, done - before);
            if (st != SHOAL_OK) {
                return st;
            }
        }
        before += len;
    }
    return SHOAL_OK;
}

static int
take_from_peers(shoal_comm *comm, shoal_request *req)
{
    if (*shi_direct_done(req) == 0) { // the phase begins
        shi_move_snapshot(comm, req);
    }
    return copy_from_peers(comm, req);
}

static const shi_direct_ops move_direct = {
    .publish = shi_move_publish,
    .work    = take_from_peers,
};

int
shi_move_direct_step(shoal_comm *comm, shoal_request *req)
{
    return shi_direct_run(comm, req, &move_direct);
}

void
shi_move_direct_cost(const shi_cost_call *c, shi_cost *out)
{
    *out = (shi_cost) { .alpha = 2, .beta = (double) c->bytes, .gamma = 0 };
}
