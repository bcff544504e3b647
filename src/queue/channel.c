// Opening and closing a communicator's queue channel, and the waiting and
// waking its threads share (channel.h says how the channel works).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/env.h"
#include "core/engine.h"
#include "platform/futex.h"
#include "queue/channel.h"
#include "rma/window.h"

// Ring sizes: big enough for a 1 MiB item in four pieces in flight, small
// enough that 64 ranks cost 64 MiB of (lazily touched) heap each.
#define RING_DEFAULT  (1LL << 20)
#define RING_MIN      (16LL << 10)
#define RING_MAX      (1LL << 30)
#define CAPACITY_MAX  (1LL << 32)
#define POOL_MIN      ((size_t) 64 << 10) // smaller items: malloc alone
#define POOL_N        SHI_Q_POOL_N
#define WAIT_SLICE_NS (100 * 1000000LL) // longest futex wait between looks

struct shi_q_channel *
shi_q_channel_of(shoal_comm *comm)
{
    return comm != NULL ? comm->queue_channel : NULL;
}

static void
ring_bell(struct shi_q_bell *bell)
{
    // Sequentially consistent, paired with shi_q_wait_events: a waiter
    // counts itself before its last look, a ringer bumps before reading
    // the count, so one of them sees the other.
    atomic_fetch_add(&bell->events, 1);
    if (atomic_load(&bell->sleepers) > 0) {
        shi_futex_wake_all(&bell->events);
    }
}

void
shi_q_wake_service(struct shi_q_bell *bell)
{
    atomic_fetch_add(&bell->service, 1); // as ring_bell
    if (atomic_load(&bell->service_sleeps) > 0) {
        shi_futex_wake_all(&bell->service);
    }
}

void
shi_q_kick(struct shi_q_channel *ch)
{
    ring_bell(ch->bell);
}

void
shi_q_ring(struct shi_q_channel *ch, int dst)
{
    struct shi_q_bell *bell = ch->out[dst].bell_there;

    if (bell != NULL && atomic_load(&bell->lookers) == 0) {
        ring_bell(bell); // a getter that sleeps
        shi_q_wake_service(bell);
    }
}

int
shi_q_pending(struct shi_q_channel *ch)
{
    for (int s = 0; s < ch->n; s++) {
        if (atomic_load(ch->in[s].signals) != atomic_load(&ch->in[s].done)) {
            return 1;
        }
    }
    return 0;
}

void
shi_q_look(struct shi_q_channel *ch, int on)
{
    if (on) {
        atomic_fetch_add(&ch->bell->lookers, 1);
    } else if (atomic_fetch_sub(&ch->bell->lookers, 1) == 1
        && shi_q_pending(ch)) {
        shi_q_wake_service(ch->bell); // a sender saw us look, did not ring
    }
}

void
shi_q_wait_events(struct shi_q_channel *ch, uint32_t seen, int64_t ns)
{
    struct shi_q_bell *bell = ch->bell;

    if (ns <= 0) {
        return;
    }
    atomic_fetch_add(&bell->sleepers, 1);
    if (atomic_load(&bell->events) == seen) {
        shi_futex_wait(
            &bell->events, seen, ns > WAIT_SLICE_NS ? WAIT_SLICE_NS : ns);
    }
    atomic_fetch_sub(&bell->sleepers, 1);
}

void
shi_q_wait_service(struct shi_q_channel *ch, uint32_t seen, int64_t ns)
{
    struct shi_q_bell *bell = ch->bell;

    if (ns <= 0) {
        return;
    }
    atomic_fetch_add(&bell->service_sleeps, 1);
    if (atomic_load(&bell->service) == seen) {
        shi_futex_wait(
            &bell->service, seen, ns > WAIT_SLICE_NS ? WAIT_SLICE_NS : ns);
    }
    atomic_fetch_sub(&bell->service_sleeps, 1);
}

// The engine's watch (comm->watch), at every pass of the communicator's
// progress (and of the host's communicator, where same-host peers signal
// through it): wakes the channel's waiters when a signal arrived or the
// communicator failed. Under that communicator's lock: looks only.
static void
watch(void *arg)
{
    struct shi_q_channel *ch  = arg;
    uint64_t              sum = 0;

    for (int s = 0; s < ch->n; s++) {
        sum += atomic_load_explicit(ch->in[s].signals, memory_order_relaxed);
    }
    if (atomic_load(&ch->comm->failed)) {
        sum = UINT64_MAX;
    }
    if (atomic_exchange(&ch->watched, sum) != sum) {
        shi_q_kick(ch);
        shi_q_wake_service(ch->bell);
    }
}

