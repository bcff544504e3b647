// The progress engine (see engine.h).
#include "engine.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/env.h"
#include "base/log.h"
#include "core/engine_park.h"
#include "core/flight.h"
#include "platform/cpu_place.h"
#include "platform/cpu_relax.h"
#include "transport/upcalls.h"

// How often the driver looks at deadlines and departed peers while it
// sleeps: a dead peer is also announced by the watcher, so this only bounds
// how late a deadline or a departure is noticed.
#define ENGINE_HOUSEKEEPING_NS (100 * 1000000LL)

// Deferred wakes. A non-blocking request wakes the progress thread at
// issue, so that it advances while the caller computes; the wake is a
// system call, and the woken thread takes a core for microseconds (on a
// full machine, from a peer). A caller that waits for its requests at once
// needs none of that: a send/receive exchange on 2 ranks took 0.93-1.0 us
// with the wakes and 0.6-0.78 us without. So after PROMPT_STREAK requests
// in a row waited for within PROMPT_NS of their issue, issue stops waking
// an idle progress thread; that thread then looks every DEFER_CHECK_NS on
// its own, drives a request left undriven that long and ends the streak
// (the caller did not wait after all: it waited up to DEFER_CHECK_NS more,
// once). DEFER_QUIET_NS without such issues, it sleeps until woken again.
#define PROMPT_NS      (50 * 1000LL)
#define PROMPT_STREAK  32
#define DEFER_CHECK_NS (1000 * 1000LL)
#define DEFER_QUIET_NS (50 * 1000000LL)

static void
queue_unlink_active(shi_req_queue *q, shoal_request *req)
{
    if (req->aprev != NULL) {
        req->aprev->anext = req->anext;
    } else {
        q->head = req->anext;
    }
    if (req->anext != NULL) {
        req->anext->aprev = req->aprev;
    } else {
        q->tail = req->aprev;
    }
    req->anext = req->aprev = NULL;
}

static void
queue_push_active(shi_req_queue *q, shoal_request *req)
{
    req->anext = NULL;
    req->aprev = q->tail;
    if (q->tail != NULL) {
        q->tail->anext = req;
    } else {
        q->head = req;
    }
    q->tail = req;
}

// The trace log's line for a request that ended.
static void
trace_end(shoal_comm *comm, const shoal_request *req, int status)
{
    if (shi_log_enabled(SHI_LOG_TRACE)) {
        char desc[256];
        shi_req_describe(req, desc, sizeof(desc));
        shi_log(SHI_LOG_TRACE, "%s: %s after %.1f us (%s)", comm->name, desc,
            (double) (shi_now_ns() - req->start_ns) / 1e3,
            shoal_status_name(status));
    }
}

void
shi_engine_complete(shoal_comm *comm, shoal_request *req, int status)
{
    if (!req->in_engine) {
        return;
    }
    if (req->kind == SHI_OP_SEND || req->kind == SHI_OP_RECV) {
        comm->p2p_active--;
    }
    // A message transport's message of a failed operation is in no queue
    // any more (the transport's abort_flush ran first): free it.
    if (req->xfer != NULL) {
        free(req->xfer);
        req->xfer = NULL;
    }
    if (req->step != NULL) {
        shi_queue_remove(&comm->engine.stepped, req);
    } else if (req->kind == SHI_OP_SEND || req->kind == SHI_OP_RECV) {
        if (comm->tp->p2p_forget != NULL) {
            comm->tp->p2p_forget(comm, req);
        }
    } else {
        shi_queue_remove(&comm->engine.colls, req);
    }
    queue_unlink_active(&comm->engine.active, req);
    req->in_engine = 0;
    if (req->fr_id != 0) {
        shi_fr_complete(comm, req, status);
    }
    trace_end(comm, req, status);
    atomic_store_explicit(&req->status, status, memory_order_release);
}

void
shi_transport_complete(shoal_comm *comm, shoal_request *req, int status)
{
    shi_engine_complete(comm, req, status);
}

static void
fail_all_locked(shoal_comm *comm)
{
    int st = atomic_load(&comm->failed);

    while (comm->engine.active.head != NULL) {
        shi_engine_complete(comm, comm->engine.active.head, st);
    }
}

// After a failure, once per pass: the transport sends what the abort left
// to send, and the collective layer lets go of work on other
// communicators (once). Under the lock.
static void
flush_abort_locked(shoal_comm *comm)
{
    comm->engine.abort_flushed = 1;
    if (comm->fr != NULL && !comm->fr_dumped) {
        comm->fr_dumped = 1; // a time-out, an abort, a revoke: dump once
        if (getenv("SHOAL_FR_DUMP_DIR") != NULL
            && shi_fr_dump(comm, NULL) != SHOAL_OK) {
            SHI_INFO("flight record of '%s' not written: %s", comm->name,
                shi_error_text());
        }
    }
    if (comm->tp->abort_flush != NULL) {
        comm->tp->abort_flush(comm);
    }
    if (!comm->abandoned && comm->coll_abandon != NULL) {
        comm->abandoned = 1;
        comm->coll_abandon(comm);
    }
}

// Steps every request that drives itself (one-sided operations). A step
// may complete its request, so the next one is read first. Under the lock.
static int
step_each(shoal_comm *comm)
{
    shoal_request *req = comm->engine.stepped.head, *next;
    int            n   = 0;

    for (; req != NULL && !atomic_load(&comm->failed); req = next) {
        next = req->qnext;
        n += req->step(comm, req);
    }
    return n;
}

// Whether the communicator failed, adopting an abort a peer published:
// then every active request fails. Under the lock.
static int
failed_locked(shoal_comm *comm)
{
    if (comm->tp->poll_abort != NULL && !atomic_load(&comm->failed)) {
        comm->tp->poll_abort(comm);
    }
    if (!atomic_load(&comm->failed)) {
        return 0;
    }
    flush_abort_locked(comm);
    fail_all_locked(comm);
    return 1;
}

