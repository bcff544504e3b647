// Requests: one per operation, blocking or not. A request is in the engine
// (on the comm's active queue) until it completes; its owner (the caller of
// a non-blocking operation, or the blocking call's stack frame) keeps it
// until shoal_request_free or return.
#ifndef SHI_REQUEST_H
#define SHI_REQUEST_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/strided.h"
#include "shoal.h"

// Bytes of an algorithm's private state in its request.
#define SHI_ALGO_STATE_BYTES 64

enum shi_op_kind {
    SHI_OP_SEND = 1,
    SHI_OP_RECV,
    SHI_OP_BARRIER,
    SHI_OP_BCAST,
    SHI_OP_ALLREDUCE,
    SHI_OP_REDUCE,
    SHI_OP_ALLGATHER,
    SHI_OP_ALLGATHERV,
    SHI_OP_REDUCE_SCATTER,
    SHI_OP_REDUCE_SCATTERV,
    SHI_OP_ALLTOALL,
    SHI_OP_ALLTOALLV,
    SHI_OP_GATHER,
    SHI_OP_SCATTER,
    // One-sided operations on a window (src/rma): driven by their own step
    // function (shoal_request.step), not by a transport or the collective
    // driver.
    SHI_OP_PUT,
    SHI_OP_SIGNAL,
    SHI_OP_WAIT_SIGNAL,
};

// Name of an operation kind ("all_reduce").
const char *shi_op_kind_name(int kind);

typedef struct shi_req_queue {
    shoal_request *head, *tail;
} shi_req_queue;

struct shoal_request {
    shoal_comm    *comm;
    int            kind;
    atomic_int     status; // SHOAL_INPROGRESS until final
    int            in_engine;
    int            heap; // allocated by a non-blocking call
    int            untracked; // nobody holds it: shoal_comm_sync frees it
    int            caller_waits; // its caller drives it: no wake at issue
    int64_t        start_ns;
    int64_t        timeout_ms; // this call's (shoal_call_opts), 0: the comm's
    int64_t        deadline;
    uint64_t       seq; // collective number or point-to-point number
    int            peer; // p2p peer (SHOAL_ANY_SOURCE too), or broadcast root
    int            source; // receive: the sender matched, -1 until then
    int            tag;
    unsigned char *buf;
    size_t         bytes;
    // Point to point: where the `bytes` bytes lie around buf when they are
    // not one dense block (owned by the caller until completion; NULL:
    // dense). Only transports with p2p_strided take one.
    const shi_strided *layout;
    size_t             done;
    size_t             count;
    int                dtype;
    int                blocked_on; // the rank it waits for, -1 if none
    int                started; // collective entered (descriptor published)
    // Collectives with a send and a receive buffer (coll/api.c): `buf` is
    // the receive buffer, `count` the per-rank count.
    const unsigned char *sendbuf;
    shoal_reduce_op      op;
    int                  algo; // shi_algo chosen at submission
    const void          *impl; // its registry row, chosen at submission
    size_t              *counts; // v-collectives: owned copies
    size_t              *rcounts; // all_to_all_v: receive counts
    uint64_t             counts_hash;
    uint64_t             sync_base; // comm's sync counter when started
    // The running algorithm's own state: each algorithm keeps a struct of
    // its own here (shi_algo_state), zeroed when the request is filled.
    _Alignas(16) unsigned char algo_state[SHI_ALGO_STATE_BYTES];
    void *xfer; // over TCP: the message carrying a p2p or one-sided op
    // Over shared memory, a large send the receiver reads from our memory:
    // the channel slot + 1 it announced (complete once the slot is
    // consumed), 0 otherwise.
    uint64_t p2p_read_slot;
    // A request its layer drives itself (one-sided operations): called at
    // every engine pass under the lock until it completes the request with
    // shi_engine_complete; returns units of progress.
    int (*step)(shoal_comm *comm, shoal_request *req);
    // Links: `anext` on comm->active, `qnext` on one per-kind queue,
    // `onext` on comm->owned (non-blocking requests not yet freed).
    shoal_request *anext, *aprev;
    shoal_request *qnext;
    shoal_request *onext, *oprev;
    // Set when the communicator is destroyed first (shi_req_detach): the
    // final status's message, so the request never reads the freed comm.
    char *detached_text;
};

// The non-blocking requests a communicator handed out and that are not
// freed yet (request_owned.c): own at creation, disown at free; destroying
// the communicator detaches them (req->comm becomes NULL), and a detached
// request's status and message come from shi_req_detached_status.
void shi_req_own(shoal_comm *comm, shoal_request *req);
void shi_req_disown(shoal_comm *comm, shoal_request *req);
void shi_req_detach_all(shoal_comm *comm);
int  shi_req_detached_status(const shoal_request *req);

// Short description for messages: "broadcast #12 (root 0, 1024 x float32)".
void shi_req_describe(const shoal_request *req, char *buf, size_t len);

// The algorithm's state in `req`, as its own struct type (checked to fit
// at compile time).
#define shi_algo_state(req, type)                                             \
    ((void) sizeof(char[sizeof(type) <= SHI_ALGO_STATE_BYTES ? 1 : -1]),      \
        (type *) (void *) (req)->algo_state)

// Queue helpers (FIFO through `qnext`): the request type's own, inline so
// that every layer that holds requests uses them without a call upward.
static inline void
shi_queue_push(shi_req_queue *q, shoal_request *req)
{
    req->qnext = NULL;
    if (q->tail != NULL) {
        q->tail->qnext = req;
    } else {
        q->head = req;
    }
    q->tail = req;
}

static inline void
shi_queue_remove(shi_req_queue *q, shoal_request *req)
{
    shoal_request *prev = NULL;

    for (shoal_request *r = q->head; r != NULL; prev = r, r = r->qnext) {
        if (r != req) {
            continue;
        }
        if (prev != NULL) {
            prev->qnext = r->qnext;
        } else {
            q->head = r->qnext;
        }
        if (q->tail == r) {
            q->tail = prev;
        }
        r->qnext = NULL;
        return;
    }
}

#endif