int
shi_q_usable(struct shi_q_channel *ch, int peer, const char *op)
{
    shoal_comm *comm = ch->comm;

    if (ch->closed) {
        return shi_error(
            SHOAL_EINVAL, "%s: the queue's communicator was destroyed", op);
    }
    if (ch->faulty) {
        return shi_error(ch->faulty, "%s: %s", op, ch->fault);
    }
    if (atomic_load(&comm->failed)) {
        pthread_mutex_lock(&comm->err_lock);
        int st = atomic_load(&comm->failed);
        st = st == SHOAL_EPEER || st == SHOAL_EREVOKED ? st : SHOAL_EABORTED;
        shi_error(st, "%s: communicator '%s' failed: %s", op, comm->name,
            comm->fail_text);
        pthread_mutex_unlock(&comm->err_lock);
        return st;
    }
    if (peer >= 0 && peer != comm->rank
        && atomic_load(&comm->peers[peer].state) != SHI_PEER_LIVE) {
        return shi_error(SHOAL_EPEER, "%s: rank %d %s", op, peer,
            atomic_load(&comm->peers[peer].state) == SHI_PEER_LEFT
                ? "left the communicator"
                : "died");
    }
    return SHOAL_OK;
}

// ------------------------------------------------------------ lifetime

static void
free_all(struct shi_q_channel *ch)
{
    for (struct shi_q_store *st = ch->stores, *next; st != NULL; st = next) {
        next = st->next;
        shi_q_item_free_list(st->head);
        free(st);
    }
    for (struct shi_q_park *p = ch->parks, *next; p != NULL; p = next) {
        next = p->next;
        free(p);
    }
    for (struct shi_q_park *p = ch->deferred, *next; p != NULL; p = next) {
        next = p->next;
        free(p);
    }
    for (struct shi_q_owed *o = ch->owed, *next; o != NULL; o = next) {
        next = o->next;
        shi_q_item_free_list(o->item);
        free(o);
    }
    for (struct shi_q_name *nm = ch->names, *next; nm != NULL; nm = next) {
        next = nm->next;
        free(nm);
    }
    for (int s = 0; ch->in != NULL && s < ch->n; s++) {
        shi_q_item_free_list(ch->in[s].partial);
        shi_q_item_free_list(ch->in[s].tx);
    }
    for (int d = 0; ch->out != NULL && d < ch->n; d++) {
        pthread_mutex_destroy(&ch->out[d].send);
    }
    for (int i = 0; i < POOL_N; i++) {
        free(ch->pool_buf[i]);
    }
    free(ch->in);
    free(ch->out);
    pthread_mutex_destroy(&ch->pool_mu);
    pthread_mutex_destroy(&ch->mu);
    pthread_mutex_destroy(&ch->credit_mu);
    free(ch);
}

void
shi_q_ref(struct shi_q_channel *ch)
{
    atomic_fetch_add(&ch->refs, 1);
}

void
shi_q_unref(struct shi_q_channel *ch)
{
    if (atomic_fetch_sub(&ch->refs, 1) == 1) {
        free_all(ch);
    }
}

// ------------------------------------------------------------ buffers

unsigned char *
shi_q_buf_take(struct shi_q_channel *ch, size_t bytes, size_t *cap)
{
    unsigned char *buf = NULL;

    *cap = bytes > 0 ? bytes : 1;
    if (bytes >= POOL_MIN) {
        pthread_mutex_lock(&ch->pool_mu);
        for (int i = 0; i < POOL_N && buf == NULL; i++) {
            // A buffer up to twice the size fits; larger ones stay for
            // larger items.
            if (ch->pool_buf[i] != NULL && ch->pool_cap[i] >= bytes
                && ch->pool_cap[i] / 2 <= bytes) {
                buf             = ch->pool_buf[i];
                *cap            = ch->pool_cap[i];
                ch->pool_buf[i] = NULL;
                ch->pool_bytes -= *cap;
            }
        }
        pthread_mutex_unlock(&ch->pool_mu);
    }
    return buf != NULL ? buf : malloc(*cap);
}