// One pass over everything that can move (see step_locked). Under the lock.
static int
pass_locked(shoal_comm *comm)
{
    if (failed_locked(comm)) {
        return 1;
    }
    if (comm->engine.active.head == NULL && comm->engine.listening == 0) {
        return 0;
    }
    int n = comm->tp->progress(comm);
    if (comm->watch != NULL) {
        comm->watch(comm->watch_arg);
    }
    if (comm->engine.active.head == NULL) {
        return n;
    }
    n += comm->coll_step(comm);
    return comm->engine.stepped.head != NULL ? n + step_each(comm) : n;
}

// After a look that moved `moved` units, wakes this rank's announced
// sleepers where they sleep in one set armed after their last look (see
// step_locked). Returns `moved`. Under the lock.
static int
wake_if_moved(shoal_comm *comm, int moved)
{
    if (moved > 0 && !comm->tp->arm_before_look) {
        comm->tp->wake(comm, comm->rank, 0);
    }
    return moved;
}

// One pass over everything that can move. Under the lock.
//
// Where this rank's threads sleep in one set armed after their last look
// (TCP's epoll, see transport.h), one of them may read the data another
// one sleeps for: the kernel hands an event to one waiter, the others see
// it only if it is still unread when they run, and a thread awake reads
// whatever is there. A pass that moved anything while another thread
// sleeps may thus have completed that thread's request and left it
// nothing to wake it: it wakes every announced sleeper to look again.
// Sleepers announce themselves under the lock after their last look
// (sleep_until_woken), so a pass that does not see one ran before that
// look.
static int
step_locked(shoal_comm *comm)
{
    return wake_if_moved(comm, pass_locked(comm));
}

// Takes the lock to issue an operation. When another thread holds it
// (the progress thread in a long step, a waiter in its drive), says so
// while it waits: a long step pauses between its pieces, and a driver
// lets it in before taking the lock again.
static void
lock_to_issue(shoal_comm *comm)
{
    if (pthread_mutex_trylock(&comm->lock) == 0) {
        return;
    }
    atomic_fetch_add_explicit(
        &comm->engine.lock_wanted, 1, memory_order_relaxed);
    pthread_mutex_lock(&comm->lock);
    atomic_fetch_sub_explicit(
        &comm->engine.lock_wanted, 1, memory_order_relaxed);
}

// How long a driver about to take the lock again waits, at most, for the
// threads that wait to issue to get it first (pauses of the CPU; about
// 20-50 us): a mutex goes to whoever asks first once it is free, and the
// driver asks again at once, before a woken issuer runs.
#define LET_IN_LOOKS 2000

static void
let_issuers_in(shoal_comm *comm)
{
    for (int i = 0; i < LET_IN_LOOKS
         && atomic_load_explicit(
                &comm->engine.lock_wanted, memory_order_relaxed)
             > 0;
         i++) {
        shi_cpu_relax();
    }
}

int
shi_engine_pause_long_work(shoal_comm *comm)
{
    if (shi_tp_leave_long_copy(shi_tp_comm(comm))) {
        return 1;
    }
    return atomic_load_explicit(
               &comm->engine.lock_wanted, memory_order_relaxed)
        > 0;
}

// One pass for a thread that may stall in it or must not (transport/
// view.h): the transport leaves long copies to a later pass of the first
// kind, and says whether it left one. Under the lock.
static int
step_for(shoal_comm *comm, int may_stall)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    int                 n;

    tc->defer_long_copies = !may_stall;
    tc->long_copy_left    = 0;
    n                     = step_locked(comm);
    tc->defer_long_copies = 0;
    return n;
}

// The progress thread leaves a long copy (a large message's single-copy
// read) to the application while it issues: holding the lock through the
// copy, it would stall the application's next call, as in irecv, isend,
// wait of two large messages, where each rank's isend (which its peer
// waits for) would wait out this rank's read of the peer's message, and
// the two reads would run one after the other. It takes the copy once the
// application has issued nothing for COPY_QUIET_NS, or after
// COPY_LEFT_MAX_NS in any case (an application that issues on and on
// without waiting still sees its receives complete).
#define COPY_QUIET_NS    (100 * 1000LL)
#define COPY_LEFT_MAX_NS (1000 * 1000LL)

static int
progress_may_copy(const shoal_comm *comm, int64_t now)
{
    const struct shi_engine *e = &comm->engine;

    return now - e->last_issue_ns >= COPY_QUIET_NS
        || (e->copy_left_since != 0
            && now - e->copy_left_since >= COPY_LEFT_MAX_NS);
}

// After a pass of the progress thread: when it left a long copy, since
// when; the time by which it must look again (SHI_NO_DEADLINE: none).
static int64_t
note_copy_left(shoal_comm *comm, int64_t now)
{
    struct shi_engine *e = &comm->engine;

    if (!shi_tp_comm(comm)->long_copy_left) {
        e->copy_left_since = 0;
        return SHI_NO_DEADLINE;
    }
    if (e->copy_left_since == 0) {
        e->copy_left_since = now;
    }
    return shi_earliest(e->last_issue_ns + COPY_QUIET_NS,
        e->copy_left_since + COPY_LEFT_MAX_NS);
}

// One pass of a driving thread: an application thread's takes everything,
// the progress thread's may leave a long copy; *look_by is when the
// progress thread must look again for one it left (else SHI_NO_DEADLINE).
// Under the lock.
static int
drive_pass(shoal_comm *comm, int app, int64_t now, int64_t *look_by)
{
    int n;

    if (app) { // takes every copy: none is left from here
        *look_by                     = SHI_NO_DEADLINE;
        comm->engine.copy_left_since = 0;
        return step_locked(comm);
    }
    n        = step_for(comm, progress_may_copy(comm, now));
    *look_by = note_copy_left(comm, now);
    return n;
}

// Whether every rank but this one is gone: then an any-source receive
// that matched nothing yet can never complete.
static int
all_others_departed(shoal_comm *comm)
{
    for (int p = 0; p < comm->size; p++) {
        if (p != comm->rank
            && atomic_load(&comm->peers[p].state) == SHI_PEER_LIVE) {
            return 0;
        }
    }
    return 1;
}

