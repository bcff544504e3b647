// The transport interface: how a communicator's ranks reach each other.
//
// A transport is one folder under src/transport/ exporting one table of
// operations (struct shi_transport_ops). The communicator holds the table
// it was created with and the transport's private state (comm->tp_state,
// opaque to everything outside the folder); the engine and the collective
// layer call the table and never ask which transport they run on.
//
// Two classes exist, and an algorithm names the class it runs on:
//  - SHI_TP_MAPPED: every peer's memory is mapped here (shared memory);
//    the mapped-memory algorithms work in their own area of it, which
//    the transport makes room for (coll_area).
//  - SHI_TP_MESSAGES: peers are reached by messages only (TCP, UCX); message
//    schedules (src/algo/net) run over msg_number/msg_send/msg_recv.
//
// Every operation is called with the communicator; "under the lock" means
// with comm->lock held (the engine's lock), which serialises a transport's
// progress. An operation a transport does not provide is NULL only where
// the contract below says so.
//
// What a transport sees of the communicator and of a request is view.h's;
// calls the other way (a transport telling the layers above something) go
// only through the functions upcalls.h declares.
#ifndef SHI_TRANSPORT_H
#define SHI_TRANSPORT_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/unix_sock.h"
#include "shoal.h"
#include "transport/view.h"

struct shoal_comm;
struct shi_msg;

enum shi_tp_class {
    SHI_TP_MAPPED = 0,
    SHI_TP_MESSAGES,
};

// What creation learned about the peers before the transport connects
// them (bootstrap.c gathers it through the store).
struct shi_tp_peer_info {
    char sock[SHI_UNIX_NAME_MAX]; // its listening unix socket
    int  pid;
};

// Room a mapped transport makes in the memory every rank maps, for the
// collective layer (the mapped-memory family's area, algo/mapped/area.h):
// its size and its first bytes as this rank planned them. The creating
// rank's plan wins: the transport sizes the area from it and writes its
// head at the area's start before any peer maps it, so every rank reads
// the creator's geometry there. What else the area holds is not the
// transport's business.
#define SHI_TP_AREA_HEAD 64
struct shi_tp_area {
    uint64_t      bytes;
    unsigned char head[SHI_TP_AREA_HEAD];
};

struct shi_tp_boot {
    int                            one_host; // every rank on this host
    int                            unix_listen_fd; // ours, or -1
    const struct shi_tp_peer_info *peers; // comm->size entries
    struct shi_tp_area             area; // mapped transports only
};

// A local region as its peers learn it (mem_expose writes it; it crosses
// to the peers as bytes, so a peer checks every field before use).
struct shi_tp_region {
    uint64_t addr; // in the owner's address space
    uint64_t bytes;
    uint64_t heap_off; // offset + 1 in the owner's shared heap, 0: not in it
    int32_t  owner; // its rank (its process: comm->peers[owner].pid)
};

struct shi_transport_ops {
    const char       *name; // "shm", "tcp": for logs and messages
    enum shi_tp_class klass;

    // --- setup and teardown ---------------------------------------------
    // Whether SHOAL_TRANSPORT=auto should take this transport between
    // hosts, as this rank sees its machine (UCX: an RDMA device is here);
    // auto does where every rank says so. NULL: never (auto's own choices).
    int (*wanted_by_auto)(void);
    // Connects to every peer and builds the private state, with comm's
    // rank, size, peers[].pid/host, secret and store ready; blocking steps
    // wait in rendezvous slices (shi_rdv_until/shi_rdv_sliced), so that a
    // peer that dies during creation fails it at once. On failure the
    // state built so far is left for teardown.
    int (*setup)(struct shoal_comm *comm, const struct shi_tp_boot *boot,
        int64_t deadline);
    // Starts what runs beside the engine (the shm watcher of peers); after
    // setup and the collective layer's own setup.
    int (*start)(struct shoal_comm *comm);
    // Stops what start started: first thing at destruction, before the
    // engine stops.
    void (*stop)(struct shoal_comm *comm);
    // Frees the state, closes connections, drops undelivered messages;
    // after the engine stopped. Accepts a state partly built.
    void (*teardown)(struct shoal_comm *comm);

    // --- reaching peers -------------------------------------------------
    // Whether this rank's transport reaches `peer` (every rank of the
    // communicator, for both transports today).
    int (*reaches)(const struct shoal_comm *comm, int peer);
    // Where a peer is reached, for messages ("host:port" over TCP, "over
    // UCX"), or "" where nothing more than its host is worth saying.
    const char *(*peer_address)(const struct shoal_comm *comm, int peer);

