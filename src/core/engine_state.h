// The progress engine's state of one communicator: its queues of
// requests, its progress thread and its wait policy. It lives inside
// struct shoal_comm (comm->engine) but belongs to engine.c: only engine.c
// reads or writes these fields; the other layers ask engine.h's
// functions.
#ifndef SHI_ENGINE_STATE_H
#define SHI_ENGINE_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/request.h"

struct shi_engine {
    // Under the communicator's lock.
    pthread_cond_t cv;
    shi_req_queue  active; // every incomplete request, issue order
    shi_req_queue  colls; // incomplete collectives, issue order
    shi_req_queue  stepped; // incomplete requests with their own step
    // Layers that need the transport read while no request is active (a
    // window over a message transport: peers' puts arrive unannounced):
    // the progress thread keeps polling while this is above 0.
    int      listening;
    int      app_drivers; // application threads driving now
    int      shutdown;
    int      abort_flushed; // the transport told the peers of a failure
    uint32_t coll_seq; // collectives issued
    // The progress thread.
    pthread_t progress_thread;
    int       progress_started;
    // The wait policy (engine.c): busy-wait budget before yielding, then
    // sched_yield rounds for at least yield_ns since idle, then sleep.
    int     spin_ns;
    int     yield_iter;
    int64_t yield_ns;
    int     cpus; // CPUs this process may run on
    // When a waiter sharing its CPU with a peer last asked to be moved
    // (wait_spin_ns); one asks at most every MOVE_EVERY_NS.
    _Atomic int64_t moved_ns;
    // Deferred wakes (engine.c, PROMPT_NS): non-blocking requests waited
    // for at once, in a row; whether their issue skips waking the
    // progress thread; whether it sits in its timed idle wait (it looks on
    // its own then); the last such issue.
    int     prompt_streak;
    int     defer_wake;
    int     progress_idle;
    int64_t last_async_ns;
};

#endif