// The first active request waiting for a peer that is gone (blocked_on),
// or an unmatched any-source receive when every peer is gone, or NULL.
static shoal_request *
waits_for_departed(shoal_comm *comm)
{
    int orphans = -1; // all_others_departed, computed once if needed

    for (shoal_request *r = comm->engine.active.head; r != NULL;
         r                = r->anext) {
        int p = r->blocked_on;
        if (p >= 0 && atomic_load(&comm->peers[p].state) != SHI_PEER_LIVE) {
            return r;
        }
        if (r->kind == SHI_OP_RECV && r->source < 0) {
            if (orphans < 0) {
                orphans = all_others_departed(comm);
            }
            if (orphans) {
                return r;
            }
        }
    }
    return NULL;
}

// Over TCP, a request past its deadline is often waiting for a rank that
// is itself waiting for an unreachable one. A rank that sees a peer not
// acknowledging its data names that peer at once (SHOAL_EPEER); the
// others wait a little longer for that diagnosis to reach them before
// reporting their own time-out. Returns 1 when the caller should report
// the time-out now.
static int
net_deadline_passed(shoal_comm *comm, shoal_request *r, int64_t now)
{
    char    desc[256], why[160];
    int     p;
    int64_t grace = r->timeout_ms * 1000000 / 4;

    if (comm->tp->unreachable(comm, &p, why, sizeof(why))) {
        shi_req_describe(r, desc, sizeof(desc));
        shi_comm_abort(comm, SHOAL_EPEER,
            "rank %d (pid %d on host %s, %s) is unreachable: %s; %s gave up "
            "after %.2f s on rank %d",
            p, comm->peers[p].pid, comm->peers[p].host,
            comm->tp->peer_address(comm, p), why, desc,
            (double) (now - r->start_ns) / 1e9, comm->rank);
        return 0;
    }
    if (grace > 1000000000LL) {
        grace = 1000000000LL;
    }
    return now > r->deadline + grace;
}

// " (rank 3 died; rank 5 died)" for the peers seen dead (not those that
// left on purpose), or "".
static void
name_dead_peers(shoal_comm *comm, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int p = 0; p < comm->size && used + 24 < len; p++) {
        if (p != comm->rank
            && atomic_load(&comm->peers[p].state) == SHI_PEER_DEAD) {
            used += (size_t) snprintf(buf + used, len - used, "%srank %d died",
                used == 0 ? " (" : "; ", p);
        }
    }
    if (used > 0 && used + 2 <= len) {
        snprintf(buf + used, len - used, ")");
    }
}

// A collective past its deadline over a message transport: names the
// ranks that never reached it, or one that called another collective, if
// the store shows either (absent.c), and aborts. Returns 1 if it did. Asked
// once per request. Under the lock.
static int
name_absent_locked(shoal_comm *comm, shoal_request *r, int64_t now)
{
    char              desc[256];
    struct shi_absent a;

    char why[160];
    int  p;

    if (r->late_asked || !shi_op_props_of(r->kind)->collective
        || comm->tp->unreachable == NULL) {
        return 0;
    }
    r->late_asked = 1;
    // A peer the transport knows is cut off is named by its own evidence
    // (net_deadline_passed); it could not have written to the store.
    if (comm->tp->unreachable(comm, &p, why, sizeof(why))
        || !shi_absent_ranks(comm, r, &a)) {
        return 0;
    }
    shi_req_describe(r, desc, sizeof(desc));
    if (a.other >= 0) {
        shi_comm_abort(comm, SHOAL_EMISMATCH,
            "collective #%llu does not match across ranks: rank %d called "
            "%s, rank %d called %s (seen when its deadline passed: neither "
            "call sends what the other waits for)",
            (unsigned long long) r->seq, comm->rank, desc, a.other,
            a.other_call);
    } else {
        shi_comm_abort(comm, SHOAL_ETIMEDOUT,
            "%s on rank %d: Timed out waiting for %s, which never said in "
            "the store that it reached this collective, as every other rank "
            "did (stopped, stuck before the call, or cut off from the "
            "network) after %.2f s",
            desc, comm->rank, a.names, (double) (now - r->start_ns) / 1e9);
    }
    return 1;
}

// Aborts with a time-out or a departed peer if an active request calls for
// it. Under the lock.
static void
housekeeping_locked(shoal_comm *comm, int64_t now)
{
    char           desc[256];
    shoal_request *r;

    for (r = comm->engine.active.head; r != NULL; r = r->anext) {
        if (now > r->deadline && name_absent_locked(comm, r, now)) {
            return;
        }
        if (now > r->deadline && comm->tp->unreachable != NULL
            && !net_deadline_passed(comm, r, now)) {
            return;
        }
        if (now > r->deadline) {
            // "Timed out waiting" is the wording torch's and torchft's
            // tests look for (gloo's); the precise cause follows it.
            char        waiting[192] = "for it to complete";
            const char *addr         = r->blocked_on >= 0
                        ? comm->tp->peer_address(comm, r->blocked_on)
                        : "";
            if (addr[0] != '\0') {
                snprintf(waiting, sizeof(waiting), "for rank %d (host %s, %s)",
                    r->blocked_on, comm->peers[r->blocked_on].host, addr);
            } else if (r->blocked_on >= 0) {
                snprintf(
                    waiting, sizeof(waiting), "for rank %d", r->blocked_on);
            }
            // The time it was given, not when this pass noticed: a busy
            // machine may notice late, and the deadline is what passed.
            shi_req_describe(r, desc, sizeof(desc));
            shi_comm_abort(comm, SHOAL_ETIMEDOUT,
                "%s on rank %d: Timed out waiting %s after %.2f s", desc,
                comm->rank, waiting,
                (double) (r->deadline - r->start_ns) / 1e9);
            return;
        }
    }
    // A peer that left may have published what we wait for just before its
    // goodbye (its writes precede it): look once more before giving up.
    if (waits_for_departed(comm) == NULL) {
        return;
    }
    step_locked(comm);
    if ((r = waits_for_departed(comm)) != NULL && r->blocked_on < 0) {
        char dead[128];
        shi_req_describe(r, desc, sizeof(desc));
        name_dead_peers(comm, dead, sizeof(dead));
        shi_comm_abort(comm, SHOAL_EPEER,
            "%s on rank %d can never complete: Connection closed by peer: "
            "every other rank destroyed its communicator or died before "
            "sending a matching message%s",
            desc, comm->rank, dead);
    } else if (r != NULL) {
        // "Connection closed by peer" (gloo's wording, which torch's and
        // torchft's tests look for), then the precise cause.
        int p = r->blocked_on;
        shi_req_describe(r, desc, sizeof(desc));
        shi_comm_abort(comm, SHOAL_EPEER,
            "%s on rank %d: Connection closed by peer: it needs rank %d (pid "
            "%d), which %s",
            desc, comm->rank, p, comm->peers[p].pid,
            atomic_load(&comm->peers[p].state) == SHI_PEER_LEFT
                ? "destroyed its communicator"
                : "died");
    }
}

