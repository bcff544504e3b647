// Window operations: put, signal, wait_signal, and a peer's mapped buffer
// (see window.h for how each reaches the peer).
//
// Where peers are mapped, a put and a signal are done by the caller on the
// spot (a copy, then an atomic increment and a ring of the target's
// doorbell), so a non-blocking one returns a request already complete.
// Over messages they are requests that hand their message to the
// transport at their first step. wait_signal is a request whose step looks
// at the counter; the engine sleeps on the doorbell between looks, and an
// origin's signal rings it.
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/engine.h"
#include "core/ops.h"
#include "rma/window.h"

// What a one-sided request keeps (shi_algo_state).
struct rma_state {
    uint32_t win; // the window's number (looked up again at each step)
    uint64_t off; // put: target byte offset; signal: the counter
    int      which; // wait: the counter
    int      sent; // put, signal: handed to the transport
    uint64_t target; // wait: the count to reach
};

// The communicator failed: operations done on the spot (where peers are
// mapped) must fail as the engine fails the others.
static int
aborted(shoal_comm *comm, const char *op)
{
    char what[64];

    snprintf(what, sizeof(what), "%s: ", op);
    return shi_comm_failed_error(comm, what);
}

int
shi_window_usable(const shoal_window *win, const char *op)
{
    if (win == NULL) {
        return shi_error(SHOAL_EINVAL, "%s: the window is NULL", op);
    }
    if (win->comm == NULL) {
        return shi_error(SHOAL_EINVAL,
            "%s: the window's communicator was destroyed (or finalized)", op);
    }
    if (atomic_load(&win->comm->failed)) {
        return aborted(win->comm, op);
    }
    if (win->id == 0) {
        return shi_comm_error(win->comm,
            shi_error(SHOAL_EINVAL,
                "%s: the window has no registered memory (register it "
                "first; after deregistration it has none)",
                op));
    }
    return SHOAL_OK;
}

// shi_window_usable, then rank `r` (named `what` in the message) of the
// window's communicator.
static int
usable_for(const shoal_window *win, const char *op, const char *what, int r)
{
    int st = shi_window_usable(win, op);

    if (st != SHOAL_OK) {
        return st;
    }
    if (r < 0 || r >= win->comm->size) {
        return shi_comm_error(win->comm,
            shi_error(SHOAL_EINVAL, "%s: %s %d is outside 0..%d", op, what, r,
                win->comm->size - 1));
    }
    return SHOAL_OK;
}

// Gives this call's options to the same operation on the host's inner
// window (shi_window_route), which takes them as its own.
static void
pass_opts(const shoal_call_opts *opts)
{
    shoal_next_call_opts(opts->timeout_ms > 0 ? opts : NULL);
}

// ------------------------------------------------------------ requests

static int
done_step(shoal_comm *comm, shoal_request *req)
{
    shi_engine_complete(comm, req, SHOAL_OK);
    return 1;
}

// Hands a put or a signal to the transport once; the transport completes
// it when its bytes are out.
static int
send_step(shoal_comm *comm, shoal_request *req)
{
    struct rma_state *s = shi_algo_state(req, struct rma_state);

    if (s->sent) {
        return 0;
    }
    s->sent = 1;
    comm->tp->rma_send(comm, req, s->win, s->off);
    return 1;
}

static int
wait_step(shoal_comm *comm, shoal_request *req)
{
    struct rma_state *s   = shi_algo_state(req, struct rma_state);
    shoal_window     *win = shi_window_find(comm, s->win);
    _Atomic uint64_t *counter;

    if (win == NULL) {
        shi_engine_complete(comm, req, SHOAL_EINVAL);
        return 1; // deregistered under the wait: the caller's mistake
    }
    shi_win_inbox_serve(win);
    req->blocked_on = req->peer;
    counter         = s->which == SHI_WIN_FENCE ? &win->lines[req->peer].fence
                                                : &win->lines[req->peer].signals;
    if (atomic_load_explicit(counter, memory_order_acquire) < s->target) {
        return 0;
    }
    shi_engine_complete(comm, req, SHOAL_OK);
    return 1;
}