// Keeps a freed item's buffer, in place of the smallest kept one.
static void
buf_give(struct shi_q_channel *ch, unsigned char *buf, size_t cap)
{
    if (cap >= POOL_MIN && !atomic_load(&ch->closed)) {
        pthread_mutex_lock(&ch->pool_mu);
        int slot = 0;
        for (int i = 1; i < POOL_N; i++) {
            if (ch->pool_buf[i] == NULL
                || (ch->pool_buf[slot] != NULL
                    && ch->pool_cap[i] < ch->pool_cap[slot])) {
                slot = i;
            }
        }
        size_t gone = ch->pool_buf[slot] != NULL ? ch->pool_cap[slot] : 0;
        if ((gone == 0 || gone < cap)
            && ch->pool_bytes - gone + cap <= SHI_Q_POOL_BYTES) {
            unsigned char *old = ch->pool_buf[slot];
            ch->pool_buf[slot] = buf;
            ch->pool_cap[slot] = cap;
            ch->pool_bytes += cap - gone;
            buf = old;
        }
        pthread_mutex_unlock(&ch->pool_mu);
    }
    free(buf);
}

void
shi_q_item_hand_out(struct shi_q_channel *ch, shoal_queue_item *it)
{
    if (it != NULL && it->cap >= POOL_MIN) {
        shi_q_ref(ch);
        it->pool = ch;
    }
}

void
shi_q_item_free_list(shoal_queue_item *it)
{
    while (it != NULL) {
        shoal_queue_item     *next = it->next;
        struct shi_q_channel *ch   = it->pool;
        if (ch != NULL) {
            buf_give(ch, it->data, it->cap);
            shi_q_unref(ch);
        } else {
            free(it->data);
        }
        free(it);
        it = next;
    }
}

void
shi_q_ring_credit(struct shi_q_channel *ch, int s)
{
    if (ch->out[s].bell_there != NULL) {
        ring_bell(ch->out[s].bell_there);
    }
}

// Where peers' puts and signals are messages (TCP), this rank's progress
// applies them and its watch rings the bell; the progress thread must
// then listen while the channel is open. Over shared memory senders ring
// the bell themselves, and the progress thread may rest.
static void
set_watch(struct shi_q_channel *ch, int on)
{
    shoal_comm *comm = ch->comm;

    if (!ch->win->messages || ch->listening == on) {
        return;
    }
    pthread_mutex_lock(&comm->lock);
    comm->watch     = on ? watch : NULL;
    comm->watch_arg = on ? ch : NULL;
    pthread_mutex_unlock(&comm->lock);
    shi_engine_listen(comm, on);
    ch->listening = on;
}

// comm->queue_close: the communicator is being destroyed. Its asks fail
// (closed), its stores go; the window stays registered until the
// communicator's windows are released, and its memory with the heap.
static void
close_channel(shoal_comm *comm)
{
    struct shi_q_channel *ch = comm->queue_channel;

    comm->queue_close = NULL;
    if (ch == NULL) {
        return;
    }
    shi_q_service_stop(ch);
    set_watch(ch, 0);
    pthread_mutex_lock(&ch->mu);
    ch->closed = 1;
    pthread_mutex_unlock(&ch->mu);
    shi_q_kick(ch);
    shoal_window_free(ch->win);
    ch->win             = NULL;
    comm->queue_channel = NULL;
    shi_q_unref(ch);
}

// ------------------------------------------------------------ opening

static int
settings(struct shi_q_channel *ch)
{
    long long ring, capacity;
    int       st;

    if ((st = shi_env_size("SHOAL_QUEUE_RING_BYTES", RING_DEFAULT, RING_MIN,
             RING_MAX, &ring))
            != SHOAL_OK
        || (st = shi_env_size(
                "SHOAL_QUEUE_CAPACITY", 65536, 1, CAPACITY_MAX, &capacity))
            != SHOAL_OK) {
        return st;
    }
    ch->ring     = (size_t) ring / SHI_Q_ALIGN * SHI_Q_ALIGN;
    ch->capacity = (size_t) capacity;
    // Four pieces of an item fit a ring at once: the location reads one
    // while the sender writes the next.
    ch->chunk = (ch->ring / 4 - sizeof(struct shi_q_rec)) / SHI_Q_ALIGN
        * SHI_Q_ALIGN;
    return SHOAL_OK;
}