static int
is_done(shoal_comm *comm, shoal_request *req)
{
    if (req != NULL) {
        return atomic_load_explicit(&req->status, memory_order_acquire)
            != SHOAL_INPROGRESS;
    }
    return comm->engine.active.head == NULL;
}

// Whether a driver is finished: `req` done (req NULL: nothing active), or,
// for the progress thread (`app` 0), an application thread took over or
// the engine stops. Under the lock.
static int
drive_over(shoal_comm *comm, shoal_request *req, int app)
{
    if (!app) {
        return shi_park_app_driving(comm) || comm->engine.shutdown
            || (is_done(comm, req) && comm->engine.listening == 0);
    }
    return is_done(comm, req);
}

// How long a sleep may last: until the deadline, and at most until the
// next housekeeping. Under the lock.
static int64_t
sleep_ns(shoal_comm *comm, int64_t deadline)
{
    // A host-aware stage runs on other communicators, whose progress does
    // not wake our epoll: look again at least every millisecond.
    int64_t cap = comm->hier_sub != NULL ? 1000000 : ENGINE_HOUSEKEEPING_NS;
    int64_t wait_ns = deadline - shi_now_ns();

    return wait_ns > cap ? cap : wait_ns;
}

// An application thread starts driving: the progress thread, seeing it
// counted, keeps off the lock (shi_park_try_lock). Under the lock.
static void
app_driver_enters(shoal_comm *comm)
{
    atomic_fetch_add_explicit(
        &comm->engine.app_drivers, 1, memory_order_relaxed);
}

// Takes the lock to drive: an application thread waits for it; the
// progress thread takes it only while no application thread drives, and
// returns 0 without it otherwise.
static int
driver_lock(shoal_comm *comm, int app)
{
    let_issuers_in(comm);
    if (app) {
        pthread_mutex_lock(&comm->lock);
        return 1;
    }
    return shi_park_try_lock(comm);
}

// Sleeps unless something can move: the transport's sleep in three calls
// around the last look (see transport.h for when each comes). Returns 1
// if it made progress instead of sleeping.
static int
sleep_until_woken(
    shoal_comm *comm, shoal_request *req, int64_t deadline, int app)
{
    const struct shi_transport_ops *tp    = comm->tp;
    uint32_t                        token = 0;
    int                             armed = 0, progressed, sleep;
    int64_t                         wait_ns, look_by;

    if (tp->arm_before_look) {
        token = tp->sleep_arm(comm);
        armed = 1;
    }
    if (!driver_lock(comm, app)) {
        if (armed) { // an application thread drives: drive returns
            tp->sleep_disarm(comm);
        }
        return 0;
    }
    progressed = drive_pass(comm, app, app ? 0 : shi_now_ns(), &look_by);
    wait_ns    = sleep_ns(comm, shi_earliest(look_by, deadline));
    sleep      = !progressed && !drive_over(comm, req, app) && wait_ns > 0;
    if (sleep && !armed) {
        token = tp->sleep_arm(comm);
        armed = 1;
    }
    pthread_mutex_unlock(&comm->lock);
    if (sleep) {
        tp->sleep_wait(comm, token, wait_ns);
    }
    if (armed) {
        tp->sleep_disarm(comm);
    }
    return progressed;
}

// How often a waiter that shares its CPU with a peer may ask to move. A
// move can be undone by the next wake-up (the scheduler's wake-affine
// placement), so it is asked again soon: with 10 ms between asks, 2 to 4
// of every 20 short runs (2,000 8-byte all-reduces, about 5 ms) stayed on
// one CPU at 2.3 us a call instead of 0.5; with 1 ms, none of 60. An ask
// costs two affinity calls.
#define MOVE_EVERY_NS (1000000LL)

// A waiter on its peer's CPU moves to a CPU no peer uses. The scheduler's
// wake-affine placement sometimes leaves both ranks on one CPU, where
// every exchange then costs two context switches: on an idle machine a
// 4 KiB exchange took 5-9 us instead of 1.6 for a whole run, and beside
// busy processes an 8-byte all-reduce took 4-6 us a call against 0.36-0.46
// with the ranks apart, though one of them then shares its CPU with the
// busy work (ranks pinned, one busy process; beside two, 7-13 us medians
// and 4 ms p90s shared against 0.4-1.0 us apart): a rank that sleeps
// while it waits is run at once when woken, ahead of a task that never
// sleeps. The exception is work where one rank runs at a time, such as a
// long stream of blocking ping-pongs: there one CPU serves both ranks, and
// apart the rank beside the busy work gets half of its CPU (16-64 KiB half
// round trips, one busy process: 3.7-8.7 us together, 23-78 apart, in the
// runs that measured this choice). Collectives, where ranks work at once,
// gain far more. Returns 1 if moved.
static int
move_off_peers_cpu(shoal_comm *comm, const cpu_set_t *peers, int64_t now)
{
    int64_t last
        = atomic_load_explicit(&comm->engine.moved_ns, memory_order_relaxed);

    if (comm->size > comm->engine.cpus || now - last < MOVE_EVERY_NS) {
        return 0;
    }
    atomic_store_explicit(&comm->engine.moved_ns, now, memory_order_relaxed);
    return shi_move_off_cpu(peers) >= 0;
}

