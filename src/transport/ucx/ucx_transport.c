// The UCX transport's table (transport.h): peers reached by tagged UCP
// messages through one worker per communicator (ucx_setup.c); the engine
// drives the worker under its lock, and this rank's threads sleep on the
// worker's event fd, armed after the engine's last look; a dead peer is
// reported by its endpoint's error handler during progress.
#include <poll.h>
#include <stdatomic.h>
#include <time.h>

#include "base/clock.h"
#include "transport/ucx/ucx.h"
#include "transport/upcalls.h"

static struct shi_ucx *
ucx_of(const shoal_comm *comm)
{
    return (struct shi_ucx *) shi_tp_comm(comm)->tp_state;
}

static int
ucx_start(shoal_comm *comm)
{
    (void) comm;
    return SHOAL_OK; // the engine drives the worker itself
}

static void
ucx_stop(shoal_comm *comm)
{
    (void) comm;
}

static void
ucx_teardown(shoal_comm *comm)
{
    shi_ucx_free(ucx_of(comm));
    shi_tp_comm(comm)->tp_state = NULL;
}

static int
ucx_reaches(const shoal_comm *comm, int peer)
{
    return peer >= 0 && peer < shi_tp_comm(comm)->size;
}

static const char *
ucx_peer_address(const shoal_comm *comm, int peer)
{
    (void) comm;
    (void) peer;
    return "over UCX"; // UCX chooses the path; the host name says where
}

static int
ucx_progress(shoal_comm *comm)
{
    struct shi_ucx *ucx = ucx_of(comm);
    int             n   = 0;

    ucx->moved = 0;
    while (ucp_worker_progress(ucx->worker) != 0 && n < 64) {
        n++;
    }
    return n + (int) ucx->moved;
}

// Token 1: UCX has events already, so the sleep must not start.
static uint32_t
ucx_sleep_arm(shoal_comm *comm)
{
    struct shi_ucx *ucx = ucx_of(comm);

    atomic_fetch_add(&ucx->sleepers, 1);
    return ucp_worker_arm(ucx->worker) == UCS_ERR_BUSY;
}

static void
ucx_sleep_wait(shoal_comm *comm, uint32_t token, int64_t timeout_ns)
{
    struct pollfd   pfd = { .fd = ucx_of(comm)->efd, .events = POLLIN };
    struct timespec ts  = {
         .tv_sec  = timeout_ns / 1000000000,
         .tv_nsec = timeout_ns % 1000000000,
    };

    if (token == 0 && timeout_ns > 0) {
        ppoll(&pfd, 1, &ts, NULL);
    }
}

static void
ucx_sleep_disarm(shoal_comm *comm)
{
    atomic_fetch_sub(&ucx_of(comm)->sleepers, 1);
}

// Only our own threads sleep on our worker: peers wake on what arrives.
static void
ucx_wake(shoal_comm *comm, int rank, int force)
{
    struct shi_ucx *ucx = ucx_of(comm);

    if (ucx != NULL && ucx->worker != NULL && rank == shi_tp_comm(comm)->rank
        && (force || atomic_load(&ucx->sleepers) > 0)) {
        ucp_worker_signal(ucx->worker); // safe from any thread
    }
}

static void
ucx_wake_peers(shoal_comm *comm)
{
    (void) comm;
}

// The worker belongs to whoever holds the lock: the engine says it at its
// next pass (ucx_abort_flush); wake it.
static void
ucx_abort_notify(shoal_comm *comm, int status, const char *text)
{
    (void) status;
    (void) text;
    ucx_wake(comm, shi_tp_comm(comm)->rank, 1);
}

static void
ucx_abort_flush(shoal_comm *comm)
{
    struct shi_ucx *ucx = ucx_of(comm);

    if (ucx == NULL || ucx->abort_sent
        || atomic_load(&shi_tp_comm(comm)->failed) == 0) {
        return;
    }
    ucx->abort_sent = 1;
    shi_ucx_op_forget_all(ucx, shi_now_ns() + 1000000000);
    shi_ucx_say_abort(ucx);
}

static void
ucx_goodbye(shoal_comm *comm, int64_t deadline)
{
    if (ucx_of(comm) != NULL) {
        shi_ucx_goodbye(ucx_of(comm), deadline);
    }
}

static void
ucx_heap_region(
    shoal_comm *comm, unsigned char **base, size_t *bytes, int *shared)
{
    *base   = ucx_of(comm)->heap;
    *bytes  = ucx_of(comm)->heap_bytes;
    *shared = 0;
}

static void
ucx_mem_expose(shoal_comm *comm, const void *base, size_t bytes,
    struct shi_tp_region *out)
{
    *out = (struct shi_tp_region) {
        .addr  = (uint64_t) (uintptr_t) base,
        .bytes = bytes,
        .owner = shi_tp_comm(comm)->rank,
    };
}

// No peer's memory is mapped here.
static void *
ucx_mem_view(
    shoal_comm *comm, const struct shi_tp_region *r, size_t off, size_t bytes)
{
    (void) comm;
    (void) r;
    (void) off;
    (void) bytes;
    return NULL;
}

static void
ucx_msg_number(shoal_comm *comm, shi_msg *msg, int send)
{
    struct shi_ucx_peer *p = &ucx_of(comm)->peers[msg->peer];

    msg->id = send ? p->data_tx_id++ : p->data_rx_id++;
}

const struct shi_transport_ops shi_ucx_transport = {
    .name                 = "ucx",
    .klass                = SHI_TP_MESSAGES,
    .wanted_by_auto       = shi_ucx_has_rdma,
    .setup                = shi_ucx_setup,
    .start                = ucx_start,
    .stop                 = ucx_stop,
    .teardown             = ucx_teardown,
    .reaches              = ucx_reaches,
    .peer_address         = ucx_peer_address,
    .p2p_post             = shi_ucx_p2p_post,
    .p2p_strided          = 0,
    .p2p_forget           = shi_ucx_p2p_forget,
    .progress             = ucx_progress,
    .poll_abort           = NULL,
    .deaths_need_progress = 1,
    .arm_before_look      = 0,
    .sleep_arm            = ucx_sleep_arm,
    .sleep_wait           = ucx_sleep_wait,
    .sleep_disarm         = ucx_sleep_disarm,
    .wake                 = ucx_wake,
    .wake_peers           = ucx_wake_peers,
    .peers_on_my_cpu      = NULL,
    .abort_notify         = ucx_abort_notify,
    .abort_flush          = ucx_abort_flush,
    .goodbye              = ucx_goodbye,
    .unreachable          = NULL,
    .heap_region          = ucx_heap_region,
    .mem_expose           = ucx_mem_expose,
    .mem_view             = ucx_mem_view,
    .mem_read             = NULL,
    .mem_write            = NULL,
    .mem_register         = shi_ucx_mem_register,
    .mem_deregister       = shi_ucx_mem_deregister,
    .coll_area            = NULL,
    .msg_number           = ucx_msg_number,
    .msg_send             = shi_ucx_msg_send,
    .msg_recv             = shi_ucx_msg_recv,
    .rma_send             = shi_ucx_rma_send,
};
