// State of a communicator whose ranks talk through UCX (the UCX transport,
// transport.h): one UCP context and worker per communicator, an endpoint
// per peer, every message a tagged UCP message.
//
// Tags (64 bits): kind in the top 4 bits, the sender's rank in the next
// 20, then 40 bits the kind gives meaning to:
//   DATA     a collective's data message: its position on the channel
//            (msg_number), so the k-th numbered send meets the k-th
//            numbered receive;
//   P2P      point to point: the application's tag (UCX matches receives
//            in post order and messages in arrival order, MPI's rule);
//   CTL      control (struct shi_ucx_ctl): hello, abort, goodbye, and the
//            headers of window puts and signals;
//   PUTDATA  a window put's bytes: the put's number from that sender.
// The sender rank in a tag is checked against the size; a control message
// is taken only from a peer whose hello proved the job secret.
#ifndef SHI_UCX_H
#define SHI_UCX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/ucx/ucx_lib.h"

#include "platform/auth.h"
#include "transport/msg.h"
#include "transport/transport.h"

#define SHI_UCX_KIND_SHIFT 60
#define SHI_UCX_RANK_SHIFT 40
#define SHI_UCX_RANK_MAX   (1 << 20)
#define SHI_UCX_LOW_MASK   ((UINT64_C(1) << SHI_UCX_RANK_SHIFT) - 1)
#define SHI_UCX_RANK_MASK  (((UINT64_C(1) << 20) - 1) << SHI_UCX_RANK_SHIFT)

enum shi_ucx_kind {
    SHI_UCX_DATA    = 1,
    SHI_UCX_P2P     = 2,
    SHI_UCX_CTL     = 3,
    SHI_UCX_PUTDATA = 4,
};

static inline uint64_t
shi_ucx_tag(int kind, int rank, uint64_t low)
{
    return (uint64_t) kind << SHI_UCX_KIND_SHIFT
        | (uint64_t) rank << SHI_UCX_RANK_SHIFT | (low & SHI_UCX_LOW_MASK);
}

static inline int
shi_ucx_tag_rank(uint64_t tag)
{
    return (int) ((tag & SHI_UCX_RANK_MASK) >> SHI_UCX_RANK_SHIFT);
}

// Control messages.
#define SHI_UCX_MAGIC    0x5348554bu // "SHUK"
#define SHI_UCX_TEXT_MAX 1024
enum shi_ucx_ctl_type {
    SHI_UCX_HELLO = 1,
    SHI_UCX_ABORT,
    SHI_UCX_BYE,
    SHI_UCX_PUT,
    SHI_UCX_SIGNAL,
};

struct shi_ucx_ctl {
    uint32_t      magic;
    uint16_t      type; // shi_ucx_ctl_type
    uint16_t      reserved;
    uint64_t      seq; // control messages sent to this peer before it
    int32_t       status; // ABORT
    uint32_t      win; // PUT, SIGNAL
    uint64_t      off; // PUT: byte offset; SIGNAL: the counter
    uint64_t      bytes; // PUT
    uint64_t      puts; // PUT: its number; SIGNAL: puts sent before it
    unsigned char token[SHI_AUTH_PEER_TOKEN_LEN]; // HELLO
    uint32_t      len; // ABORT: text bytes
    char          text[SHI_UCX_TEXT_MAX];
};
#define SHI_UCX_CTL_HEAD offsetof(struct shi_ucx_ctl, text)

// One UCX operation in flight: the user data of its callback. `msg` and
// `req` are NULL once the owner gave up on it (forgotten or failed): the
// callback then only frees it.
struct shi_ucx_op {
    struct shi_ucx     *ucx;
    unsigned long long  id; // unique in the process
    void               *handle; // the UCX request, NULL if done at once
    shi_msg            *msg; // a message of ours (DATA, P2P), or NULL
    shoal_request      *req; // a one-sided request (PUT, SIGNAL), or NULL
    struct shi_ucx_ctl *ctl; // a control message's buffer (ours)
    int                 peer;
    int                 kind; // shi_ucx_kind
    int                 parts; // sends of a put still out
    int                 is_recv;
    int                 detached; // the owner stopped waiting
    int                 starting; // inside the UCX call that starts it
    int                 finished; // UCX called back during that call
    size_t              want; // a receive's expected bytes
    struct shi_ucx_op  *prev, *next; // on ucx->ops while in flight
};

// A signal that arrived before the puts sent ahead of it were written.
struct shi_ucx_held_signal {
    uint32_t                    win;
    uint64_t                    counter;
    uint64_t                    after; // puts from that peer to wait for
    struct shi_ucx_held_signal *next;
};

struct shi_ucx_peer {
    struct shi_ucx *ucx; // for UCX's error handler
    int             rank;
    ucp_ep_h        ep;
    int             no_err_mode; // opened without peer error handling
    int             hello_ok; // its hello proved the job secret
    int             failed; // its endpoint reported an error
    uint64_t        data_tx_id, data_rx_id; // DATA positions
    uint64_t        ctl_tx, ctl_rx; // control messages sent, taken
    uint64_t        puts_tx, puts_rx_done; // window puts sent, written
    unsigned char   nonce[SHI_AUTH_PEER_NONCE_LEN];
    struct shi_ucx_held_signal *held, *held_tail;
    char                        addr[96]; // "rank 3 (host b)", for messages
};