// Runs a filled one-sided request: blocking (out NULL) or started.
static int
run(shoal_window *win, shoal_request *req, shoal_request **out)
{
    if (out != NULL) {
        return shi_start_async(win->comm, req, out);
    }
    return shi_run_blocking(win->comm, req);
}

static void
fill(shoal_request *req, const shoal_window *win, int kind, int peer,
    int64_t timeout_ms, int (*step)(shoal_comm *, shoal_request *))
{
    shi_req_fill(req, kind, NULL, 0, SHOAL_UINT8, peer);
    req->timeout_ms                            = timeout_ms;
    req->step                                  = step;
    shi_algo_state(req, struct rma_state)->win = win->id;
}

// A request already complete, for a non-blocking operation done on the
// spot.
static int
done(shoal_window *win, int kind, int peer, shoal_request **out)
{
    shoal_request req;

    if (out == NULL) {
        return SHOAL_OK;
    }
    fill(&req, win, kind, peer, 0, done_step);
    return run(win, &req, out);
}

// ------------------------------------------------------------ signals

int
shi_window_raise(shoal_window *win, int dst, int which, int64_t timeout_ms,
    shoal_request **out)
{
    shoal_comm   *comm = win->comm;
    shoal_request req;

    if (win->messages && dst != comm->rank) {
        fill(&req, win, SHI_OP_SIGNAL, dst, timeout_ms, send_step);
        shi_algo_state(&req, struct rma_state)->off = (uint64_t) which;
        return run(win, &req, out);
    }
    struct shi_win_line *line = win->remote_lines[dst];
    // Sequentially consistent: the puts before it are seen first, and it
    // pairs with the target's announcement of sleep (see shm's wake).
    atomic_fetch_add(
        which == SHI_WIN_FENCE ? &line->fence : &line->signals, 1);
    comm->tp->wake(comm, dst, 0);
    return done(win, SHI_OP_SIGNAL, dst, out);
}

int
shi_window_wait_counter(shoal_window *win, int peer, int which,
    uint64_t target, int64_t timeout_ms, shoal_request **out)
{
    shoal_request req;

    fill(&req, win, SHI_OP_WAIT_SIGNAL, peer, timeout_ms, wait_step);
    shi_algo_state(&req, struct rma_state)->which  = which;
    shi_algo_state(&req, struct rma_state)->target = target;
    return run(win, &req, out);
}

static int
signal_op(shoal_window *win, int dst, shoal_request **out)
{
    shoal_call_opts opts = shi_call_opts_take();
    int             st;

    if ((st = usable_for(win, "window_signal", "dst", dst)) != SHOAL_OK) {
        return st;
    }
    shoal_window *via = shi_window_route(win, &dst);
    if (via != win) {
        pass_opts(&opts);
        return out != NULL ? shoal_window_isignal(via, dst, out)
                           : shoal_window_signal(via, dst);
    }
    return shi_window_raise(win, dst, SHI_WIN_SIGNALS, opts.timeout_ms, out);
}

int
shoal_window_signal(shoal_window *win, int dst)
{
    return signal_op(win, dst, NULL);
}

int
shoal_window_isignal(shoal_window *win, int dst, shoal_request **req)
{
    if (req == NULL) {
        return shi_missing_req("window_isignal");
    }
    *req = NULL;
    return signal_op(win, dst, req);
}

// What spin_until waits for.
struct counter_goal {
    shoal_comm       *comm;
    _Atomic uint64_t *counter;
    uint64_t          target;
};

// The counter reached its target, or the communicator failed (the engine
// then reports it).
static int
counter_reached(void *arg)
{
    struct counter_goal *g = arg;
    return atomic_load_explicit(g->counter, memory_order_acquire) >= g->target
        || atomic_load_explicit(&g->comm->failed, memory_order_relaxed);
}

