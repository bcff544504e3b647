// Where the progress thread parks (see engine_park.h).
//
// Why a lock of its own: a thread woken from a wait on the communicator's
// lock must take that lock again, and an application thread driving a
// wait takes and drops it in a loop. Each drop woke the queued progress
// thread (a futex call for the driver), which ran on the peer's CPU only
// to find the lock taken again: two ranks exchanging 16 bytes issued
// non-blocking kept it queued for 2-4 ms at a time, their calls taking
// 14-21 us instead of 0.6. So it sleeps here, goes back to sleep when it
// wakes to find a driver, and takes the communicator's lock with trylock.
#include "core/engine_park.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "base/clock.h"
#include "platform/cpu_relax.h"

// How long the progress thread looks again at a lock held by a thread
// that does not drive (an issuing thread holds it briefly): about as long
// as this many pauses (a few us), then it waits for the lock. Not
// sched_yield between looks: where the application computes on every core
// a yield hands the CPU to that work for up to a slice, and the
// communication it overlaps with stalls (plain DDP's overhead rose from
// 22.7 to 27.6 ms a step on 2 ranks, 46 to 62 on 4).
#define PARK_LOCK_LOOKS 64

void
shi_park_kick(shoal_comm *comm, enum shi_kick why)
{
    struct shi_engine *e = &comm->engine;

    pthread_mutex_lock(&e->idle_lock);
    if (e->kicked != SHI_KICK_STOP) {
        e->kicked = why;
    }
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->idle_lock);
}

// Sleeps until kicked (while deferring, or until `ns` pass), and on while
// an application thread drives. 1 if the engine stops.
static int
park_sleep(shoal_comm *comm, int64_t ns)
{
    struct shi_engine *e  = &comm->engine;
    struct timespec    ts = shi_timespec_in_ns(CLOCK_MONOTONIC, ns);
    int                stop;

    pthread_mutex_lock(&e->idle_lock);
    for (;;) {
        int err   = 0;
        int timed = atomic_load_explicit(&e->defer_wake, memory_order_relaxed);
        atomic_store_explicit(&e->progress_timed, timed, memory_order_relaxed);
        while (e->kicked == SHI_KICK_NONE && err != ETIMEDOUT) {
            err = timed ? pthread_cond_timedwait(&e->cv, &e->idle_lock, &ts)
                        : pthread_cond_wait(&e->cv, &e->idle_lock);
        }
        if (e->kicked == SHI_KICK_STOP || !shi_park_app_driving(comm)) {
            break;
        }
        // The driver kicks again when it leaves work behind.
        e->kicked = SHI_KICK_NONE;
        if (err == ETIMEDOUT) {
            ts = shi_timespec_in_ns(CLOCK_MONOTONIC, ns);
        }
    }
    stop = e->kicked == SHI_KICK_STOP;
    if (!stop) {
        e->kicked = SHI_KICK_NONE;
    }
    atomic_store_explicit(&e->progress_timed, 0, memory_order_relaxed);
    pthread_mutex_unlock(&e->idle_lock);
    return stop;
}

int
shi_park_try_lock(shoal_comm *comm)
{
    for (int i = 0; i < PARK_LOCK_LOOKS; i++) {
        if (pthread_mutex_trylock(&comm->lock) == 0) {
            return 1;
        }
        if (shi_park_app_driving(comm)) {
            return 0;
        }
        shi_cpu_relax();
    }
    pthread_mutex_lock(&comm->lock);
    return 1;
}

void
shi_park_sleep_then_lock(shoal_comm *comm, int64_t ns)
{
    for (;;) {
        if (park_sleep(comm, ns)) {
            pthread_mutex_lock(&comm->lock); // to stop
            return;
        }
        if (shi_park_try_lock(comm)) {
            return;
        }
    }
}

void
shi_park_lock(shoal_comm *comm, int64_t ns)
{
    if (shi_park_app_driving(comm) || !shi_park_try_lock(comm)) {
        shi_park_sleep_then_lock(comm, ns);
    }
}

void
shi_park_init(shoal_comm *comm)
{
    pthread_condattr_t attr;

    // Timed sleeps (deferred wakes) count on the monotonic clock.
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&comm->engine.cv, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&comm->engine.idle_lock, NULL);
}

void
shi_park_destroy(shoal_comm *comm)
{
    pthread_cond_destroy(&comm->engine.cv);
    pthread_mutex_destroy(&comm->engine.idle_lock);
}
