// The progress engine's state of one communicator: its queues of
// requests, its progress thread and its wait policy. It lives inside
// struct shoal_comm (comm->engine) but belongs to engine.c and its helper
// engine_park.c: only they read or write these fields; the other layers
// ask engine.h's functions.
#ifndef SHI_ENGINE_STATE_H
#define SHI_ENGINE_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/request.h"

struct shi_engine {
    // Where the progress thread parks (engine_park.c): a lock of its own,
    // so that a woken progress thread never queues for the communicator's
    // lock while an application thread drives.
    pthread_mutex_t idle_lock;
    pthread_cond_t  cv; // with idle_lock
    int             kicked; // under idle_lock: enum shi_kick
    // Under the communicator's lock.
    shi_req_queue active; // every incomplete request, issue order
    shi_req_queue colls; // incomplete collectives, issue order
    shi_req_queue stepped; // incomplete requests with their own step
    // Layers that need the transport read while no request is active (a
    // window over a message transport: peers' puts arrive unannounced):
    // the progress thread keeps polling while this is above 0.
    int listening;
    // Application threads driving now (written under the lock; the
    // progress thread reads it without, to keep off the lock).
    _Atomic int app_drivers;
    int         shutdown;
    int         abort_flushed; // the transport told the peers of a failure
    uint32_t    coll_seq; // collectives issued
    // The progress thread.
    pthread_t progress_thread;
    int       progress_started;
    // The wait policy (engine.c): busy-wait budget before yielding, then
    // sched_yield rounds for at least yield_ns since idle, then sleep.
    int     spin_ns;
    int     yield_iter;
    int64_t yield_ns;
    int     cpus; // CPUs the ranks of this host may run on together
    // When a waiter sharing its CPU with a peer last asked to be moved
    // (wait_spin_ns); one asks at most every MOVE_EVERY_NS.
    _Atomic int64_t moved_ns;
    // Deferred wakes (engine.c, PROMPT_NS): non-blocking requests waited
    // for at once, in a row (under the lock); whether their issue skips
    // waking the progress thread (written under the lock); whether that
    // thread sleeps timed (it looks on its own then; written by it); the
    // last such issue (under the lock).
    int         prompt_streak;
    _Atomic int defer_wake;
    _Atomic int progress_timed;
    int64_t     last_async_ns;
    // Long copies (transport/view.h): when the application last issued a
    // non-blocking operation, and since when the progress thread has left
    // a long copy to it (0: none left). Under the lock.
    int64_t last_issue_ns;
    int64_t copy_left_since;
    // Threads waiting for the lock to issue an operation: a long step in
    // progress pauses between its pieces and lets them in.
    _Atomic int lock_wanted;
};

#endif
