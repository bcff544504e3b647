// The shared-memory transport's table (transport.h): every rank on this
// host, data through one segment every rank maps, sleeping threads woken
// through a futex doorbell per rank, deaths seen by a watcher thread.
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "platform/futex.h"
#include "transport/shm/shm.h"
#include "transport/upcalls.h"

static int
shm_start(shoal_comm *comm)
{
    return shi_tp_comm(comm)->size > 1 ? shi_shm_watch_start(comm) : SHOAL_OK;
}

static void
shm_stop(shoal_comm *comm)
{
    if (shi_shm_of(comm) != NULL) {
        shi_shm_watch_stop(comm);
    }
}

static void
shm_teardown(shoal_comm *comm)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    struct shi_shm     *sh = shi_shm_of(comm);

    shi_shm_p2p_discard(comm);
    if (sh != NULL) {
        sh->me = NULL;
        shm_segment_unmap(&sh->seg);
        for (int r = 0; r < tc->size; r++) {
            if (sh->fds[r] >= 0) {
                close(sh->fds[r]);
            }
        }
        free(sh->fds);
        free(sh->peers);
        free(sh);
        tc->tp_state = NULL;
    }
}

static int
shm_reaches(const shoal_comm *comm, int peer)
{
    return peer >= 0 && peer < shi_tp_comm(comm)->size;
}

static const char *
shm_peer_address(const shoal_comm *comm, int peer)
{
    (void) comm;
    (void) peer;
    return "";
}

static int
shm_progress(shoal_comm *comm)
{
    // Messages nobody waits for stay in their rings (up to a ring's worth
    // of sends complete without a receiver), so collectives skip the scan.
    return shi_tp_comm(comm)->p2p_active > 0 ? shi_shm_p2p_step(comm) : 0;
}

int
shi_shm_adopt_abort(shoal_comm *comm)
{
    struct shi_shm   *sh = shi_shm_mapped(comm);
    struct shm_abort *ab;

    if (sh == NULL) {
        return 0;
    }
    ab = shm_abort_of(&sh->seg);
    if (atomic_load_explicit(&ab->state, memory_order_acquire) != 2) {
        return 0;
    }
    shi_comm_abort(
        comm, ab->status, "rank %d reported: %s", ab->by_rank, ab->text);
    return 1;
}

// Peers look at `sleepers` after publishing and ring only then, so it is
// raised before the sleeper's last look (arm_before_look).
static uint32_t
shm_sleep_arm(shoal_comm *comm)
{
    struct shm_rank *me = shi_shm_of(comm)->me;

    atomic_fetch_add(&me->sleepers, 1);
    return atomic_load(&me->doorbell);
}

static void
shm_sleep_wait(shoal_comm *comm, uint32_t token, int64_t timeout_ns)
{
    shi_futex_wait(&shi_shm_of(comm)->me->doorbell, token, timeout_ns);
}

static void
shm_sleep_disarm(shoal_comm *comm)
{
    atomic_fetch_sub(&shi_shm_of(comm)->me->sleepers, 1);
}

static void
shm_wake(shoal_comm *comm, int rank, int force)
{
    struct shi_shm  *sh = shi_shm_mapped(comm);
    struct shm_rank *ctl;

    if (sh == NULL) {
        return; // not set up yet: nobody sleeps
    }
    ctl = shm_rank_of(&sh->seg, rank);
    if (!force) {
        // Pairs with the sleeper's increment of `sleepers` before its last
        // look at the data: one of the two sees the other.
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&ctl->sleepers, memory_order_relaxed) == 0) {
            return;
        }
    }
    atomic_fetch_add(&ctl->doorbell, 1);
    shi_futex_wake_all(&ctl->doorbell);
}

// sched_getcpu reads the CPU glibc's rseq area keeps current: no system
// call. A peer's CPU is the one it last waited on; the scheduler moves
// threads seldom enough for that to hold for many calls.
static int
shm_peers_on_my_cpu(shoal_comm *comm, cpu_set_t *peers, int *lower)
{
    struct shi_tp_comm *tc  = shi_tp_comm(comm);
    struct shi_shm     *sh  = shi_shm_mapped(comm);
    int                 cpu = sched_getcpu(), n = 0;
    uint32_t            mine;

    if (sh == NULL || cpu < 0) {
        return 0;
    }
    mine = (uint32_t) cpu + 1;
    if (atomic_load_explicit(&sh->me->cpu, memory_order_relaxed) != mine) {
        atomic_store_explicit(&sh->me->cpu, mine, memory_order_relaxed);
    }
    if (peers != NULL) {
        CPU_ZERO(peers);
    }
    if (lower != NULL) {
        *lower = 0;
    }
    for (int p = 0; p < tc->size; p++) {
        struct shm_rank *ctl = shm_rank_of(&sh->seg, p);
        uint32_t         theirs
            = atomic_load_explicit(&ctl->cpu, memory_order_relaxed);
        if (p == tc->rank || theirs == 0) {
            continue;
        }
        n += theirs == mine;
        if (lower != NULL && theirs == mine && p < tc->rank) {
            (*lower)++;
        }
        if (peers != NULL && theirs - 1 < CPU_SETSIZE) {
            CPU_SET(theirs - 1, peers);
        }
    }
    return n;
}

