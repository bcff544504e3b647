// Who arrives last at the collectives, from what shared memory holds.
//
// Every rank's descriptor of a collective carries the time it called it
// (the monotonic clock, which every process of a host shares). While a
// rank waits in collective `current`, it accounts one earlier collective:
// it reads every rank's time for it from the descriptor rings and counts,
// per rank, how late it came after the first and whether it came last.
// The reads fall in time the rank would spin anyway; a collective whose
// descriptors were overwritten meanwhile (ranks SHI_DESC_RING ahead) is
// skipped. No message, and nothing on the path of a rank that does not
// wait.
#include <stdio.h>

#include "algo/mapped/driver.h"
#include "base/log.h"

// The time `rank` called collective t, or -1 if its slot holds another.
static int64_t
arrival(shoal_comm *comm, int rank, uint32_t t)
{
    const struct shi_call_desc *d
        = &shi_ctl_of(comm, rank)->desc[t % SHI_DESC_RING];

    if (atomic_load_explicit(&d->seq, memory_order_acquire) != t) {
        return -1;
    }
    int64_t ns = __atomic_load_n(&d->arrive_ns, __ATOMIC_RELAXED);
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&d->seq, memory_order_relaxed) == t ? ns : -1;
}

static int
bucket_of(int64_t late_ns)
{
    int64_t edge = 1000; // 1 us, then each bucket ten times wider

    for (int b = 0; b < SHOAL_LATE_BUCKETS - 1; b++, edge *= 10) {
        if (late_ns < edge) {
            return b;
        }
    }
    return SHOAL_LATE_BUCKETS - 1;
}

// Counts collective t's arrivals, if every rank's time is still there.
static void
account(shoal_comm *comm, uint32_t t)
{
    struct shi_mapped_state *m     = shi_mapped_of(comm);
    int64_t                  first = INT64_MAX, worst = INT64_MIN, at[64];
    int                      last = -1;

    if (comm->size > 64) {
        return; // kept small: the counts of the first 64 ranks would do
    }
    for (int r = 0; r < comm->size; r++) {
        if ((at[r] = arrival(comm, r, t)) < 0) {
            return;
        }
        first = at[r] < first ? at[r] : first;
        if (at[r] > worst) {
            worst = at[r];
            last  = r;
        }
    }
    for (int r = 0; r < comm->size; r++) {
        shoal_peer_stats *s    = &m->peers[r].late;
        int64_t           late = at[r] - first;
        s->collectives++;
        s->last += r == last;
        s->late[bucket_of(late)]++;
        s->late_ns_total += late;
        s->late_ns_max = late > s->late_ns_max ? late : s->late_ns_max;
    }
}

void
shi_lateness_account(shoal_comm *comm, uint32_t current)
{
    struct shi_mapped_state *m = shi_mapped_of(comm);

    if (comm->size < 2) {
        return;
    }
    if (m->late_next == 0
        || shi_seq_diff(current, m->late_next) >= SHI_DESC_RING / 2) {
        m->late_next = current - 1; // start, or catch up: older ones are gone
    }
    if (m->late_next == 0 || shi_seq_diff(m->late_next, current) >= 0) {
        return; // nothing earlier than the one we wait in
    }
    account(comm, m->late_next);
    m->late_next++;
}

void
shi_lateness_summary(shoal_comm *comm)
{
    struct shi_mapped_state *m     = shi_mapped_of(comm);
    int                      worst = -1;

    if (m == NULL || comm->size < 2 || !shi_log_enabled(SHI_LOG_INFO)) {
        return;
    }
    // The latest on average: with two ranks a few microseconds apart at
    // random, "last" splits evenly, while the one a busy CPU holds back
    // is late by more.
    for (int r = 0; r < comm->size; r++) {
        if (worst < 0
            || m->peers[r].late.late_ns_total
                > m->peers[worst].late.late_ns_total) {
            worst = r;
        }
    }
    const shoal_peer_stats *s = &m->peers[worst].late;
    if (s->collectives == 0) {
        SHI_INFO("communicator '%s': rank %d accounted no collective's "
                 "arrivals (it never waited for a peer)",
            comm->name, comm->rank);
        return;
    }
    SHI_INFO("communicator '%s': the straggler is rank %d: %.1f us late on "
             "average after the first arrival (at most %.1f us), last at "
             "%llu of the %llu collectives rank %d accounted while waiting",
        comm->name, worst,
        (double) s->late_ns_total / (double) s->collectives / 1e3,
        (double) s->late_ns_max / 1e3, (unsigned long long) s->last,
        (unsigned long long) s->collectives, comm->rank);
}
