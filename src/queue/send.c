// Writing records into a peer's ring (channel.h): window puts of the
// record, then one signal. The ring is the peer's: this rank knows how
// far it wrote (tail) and reads how far the peer has read (the credit
// the peer puts into this rank's memory); it writes only into the space
// between. A record never crosses the ring's end: PAD fills up to it.
#include <sched.h>
#include <string.h>

#include "base/clock.h"
#include "queue/channel.h"
#include "rma/window.h"
#include "transport/transport.h"

// Items from this size up are read by the location from the sender's
// memory where it can (one copy, through the kernel or in place), instead
// of passing through the ring (two copies).
#define PULL_MIN ((uint64_t) 512 << 10)

static size_t
rounded(size_t bytes)
{
    return (bytes + SHI_Q_ALIGN - 1) / SHI_Q_ALIGN * SHI_Q_ALIGN;
}

// Free bytes of this rank's ring at `dst`. The credit only grows. Where
// `dst` is mapped here it stores the credit itself, atomically; else its
// puts of it are applied by this rank's progress under the
// communicator's lock, under which it is read.
static size_t
room(struct shi_q_channel *ch, int dst)
{
    struct shi_q_out *out = &ch->out[dst];
    uint64_t          head;

    if (out->credit_there != NULL) {
        head = atomic_load_explicit(out->credit, memory_order_acquire);
    } else {
        pthread_mutex_lock(&ch->comm->lock);
        head = *(volatile uint64_t *) (void *) out->credit;
        pthread_mutex_unlock(&ch->comm->lock);
    }
    uint64_t used = out->tail - head;

    return used > ch->ring ? 0 : ch->ring - (size_t) used;
}

// Bytes a record of `bytes` takes at the tail, PAD before it included.
static size_t
needed(struct shi_q_channel *ch, int dst, size_t bytes)
{
    size_t pos = (size_t) (ch->out[dst].tail % ch->ring);

    return ch->ring - pos < bytes ? ch->ring - pos + bytes : bytes;
}

// Waits until `bytes` fit at `dst`, the deadline passes (SHOAL_EAGAIN) or
// the channel or `dst` fails. The wait backs off: a full ring empties at
// the pace of its reader, whom spinning would only slow down.
static int
wait_room(struct shi_q_channel *ch, int dst, size_t bytes, int64_t deadline)
{
    int st;

    for (int tries = 0;; tries++) {
        // The location rings this rank's bell when it moves the credit,
        // where it maps this rank; else its put of the credit is seen at
        // the next look (each sleep is at most 1 ms).
        uint32_t seen = atomic_load(&ch->bell->events);
        if (room(ch, dst) >= needed(ch, dst, bytes)) {
            break;
        }
        if ((st = shi_q_usable(ch, dst, "queue_put")) != SHOAL_OK) {
            return st;
        }
        if (deadline != SHI_NO_DEADLINE && shi_now_ns() >= deadline) {
            return shi_error(SHOAL_EAGAIN,
                "queue_put: no room in rank %d's ring for this rank "
                "(SHOAL_QUEUE_RING_BYTES=%zu) before the time ran out",
                dst, ch->ring);
        }
        if (tries < 64) {
            sched_yield();
            continue;
        }
        int64_t left
            = deadline == SHI_NO_DEADLINE ? 1000000 : deadline - shi_now_ns();
        shi_q_wait_events(ch, seen, left < 1000000 ? left : 1000000);
    }
    return SHOAL_OK;
}

// Puts `bytes` at the tail of the ring at `dst` (in one or two parts).
static int
put_at_tail(struct shi_q_channel *ch, int dst, const void *a, size_t abytes,
    const void *b, size_t bbytes)
{
    size_t off = (size_t) (ch->n + 1) * SHI_Q_CREDIT
        + (size_t) ch->rank * ch->ring
        + (size_t) (ch->out[dst].tail % ch->ring);
    int st = shoal_window_put(ch->win, a, abytes, SHOAL_UINT8, dst, off);

    if (st == SHOAL_OK && bbytes > 0) {
        st = shoal_window_put(
            ch->win, b, bbytes, SHOAL_UINT8, dst, off + abytes);
    }
    return st;
}

// Writes one record (header `rec`, then `bytes` of `data`) whose room is
// there, and signals it.
static int
write_rec(struct shi_q_channel *ch, int dst, struct shi_q_rec *rec,
    const void *data, size_t bytes)
{
    size_t total = rounded(sizeof(*rec) + bytes);
    size_t pos   = (size_t) (ch->out[dst].tail % ch->ring);
    int    st;

    if (ch->ring - pos < total) {
        struct shi_q_rec pad
            = { .type = SHI_Q_PAD, .bytes = (uint32_t) (ch->ring - pos) };
        if ((st = put_at_tail(ch, dst, &pad, sizeof(pad), NULL, 0)) != SHOAL_OK
            || (st = shoal_window_signal(ch->win, dst)) != SHOAL_OK) {
            return st;
        }
        ch->out[dst].tail += ch->ring - pos;
    }
    rec->bytes = (uint32_t) total;
    rec->part  = bytes;
    if ((st = put_at_tail(ch, dst, rec, sizeof(*rec), data, bytes))
        != SHOAL_OK) {
        return st;
    }
    ch->out[dst].tail += total;
    if ((st = shoal_window_signal(ch->win, dst)) == SHOAL_OK) {
        shi_q_ring(ch, dst);
    }
    return st;
}