static void
shm_wake_peers(shoal_comm *comm)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    struct shi_shm     *sh = shi_shm_mapped(comm);

    if (sh == NULL) {
        return;
    }
    // One fence covers every peer (see shm_wake); then ring only sleepers.
    atomic_thread_fence(memory_order_seq_cst);
    for (int p = 0; p < tc->size; p++) {
        struct shm_rank *ctl = shm_rank_of(&sh->seg, p);
        if (p != tc->rank
            && atomic_load_explicit(&ctl->sleepers, memory_order_relaxed)
                != 0) {
            shm_wake(comm, p, 1);
        }
    }
}

// The first rank to abort writes its cause in the segment and rings every
// rank; the others adopt it at their next engine pass.
static void
shm_abort_notify(shoal_comm *comm, int status, const char *text)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    struct shi_shm     *sh = shi_shm_mapped(comm);
    struct shm_abort   *ab;
    uint32_t            old = 0;

    if (sh == NULL) {
        return;
    }
    ab = shm_abort_of(&sh->seg);
    if (atomic_compare_exchange_strong(&ab->state, &old, 1)) {
        ab->status  = status;
        ab->by_rank = tc->rank;
        snprintf(ab->text, sizeof(ab->text), "%s", text);
        atomic_store_explicit(&ab->state, 2, memory_order_release);
    }
    for (int r = 0; r < tc->size; r++) {
        shm_wake(comm, r, 1);
    }
}

// A goodbye byte on every peer's socket: its watcher marks us as gone on
// purpose instead of dead.
static void
shm_goodbye(shoal_comm *comm, int64_t deadline)
{
    struct shi_shm *sh = shi_shm_of(comm);

    (void) deadline;
    for (int r = 0; sh != NULL && r < shi_tp_comm(comm)->size; r++) {
        if (sh->fds[r] >= 0
            && send(sh->fds[r], "B", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
            SHI_TRACE("goodbye to rank %d not sent", r);
        }
    }
}

static void
shm_heap_region(
    shoal_comm *comm, unsigned char **base, size_t *bytes, int *shared)
{
    struct shi_shm *sh = shi_shm_of(comm);

    *base   = shm_heap_of(&sh->seg, shi_tp_comm(comm)->rank);
    *bytes  = sh->seg.heap_bytes;
    *shared = 1;
}

static unsigned char *
shm_coll_area(shoal_comm *comm, uint64_t *bytes)
{
    struct shi_shm *sh = shi_shm_mapped(comm);

    *bytes = sh != NULL ? sh->seg.area_bytes : 0;
    return sh != NULL ? shm_area_of(&sh->seg) : NULL;
}

const struct shi_transport_ops shi_shm_transport = {
    .name                 = "shm",
    .klass                = SHI_TP_MAPPED,
    .setup                = shi_shm_setup,
    .start                = shm_start,
    .stop                 = shm_stop,
    .teardown             = shm_teardown,
    .reaches              = shm_reaches,
    .peer_address         = shm_peer_address,
    .p2p_post             = shi_shm_p2p_post,
    .p2p_now              = shi_shm_p2p_now,
    .p2p_forget           = shi_shm_p2p_forget,
    .p2p_strided          = 1,
    .progress             = shm_progress,
    .poll_abort           = shi_shm_adopt_abort,
    .deaths_need_progress = 0,
    .arm_before_look      = 1,
    .sleep_arm            = shm_sleep_arm,
    .sleep_wait           = shm_sleep_wait,
    .sleep_disarm         = shm_sleep_disarm,
    .wake                 = shm_wake,
    .wake_peers           = shm_wake_peers,
    .peers_on_my_cpu      = shm_peers_on_my_cpu,
    .abort_notify         = shm_abort_notify,
    .abort_flush          = NULL,
    .goodbye              = shm_goodbye,
    .unreachable          = NULL,
    .heap_region          = shm_heap_region,
    .coll_area            = shm_coll_area,
    .mem_expose           = shi_shm_mem_expose,
    .mem_view             = shi_shm_mem_view,
    .mem_read             = shi_shm_mem_read,
    .mem_write            = shi_shm_mem_write,
    .msg_number           = NULL,
    .msg_send             = NULL,
    .msg_recv             = NULL,
    .rma_send             = NULL, // windows write peers' memory themselves
};
