// The progress engine: every request of a communicator advances through
// one step function, driven either by a thread waiting for a request (the
// fast path: no hand-off) or by the communicator's progress thread when no
// caller waits, so non-blocking work moves without the caller polling.
//
// Waiting spins briefly, then yields, then sleeps on this rank's doorbell
// futex in shared memory; peers ring it only when someone sleeps, so the
// fast path makes no system call and an idle communicator uses no CPU.
// Over TCP a thread sleeps in the sockets' epoll set instead, and a thread
// that moves anything while another one sleeps there wakes it (through
// the set's eventfd): it may have taken the data the sleeper waited for.
#ifndef SHI_ENGINE_H
#define SHI_ENGINE_H

#include <stdint.h>

#include "core/comm.h"

// Sets up and releases comm's engine (comm->engine, engine_state.h): its
// wait policy from the CPUs this process may use, the ranks and
// SHOAL_SPIN_US / SHOAL_YIELD_US.
void shi_engine_init(shoal_comm *comm);
// What the ranks of this host may run on together, once known (the union
// of their CPU masks; a rank pinned to one core sees only that core):
// chooses the wait policy again. Before the engine starts.
void shi_engine_host_cpus(shoal_comm *comm, int ranks_here, int cpus);
void shi_engine_destroy(shoal_comm *comm);

// The collective at the head of comm's queue (the drivers run it), or NULL.
static inline shoal_request *
shi_engine_head(const shoal_comm *comm)
{
    return comm->engine.colls.head;
}

// Whether comm's progress thread runs.
static inline int
shi_engine_running(const shoal_comm *comm)
{
    return comm->engine.progress_started;
}

// How long a waiter busy-waits before yielding (the wait policy).
static inline int
shi_engine_spin_ns(const shoal_comm *comm)
{
    return comm->engine.spin_ns;
}

// Starts and stops the progress thread.
int  shi_engine_start(shoal_comm *comm);
void shi_engine_stop(shoal_comm *comm);
// Over TCP, an idle communicator reads nothing: this looks at its sockets
// once (a closed one aborts it), for waits outside the engine (a split).
void shi_engine_check_peers(shoal_comm *comm);

// Hands `req` (filled in by the operation) to the engine and tries to
// complete it at once. Returns SHOAL_OK if it completed, SHOAL_INPROGRESS if
// it is pending, or an error (the request was not accepted; the message is
// recorded on the comm). `blocking`: the call drives the engine until req
// is done (never SHOAL_INPROGRESS), and the progress thread is not woken.
// A send or receive the transport completes as it is issued (transport.h:
// p2p_now) returns SHOAL_OK detached from the communicator (request.h);
// an untracked one is freed then.
int shi_engine_submit(shoal_comm *comm, shoal_request *req, int blocking);

// Drives the engine until `req` completes or `deadline` passes (then the
// communicator is aborted with SHOAL_ETIMEDOUT). Returns req's status, with
// the message recorded on the comm and the thread.
int shi_engine_wait(shoal_request *req, int64_t deadline);
// As shi_engine_wait, but returns SHOAL_INPROGRESS, leaving req running,
// once `until` passes first.
int shi_engine_wait_until(shoal_request *req, int64_t deadline, int64_t until);

// Fails every request still in flight (aborting the communicator if it
// has not failed yet): for destruction, after the progress thread stopped.
void shi_engine_fail_pending(shoal_comm *comm);

// Waits for every request of the comm; returns the first error or OK.
int shi_engine_sync(shoal_comm *comm, int64_t deadline);

// Asked by a step that works in pieces (a direct algorithm's reduction)
// between two of them: 1 when it should pause and go on at a later step,
// because this pass runs for a thread that must not stall (see
// defer_long_copies in transport/view.h; the pass is then told that work
// was left) or another thread waits for the lock to issue. Under the lock.
int shi_engine_pause_long_work(shoal_comm *comm);

// 1 while comm has an operation in flight, or an untracked operation's
// failure not reported yet: what shoal_comm_sync reports on.
int shi_engine_pending(shoal_comm *comm);

// Completes `req` with `status` (under the comm lock): unlinks it from every
// queue, then publishes the status.
void shi_engine_complete(shoal_comm *comm, shoal_request *req, int status);

// Keeps the progress thread reading the transport while no request is
// active (`on` 1), or stops one such need (`on` 0): for layers whose peers
// send unannounced (windows over a message transport). Counted.
void shi_engine_listen(shoal_comm *comm, int on);

// After a failure (under the lock): lets the transport send what the
// abort left to send and the collective layer let go of its work.
void shi_engine_flush_abort(shoal_comm *comm);

// At the deadline of collective `req` over a message transport
// (absent.c): the ranks that did not say, in the store, that they reached
// it too ("rank 1 (pid 42 on host node3)" in names, counted in absent), or the
// first that said it called another collective there (other, its call in
// other_call; -1 if none). Returns 1 if either was found (0: every rank
// reached the same call, or it cannot tell). Blocks up to 100 ms.
struct shi_absent {
    int  absent, other;
    char names[512];
    char other_call[256];
};
int shi_absent_ranks(
    shoal_comm *comm, const shoal_request *req, struct shi_absent *out);

// After an abort from outside the engine (the application's, a
// watchdog's): tells the peers and fails the requests in flight now if
// the lock is free, else leaves it to its holder's next pass. Never
// blocks. Not under the lock.
void shi_engine_after_abort(shoal_comm *comm);

#endif