    // --- point to point -------------------------------------------------
    // Starts a send or receive request (kind, peer or SHOAL_ANY_SOURCE,
    // tag, buf, bytes filled in). It completes through
    // shi_transport_complete, perhaps before p2p_post returns. Returns 1
    // where p2p_post already moved all it could of the request (it looked
    // at the request's peer): the engine then skips its pass over
    // everything at submission, which costs a small send or receive more
    // than the message itself. 0: the engine runs that pass. Under the
    // lock.
    int (*p2p_post)(struct shoal_comm *comm, shoal_request *req);
    // Completes a dense send or named receive at once where that takes no
    // queue. A send: its message fits one slot, no earlier send to that
    // peer waits, a slot is free; it is written into the peer's channel. A
    // receive: its one-slot message of the same size has arrived and no
    // receive posted before it could want that message; it is copied out.
    // Returns 1 when done (the request is complete: it never enters the
    // transport's queues, and its seq and source are set), 0 when it must
    // be posted. Under the lock. NULL where every request is posted.
    int (*p2p_now)(struct shoal_comm *comm, shoal_request *req);
    // Whether p2p_post takes requests whose bytes lie in a strided layout
    // (req->layout); where 0 the layers above pack them first.
    int p2p_strided;
    // A posted send or receive ends before the transport finished it (the
    // communicator failed, or its deadline passed): take it out of the
    // transport's queues. Under the lock. NULL where abort_flush already
    // dropped everything of a failed operation.
    void (*p2p_forget)(struct shoal_comm *comm, shoal_request *req);

    // --- progress -------------------------------------------------------
    // Moves whatever can move (messages, peers' news); returns units of
    // progress (0: nothing moved). Under the lock.
    int (*progress)(struct shoal_comm *comm);
    // Looks for a failure another rank announced through the transport
    // (shm: the abort slot of the segment) and adopts it with
    // shi_comm_abort; returns 1 if there was one. NULL where peers' aborts
    // arrive with progress.
    int (*poll_abort)(struct shoal_comm *comm);
    // Whether an idle communicator learns of a dead peer only by progress
    // (TCP: a closed socket is seen when read), so a wait outside the
    // engine (a split) must call progress now and then.
    int deaths_need_progress;

    // --- waiting and waking ---------------------------------------------
    // A thread that found nothing to do sleeps in three calls around the
    // engine's last look: token = sleep_arm(); (look; if nothing moved:)
    // sleep_wait(token, ns); sleep_disarm(). When arm_before_look is set,
    // sleep_arm comes before the look (shm: peers ring a doorbell only for
    // announced sleepers, so the announcement must precede the look);
    // otherwise it comes under the lock right after the look, and only if
    // the thread will sleep (TCP: threads of this rank share one epoll set,
    // and progress wakes announced sleepers whenever it moved something,
    // since it may have taken their data). sleep_wait returns on a wake-up,
    // on news from a peer, or after timeout_ns; without the lock.
    int arm_before_look;
    uint32_t (*sleep_arm)(struct shoal_comm *comm);
    void (*sleep_wait)(
        struct shoal_comm *comm, uint32_t token, int64_t timeout_ns);
    void (*sleep_disarm)(struct shoal_comm *comm);
    // Wakes rank `rank`'s sleeping threads (only if announced, unless
    // `force`). Where peers are woken by the data they receive, only our
    // own rank is woken.
    void (*wake)(struct shoal_comm *comm, int rank, int force);
    // Wakes every announced sleeper of every peer (after publishing
    // something they may wait for).
    void (*wake_peers)(struct shoal_comm *comm);
    // Publishes the CPU the calling thread runs on and returns how many
    // peers last published the same CPU: a waiter spinning there only
    // keeps them from running. Fills `peers` (if not NULL) with the CPUs
    // the peers last published, and `lower` (if not NULL) with how many of
    // those on this CPU rank below this one. NULL where peers are on other
    // hosts or their CPUs are not known.
    int (*peers_on_my_cpu)(
        struct shoal_comm *comm, cpu_set_t *peers, int *lower);