// How long a wait that begins now spins. The progress thread shares the
// cores with the application: it never spins. Neither does a thread whose
// peer last waited on this very CPU (unless it could move away): the peer
// cannot run (and bring what we wait for) until this thread lets go of the
// CPU, which a spin of 50 us turned into 100 us per call when a busy
// process had left both ranks on one CPU.
// Of ranks that share a CPU only those with a peer below them there move:
// two that both moved would meet again on the same free CPU.
static int64_t
wait_spin_ns(shoal_comm *comm, int app, int64_t now, int *peer_here)
{
    cpu_set_t peers;
    int       lower = 0;

    *peer_here = 0;
    if (!app) {
        return 0;
    }
    if (comm->tp->peers_on_my_cpu != NULL
        && comm->tp->peers_on_my_cpu(comm, &peers, &lower)
        && !(lower > 0 && move_off_peers_cpu(comm, &peers, now))) {
        *peer_here = 1;
        return 0;
    }
    return comm->engine.spin_ns;
}

// Whether a waiter that spun in vain should yield before it sleeps. A
// yield lets a task of this CPU run: a peer that shares it, or nobody on
// an idle machine (the yield returns at once, a cheap look again). Where
// the peers run on other CPUs and the machine has more runnable tasks than
// CPUs, it only hands this CPU to unrelated work for that work's whole
// slice (about 4 ms under CFS), which the peer did not need; once two
// ranks miss each other that way they keep doing it, a slice or two per
// call. Beside two busy processes, 16 KiB all_reduce with a rank per CPU
// took 7.8 ms per call with the yield and 12-14 us without; unpinned, runs
// with 3.8 ms medians or p90s at 16-64 KiB now stay at 5-19 us medians.
// Such a waiter sleeps instead: the peer's ring wakes it, and a task that
// slept runs at once when woken.
static int
yield_helps(shoal_comm *comm, int peer_here)
{
    int runnable;

    if (peer_here) {
        return 1;
    }
    runnable = shi_runnable_tasks();
    return runnable < 0 || runnable <= comm->engine.cpus;
}

// An application thread stops driving. The last one hands over to the
// progress thread where there is work for it: requests still active, or
// a listener (a window's target, a queue channel) that must go on
// applying what peers send while the application computes. Under the
// lock.
static void
app_driver_leaves(shoal_comm *comm)
{
    if (atomic_fetch_sub_explicit(
            &comm->engine.app_drivers, 1, memory_order_relaxed)
            == 1
        && (comm->engine.listening > 0
            || (comm->engine.active.head != NULL
                && !shi_park_looks_soon(comm)))) {
        shi_park_kick(comm, SHI_KICK_WORK);
    }
}

// Ends a drive: an application thread stops driving in the same critical
// section as its last pass. Releases the lock.
static void
drive_ends_locked(shoal_comm *comm, int app)
{
    if (app) {
        app_driver_leaves(comm);
    }
    pthread_mutex_unlock(&comm->lock);
}

// Drives until `req` completes (req NULL: until nothing is active), the
// caller's `deadline` passes, or, for the progress thread (`app` 0), until
// an application thread takes over. An application thread also returns
// when `until` passes, leaving req running (a caller that looks up between
// waits, such as a Python thread checking for Ctrl-C).
// Called under the lock and returns without it; an application thread
// comes counted in app_drivers and leaves uncounted. `now` is the
// caller's recent reading of the clock: the first looks need no reading
// of their own (a reading costs as much as a small call's whole exchange
// of flags on some virtual machines).
static void
drive(shoal_comm *comm, shoal_request *req, int64_t deadline, int app,
    int64_t until, int64_t now)
{
    int64_t idle_since = 0;
    int     yields     = 0;
    char    desc[256];
    // The progress thread shares the cores with the application: it never
    // spins, and yields only briefly before sleeping, so that it costs an
    // application thread no CPU time it could use.
    int64_t spin_ns    = 0;
    int     yield_iter = app ? comm->engine.yield_iter : 2;
    int64_t yield_ns   = app ? comm->engine.yield_ns : 0;
    int     peer_here  = 0; // a peer last waited on this CPU
    int     may_yield  = -1; // decided when the spin ends (-1: not yet)
    int64_t look_by; // a long copy left: look again by then

    for (unsigned iter = 1;; iter++) {
        if (iter > 1) {
            if (!driver_lock(comm, app)) {
                return; // an application thread drives (drive_over)
            }
        }
        int progressed = drive_pass(comm, app, now, &look_by);
        if (drive_over(comm, req, app)) {
            drive_ends_locked(comm, app);
            return;
        }
        // Reading the clock costs as much as a look at the peers: while
        // spinning, once in 8 looks is precise enough for the spin window
        // and the deadlines (a window restarted by progress may start a
        // few looks early).
        if (yields > 0 || (iter & 7) == 0) {
            now = shi_now_ns();
        }
        if (idle_since == 0) {
            idle_since = now;
            spin_ns    = wait_spin_ns(comm, app, now, &peer_here);
        }
        if ((iter & 255) == 0 || yields >= yield_iter) {
            housekeeping_locked(comm, now);
        }
        if (app && now > until) {
            drive_ends_locked(comm, app);
            return;
        }
        if (req != NULL && now > deadline && deadline < req->deadline) {
            shi_req_describe(req, desc, sizeof(desc));
            shi_comm_abort(comm, SHOAL_ETIMEDOUT,
                "%s: the wait's deadline passed after %.2f s on "
                "rank %d",
                desc, (double) (now - req->start_ns) / 1e9, comm->rank);
        }
        pthread_mutex_unlock(&comm->lock);
        if (!progressed && may_yield < 0 && now - idle_since >= spin_ns) {
            may_yield = !app || yield_helps(comm, peer_here);
        }
        if (progressed) {
            idle_since = now;
            yields     = 0;
            may_yield  = -1;
            spin_ns    = wait_spin_ns(comm, app, now, &peer_here);
        } else if (now - idle_since < spin_ns) {
            shi_cpu_relax();
        } else if (may_yield
            && (yields < yield_iter || now - idle_since < yield_ns)) {
            sched_yield();
            yields++;
        } else if (sleep_until_woken(comm, req,
                       shi_earliest(until, shi_earliest(deadline, look_by)),
                       app)
            == 0) {
            idle_since = now = shi_now_ns();
        }
    }
}

