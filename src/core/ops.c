// Public entry points of the operations: argument checks, then a request
// handed to the engine. Blocking forms keep their request on the stack.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "core/engine.h"
#include "core/ops.h"

// Checks what every operation with a buffer needs.
static int
check_buffer(
    shoal_comm *comm, const char *op, const void *buf, size_t count, int dtype)
{
    if (comm == NULL) {
        return shi_error(SHOAL_EINVAL, "%s: the communicator is NULL", op);
    }
    if (shoal_dtype_size(dtype) == 0) {
        return shi_comm_invalid(
            comm, "%s: unknown dtype %d (see shoal_dtype)", op, dtype);
    }
    if (buf == NULL && count > 0) {
        return shi_comm_invalid(
            comm, "%s: buffer is NULL but count is %zu", op, count);
    }
    if (count > SIZE_MAX / shoal_dtype_size(dtype)) {
        return shi_comm_invalid(
            comm, "%s: count %zu overflows the buffer size", op, count);
    }
    return SHOAL_OK;
}

static int
check_rank(shoal_comm *comm, const char *op, const char *what, int rank)
{
    if (rank >= 0 && rank < comm->size) {
        return SHOAL_OK;
    }
    return shi_comm_invalid(
        comm, "%s: %s %d is outside 0..%d", op, what, rank, comm->size - 1);
}

// An any-source receive needs another rank that could send to it.
static int
check_any_source(shoal_comm *comm, int kind)
{
    if (kind == SHI_OP_SEND) {
        return shi_comm_invalid(comm,
            "send: peer %d is SHOAL_ANY_SOURCE, which only receives accept; "
            "name the destination rank",
            SHOAL_ANY_SOURCE);
    }
    if (comm->size == 1) {
        return shi_comm_invalid(comm,
            "recv: SHOAL_ANY_SOURCE on communicator '%s' of one rank: no "
            "other rank can send to it (sending to oneself is not "
            "supported)",
            comm->name);
    }
    return SHOAL_OK;
}

static int
check_p2p(shoal_comm *comm, int kind, const void *buf, size_t count, int dtype,
    int peer, int tag)
{
    const char *op = kind == SHI_OP_SEND ? "send" : "recv";
    int         st = check_buffer(comm, op, buf, count, dtype);

    if (st == SHOAL_OK && peer == SHOAL_ANY_SOURCE) {
        st = check_any_source(comm, kind);
    } else if (st == SHOAL_OK && kind == SHI_OP_RECV
        && (peer < 0 || peer >= comm->size)) {
        st = shi_comm_invalid(comm,
            "recv: peer %d is outside 0..%d (or SHOAL_ANY_SOURCE, -1)", peer,
            comm->size - 1);
    } else if (st == SHOAL_OK) {
        st = check_rank(comm, op, "peer", peer);
    }
    if (st == SHOAL_OK && peer == comm->rank) {
        st = shi_comm_invalid(comm,
            "%s: peer %d is this rank; sending to oneself "
            "is not supported",
            op, peer);
    }
    if (st == SHOAL_OK && tag < 0) {
        st = shi_comm_invalid(comm, "%s: tag %d is negative", op, tag);
    }
    return st;
}

// Runs a filled request to completion on the caller's stack.
int
shi_run_blocking(shoal_comm *comm, shoal_request *req)
{
    return shi_engine_submit(comm, req, 1);
}

static int
out_of_memory(shoal_comm *comm)
{
    return shi_comm_error(comm, shi_error(SHOAL_ENOMEM, "out of memory"));
}

// Starts a filled request of shi_req_alloc's: *out is it, or NULL when it
// failed to start (then it is released, with its counts).
static int
start_heap(shoal_comm *comm, shoal_request *req, shoal_request **out)
{
    int st;

    req->heap = 1;
    st        = shi_engine_submit(comm, req, 0); // owns it unless it fails
    if (st < 0) {
        free(req->counts);
        shi_req_release(req);
        *out = NULL;
        return st;
    }
    *out = req;
    return SHOAL_OK;
}

