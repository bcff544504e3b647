// A communicator's queue channel: the window that carries every queue's
// records, the rings in it, and what this rank keeps of its queues.
//
// Layout of each rank's window memory (registered as bytes):
//   [bell: 64 bytes][n credit lines of 64 bytes][n rings of `ring` bytes]
// Ring s on rank r is where rank s writes its records for r. Credit line
// r on rank s is where r tells s how far it has read ring s (the head):
// s may write up to `ring` bytes past it. Both are written by puts, so
// shared memory and TCP work alike (channel.c), or by plain stores where
// the peer's memory is mapped. The bell is the futex word this rank's
// waiters sleep on; a sender whose target is mapped rings it itself,
// else the target's progress does (a watch the engine calls).
//
// Who does what:
// - A sender (any thread of the rank) writes a record with window puts,
//   then raises one signal (send.c); it waits for credit when the ring
//   is full.
// - Draining (drain.c) reads the records that arrived, in signal order,
//   and moves items into their queue's store, answers asks (remote gets)
//   or parks them. It runs in whichever thread looks: a getter waiting
//   here, or the channel's service thread (service.c), which the
//   engine's progress wakes when a signal arrives (a watch hook), so that
//   a put never waits for this rank's application to call anything.
// - What draining owes peers (credits, answers, replies) is queued under
//   the channel's lock and sent after it is let go (flush).
#ifndef SHI_QUEUE_CHANNEL_H
#define SHI_QUEUE_CHANNEL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"
#include "queue/wire.h"
#include "shoal.h"

#define SHI_Q_ALIGN  128 // records start and end on this boundary
#define SHI_Q_CREDIT 64 // bytes of a credit line, and of the bell
// Freed item buffers a channel keeps for the next items: enough for a
// stream of puts in flight (each a fresh buffer otherwise: a page fault
// per 4 KiB, as much as the copy), within a bound of memory.
#define SHI_Q_POOL_N     16
#define SHI_Q_POOL_BYTES ((size_t) 64 << 20)

// A rank's bell, in its window memory.
struct shi_q_bell {
    _Atomic uint32_t events; // raised whenever anything may have changed
    _Atomic uint32_t sleepers; // threads in a futex wait on `events`
    _Atomic uint32_t lookers; // getters of this rank watching the rings
    // The service thread's own word: raised when records wait that no
    // getter looks at (a getter's drains do not wake it).
    _Atomic uint32_t service;
    _Atomic uint32_t service_sleeps;
    uint32_t         pad[11];
};

_Static_assert(sizeof(struct shi_q_bell) == SHI_Q_CREDIT, "one line");

struct shoal_queue_item {
    shoal_queue_item *next;
    int               kind;
    int               sender;
    shoal_dtype       dtype;
    int               ndim;
    int64_t           shape[SHOAL_QUEUE_MAX_DIMS];
    size_t            bytes, filled;
    unsigned          flags; // SHI_Q_F_*
    uint64_t          queue; // its queue (a reply: the ask it answers)
    unsigned char    *data;
    size_t            cap; // bytes allocated at data
    // Once handed to the application: the channel whose buffer pool takes
    // the data back when it is freed (holding a reference), or NULL.
    struct shi_q_channel *pool;
};

// One queue's items on this rank (a location of it).
struct shi_q_store {
    struct shi_q_store *next;
    uint64_t            id;
    shoal_queue_item   *head, *tail;
    size_t              count;
};

// A peer's ask that waits here for an item (TAKE) or for one to come
// (WAIT), until `deadline` (INT64_MAX: none).
struct shi_q_park {
    struct shi_q_park *next;
    int                from;
    uint32_t           what;
    uint64_t           ask, queue;
    int64_t            deadline;
};

// One of this rank's asks to a peer, until answered.
struct shi_q_ask {
    struct shi_q_ask *next;
    uint64_t          id;
    int               to;
    int               done;
    uint64_t          value; // ANSWER's
    shoal_queue_item *item; // a TAKE's reply
};

// A record owed to a peer, sent by the next flush.
struct shi_q_owed {
    struct shi_q_owed *next;
    int                dst;
    struct shi_q_rec   rec; // ANSWER
    shoal_queue_item  *item; // or this item, as a reply to ask rec.total
};

// What this rank reads of sender s's ring here.
struct shi_q_in {
    unsigned char    *ring;
    _Atomic uint64_t *signals; // raised by s once per record
    _Atomic uint64_t  done; // records read (written under the lock)
    uint64_t          head; // bytes read
    uint64_t          told; // head as last told s (credit_mu)
    uint64_t          pulled, pulled_told; // items read from s's memory
    shoal_queue_item *partial; // an item whose chunks are coming
    shoal_queue_item *tx, *tx_tail; // a transaction's items held back
};

// What this rank writes to peer d's ring for it.
struct shi_q_out {
    pthread_mutex_t send; // one record at a time
    uint64_t        tail; // bytes written
    uint64_t        pulls; // items d was asked to read from our memory
    // d's head for that ring, then how many of those items d has read
    // (d writes both).
    _Atomic uint64_t *credit;
    // Where d's memory is mapped here (this host's shared memory): d's
    // credit line for this rank, stored to directly, and d's bell. NULL: a
    // put, which d's progress applies under its communicator's lock, and
    // d's watch rings its bell.
    _Atomic uint64_t  *credit_there;
    struct shi_q_bell *bell_there;
};

// A name this rank opened, and its locations' hash.
struct shi_q_name {
    struct shi_q_name *next;
    uint64_t           id, where;
    char               name[256];
};