static void
end_deferring(struct shi_engine *e)
{
    e->defer_wake    = 0;
    e->prompt_streak = 0;
}

// A wait on a non-blocking request still in progress: counts toward
// deferred wakes if it came within PROMPT_NS of the issue, else ends them.
// Under the lock.
static void
count_wait_locked(shoal_comm *comm, shoal_request *req, int64_t now)
{
    struct shi_engine *e = &comm->engine;

    if (!req->heap || req->caller_waits || req->wait_counted) {
        return;
    }
    req->wait_counted = 1;
    if (now - req->start_ns > PROMPT_NS) {
        end_deferring(e);
    } else if (e->prompt_streak < PROMPT_STREAK
        && ++e->prompt_streak == PROMPT_STREAK) {
        e->defer_wake = 1;
        // The progress thread's idle wait becomes a timed one.
        shi_park_kick(comm, SHI_KICK_WORK);
    }
}

// A non-blocking request issued and still in progress: the progress thread
// takes it on, now or (deferred) at its next look. Under the lock.
static void
wake_for_async(shoal_comm *comm, shoal_request *req)
{
    req->went_async            = 1;
    comm->engine.last_async_ns = req->start_ns;
    if (shi_park_looks_soon(comm)) {
        return;
    }
    // The progress thread may sleep on the doorbell or on the cv.
    shi_ring(comm, comm->rank, 0);
    shi_park_kick(comm, SHI_KICK_WORK);
}

// The progress thread's wait while nothing is left to it: until woken, or
// (deferred wakes) at most `ns`. Under the lock.
static void
idle_wait_locked(shoal_comm *comm, int64_t ns)
{
    struct shi_engine *e = &comm->engine;

    if (e->defer_wake && shi_now_ns() - e->last_async_ns > DEFER_QUIET_NS) {
        end_deferring(e);
    }
    pthread_mutex_unlock(&comm->lock);
    shi_park_sleep_then_lock(comm, ns);
}

// With deferred wakes, how long the oldest request may still be left to
// its issuer (0: the progress thread drives now; a longer wait ends the
// deferral). Under the lock.
static int64_t
left_to_issuer_locked(shoal_comm *comm)
{
    struct shi_engine *e = &comm->engine;
    int64_t            age;

    if (!e->defer_wake || e->listening > 0) {
        return 0;
    }
    age = shi_now_ns() - e->active.head->start_ns;
    if (age < DEFER_CHECK_NS) {
        return DEFER_CHECK_NS - age;
    }
    end_deferring(e);
    return 0;
}

static int
fail_text_status(shoal_comm *comm, shoal_request *req, int st)
{
    char desc[256];

    shi_req_describe(req, desc, sizeof(desc));
    pthread_mutex_lock(&comm->err_lock);
    shi_error(
        st, "%s failed on rank %d: %s", desc, comm->rank, comm->fail_text);
    pthread_mutex_unlock(&comm->err_lock);
    return shi_comm_error(comm, st);
}

// Drives the engine from an application thread until req is done, then
// hands over to the progress thread. Called under the lock (released on
// return) by a thread counted in app_drivers.
static int
drive_as_app(shoal_comm *comm, shoal_request *req, int64_t deadline,
    int64_t until, int64_t now)
{
    drive(comm, req, deadline, 1, until, now);
    return atomic_load_explicit(&req->status, memory_order_acquire);
}

int
shi_engine_wait_until(shoal_request *req, int64_t deadline, int64_t until)
{
    shoal_comm *comm = req->comm;
    int         st;

    if (comm == NULL) { // its communicator was destroyed: it is final
        return shi_req_detached_status(req);
    }
    if ((st = shi_fork_check(comm, "wait")) != SHOAL_OK) {
        return st;
    }
    st = atomic_load_explicit(&req->status, memory_order_acquire);

    if (st == SHOAL_INPROGRESS) {
        int64_t now = shi_now_ns();
        pthread_mutex_lock(&comm->lock);
        count_wait_locked(comm, req, now);
        app_driver_enters(comm);
        st = drive_as_app(comm, req, deadline, until, now);
    } else if (req->went_async
        && !atomic_load_explicit(
            &comm->engine.defer_wake, memory_order_relaxed)) {
        // Done before its wait (the peer's data came while this rank
        // issued its next request), but perhaps waited for promptly all
        // the same: uncounted, deferred wakes could not start here, and
        // every exchange would wake the progress thread, which then takes
        // the peer's CPU from it. Once they are on, such a wait is not
        // counted (it costs a lock): a late one would end them, but what
        // finished on its own never needed the progress thread.
        int64_t now = shi_now_ns();
        pthread_mutex_lock(&comm->lock);
        count_wait_locked(comm, req, now);
        pthread_mutex_unlock(&comm->lock);
    }
    return st < 0 ? fail_text_status(comm, req, st) : st;
}

int
shi_engine_wait(shoal_request *req, int64_t deadline)
{
    return shi_engine_wait_until(req, deadline, SHI_NO_DEADLINE);
}

