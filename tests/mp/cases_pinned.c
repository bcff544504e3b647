// pinned_policy: ranks pinned to a core each (as launchers bind them)
// count the cores they have together for the wait policy, not their own
// one: a communicator they create then spins like one whose ranks each
// have a core, while ranks all pinned to one core yield to each other.
#include <sched.h>
#include <stdio.h>

#include "core/comm.h"
#include "core/engine.h"
#include "mptest.h"

// The i-th CPU of `set`, or -1.
static int
nth_cpu(const cpu_set_t *set, int i)
{
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, set) && i-- == 0) {
            return cpu;
        }
    }
    return -1;
}

// Pins this rank to `cpu`, creates a communicator of all ranks (a split),
// checks how many CPUs and which spin its engine took, and unpins.
static int
split_pinned(shoal_comm *comm, const cpu_set_t *all, int cpu, int want_cpus,
    int want_spin)
{
    cpu_set_t   one;
    shoal_comm *sub = NULL;

    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    MP_CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);
    MP_OK(shoal_comm_split(comm, 0, shoal_comm_rank(comm), &sub));
    MP_CHECK(sched_setaffinity(0, sizeof(*all), all) == 0);
    printf("rank %d on CPU %d: %d CPUs, spin %d ns\n", shoal_comm_rank(comm),
        cpu, sub->engine.cpus, shi_engine_spin_ns(sub));
    MP_CHECK(sub->engine.cpus == want_cpus);
    MP_CHECK(want_spin ? shi_engine_spin_ns(sub) == shi_engine_spin_ns(comm)
                       : shi_engine_spin_ns(sub) < shi_engine_spin_ns(comm));
    MP_OK(shoal_comm_destroy(sub));
    return 0;
}

int
mp_case_pinned_policy(shoal_comm *comm, int argc, char **argv)
{
    int       n = shoal_comm_size(comm), r = shoal_comm_rank(comm);
    cpu_set_t all;

    (void) argc, (void) argv;
    MP_CHECK(sched_getaffinity(0, sizeof(all), &all) == 0);
    MP_CHECK(CPU_COUNT(&all) >= n); // the created comm has a core per rank
    // A core each: the spin of ranks with a core each.
    MP_CHECK(split_pinned(comm, &all, nth_cpu(&all, r), n, 1) == 0);
    // All on one core: the quick yields of ranks that outnumber cores.
    MP_CHECK(split_pinned(comm, &all, nth_cpu(&all, 0), 1, 0) == 0);
    MP_OK(shoal_barrier(comm));
    return 0;
}
