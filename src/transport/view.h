// What a transport sees of a communicator and of a request, and nothing
// more: the communicator's identity, peers, its own state slot and the
// failure it may report, and a point-to-point or one-sided request's
// peer, tag and buffer. Core defines struct shoal_comm and struct
// shoal_request (core/comm.h, core/request.h) with these fields first, as
// a union of this view and the same fields unnamed, so that core names
// them directly (comm->rank) and a transport reaches them through
// shi_tp_comm() and shi_tp_req(): a cast the C standard defines for a
// struct's first member. The transport thus never includes core's
// headers, and core may change every other field freely.
#ifndef SHI_TRANSPORT_VIEW_H
#define SHI_TRANSPORT_VIEW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "platform/auth.h"
#include "platform/strided.h"
#include "shoal.h"

enum shi_peer_state {
    SHI_PEER_LIVE = 0,
    SHI_PEER_LEFT, // destroyed its communicator (said goodbye)
    SHI_PEER_DEAD, // connection lost without a goodbye
};

struct shi_peer {
    atomic_int state;
    int        pid;
    char       host[64];
};

// The communicator, as a transport sees it (see the top of the file).
#define SHI_TP_COMM_FIELDS                                                    \
    char             name[64];                                                \
    int              rank;                                                    \
    int              size;                                                    \
    int64_t          timeout_ms;                                              \
    shi_secret       secret;                                                  \
    char             prefix[256]; /* store key prefix of this comm */         \
    struct shi_peer *peers;                                                   \
    void            *tp_state; /* the transport's private state */            \
    /* Every rank can read every other's memory (process_vm_readv). */        \
    int      cma_ok;                                                          \
    uint64_t p2p_seq; /* point-to-point operations numbered so far */         \
    int      p2p_active; /* incomplete sends and receives */                  \
    /* Set while the engine runs a post or a pass for a thread that must */   \
    /* not stall in it: a non-blocking operation's issue (its caller goes */  \
    /* on to issue what the peers wait for), or the progress thread while */  \
    /* the application issues (its next call would wait for the lock). A */   \
    /* transport then only matches a message whose copy takes long (the */    \
    /* single-copy read of a large message) and sets long_copy_left; a */     \
    /* later pass copies it (engine.c says which). */                         \
    int defer_long_copies;                                                    \
    int long_copy_left;                                                       \
    /* Failure: the first outside fault aborts the communicator. */           \
    atomic_int      failed; /* 0, or the status of the fault */               \
    pthread_mutex_t err_lock;                                                 \
    char            fail_text[SHI_ERROR_TEXT_MAX];

struct shi_tp_comm {
    SHI_TP_COMM_FIELDS
};

// The view of `comm` (const where comm is).
#define shi_tp_comm(comm)                                                     \
    _Generic((comm),                                                          \
        const struct shoal_comm *: (const struct shi_tp_comm *) (const void *) (comm), \
        default: (struct shi_tp_comm *) (void *) (comm))

// Whether this pass leaves a copy that takes long (defer_long_copies);
// when it does, notes that one was left.
static inline int
shi_tp_leave_long_copy(struct shi_tp_comm *tc)
{
    if (tc->defer_long_copies) {
        tc->long_copy_left = 1;
    }
    return tc->defer_long_copies;
}

enum shi_op_kind {
    SHI_OP_SEND = 1,
    SHI_OP_RECV,
    SHI_OP_BARRIER,
    SHI_OP_BCAST,
    SHI_OP_ALLREDUCE,
    SHI_OP_REDUCE,
    SHI_OP_ALLGATHER,
    SHI_OP_ALLGATHERV,
    SHI_OP_REDUCE_SCATTER,
    SHI_OP_REDUCE_SCATTERV,
    SHI_OP_ALLTOALL,
    SHI_OP_ALLTOALLV,
    SHI_OP_GATHER,
    SHI_OP_SCATTER,
    // One-sided operations on a window (src/rma): driven by their own step
    // function (shoal_request.step), not by a transport or the collective
    // driver.
    SHI_OP_PUT,
    SHI_OP_SIGNAL,
    SHI_OP_WAIT_SIGNAL,
};

// A request, as a transport sees it (see the top of the file).
#define SHI_TP_REQ_FIELDS                                                     \
    int      kind; /* enum shi_op_kind */                                     \
    uint64_t seq; /* collective number or point-to-point number */            \
    int      peer; /* p2p peer (SHOAL_ANY_SOURCE too), or broadcast root */   \
    int      source; /* receive: the sender matched, -1 until then */         \
    int      tag;                                                             \
    unsigned char *buf;                                                       \
    size_t         bytes;                                                     \
    /* Point to point: where the `bytes` bytes lie around buf when they */    \
    /* are not one dense block (owned by the caller until completion; */      \
    /* NULL: dense). Only transports with p2p_strided take one. */            \
    const shi_strided *layout;                                                \
    size_t             done;                                                  \
    size_t             count;                                                 \
    int                dtype;                                                 \
    int                blocked_on; /* the rank it waits for, -1 if none */    \
    /* Collectives with a send and a receive buffer: `buf` is the */          \
    /* receive buffer, `count` the per-rank count. */                         \
    const unsigned char *sendbuf;                                             \
    void *xfer; /* over TCP: the message carrying a p2p or one-sided op */    \
    /* Over shared memory, a large send the receiver reads from our */        \
    /* memory: the channel slot + 1 it announced (complete once the */        \
    /* slot is consumed), 0 otherwise. */                                     \
    uint64_t p2p_read_slot;                                                   \
    /* On one per-kind queue (shi_req_queue). */                              \
    shoal_request *qnext;

struct shi_tp_req {
    SHI_TP_REQ_FIELDS
};

// The view of `req` (const where req is).
#define shi_tp_req(req)                                                       \
    _Generic((req),                                                           \
        const shoal_request *: (const struct shi_tp_req *) (const void *) (req), \
        default: (struct shi_tp_req *) (void *) (req))

// A FIFO of requests through `qnext`, for every layer that holds them.
typedef struct shi_req_queue {
    shoal_request *head, *tail;
} shi_req_queue;

static inline void
shi_queue_push(shi_req_queue *q, shoal_request *req)
{
    shi_tp_req(req)->qnext = NULL;
    if (q->tail != NULL) {
        shi_tp_req(q->tail)->qnext = req;
    } else {
        q->head = req;
    }
    q->tail = req;
}

static inline void
shi_queue_remove(shi_req_queue *q, shoal_request *req)
{
    shoal_request *prev = NULL;

    for (shoal_request *r = q->head; r != NULL;
         prev = r, r = shi_tp_req(r)->qnext) {
        if (r != req) {
            continue;
        }
        if (prev != NULL) {
            shi_tp_req(prev)->qnext = shi_tp_req(r)->qnext;
        } else {
            q->head = shi_tp_req(r)->qnext;
        }
        if (q->tail == r) {
            q->tail = prev;
        }
        shi_tp_req(r)->qnext = NULL;
        return;
    }
}

#endif