static struct shi_q_channel *
channel_new(shoal_comm *comm)
{
    struct shi_q_channel *ch = calloc(1, sizeof(*ch));

    if (ch == NULL) {
        return NULL;
    }
    ch->comm = comm;
    ch->n    = comm->size;
    ch->rank = comm->rank;
    ch->refs = 1;
    ch->in   = calloc((size_t) ch->n, sizeof(*ch->in));
    ch->out  = calloc((size_t) ch->n, sizeof(*ch->out));
    pthread_mutex_init(&ch->mu, NULL);
    pthread_mutex_init(&ch->credit_mu, NULL);
    pthread_mutex_init(&ch->pool_mu, NULL);
    for (int d = 0; ch->out != NULL && d < ch->n; d++) {
        pthread_mutex_init(&ch->out[d].send, NULL);
    }
    if (ch->in == NULL || ch->out == NULL) {
        free_all(ch);
        return NULL;
    }
    return ch;
}

// Points each sender's ring and signal counter, and each credit line.
static void
map_rings(struct shi_q_channel *ch)
{
    size_t lines = (size_t) (ch->n + 1) * SHI_Q_CREDIT;

    ch->bell = (struct shi_q_bell *) (void *) ch->base;
    for (int p = 0; p < ch->n; p++) {
        int           peer = p;
        shoal_window *via  = shi_window_route(ch->win, &peer);
        void         *there;

        ch->in[p].ring    = ch->base + lines + (size_t) p * ch->ring;
        ch->in[p].signals = &via->lines[peer].signals;
        ch->out[p].credit = (_Atomic uint64_t *) (void *) (ch->base
            + (size_t) (p + 1) * SHI_Q_CREDIT);
        there             = p == ch->rank ? ch->base : NULL;
        if (there != NULL
            || (shoal_window_access_of(ch->win, p) == SHOAL_ACCESS_UNIFIED
                && shoal_window_peer_ptr(ch->win, p, &there) == SHOAL_OK)) {
            unsigned char *mem      = there;
            ch->out[p].bell_there   = (struct shi_q_bell *) (void *) mem;
            ch->out[p].credit_there = (_Atomic uint64_t *) (void *) (mem
                + (size_t) (ch->rank + 1) * SHI_Q_CREDIT);
        }
    }
}

static int
register_window(struct shi_q_channel *ch)
{
    shoal_comm *comm = ch->comm;
    size_t bytes = SHI_Q_CREDIT + (size_t) ch->n * (SHI_Q_CREDIT + ch->ring);
    int    st;

    if ((st = shoal_window_create(comm, &ch->win)) != SHOAL_OK) {
        return st;
    }
    if ((st = shoal_alloc(comm, bytes, (void **) &ch->base)) != SHOAL_OK) {
        return shi_error_wrap(st,
            "queue channel: %zu bytes of rings (SHOAL_QUEUE_RING_BYTES=%zu "
            "per rank)",
            bytes, ch->ring);
    }
    memset(ch->base, 0, (size_t) (ch->n + 1) * SHI_Q_CREDIT);
    st = shoal_window_register(ch->win, ch->base, bytes, SHOAL_UINT8);
    return st == SHOAL_OK ? st : shi_error_wrap(st, "queue channel");
}

int
shoal_queue_channel_open(shoal_comm *comm)
{
    struct shi_q_channel *ch;
    int                   st;

    if (comm == NULL) {
        return shi_error(SHOAL_EINVAL, "queue_channel_open: comm is NULL");
    }
    if (comm->queue_channel != NULL) {
        return SHOAL_OK;
    }
    if ((ch = channel_new(comm)) == NULL) {
        return shi_comm_error(comm,
            shi_error(SHOAL_ENOMEM, "queue_channel_open: out of memory"));
    }
    if ((st = settings(ch)) != SHOAL_OK
        || (st = register_window(ch)) != SHOAL_OK) {
        shoal_window_free(ch->win);
        shoal_free(comm, ch->base);
        free_all(ch);
        return shi_comm_error(comm, st);
    }
    map_rings(ch);
    if ((st = shi_q_service_start(ch)) != SHOAL_OK) {
        shoal_window_free(ch->win);
        free_all(ch);
        return shi_comm_error(comm, st);
    }
    comm->queue_channel = ch;
    comm->queue_close   = close_channel;
    set_watch(ch, 1);
    return SHOAL_OK;
}