int
shi_q_send_rec(
    struct shi_q_channel *ch, int dst, struct shi_q_rec *rec, int64_t deadline)
{
    int st;

    pthread_mutex_lock(&ch->out[dst].send);
    st = wait_room(ch, dst, sizeof(*rec), deadline);
    if (st == SHOAL_OK) {
        st = write_rec(ch, dst, rec, NULL, 0);
    }
    pthread_mutex_unlock(&ch->out[dst].send);
    return st;
}

// Whether `dst` reads an item of `bytes` from this rank's memory: peers
// of one host's shared memory that can read each other's memory (the
// channel over TCP keeps to its rings), for large items only.
static int
pullable(struct shi_q_channel *ch, int dst, uint64_t bytes)
{
    return bytes >= PULL_MIN && dst != ch->rank && ch->comm->cma_ok
        && !ch->win->messages && ch->out[dst].credit_there != NULL;
}

// Waits until `dst` has read `n` of the items it was asked to pull (it
// rings this rank's bell when its count moves). Meanwhile this thread
// drains this rank's own rings: the location may itself be waiting in a
// put to this rank, and would otherwise wait for our service thread.
static int
wait_pulled(struct shi_q_channel *ch, int dst, uint64_t n)
{
    _Atomic uint64_t *pulled = ch->out[dst].credit + 1;
    int               st     = SHOAL_OK;

    shi_q_look(ch, 1);
    for (int tries = 0;; tries++) {
        uint32_t seen = atomic_load(&ch->bell->events);
        if (atomic_load_explicit(pulled, memory_order_acquire) >= n) {
            break;
        }
        if ((st = shi_q_usable(ch, dst, "queue_put")) != SHOAL_OK) {
            break;
        }
        pthread_mutex_lock(&ch->mu);
        int moved = shi_q_drain(ch);
        pthread_mutex_unlock(&ch->mu);
        shi_q_flush(ch);
        if (moved > 0 || tries < 16) {
            sched_yield();
            continue;
        }
        shi_q_look(ch, 0);
        shi_q_wait_events(ch, seen, 1000000);
        shi_q_look(ch, 1);
    }
    shi_q_look(ch, 0);
    return st;
}

// An item the location reads from `data` itself: the record carries the
// region, and the put returns once the location has read it.
static int
send_pulled(struct shi_q_channel *ch, int dst, struct shi_q_rec *rec,
    const void *data, int64_t deadline, uint64_t *pull)
{
    struct shi_tp_region region;
    uint64_t             n = 0;
    int                  st;

    pthread_mutex_lock(&ch->out[dst].send);
    st = wait_room(ch, dst, rounded(sizeof(*rec) + sizeof(region)), deadline);
    if (st == SHOAL_OK) {
        ch->comm->tp->mem_expose(ch->comm, data, rec->total, &region);
        rec->type = SHI_Q_ITEM;
        rec->flags |= SHI_Q_F_PULL;
        st = write_rec(ch, dst, rec, &region, sizeof(region));
        n  = ++ch->out[dst].pulls;
    }
    pthread_mutex_unlock(&ch->out[dst].send);
    if (pull != NULL && st == SHOAL_OK) {
        *pull = n; // the caller waits
        return st;
    }
    return st == SHOAL_OK ? wait_pulled(ch, dst, n) : st;
}

int
shi_q_pulled(struct shi_q_channel *ch, int dst, uint64_t n)
{
    return atomic_load_explicit(ch->out[dst].credit + 1, memory_order_acquire)
        >= n;
}

int
shi_q_send_item(struct shi_q_channel *ch, int dst, struct shi_q_rec *rec,
    const void *data, int64_t deadline, uint64_t *pull)
{
    if (pull != NULL) {
        *pull = 0; // through the ring: done on return
    }
    // A reply to a remote get goes through the ring: the service thread
    // that sends it must not wait on the asker.
    if (!(rec->flags & SHI_Q_F_REPLY) && pullable(ch, dst, rec->total)) {
        return send_pulled(ch, dst, rec, data, deadline, pull);
    }
    const unsigned char *p    = data;
    size_t               left = (size_t) rec->total;
    size_t               part = left < ch->chunk ? left : ch->chunk;
    int                  st;

    pthread_mutex_lock(&ch->out[dst].send);
    st = wait_room(ch, dst, rounded(sizeof(*rec) + part), deadline);
    if (st == SHOAL_OK) {
        rec->type = SHI_Q_ITEM;
        st        = write_rec(ch, dst, rec, p, part);
    }
    // The first piece is out: the rest follows whatever the deadline.
    struct shi_q_rec more = { .type = SHI_Q_CHUNK, .queue = rec->queue };
    while (st == SHOAL_OK && (left -= part, p += part, left > 0)) {
        part = left < ch->chunk ? left : ch->chunk;
        st = wait_room(ch, dst, rounded(sizeof(more) + part), SHI_NO_DEADLINE);
        if (st == SHOAL_OK) {
            st = write_rec(ch, dst, &more, p, part);
        }
    }
    pthread_mutex_unlock(&ch->out[dst].send);
    return st;
}