// Where peers write the counters themselves, a blocking wait first watches
// the counter for as long as the engine would spin (the communicator's
// wait policy): a signal that comes soon is seen without the engine's
// lock and passes. 1 if it came; else the engine waits (sleeping, and
// seeing deadlines and dead peers). Meanwhile it applies the small puts
// posted to its inbox, and says so to origins (spin_for).
static int
spin_until(shoal_window *win, _Atomic uint64_t *counter, uint64_t target)
{
    struct counter_goal g = { win->comm, counter, target };

    return shi_win_spin_serving(
               win, counter_reached, &g, shi_engine_spin_ns(win->comm))
        && atomic_load_explicit(counter, memory_order_acquire) >= target;
}

static int
spin_for(shoal_window *win, _Atomic uint64_t *counter, uint64_t target)
{
    shi_win_inbox_attend(win, 1);
    int came = spin_until(win, counter, target);
    shi_win_inbox_attend(win, -1);
    return came;
}

static int
wait_signal_op(shoal_window *win, int peer, shoal_request **out)
{
    shoal_call_opts opts = shi_call_opts_take();
    int             st;

    if ((st = usable_for(win, "window_wait_signal", "peer", peer))
        != SHOAL_OK) {
        return st;
    }
    shoal_window *via = shi_window_route(win, &peer);
    if (via != win) {
        pass_opts(&opts);
        return out != NULL ? shoal_window_iwait_signal(via, peer, out)
                           : shoal_window_wait_signal(via, peer);
    }
    // The n-th wait for a peer waits for its n-th signal, counted at issue
    // so that waits started one after the other wait for successive ones.
    uint64_t target = ++win->waited[peer];
    if (out == NULL && !win->messages
        && spin_for(win, &win->lines[peer].signals, target)) {
        return SHOAL_OK;
    }
    return shi_window_wait_counter(
        win, peer, SHI_WIN_SIGNALS, target, opts.timeout_ms, out);
}

int
shoal_window_wait_signal(shoal_window *win, int peer)
{
    return wait_signal_op(win, peer, NULL);
}

int
shoal_window_iwait_signal(shoal_window *win, int peer, shoal_request **req)
{
    if (req == NULL) {
        return shi_missing_req("window_iwait_signal");
    }
    *req = NULL;
    return wait_signal_op(win, peer, req);
}

// ------------------------------------------------------------ puts

static int
check_put(const shoal_window *win, const void *src, size_t count,
    shoal_dtype dtype, int dst, size_t target_offset)
{
    size_t es = shoal_dtype_size(dtype);
    int    st;

    if ((st = usable_for(win, "window_put", "dst", dst)) != SHOAL_OK) {
        return st;
    }
    if (es == 0 || es != win->elem) {
        return shi_comm_error(win->comm,
            shi_error(SHOAL_EINVAL,
                "window_put: %s elements (%zu bytes) into a window of "
                "%zu-byte elements (%s): element sizes must match",
                es == 0 ? "unknown" : shoal_dtype_name(dtype), es, win->elem,
                shoal_dtype_name(win->dtype)));
    }
    if (src == NULL && count > 0) {
        return shi_comm_error(win->comm,
            shi_error(SHOAL_EINVAL, "window_put: src is NULL with count > 0"));
    }
    size_t elems = win->bytes / es;
    if (target_offset > elems || count > elems - target_offset) {
        return shi_comm_error(win->comm,
            shi_error(SHOAL_EINVAL,
                "window_put: %zu elements at element %zu need %zu elements, "
                "which exceeds the window size of %zu elements (%zu bytes)",
                count, target_offset,
                count > SIZE_MAX - target_offset ? SIZE_MAX
                                                 : count + target_offset,
                elems, win->bytes));
    }
    return SHOAL_OK;
}

