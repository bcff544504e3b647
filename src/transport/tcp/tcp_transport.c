// The TCP transport's table (transport.h): peers reached by messages over
// a mesh of sockets (tcp_mesh.c, tcp_xfer.c); this rank's threads sleep in
// the sockets' epoll set; a dead peer is seen when its socket is read.
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "transport/tcp/tcp_net.h"

static struct shi_net *
net_of(const shoal_comm *comm)
{
    return (struct shi_net *) shi_tp_comm(comm)->tp_state;
}

static int
tcp_start(shoal_comm *comm)
{
    (void) comm;
    return SHOAL_OK; // the engine reads the sockets itself
}

static void
tcp_stop(shoal_comm *comm)
{
    (void) comm;
}

static void
tcp_teardown(shoal_comm *comm)
{
    shi_net_free(net_of(comm));
    shi_tp_comm(comm)->tp_state = NULL;
}

static int
tcp_reaches(const shoal_comm *comm, int peer)
{
    return peer >= 0 && peer < shi_tp_comm(comm)->size;
}

static const char *
tcp_peer_address(const shoal_comm *comm, int peer)
{
    struct shi_net *net = net_of(comm);

    return net != NULL && peer >= 0 && peer < shi_tp_comm(comm)->size
        ? net->peers[peer].addr
        : "";
}

// A pending wake-up may be reset only while no thread of ours sleeps (or
// is about to): see shi_tcp_progress.
static int
tcp_progress(shoal_comm *comm)
{
    struct shi_net *net = net_of(comm);

    return shi_tcp_progress(net, atomic_load(&net->sleepers) == 0);
}

static uint32_t
tcp_sleep_arm(shoal_comm *comm)
{
    atomic_fetch_add(&net_of(comm)->sleepers, 1);
    return 0;
}

static void
tcp_sleep_wait(shoal_comm *comm, uint32_t token, int64_t timeout_ns)
{
    (void) token;
    shi_tcp_sleep(net_of(comm), timeout_ns);
}

static void
tcp_sleep_disarm(shoal_comm *comm)
{
    atomic_fetch_sub(&net_of(comm)->sleepers, 1);
}

// Only our own threads sleep in our epoll set: peers wake on the data they
// receive.
static void
tcp_wake(shoal_comm *comm, int rank, int force)
{
    struct shi_net *net = net_of(comm);

    if (net != NULL && rank == shi_tp_comm(comm)->rank
        && (force || atomic_load(&net->sleepers) > 0)) {
        shi_tcp_wake(net);
    }
}

static void
tcp_wake_peers(shoal_comm *comm)
{
    (void) comm;
}

// The sockets belong to whoever holds the lock: the engine sends the text
// at its next pass (tcp_abort_flush); wake it.
static void
tcp_abort_notify(shoal_comm *comm, int status, const char *text)
{
    (void) status;
    (void) text;
    if (net_of(comm) != NULL) {
        shi_tcp_wake(net_of(comm));
    }
}

static void
tcp_abort_flush(shoal_comm *comm)
{
    struct shi_tp_comm *tc  = shi_tp_comm(comm);
    struct shi_net     *net = net_of(comm);
    char                text[SHI_ERROR_TEXT_MAX];
    int                 st = atomic_load(&tc->failed);

    if (net == NULL || st == 0 || net->abort_sent) {
        return;
    }
    net->abort_sent = 1;
    shi_tcp_purge(net);
    pthread_mutex_lock(&tc->err_lock);
    snprintf(text, sizeof(text), "%s", tc->fail_text);
    pthread_mutex_unlock(&tc->err_lock);
    shi_tcp_abort_peers(net, st, text);
}

static void
tcp_goodbye(shoal_comm *comm, int64_t deadline)
{
    if (net_of(comm) != NULL) {
        shi_tcp_goodbye(net_of(comm), deadline);
    }
}

static int
tcp_unreachable(shoal_comm *comm, int *peer, char *why, size_t len)
{
    return net_of(comm) != NULL
        && shi_tcp_unreachable(net_of(comm), peer, why, len);
}

static void
tcp_heap_region(
    shoal_comm *comm, unsigned char **base, size_t *bytes, int *shared)
{
    *base   = net_of(comm)->heap;
    *bytes  = net_of(comm)->heap_bytes;
    *shared = 0;
}

static void
tcp_mem_expose(shoal_comm *comm, const void *base, size_t bytes,
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
tcp_mem_view(
    shoal_comm *comm, const struct shi_tp_region *r, size_t off, size_t bytes)
{
    (void) comm;
    (void) r;
    (void) off;
    (void) bytes;
    return NULL;
}

static void
tcp_msg_number(shoal_comm *comm, shi_msg *msg, int send)
{
    struct shi_tcp_peer *p = &net_of(comm)->peers[msg->peer];

    msg->id = send ? p->data_tx_id++ : p->data_rx_id++;
}

static void
tcp_msg_send(shoal_comm *comm, shi_msg *msg)
{
    shi_tcp_send(net_of(comm), msg);
}

static int
tcp_msg_recv(shoal_comm *comm, shi_msg *msg)
{
    return shi_tcp_recv(net_of(comm), msg);
}

const struct shi_transport_ops shi_tcp_transport = {
    .name                 = "tcp",
    .klass                = SHI_TP_MESSAGES,
    .setup                = shi_tcp_setup,
    .start                = tcp_start,
    .stop                 = tcp_stop,
    .teardown             = tcp_teardown,
    .reaches              = tcp_reaches,
    .peer_address         = tcp_peer_address,
    .p2p_post             = shi_tcp_p2p_post,
    .p2p_forget           = NULL,
    .progress             = tcp_progress,
    .poll_abort           = NULL,
    .deaths_need_progress = 1,
    .arm_before_look      = 0,
    .sleep_arm            = tcp_sleep_arm,
    .sleep_wait           = tcp_sleep_wait,
    .sleep_disarm         = tcp_sleep_disarm,
    .wake                 = tcp_wake,
    .wake_peers           = tcp_wake_peers,
    .abort_notify         = tcp_abort_notify,
    .abort_flush          = tcp_abort_flush,
    .goodbye              = tcp_goodbye,
    .unreachable          = tcp_unreachable,
    .heap_region          = tcp_heap_region,
    .coll_area            = NULL,
    .mem_expose           = tcp_mem_expose,
    .mem_view             = tcp_mem_view,
    .mem_read             = NULL,
    .mem_write            = NULL,
    .msg_number           = tcp_msg_number,
    .msg_send             = tcp_msg_send,
    .msg_recv             = tcp_msg_recv,
    .rma_send             = shi_tcp_rma_send,
};
