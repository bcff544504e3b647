// fork() safety. A child inherits its parent's communicators as copies:
// their threads did not come along, their locks may be held by threads
// that do not exist, and their sockets and shared memory are the parent's
// own. Using them would hang the child or corrupt the parent's job, so in
// a child every operation fails at once with SHOAL_EINVAL, and destroying
// one only lets go of it: nothing is signalled, locked or freed that the
// parent still uses (the child's copy of its memory is left as it is).
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "base/error.h"
#include "core/comm.h"

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static atomic_uint    fork_generation; // one more in each child

static void
fork_child(void)
{
    atomic_fetch_add_explicit(&fork_generation, 1, memory_order_relaxed);
}

static void
fork_watch(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}

void
shi_fork_mark(shoal_comm *comm)
{
    pthread_once(&fork_once, fork_watch);
    comm->fork_generation
        = atomic_load_explicit(&fork_generation, memory_order_relaxed);
    comm->creator_pid = (int) getpid();
}

int
shi_forked(const shoal_comm *comm)
{
    return comm->fork_generation
        != atomic_load_explicit(&fork_generation, memory_order_relaxed);
}

int
shi_fork_check(const shoal_comm *comm, const char *op)
{
    if (!shi_forked(comm)) {
        return SHOAL_OK;
    }
    // No comm lock here: a thread of the parent may have held it.
    return shi_error(SHOAL_EINVAL,
        "%s: communicator '%s' was created in process %d; this process "
        "(%d) is a fork of it and cannot use it (make a new communicator "
        "in the child, or use it from the parent only)",
        op, comm->name, comm->creator_pid, (int) getpid());
}
