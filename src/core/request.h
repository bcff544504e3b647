// Requests: one per operation, blocking or not. A request is in the engine
// (on the comm's active queue) until it completes; its owner (the caller of
// a non-blocking operation, or the blocking call's stack frame) keeps it
// until shoal_request_free or return.
#ifndef SHI_REQUEST_H
#define SHI_REQUEST_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "shoal.h"
#include "transport/view.h"

// Bytes of an algorithm's private state in its request.
#define SHI_ALGO_STATE_BYTES 64

// Name of an operation kind ("all_reduce").
const char *shi_op_kind_name(int kind);

struct shoal_request {
    // What a transport sees (transport/view.h): first, and named both
    // ways, req->peer here and shi_tp_req(req)->peer in a transport.
    union {
        struct shi_tp_req tp_view;
        struct {
            SHI_TP_REQ_FIELDS
        };
    };
    shoal_comm     *comm;
    size_t          esize; // bytes of one element of dtype (set with it)
    atomic_int      status; // SHOAL_INPROGRESS until final
    int             in_engine;
    int             heap; // allocated by a non-blocking call
    int             untracked; // nobody holds it: shoal_comm_sync frees it
    int             caller_waits; // its caller drives it: no wake at issue
    int             wait_counted; // a wait saw it (deferred wakes, engine.c)
    int             went_async; // in progress when issued (engine.c)
    int64_t         start_ns;
    int64_t         timeout_ms; // this call's (shoal_call_opts), 0: the comm's
    int64_t         deadline;
    int             started; // collective entered (descriptor published)
    int             late_asked; // its deadline passed; absent ranks sought
    shoal_reduce_op op;
    int             algo; // shi_algo chosen at submission
    // A built-in rule that lets private memory hand the call over chose
    // algo (nobody named it) and its row names an algorithm to hand it to
    // (registry.h, hand_over; coll/select.c says where); part of the
    // call's descriptor, so ranks that would run different ones fail.
    int         may_hand_over;
    const void *impl; // its registry row, chosen at submission
    size_t     *counts; // v-collectives: owned copies
    size_t     *rcounts; // all_to_all_v: receive counts
    uint64_t    counts_hash;
    uint64_t    sync_base; // comm's sync counter when started
    uint64_t    fr_id; // its flight-record entry + 1 (flight.c), 0: none
    uint32_t    fr_slot; // that entry's slot in the ring
    // The running algorithm's own state: each algorithm keeps a struct of
    // its own here (shi_algo_state), zeroed when the request is filled.
    _Alignas(16) unsigned char algo_state[SHI_ALGO_STATE_BYTES];
    // A request its layer drives itself (one-sided operations): called at
    // every engine pass under the lock until it completes the request with
    // shi_engine_complete; returns units of progress.
    int (*step)(shoal_comm *comm, shoal_request *req);
    // Links: `anext` on comm->active, `onext` on comm->owned (non-blocking
    // requests not yet freed); `qnext` (above) on one per-kind queue.
    shoal_request *anext, *aprev;
    shoal_request *onext, *oprev;
    // Set when the communicator is destroyed first (shi_req_detach): the
    // final status's message, so the request never reads the freed comm.
    char *detached_text;
};

// shi_tp_comm() and shi_tp_req() cast to the first member.
_Static_assert(offsetof(struct shoal_request, tp_view) == 0,
    "the transport's view of a request must come first");

// The non-blocking requests a communicator handed out and that are not
// freed yet (request_owned.c): own at creation (under comm->lock, as the
// engine starts it), disown at free; destroying the communicator detaches
// them (req->comm becomes NULL), and a detached request's status and
// message come from shi_req_detached_status. A send or receive that
// completed as it was issued (shi_engine_submit) is handed out detached
// from the start.
void shi_req_own_locked(shoal_comm *comm, shoal_request *req);
void shi_req_disown(shoal_comm *comm, shoal_request *req);
void shi_req_detach_all(shoal_comm *comm);
int  shi_req_detached_status(const shoal_request *req);

// Memory for a request, and back (request_cache.c: a thread keeps a few
// freed blocks for its next calls). shi_req_alloc returns NULL when out
// of memory; shi_req_release frees nothing the request points to.
shoal_request *shi_req_alloc(void);
void           shi_req_release(shoal_request *req);

// Short description for messages: "broadcast #12 (root 0, 1024 x float32)".
void shi_req_describe(const shoal_request *req, char *buf, size_t len);

// The algorithm's state in `req`, as its own struct type (checked to fit
// at compile time).
#define shi_algo_state(req, type)                                             \
    ((void) sizeof(char[sizeof(type) <= SHI_ALGO_STATE_BYTES ? 1 : -1]),      \
        (type *) (void *) (req)->algo_state)

#endif