// Moves a filled stack request to the heap and starts it.
int
shi_start_async(
    shoal_comm *comm, const shoal_request *tmpl, shoal_request **out)
{
    shoal_request *req = shi_req_alloc();

    *out = NULL;
    if (req == NULL) {
        free(tmpl->counts); // owned by the request-to-be
        return out_of_memory(comm);
    }
    shi_req_copy(req, tmpl);
    return start_heap(comm, req, out);
}

// Where an untracked send or receive "returns" its request: the address
// says the caller keeps none.
static shoal_request *untracked;

// Starts a request the communicator frees itself once it completed; its
// failure is reported by shoal_comm_sync (request_owned.c).
static int
start_untracked(shoal_comm *comm, shoal_request *tmpl)
{
    shoal_request *req;

    shi_req_reap_untracked(comm, 0); // the completed ones go as it starts
    tmpl->untracked = 1;
    // req is not read: one done as it was issued is freed by then.
    return shi_start_async(comm, tmpl, &req);
}

// Checks and runs a send or receive: started when `out` is given (untracked
// when it is &untracked), else blocking (then *source, if given, says who
// sent).
static int
p2p(shoal_comm *comm, int kind, const void *buf, size_t count,
    shoal_dtype dtype, int peer, int tag, shoal_request **out, int *source)
{
    shoal_call_opts opts = shi_call_opts_take();
    shoal_request   on_stack, *req = &on_stack;
    int             st;

    if (out != NULL) {
        *out = NULL;
    }
    if (source != NULL) {
        *source = SHOAL_ANY_SOURCE;
    }
    st = check_p2p(comm, kind, buf, count, (int) dtype, peer, tag);
    if (st != SHOAL_OK) {
        return st;
    }
    // A handed-out request is filled where it will live rather than on
    // the stack and copied there (384 bytes, on every small send).
    if (out != NULL && out != &untracked && (req = shi_req_alloc()) == NULL) {
        return out_of_memory(comm);
    }
    shi_req_fill(req, kind, buf, count, (int) dtype, peer);
    req->tag          = tag;
    req->timeout_ms   = opts.timeout_ms;
    req->caller_waits = opts.caller_waits;
    if (out == &untracked) {
        return start_untracked(comm, req);
    }
    if (out != NULL) {
        return start_heap(comm, req, out);
    }
    st = shi_run_blocking(comm, req);
    if (st == SHOAL_OK && source != NULL) {
        *source = req->source;
    }
    return st;
}

int
shi_p2p_start(shoal_comm *comm, int kind, const void *buf, size_t bytes,
    const shi_strided *layout, int peer, int tag, shoal_request **out)
{
    shoal_request req;

    if (layout != NULL && !shi_p2p_strided_ok(comm)) {
        *out = NULL;
        return shi_comm_error(comm,
            shi_error(SHOAL_ENOTSUP,
                "the %s transport moves dense messages only; pack strided "
                "data first",
                comm->tp->name));
    }
    shi_req_fill(&req, kind, buf, bytes, SHOAL_UINT8, peer);
    req.tag    = tag;
    req.layout = layout;
    return shi_start_async(comm, &req, out);
}

int
shi_p2p_strided_ok(const shoal_comm *comm)
{
    return comm->tp->p2p_strided;
}

int
shoal_send(shoal_comm *comm, const void *buf, size_t count, shoal_dtype dtype,
    int peer, int tag)
{
    return p2p(comm, SHI_OP_SEND, buf, count, dtype, peer, tag, NULL, NULL);
}

int
shoal_isend(shoal_comm *comm, const void *buf, size_t count, shoal_dtype dtype,
    int peer, int tag, shoal_request **req)
{
    return p2p(comm, SHI_OP_SEND, buf, count, dtype, peer, tag,
        req != NULL ? req : &untracked, NULL);
}

int
shoal_recv(shoal_comm *comm, void *buf, size_t count, shoal_dtype dtype,
    int peer, int tag)
{
    return p2p(comm, SHI_OP_RECV, buf, count, dtype, peer, tag, NULL, NULL);
}

