// Where the progress thread parks while nothing is left to it or an
// application thread drives (engine_park.c): on a lock and condition
// variable of its own, taking the communicator's lock only when no
// application thread drives. engine.c's helper; the fields are in
// struct shi_engine (engine_state.h).
#ifndef SHI_ENGINE_PARK_H
#define SHI_ENGINE_PARK_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/comm.h"

// Why the progress thread wakes: work, or the stop (which stays set).
enum shi_kick { SHI_KICK_NONE, SHI_KICK_WORK, SHI_KICK_STOP };

// Whether an application thread drives now (read without the lock).
static inline int
shi_park_app_driving(shoal_comm *comm)
{
    return atomic_load_explicit(
               &comm->engine.app_drivers, memory_order_relaxed)
        > 0;
}

// Deferred wakes are on and the progress thread sleeps timed: it looks at
// what is left to it soon without a kick.
static inline int
shi_park_looks_soon(shoal_comm *comm)
{
    return atomic_load_explicit(&comm->engine.defer_wake, memory_order_relaxed)
        && atomic_load_explicit(
            &comm->engine.progress_timed, memory_order_relaxed);
}

// Wakes the progress thread. Called under the communicator's lock (lock
// order: the communicator's, then the park's).
void shi_park_kick(shoal_comm *comm, enum shi_kick why);

// The progress thread takes the communicator's lock unless an application
// thread drives: 1 if taken, 0 if not (it sleeps again).
int shi_park_try_lock(shoal_comm *comm);

// The progress thread sleeps until kicked (while deferring, or until `ns`
// pass), and on while an application thread drives; then it takes the
// communicator's lock.
void shi_park_sleep_then_lock(shoal_comm *comm, int64_t ns);

// The progress thread takes the communicator's lock, sleeping first (as
// shi_park_sleep_then_lock) while an application thread drives.
void shi_park_lock(shoal_comm *comm, int64_t ns);

// The park's lock and condition variable, made and released with the
// engine.
void shi_park_init(shoal_comm *comm);
void shi_park_destroy(shoal_comm *comm);

#endif
