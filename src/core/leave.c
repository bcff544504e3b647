// Leaving at exit: the goodbye of communicators nobody destroyed.
//
// A process that exits normally (exit(), a return from main, the end of a
// Python interpreter) often leaves its communicators alive: torch does not
// free them, nor do scripts that skip destroy_process_group. Its peers
// would then see its connections close without a goodbye and report it as
// dead. So every communicator is listed from creation to destruction, and
// an atexit handler says goodbye on each one still listed. A crash (a
// signal, _exit) runs no handler and is still reported as a death.
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "core/comm.h"
#include "core/engine.h"

// How long the handler waits for a communicator a thread is using.
#define LEAVE_LOCK_MS    200
#define LEAVE_GOODBYE_MS 500

struct listed {
    struct listed *next;
    shoal_comm    *comm;
};

static pthread_mutex_t leave_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t  leave_once = PTHREAD_ONCE_INIT;
static struct listed  *listed;

static int
lock_for_a_while(pthread_mutex_t *m)
{
    struct timespec until
        = shi_timespec_in_ns(CLOCK_REALTIME, LEAVE_LOCK_MS * 1000000LL);

    return pthread_mutex_timedlock(m, &until);
}

static void
say_goodbye(shoal_comm *comm)
{
    if (comm->creator_pid != (int) getpid() || comm->tp == NULL
        || comm->tp_state == NULL
        || shi_fork_check(comm, "exit") != SHOAL_OK) {
        return; // a forked child's copy: the goodbye is its parent's
    }
    if (lock_for_a_while(&comm->lock) != 0) {
        SHI_INFO(
            "communicator '%s': busy at exit, no goodbye said", comm->name);
        return;
    }
    if (atomic_load(&comm->failed)) {
        shi_engine_flush_abort(comm); // the cause first, as destroy does
    }
    comm->tp->goodbye(comm, shi_deadline_in_ms(LEAVE_GOODBYE_MS));
    pthread_mutex_unlock(&comm->lock);
}

static void
leave_all(void)
{
    pthread_mutex_lock(&leave_lock);
    for (struct listed *l = listed; l != NULL; l = l->next) {
        say_goodbye(l->comm);
    }
    pthread_mutex_unlock(&leave_lock);
}

static void
leave_install(void)
{
    atexit(leave_all);
}

void
shi_leave_list(shoal_comm *comm)
{
    struct listed *l = malloc(sizeof(*l));

    pthread_once(&leave_once, leave_install);
    if (l == NULL) {
        return; // it would be reported as dead at exit, nothing worse
    }
    l->comm = comm;
    pthread_mutex_lock(&leave_lock);
    l->next = listed;
    listed  = l;
    pthread_mutex_unlock(&leave_lock);
}

int
shi_comms_each(int (*fn)(shoal_comm *comm, void *arg), void *arg)
{
    int st = SHOAL_OK;

    pthread_mutex_lock(&leave_lock);
    for (struct listed *l = listed; l != NULL; l = l->next) {
        int r = fn(l->comm, arg);
        st    = st == SHOAL_OK ? r : st;
    }
    pthread_mutex_unlock(&leave_lock);
    return st;
}

void
shi_leave_unlist(shoal_comm *comm)
{
    pthread_mutex_lock(&leave_lock);
    for (struct listed **p = &listed; *p != NULL; p = &(*p)->next) {
        if ((*p)->comm == comm) {
            struct listed *l = *p;
            *p               = l->next;
            free(l);
            break;
        }
    }
    pthread_mutex_unlock(&leave_lock);
}