struct shi_q_channel {
    shoal_comm         *comm;
    shoal_window       *win;
    unsigned char      *base;
    size_t              ring, capacity, chunk;
    int                 n, rank;
    pthread_mutex_t     mu; // everything below that is not atomic
    pthread_mutex_t     credit_mu; // credit pushes, in order
    struct shi_q_bell  *bell; // this rank's, at the start of its memory
    _Atomic uint64_t    watched; // the sum of signals the watch last saw
    int                 listening; // the engine runs the watch (TCP)
    struct shi_q_in    *in;
    struct shi_q_out   *out;
    struct shi_q_store *stores;
    struct shi_q_park  *parks;
    // Asks answered at the end of the drain that read them (sizes, and
    // gets that may not wait): items that were put before the ask was
    // sent may still sit in other senders' rings when it is read.
    struct shi_q_park *deferred;
    struct shi_q_ask  *asks;
    struct shi_q_owed *owed, *owed_tail;
    struct shi_q_name *names;
    uint64_t           next_ask, unnamed;
    char               fault[SHI_ERROR_TEXT_MAX]; // a peer's bad record
    atomic_int         faulty; // its status (SHOAL_EPROTO), set after
    atomic_int         closed; // the communicator is gone
    atomic_int         refs; // the communicator, each queue, each item out
    // Buffers of large items the application freed, for the next ones:
    // fresh memory costs a page fault per 4 KiB, as much as the copy.
    pthread_mutex_t pool_mu;
    unsigned char  *pool_buf[SHI_Q_POOL_N];
    size_t          pool_cap[SHI_Q_POOL_N];
    size_t          pool_bytes; // kept in all, at most SHI_Q_POOL_BYTES
    int             stop; // the service thread ends
    pthread_t       service;
};

// The channel of `comm`, or NULL when not open.
struct shi_q_channel *shi_q_channel_of(shoal_comm *comm);

// Wakes every thread that waits on the channel (something changed).
void shi_q_kick(struct shi_q_channel *ch);

// Rings `dst`'s bell after a record went there, where it is mapped and
// no getter of dst watches its rings anyway.
void shi_q_ring(struct shi_q_channel *ch, int dst);

// Whether a record waits in some ring (signalled, not yet read).
int shi_q_pending(struct shi_q_channel *ch);

// A getter watches the rings (on 1) or stops (0). One that stops while
// records wait rings the bell: the service thread takes over.
void shi_q_look(struct shi_q_channel *ch, int on);

// Waits until `events` differs from `seen`, at most `ns`.
void shi_q_wait_events(struct shi_q_channel *ch, uint32_t seen, int64_t ns);

// Wakes the service thread; the service thread waits for that.
void shi_q_wake_service(struct shi_q_bell *bell);
void shi_q_wait_service(struct shi_q_channel *ch, uint32_t seen, int64_t ns);

// SHOAL_OK while the channel and peer `peer` (-1: none) can be used, else
// the status with its message recorded ("op: ...").
int shi_q_usable(struct shi_q_channel *ch, int peer, const char *op);

// Takes and drops a reference (the last one frees the channel).
void shi_q_ref(struct shi_q_channel *ch);
void shi_q_unref(struct shi_q_channel *ch);

// send.c: writes an item (data, meta and flags as in rec) to `dst`,
// chunked to fit its ring; `deadline` bounds the wait for room before
// the first byte goes (SHOAL_EAGAIN), not after. Without the lock. A large
// item dst reads from `data` itself: with `pull` NULL the call waits
// until it has; else it returns at once with *pull the number dst's read
// count must reach (shi_q_pulled), 0 when nothing is left to wait for.
int shi_q_send_item(struct shi_q_channel *ch, int dst, struct shi_q_rec *rec,
    const void *data, int64_t deadline, uint64_t *pull);

// Whether `dst` has read this rank's n-th item to read.
int shi_q_pulled(struct shi_q_channel *ch, int dst, uint64_t n);
// Writes one record without data (ASK, ANSWER): waits for room.
int shi_q_send_rec(struct shi_q_channel *ch, int dst, struct shi_q_rec *rec,
    int64_t deadline);

// drain.c, under ch->mu: reads every record that arrived; returns how many.
int shi_q_drain(struct shi_q_channel *ch);
// The store of queue `id`, made if `make` (NULL if not, or out of memory).
struct shi_q_store *shi_q_store(
    struct shi_q_channel *ch, uint64_t id, int make);
// Takes the first item of `st` (NULL if empty).
shoal_queue_item *shi_q_pop(struct shi_q_channel *ch, struct shi_q_store *st);
// Answers the parks whose time ran out; returns the next deadline.
int64_t shi_q_expire(struct shi_q_channel *ch, int64_t now);
// Owes `dst` an ANSWER to `ask`.
void shi_q_owe_answer(
    struct shi_q_channel *ch, int dst, uint64_t ask, uint64_t value);

// Sends what draining owes (credits, answers, replies). Without the lock.
void shi_q_flush(struct shi_q_channel *ch);

// service.c: the service thread.
int  shi_q_service_start(struct shi_q_channel *ch);
void shi_q_service_stop(struct shi_q_channel *ch);

void shi_q_item_free_list(shoal_queue_item *it);

// Memory for an item of `bytes` (from the pool where one fits), its size
// in *cap; NULL when out of memory. Under ch->mu or not.
unsigned char *shi_q_buf_take(
    struct shi_q_channel *ch, size_t bytes, size_t *cap);

// Hands an item to the application: its data returns to ch's pool when
// freed.
void shi_q_item_hand_out(struct shi_q_channel *ch, shoal_queue_item *it);

// Rings peer s's bell after its credit moved, where it is mapped (a
// sender waiting for room sleeps on it).
void shi_q_ring_credit(struct shi_q_channel *ch, int s);

#endif