    // --- failure and goodbye --------------------------------------------
    // The communicator just failed with `status` and `text` (any thread,
    // lock held or not): tell the peers, or arrange for the engine to.
    void (*abort_notify)(
        struct shoal_comm *comm, int status, const char *text);
    // Under the lock, at every engine pass while failed: sends what
    // abort_notify left to send and forgets queued messages (their
    // buffers' owners are failing). NULL if abort_notify did it all.
    void (*abort_flush)(struct shoal_comm *comm);
    // Tells every peer this rank destroys its communicator (so they tell a
    // clean exit from a crash), waiting at most until `deadline`. Under
    // the lock.
    void (*goodbye)(struct shoal_comm *comm, int64_t deadline);
    // Over a message transport: a peer that does not acknowledge what we
    // sent for over a second (its link or host is down); returns 1 with its
    // rank and the evidence. NULL where a dead peer is always seen.
    int (*unreachable)(
        struct shoal_comm *comm, int *peer, char *why, size_t len);

    // --- memory ---------------------------------------------------------
    // The range shoal_alloc hands out from: in the segment every peer maps
    // (shm: *shared 1, pages given back with MADV_REMOVE), or private
    // memory (TCP: *shared 0, MADV_DONTNEED). Reserved, not backed, until
    // used.
    void (*heap_region)(struct shoal_comm *comm, unsigned char **base,
        size_t *bytes, int *shared);
    // Describes [base, base + bytes) of this rank's memory for its peers.
    void (*mem_expose)(struct shoal_comm *comm, const void *base, size_t bytes,
        struct shi_tp_region *out);
    // A direct pointer to `bytes` at `off` of a peer's exposed region where
    // this transport maps it (shm: the region lies in the peer's shared
    // heap), else NULL (then mem_read/mem_write, or messages). Checks the
    // region against what this rank maps.
    void *(*mem_view)(struct shoal_comm *comm, const struct shi_tp_region *r,
        size_t off, size_t bytes);
    // Copies between a peer's exposed region and local memory without the
    // peer's help (shm: single copy through the kernel). NULL where the
    // transport cannot; an error aborts nothing (the caller decides).
    int (*mem_read)(struct shoal_comm *comm, const struct shi_tp_region *r,
        size_t off, void *dst, size_t bytes);
    int (*mem_write)(struct shoal_comm *comm, const struct shi_tp_region *r,
        size_t off, const void *src, size_t bytes);
    // Prepares [base, base + bytes) for repeated use (shoal_mem_register;
    // e.g. a remote-access key), handing back what it made in *handle, and
    // releases it again. NULL where the transport has nothing to prepare.
    int (*mem_register)(
        struct shoal_comm *comm, void *base, size_t bytes, void **handle);
    void (*mem_deregister)(struct shoal_comm *comm, void *handle);

    // --- the collective area (SHI_TP_MAPPED only; NULL otherwise) -------
    // The area made for boot->area at setup, in this process's mapping,
    // with its size (the creator's) in *bytes. NULL before setup mapped it.
    unsigned char *(*coll_area)(struct shoal_comm *comm, uint64_t *bytes);

    // --- messages (SHI_TP_MESSAGES only; NULL otherwise) ----------------
    // Gives a data message its position on the channel to or from
    // msg->peer: the k-th message numbered for sending to a peer meets the
    // k-th numbered for receiving there. Under the lock.
    void (*msg_number)(struct shoal_comm *comm, struct shi_msg *msg, int send);
    // Queues a numbered data message; msg->done once its bytes are out.
    void (*msg_send)(struct shoal_comm *comm, struct shi_msg *msg);
    // Posts a numbered receive; returns 1 if it completed at once.
    int (*msg_recv)(struct shoal_comm *comm, struct shi_msg *msg);

    // --- one-sided (windows; SHI_TP_MESSAGES only, NULL otherwise) ------
    // Where peers' memory is not mapped, windows send their puts and
    // signals here. Sends req (kind SHI_OP_PUT: req->bytes from
    // req->sendbuf to byte `off` of window `win` at req->peer; kind
    // SHI_OP_SIGNAL: counter `off` of window `win` at req->peer, 0 the
    // application's signals, 1 deregistration's fence) behind every put
    // and signal sent to that peer before, and completes req through
    // shi_transport_complete once its bytes are out. The target applies it
    // in its progress, in send order, through shi_transport_put_target and
    // shi_transport_signal_arrived. Under the lock.
    void (*rma_send)(struct shoal_comm *comm, shoal_request *req, uint32_t win,
        uint64_t off);
};

// The transports.
extern const struct shi_transport_ops shi_shm_transport;
extern const struct shi_transport_ops shi_tcp_transport;
#if SHOAL_HAVE_UCX
extern const struct shi_transport_ops shi_ucx_transport;
#endif

#endif