// A put done by the caller where the target's memory is reachable: in
// place, else through the target's inbox where it waits, else a single
// copy through the kernel.
static int
put_here(shoal_window *win, const void *src, size_t bytes, int dst, size_t off)
{
    shoal_comm *comm = win->comm;
    int         st;

    if (bytes == 0) {
        return SHOAL_OK;
    }
    if (win->views[dst] != NULL) {
        memmove(win->views[dst] + off, src, bytes);
        return SHOAL_OK;
    }
    if ((st = shi_win_inbox_put(win, src, bytes, dst, off)) <= 0) {
        return st;
    }
    st = comm->tp->mem_write(comm, &win->peers[dst].buf, off, src, bytes);
    return st == SHOAL_OK
        ? st
        : shi_comm_error(
            comm, shi_error_wrap(st, "window_put to rank %d", dst));
}

static int
put_op(shoal_window *win, const void *src, size_t count, shoal_dtype dtype,
    int dst, size_t target_offset, shoal_request **out)
{
    shoal_call_opts opts = shi_call_opts_take();
    shoal_request   req;
    int             st;

    st = check_put(win, src, count, dtype, dst, target_offset);
    if (st != SHOAL_OK) {
        return st;
    }
    shoal_window *via = shi_window_route(win, &dst);
    if (via != win) {
        pass_opts(&opts);
        return out != NULL
            ? shoal_window_iput(
                via, src, count, dtype, dst, target_offset, out)
            : shoal_window_put(via, src, count, dtype, dst, target_offset);
    }
    size_t bytes = count * win->elem, off = target_offset * win->elem;
    if (!win->messages || dst == win->comm->rank) {
        if ((st = put_here(win, src, bytes, dst, off)) != SHOAL_OK) {
            return st;
        }
        return done(win, SHI_OP_PUT, dst, out);
    }
    fill(&req, win, SHI_OP_PUT, dst, opts.timeout_ms, send_step);
    req.sendbuf                                 = src;
    req.bytes                                   = bytes;
    req.count                                   = count;
    req.dtype                                   = (int) dtype;
    req.esize                                   = win->elem;
    shi_algo_state(&req, struct rma_state)->off = off;
    return run(win, &req, out);
}

int
shoal_window_put(shoal_window *win, const void *src, size_t count,
    shoal_dtype dtype, int dst, size_t target_offset)
{
    return put_op(win, src, count, dtype, dst, target_offset, NULL);
}

int
shoal_window_iput(shoal_window *win, const void *src, size_t count,
    shoal_dtype dtype, int dst, size_t target_offset, shoal_request **req)
{
    if (req == NULL) {
        return shi_missing_req("window_iput");
    }
    *req = NULL;
    return put_op(win, src, count, dtype, dst, target_offset, req);
}

// ------------------------------------------------------------ mapping

int
shoal_window_access_of(shoal_window *win, int peer)
{
    int st;

    if ((st = usable_for(win, "window_access", "peer", peer)) != SHOAL_OK) {
        return st;
    }
    shoal_window *via = shi_window_route(win, &peer);
    if (via != win) {
        return shoal_window_access_of(via, peer);
    }
    if (win->views[peer] != NULL || (win->bytes == 0 && !win->messages)) {
        return SHOAL_ACCESS_UNIFIED;
    }
    return SHOAL_ACCESS_SEPARATE;
}

int
shoal_window_peer_ptr(shoal_window *win, int peer, void **out)
{
    int st;

    if (out == NULL) {
        return shi_error(SHOAL_EINVAL, "window_peer_ptr: out is NULL");
    }
    *out = NULL;
    if ((st = usable_for(win, "window_peer_ptr", "peer", peer)) != SHOAL_OK) {
        return st;
    }
    shoal_window *via = shi_window_route(win, &peer);
    if (via != win) {
        return shoal_window_peer_ptr(via, peer, out);
    }
    if (win->views[peer] == NULL && win->bytes > 0) {
        return shi_comm_error(win->comm,
            shi_error(SHOAL_ENOTSUP,
                "window_peer_ptr: rank %d's window memory is not mapped in "
                "this process: %s",
                peer,
                win->messages
                    ? "the ranks talk over a network transport (TCP), which "
                      "maps no peer memory"
                    : "it is not from shoal_alloc; register memory from "
                      "shoal_alloc (Python: shoal.empty) to map it"));
    }
    *out = win->views[peer];
    return SHOAL_OK;
}