// What every submission stamps on its request before taking the lock.
static void
stamp_start(shoal_comm *comm, shoal_request *req)
{
    req->comm     = comm;
    req->start_ns = shi_now_ns();
    if (req->timeout_ms <= 0) {
        req->timeout_ms = comm->timeout_ms;
    }
    req->deadline   = shi_deadline_after(req->start_ns, req->timeout_ms);
    req->blocked_on = -1;
}

// A send or named receive that the transport completes as it is issued
// (transport.h: p2p_now) is final at once and never enters a queue. A
// peer's abort not adopted yet is left to the next pass, as if it had
// come a moment later: looking for one here would cost every receive
// whose message is not there yet, which is then posted and looks again.
// Under the lock.
static int
p2p_now_locked(shoal_comm *comm, shoal_request *req)
{
    if ((req->kind != SHI_OP_SEND && req->kind != SHI_OP_RECV)
        || comm->tp->p2p_now == NULL || !comm->tp->p2p_now(comm, req)) {
        return 0;
    }
    atomic_store_explicit(&req->status, SHOAL_OK, memory_order_relaxed);
    if (comm->fr != NULL) {
        shi_fr_record(comm, req); // its start and, being final, its end
    }
    trace_end(comm, req, SHOAL_OK);
    return 1;
}

// A request done as it was issued needs nothing of the communicator: it
// starts detached (request.h), so freeing it takes no lock and it may
// outlive the communicator like any detached one. An untracked one has
// nobody to free it later: it goes now.
static void
hand_out_done(shoal_request *req)
{
    req->comm = NULL;
    if (req->untracked) {
        shi_req_release(req); // a send or receive: nothing hangs from it
    }
}

int
shi_engine_submit(shoal_comm *comm, shoal_request *req, int blocking)
{
    int st, posted_moved = 0;

    if (shi_forked(comm)) { // the operation's name only for the message
        return shi_fork_check(comm, shi_op_kind_name(req->kind));
    }
    stamp_start(comm, req);
    atomic_store_explicit(
        &req->status, SHOAL_INPROGRESS, memory_order_relaxed);
    lock_to_issue(comm);
    st = atomic_load(&comm->failed);
    if (st != 0) {
        flush_abort_locked(comm); // an abort that no pass has seen yet
        pthread_mutex_unlock(&comm->lock);
        return shi_comm_failed_error(comm, "");
    }
    if (!blocking) {
        comm->engine.last_issue_ns = req->start_ns;
    }
    if (p2p_now_locked(comm, req)) {
        pthread_mutex_unlock(&comm->lock);
        hand_out_done(req);
        return SHOAL_OK;
    }
    req->in_engine                       = 1;
    shi_tp_comm(comm)->defer_long_copies = !blocking;
    queue_push_active(&comm->engine.active, req);
    if (req->step != NULL) {
        shi_queue_push(&comm->engine.stepped, req);
    } else if (req->kind == SHI_OP_SEND || req->kind == SHI_OP_RECV) {
        posted_moved = comm->tp->p2p_post(comm, req);
    } else {
        req->seq = ++comm->engine.coll_seq;
        shi_queue_push(&comm->engine.colls, req);
    }
    if (comm->fr != NULL && req->step == NULL
        && !(req->kind == SHI_OP_RECV && req->peer == SHOAL_ANY_SOURCE)) {
        shi_fr_record(comm, req); // not any-source receives, nor windows
    }
    if (!posted_moved) {
        step_locked(comm); // long copies left as defer_long_copies says
    } else {
        failed_locked(comm); // what the pass would have found first
    }
    shi_tp_comm(comm)->defer_long_copies = 0;
    st = atomic_load_explicit(&req->status, memory_order_acquire);
    if (st == SHOAL_INPROGRESS && blocking) {
        // The caller drives it from here (the same critical section
        // announces it, saving a lock round trip on the fast path).
        app_driver_enters(comm);
        st = drive_as_app(
            comm, req, req->deadline, SHI_NO_DEADLINE, req->start_ns);
    } else {
        if (st == SHOAL_INPROGRESS && !req->caller_waits) {
            wake_for_async(comm, req);
        }
        if (req->heap && st >= 0) {
            shi_req_own_locked(comm, req); // handed out: see request.h
        }
        pthread_mutex_unlock(&comm->lock);
    }
    return st < 0 ? fail_text_status(comm, req, st) : st;
}

void
shi_engine_fail_pending(shoal_comm *comm)
{
    pthread_mutex_lock(&comm->lock);
    if (comm->engine.active.head != NULL) {
        shi_comm_abort(comm, SHOAL_EABORTED,
            "rank %d destroyed the communicator with operations in flight",
            comm->rank);
        step_locked(comm); // fails every active request
    }
    pthread_mutex_unlock(&comm->lock);
}

int
shi_engine_sync(shoal_comm *comm, int64_t deadline)
{
    shoal_request *last;
    int            st;

    if ((st = shi_fork_check(comm, "sync")) != SHOAL_OK) {
        return st;
    }
    pthread_mutex_lock(&comm->lock);
    last = comm->engine.active.tail;
    app_driver_enters(comm);
    if (last != NULL) { // the clock only when there is something to drive
        drive(comm, NULL, deadline, 1, SHI_NO_DEADLINE, shi_now_ns());
    } else {
        drive_ends_locked(comm, 1);
    }
    st = atomic_load(&comm->failed);
    if (st != 0) {
        pthread_mutex_lock(&comm->err_lock);
        shi_error(st, "%s", comm->fail_text);
        pthread_mutex_unlock(&comm->err_lock);
        return shi_comm_error(comm, st);
    }
    return SHOAL_OK;
}

int
shi_engine_pending(shoal_comm *comm)
{
    int pending;

    pthread_mutex_lock(&comm->lock);
    pending = comm->engine.active.head != NULL || comm->untracked_failed != 0;
    pthread_mutex_unlock(&comm->lock);
    return pending;
}