#define SHI_UCX_CTL_POSTED 16 // control receives kept posted

struct shi_ucx {
    struct shoal_comm   *comm;
    ucp_context_h        context;
    ucp_worker_h         worker;
    int                  efd; // the worker's event fd
    struct shi_ucx_peer *peers;
    unsigned char        nonce[SHI_AUTH_PEER_NONCE_LEN];
    atomic_int           sleepers;
    int                  peer_errors; // SHOAL_UCX_PEER_ERRORS (ucx_setup.c)
    int                  abort_sent;
    int                  closing; // teardown: callbacks only free
    int                  hellos; // peers whose hello passed
    int                  abort_heard; // a peer reported its abort
    int64_t              moved; // progress units since the last look
    struct shi_ucx_op   *ops; // in flight
    int                  nops;
    struct shi_ucx_op   *ctl_rx[SHI_UCX_CTL_POSTED];
    struct shi_ucx_reg  *regs; // shoal_mem_register's ranges (ucx_mem.c)
    atomic_int           nregs;
    pthread_mutex_t      reg_lock; // regs: the application's threads add
    unsigned char       *heap; // shoal_alloc's range (private memory)
    size_t               heap_bytes;
};

// ucx_setup.c
int shi_ucx_setup(
    struct shoal_comm *comm, const struct shi_tp_boot *boot, int64_t deadline);
void shi_ucx_free(struct shi_ucx *ucx);
// Whether UCX finds a device for remote memory access on this host.
int shi_ucx_has_rdma(void);

// ucx_lanes.c: which UCX transports reach a peer.
int  shi_ucx_same_host(const struct shi_ucx *ucx, int p);
int  shi_ucx_lanes_trapped(struct shi_ucx *ucx, int p);
void shi_ucx_report_lanes(struct shi_ucx *ucx);

// ucx_ops.c: operations in flight.
struct shi_ucx_op *shi_ucx_op_new(struct shi_ucx *ucx, int kind, int peer);
// Takes what UCX returned for the op: done at once (NULL; `info` then
// describes a receive's message), failed, or in flight. Returns 1 when the
// op finished here (its completion already ran).
int shi_ucx_op_started(struct shi_ucx_op *op, ucs_status_ptr_t ret,
    const ucp_tag_recv_info_t *info);
// The owner stops waiting for op (or for every op that has an owner):
// receives are cancelled and waited for until UCX lets go of their buffer
// (at most until `deadline`).
void shi_ucx_op_forget(struct shi_ucx_op *op, int64_t deadline);
void shi_ucx_op_forget_all(struct shi_ucx *ucx, int64_t deadline);
// Frees an op UCX no longer knows (its worker is gone).
void shi_ucx_op_drop(struct shi_ucx_op *op);
void shi_ucx_send_cb(void *request, ucs_status_t status, void *user);
void shi_ucx_recv_cb(void *request, ucs_status_t status,
    const ucp_tag_recv_info_t *info, void *user);
// Sends / posts a receive for `op` with its buffer and tag.
void shi_ucx_send(
    struct shi_ucx_op *op, const void *buf, size_t bytes, uint64_t tag);
void shi_ucx_recv(struct shi_ucx_op *op, void *buf, size_t bytes, uint64_t tag,
    uint64_t mask);

// ucx_mem.c: registered memory.
int shi_ucx_mem_register(
    struct shoal_comm *comm, void *base, size_t bytes, void **handle);
void      shi_ucx_mem_deregister(struct shoal_comm *comm, void *handle);
ucp_mem_h shi_ucx_memh_of(struct shi_ucx *ucx, const void *buf, size_t bytes);
void      shi_ucx_mem_release_all(struct shi_ucx *ucx);

// ucx_msg.c: data and point-to-point messages.
void shi_ucx_msg_send(struct shoal_comm *comm, shi_msg *msg);
int  shi_ucx_msg_recv(struct shoal_comm *comm, shi_msg *msg);
int  shi_ucx_p2p_post(struct shoal_comm *comm, shoal_request *req);
void shi_ucx_p2p_forget(struct shoal_comm *comm, shoal_request *req);
// The end of a message op (from its callback).
void shi_ucx_msg_done(struct shi_ucx_op *op, ucs_status_t status,
    const ucp_tag_recv_info_t *info);

// ucx_ctl.c: control messages and one-sided operations.
int  shi_ucx_ctl_post_all(struct shi_ucx *ucx);
void shi_ucx_ctl_send(
    struct shi_ucx *ucx, int peer, struct shi_ucx_ctl *c, shoal_request *req);
void shi_ucx_ctl_arrived(struct shi_ucx_op *op, ucs_status_t status,
    const ucp_tag_recv_info_t *info);
// A send of ours ended (a control message or a put's bytes).
void shi_ucx_sent(struct shi_ucx_op *op, ucs_status_t status);
void shi_ucx_rma_send(
    struct shoal_comm *comm, shoal_request *req, uint32_t win, uint64_t off);
void shi_ucx_put_written(struct shi_ucx_op *op, ucs_status_t status,
    const ucp_tag_recv_info_t *info);
void shi_ucx_say_abort(struct shi_ucx *ucx);
void shi_ucx_goodbye(struct shi_ucx *ucx, int64_t deadline);
// A peer's endpoint failed (from UCX's error handler).
void shi_ucx_peer_failed(struct shi_ucx *ucx, int peer, ucs_status_t status);

#endif