int
shoal_irecv(shoal_comm *comm, void *buf, size_t count, shoal_dtype dtype,
    int peer, int tag, shoal_request **req)
{
    return p2p(comm, SHI_OP_RECV, buf, count, dtype, peer, tag,
        req != NULL ? req : &untracked, NULL);
}

int
shoal_recv_any(shoal_comm *comm, void *buf, size_t count, shoal_dtype dtype,
    int tag, int *source)
{
    return p2p(comm, SHI_OP_RECV, buf, count, dtype, SHOAL_ANY_SOURCE, tag,
        NULL, source);
}

int
shoal_request_source(const shoal_request *req)
{
    int st;

    if (req == NULL) {
        return shi_error(SHOAL_EINVAL, "request_source: req is NULL");
    }
    if (req->kind != SHI_OP_RECV) {
        return shi_error(SHOAL_EINVAL,
            "request_source: the request is a %s, not a receive",
            shi_op_kind_name(req->kind));
    }
    st = atomic_load_explicit(&req->status, memory_order_acquire);
    if (st == SHOAL_INPROGRESS) {
        return shi_error(SHOAL_EINVAL,
            "request_source: the receive has not completed yet; call "
            "shoal_wait (or shoal_test until SHOAL_OK) first");
    }
    if (st < 0) {
        return shi_error(SHOAL_EINVAL,
            "request_source: the receive failed (%s), so it got no message",
            shoal_status_name(st));
    }
    return req->source;
}

int
shoal_test(shoal_request *req)
{
    if (req == NULL) {
        return shi_error(SHOAL_EINVAL, "test: req is NULL");
    }
    int st = atomic_load_explicit(&req->status, memory_order_acquire);
    if (st == SHOAL_INPROGRESS) {
        return SHOAL_INPROGRESS;
    }
    // Failed: record the message for this thread (and return the status).
    return st < 0 ? shi_engine_wait(req, req->deadline) : st;
}

int
shoal_wait(shoal_request *req, int64_t timeout_ms)
{
    int64_t deadline;

    if (req == NULL) {
        return shi_error(SHOAL_EINVAL, "wait: req is NULL");
    }
    deadline = req->deadline;
    if (timeout_ms >= 0) {
        deadline = shi_earliest(shi_deadline_in_ms(timeout_ms), deadline);
    }
    return shi_engine_wait(req, deadline);
}

int
shoal_wait_for(shoal_request *req, int64_t wait_ms)
{
    if (req == NULL) {
        return shi_error(SHOAL_EINVAL, "wait_for: req is NULL");
    }
    if (wait_ms < 0) {
        return shi_error(SHOAL_EINVAL,
            "wait_for: wait_ms is %lld; give 0 or more (shoal_wait waits "
            "without a bound of its own)",
            (long long) wait_ms);
    }
    return shi_engine_wait_until(
        req, req->deadline, shi_deadline_in_ms(wait_ms));
}

void
shoal_request_free(shoal_request *req)
{
    if (req == NULL) {
        return;
    }
    if (atomic_load_explicit(&req->status, memory_order_acquire)
        == SHOAL_INPROGRESS) {
        shi_engine_wait(req, req->deadline);
    }
    if (req->comm != NULL && req->heap
        && shi_fork_check(req->comm, "request_free") == SHOAL_OK) {
        shi_req_disown(req->comm, req); // (a forked child's copy: no lock)
    }
    free(req->counts); // v-collectives' copies (rcounts shares the block)
    free(req->detached_text);
    shi_req_release(req);
}

int
shoal_comm_sync(shoal_comm *comm)
{
    if (comm == NULL) {
        return shi_error(SHOAL_EINVAL, "sync: the communicator is NULL");
    }
    int st = shi_engine_sync(comm, shi_deadline_in_ms(comm->timeout_ms));
    // An untracked operation's own failure names it; it explains an abort.
    int mine = shi_fork_check(comm, "sync") == SHOAL_OK
        ? shi_req_reap_untracked(comm, 1)
        : SHOAL_OK;
    return mine != SHOAL_OK ? shi_comm_error(comm, mine) : st;
}