void
shi_engine_check_peers(shoal_comm *comm)
{
    if (!comm->tp->deaths_need_progress || atomic_load(&comm->failed)) {
        return; // deaths are seen without us (the shm watcher)
    }
    pthread_mutex_lock(&comm->lock);
    wake_if_moved(comm, comm->tp->progress(comm));
    if (atomic_load(&comm->failed)) {
        flush_abort_locked(comm);
    }
    pthread_mutex_unlock(&comm->lock);
}

void
shi_engine_flush_abort(shoal_comm *comm)
{
    flush_abort_locked(comm);
}

void
shi_engine_after_abort(shoal_comm *comm)
{
    if (comm->tp == NULL || pthread_mutex_trylock(&comm->lock) != 0) {
        return; // the holder's next pass sees the failure (or, for the
                // progress thread, the top of its loop)
    }
    step_locked(comm); // tells the peers, fails what is in flight
    pthread_mutex_unlock(&comm->lock);
}

static void *
progress_main(void *arg)
{
    shoal_comm *comm = arg;

    pthread_mutex_lock(&comm->lock);
    while (!comm->engine.shutdown) {
        if (atomic_load(&comm->failed) && !comm->engine.abort_flushed) {
            step_locked(comm); // an abort from outside: tell the peers
            continue;
        }
        if ((comm->engine.active.head == NULL && comm->engine.listening == 0)
            || shi_park_app_driving(comm)) {
            idle_wait_locked(comm, DEFER_CHECK_NS);
            continue;
        }
        int64_t left = left_to_issuer_locked(comm);
        if (left > 0) {
            idle_wait_locked(comm, left);
            continue;
        }
        pthread_mutex_unlock(&comm->lock);
        // A caller that just posted non-blocking work often waits for it
        // next: let it get there before competing for the lock.
        sched_yield();
        shi_park_lock(comm, DEFER_CHECK_NS);
        drive(comm, NULL, SHI_NO_DEADLINE, 0, SHI_NO_DEADLINE, shi_now_ns());
        shi_park_lock(comm, DEFER_CHECK_NS);
    }
    pthread_mutex_unlock(&comm->lock);
    return NULL;
}

int
shi_engine_start(shoal_comm *comm)
{
    int err = pthread_create(
        &comm->engine.progress_thread, NULL, progress_main, comm);

    if (err != 0) {
        return shi_error(
            SHOAL_ESYS, "cannot start the progress thread: %s", strerror(err));
    }
    comm->engine.progress_started = 1;
    return SHOAL_OK;
}

void
shi_engine_stop(shoal_comm *comm)
{
    if (!comm->engine.progress_started) {
        return;
    }
    pthread_mutex_lock(&comm->lock);
    comm->engine.shutdown = 1;
    shi_park_kick(comm, SHI_KICK_STOP);
    pthread_mutex_unlock(&comm->lock);
    shi_ring(comm, comm->rank, 1);
    pthread_join(comm->engine.progress_thread, NULL);
    comm->engine.progress_started = 0;
}

void
shi_engine_listen(shoal_comm *comm, int on)
{
    pthread_mutex_lock(&comm->lock);
    comm->engine.listening += on ? 1 : -1;
    shi_park_kick(comm, SHI_KICK_WORK);
    pthread_mutex_unlock(&comm->lock);
}

// Spinning only pays when every rank has a core of its own (counted over
// the host's ranks together: shi_engine_host_cpus). Then a waiter spins
// for 1 ms, then sleeps (after a few yields where the machine has a
// core to spare): a peer a little late (computing between collectives, or
// off its CPU for a moment beside other work) is met without a sleep,
// whose wake-up costs 10-50 us on a VM, and an idle communicator still
// sleeps after 1 ms. A waiter on a core shared with busy work keeps its
// fair share there and no more: the scheduler preempts it for the other
// task. Sleeping after 50 us wherever the machine had more runnable tasks
// than cores cost more than it gave: beside 1 or 2 busy processes, pinned
// or not, 2 ranks, medians of 300 calls in us (Open MPI 3.7-4.0, 8.1-8.3)
//   16 KiB reduce  8.2-19.1 -> 3.0-3.2
//   64 KiB reduce 15.7-27.7 -> 8.8-10.7
// and no cell of that load matrix (16 B-1 MiB) got slower. With more ranks
// than cores, waiting ranks yield quickly so that the others can run. What a
// waiter sees changes this per wait (wait_spin_ns): no spin while a peer waits
// on the same CPU.
static void
choose_wait_policy(shoal_comm *comm, int ranks_here, int cpus)
{
    long long spin_us, yield_us;

    comm->engine.cpus       = cpus;
    int oversubscribed      = ranks_here > cpus;
    comm->engine.spin_ns    = oversubscribed ? 2000 : 1000000;
    comm->engine.yield_ns   = oversubscribed ? 0 : 1000000;
    comm->engine.yield_iter = oversubscribed ? 50 : 20;
    if (shi_env_int("SHOAL_SPIN_US", -1, &spin_us) == SHOAL_OK
        && spin_us >= 0) {
        comm->engine.spin_ns
            = (int) (spin_us > 1000000 ? 1000000000 : spin_us * 1000);
    }
    // SHOAL_YIELD_US=0: sleep right after the spin.
    if (shi_env_int("SHOAL_YIELD_US", -1, &yield_us) == SHOAL_OK
        && yield_us >= 0) {
        comm->engine.yield_ns
            = yield_us > 1000000 ? 1000000000 : yield_us * 1000;
        comm->engine.yield_iter = yield_us == 0 ? 0 : comm->engine.yield_iter;
    }
}

void
shi_engine_init(shoal_comm *comm)
{
    cpu_set_t set;
    int       cpus = 1;

    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        cpus = CPU_COUNT(&set);
    }
    shi_park_init(comm);
    choose_wait_policy(comm, comm->size, cpus);
}

void
shi_engine_host_cpus(shoal_comm *comm, int ranks_here, int cpus)
{
    choose_wait_policy(comm, ranks_here, cpus);
}

void
shi_engine_destroy(shoal_comm *comm)
{
    shi_park_destroy(comm);
}
