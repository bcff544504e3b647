// Reading what arrived in this rank's rings (channel.h), under ch->mu.
//
// Each sender's records are read in order, one per signal it raised. A
// record is peer input: its header is copied out before it is checked,
// and a bad one stops the channel with SHOAL_EPROTO naming the sender.
// An item for a queue that is full stays unread, with everything behind
// it from that sender, until a get makes room.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "queue/channel.h"
#include "transport/transport.h"

#define ITEM_MAX (1ULL << 40) // larger items are refused as malformed

struct shi_q_store *
shi_q_store(struct shi_q_channel *ch, uint64_t id, int make)
{
    struct shi_q_store *st;

    for (st = ch->stores; st != NULL; st = st->next) {
        if (st->id == id) {
            return st;
        }
    }
    if (!make || (st = calloc(1, sizeof(*st))) == NULL) {
        return NULL;
    }
    st->id     = id;
    st->next   = ch->stores;
    ch->stores = st;
    return st;
}

shoal_queue_item *
shi_q_pop(struct shi_q_channel *ch, struct shi_q_store *st)
{
    shoal_queue_item *it = st->head;

    (void) ch;
    if (it != NULL) {
        st->head = it->next;
        st->tail = st->head != NULL ? st->tail : NULL;
        st->count--;
        it->next = NULL;
    }
    return it;
}

static void
owe(struct shi_q_channel *ch, struct shi_q_owed *o)
{
    o->next = NULL;
    if (ch->owed_tail != NULL) {
        ch->owed_tail->next = o;
    } else {
        ch->owed = o;
    }
    ch->owed_tail = o;
}

void
shi_q_owe_answer(
    struct shi_q_channel *ch, int dst, uint64_t ask, uint64_t value)
{
    struct shi_q_owed *o = calloc(1, sizeof(*o));

    if (o == NULL) {
        snprintf(ch->fault, sizeof(ch->fault),
            "out of memory answering rank %d", dst);
        atomic_store(&ch->faulty, SHOAL_ENOMEM);
        return;
    }
    o->dst       = dst;
    o->rec.type  = SHI_Q_ANSWER;
    o->rec.queue = ask;
    o->rec.total = value;
    owe(ch, o);
}

static void
owe_item(struct shi_q_channel *ch, int dst, uint64_t ask, shoal_queue_item *it)
{
    struct shi_q_owed *o = calloc(1, sizeof(*o));

    if (o == NULL) {
        snprintf(ch->fault, sizeof(ch->fault),
            "out of memory answering rank %d", dst);
        atomic_store(&ch->faulty, SHOAL_ENOMEM);
        shi_q_item_free_list(it);
        return;
    }
    o->dst       = dst;
    o->item      = it;
    o->rec.total = ask;
    owe(ch, o);
}

// ------------------------------------------------------------ parks

// Answers the parks on `st` that it can now: TAKE in arrival order while
// items last, WAIT as soon as there is one.
static void
serve_parks(struct shi_q_channel *ch, struct shi_q_store *st)
{
    struct shi_q_park **pp = &ch->parks;

    while (*pp != NULL && st->count > 0) {
        struct shi_q_park *p = *pp;
        if (p->queue != st->id) {
            pp = &p->next;
            continue;
        }
        if (p->what == SHI_Q_ASK_TAKE) {
            owe_item(ch, p->from, p->ask, shi_q_pop(ch, st));
        } else {
            shi_q_owe_answer(ch, p->from, p->ask, st->count);
        }
        *pp = p->next;
        free(p);
    }
}

int64_t
shi_q_expire(struct shi_q_channel *ch, int64_t now)
{
    int64_t             next = SHI_NO_DEADLINE;
    struct shi_q_park **pp   = &ch->parks;

    while (*pp != NULL) {
        struct shi_q_park *p = *pp;
        if (p->deadline > now) {
            next = p->deadline < next ? p->deadline : next;
            pp   = &p->next;
            continue;
        }
        shi_q_owe_answer(ch, p->from, p->ask, SHI_Q_EMPTY);
        *pp = p->next;
        free(p);
    }
    return next;
}

static int
park(struct shi_q_channel *ch, int from, const struct shi_q_rec *rec)
{
    struct shi_q_park *p = calloc(1, sizeof(*p)), **pp = &ch->parks;

    if (p == NULL) {
        return SHOAL_ENOMEM;
    }
    p->from     = from;
    p->what     = rec->flags;
    p->ask      = rec->total;
    p->queue    = rec->queue;
    p->deadline = rec->arg < 0 ? SHI_NO_DEADLINE
                               : shi_now_ns() + (int64_t) rec->arg * 1000000;
    while (*pp != NULL) {
        pp = &(*pp)->next; // arrival order
    }
    *pp = p;
    return SHOAL_OK;
}

// ------------------------------------------------------------ records

static int
malformed(struct shi_q_channel *ch, int s, const char *what)
{
    if (atomic_load(&ch->faulty) == 0) {
        snprintf(ch->fault, sizeof(ch->fault),
            "rank %d sent a malformed queue record (%s)", s, what);
        atomic_store(&ch->faulty, SHOAL_EPROTO);
    }
    return -1;
}

// Answers ask `ask` of rank s about store st now: a TAKE with the next
// item, a WAIT with the count, either with "empty" when there is none; a
// SIZE with the count.
static void
answer(struct shi_q_channel *ch, int s, uint32_t what, uint64_t ask,
    struct shi_q_store *st)
{
    if (what == SHI_Q_ASK_SIZE) {
        shi_q_owe_answer(ch, s, ask, st->count);
    } else if (st->count == 0) {
        shi_q_owe_answer(ch, s, ask, SHI_Q_EMPTY);
    } else if (what == SHI_Q_ASK_TAKE) {
        owe_item(ch, s, ask, shi_q_pop(ch, st));
    } else {
        shi_q_owe_answer(ch, s, ask, st->count);
    }
}

static int
defer(struct shi_q_channel *ch, int s, const struct shi_q_rec *rec)
{
    struct shi_q_park *p = calloc(1, sizeof(*p)), **pp = &ch->deferred;

    if (p == NULL) {
        return malformed(ch, s, "out of memory for its ask");
    }
    p->from  = s;
    p->what  = rec->flags;
    p->ask   = rec->total;
    p->queue = rec->queue;
    while (*pp != NULL) {
        pp = &(*pp)->next; // arrival order
    }
    *pp = p;
    return 0;
}

// Answers the deferred asks, in arrival order.
static void
answer_deferred(struct shi_q_channel *ch)
{
    struct shi_q_park *p;

    while ((p = ch->deferred) != NULL) {
        struct shi_q_store *st = shi_q_store(ch, p->queue, 1);
        ch->deferred           = p->next;
        if (st != NULL) {
            answer(ch, p->from, p->what, p->ask, st);
        }
        free(p);
    }
}

static int
on_ask(struct shi_q_channel *ch, int s, const struct shi_q_rec *rec)
{
    struct shi_q_store *st = shi_q_store(ch, rec->queue, 1);

    if (st == NULL) {
        return malformed(ch, s, "out of memory for its queue");
    }
    switch (rec->flags) {
        case SHI_Q_ASK_SIZE:
            return defer(ch, s, rec);
        case SHI_Q_ASK_TAKE:
        case SHI_Q_ASK_WAIT:
            if (st->count > 0) {
                answer(ch, s, rec->flags, rec->total, st);
                return 0;
            }
            if (rec->arg == 0) {
                return defer(ch, s, rec);
            }
            return park(ch, s, rec) == SHOAL_OK
                ? 0
                : malformed(ch, s, "out of memory for its ask");
        default:
            return malformed(ch, s, "unknown ask");
    }
}

static void
on_answer(struct shi_q_channel *ch, int s, uint64_t ask, uint64_t value,
    shoal_queue_item *it)
{
    for (struct shi_q_ask *a = ch->asks; a != NULL; a = a->next) {
        if (a->id == ask && a->to == s && !a->done) {
            a->done  = 1;
            a->value = value;
            a->item  = it;
            return;
        }
    }
    shi_q_item_free_list(it); // an ask given up (its queue handle freed)
}

// A whole item: to its ask, held back with its transaction, or into its
// store with the transaction before it.
static void
complete(struct shi_q_channel *ch, int s, shoal_queue_item *it)
{
    struct shi_q_in *in = &ch->in[s];

    in->partial = NULL;
    if (it->flags & SHI_Q_F_REPLY) {
        on_answer(ch, s, it->queue, 0, it);
        return;
    }
    if (in->tx_tail != NULL) {
        in->tx_tail->next = it;
    } else {
        in->tx = it;
    }
    in->tx_tail = it;
    if (it->flags & SHI_Q_F_MORE) {
        return;
    }
    shoal_queue_item *next;
    for (shoal_queue_item *x = in->tx; x != NULL; x = next) {
        struct shi_q_store *st = shi_q_store(ch, x->queue, 1);
        next                   = x->next;
        x->next                = NULL;
        if (st == NULL) {
            shi_q_item_free_list(x);
            malformed(ch, s, "out of memory for its queue");
            continue;
        }
        if (st->tail != NULL) {
            st->tail->next = x;
        } else {
            st->head = x;
        }
        st->tail = x;
        st->count++;
        serve_parks(ch, st);
    }
    in->tx = in->tx_tail = NULL;
}

static int
check_meta(const struct shi_q_rec *rec)
{
    size_t elem = 1;

    if (rec->total > ITEM_MAX) {
        return 0;
    }
    if (rec->flags & SHI_Q_F_OBJECT) {
        return 1;
    }
    if (rec->ndim < 0 || rec->ndim > SHOAL_QUEUE_MAX_DIMS
        || (elem = shoal_dtype_size((shoal_dtype) rec->dtype)) == 0) {
        return 0;
    }
    uint64_t n = 1;
    for (int d = 0; d < rec->ndim; d++) {
        if (rec->shape[d] < 0
            || (rec->shape[d] > 0
                && n > ITEM_MAX / (uint64_t) rec->shape[d])) {
            return 0;
        }
        n *= (uint64_t) rec->shape[d];
    }
    return n * elem == rec->total;
}

// An item whose data stays in sender s's memory: read it from the region
// the record carries (checked: s's own, of the item's size). A sender that
// died meanwhile takes its item with it; any other failure stops the
// channel.
static int
pull(struct shi_q_channel *ch, int s, const struct shi_q_rec *rec,
    const unsigned char *data, size_t bytes, shoal_queue_item *it)
{
    struct shi_tp_region region;
    shoal_comm          *comm = ch->comm;

    if (bytes != sizeof(region) || (rec->flags & SHI_Q_F_REPLY)
        || comm->tp->mem_read == NULL) {
        shi_q_item_free_list(it);
        return malformed(ch, s, "item to read");
    }
    memcpy(&region, data, sizeof(region));
    if (region.owner != s || region.bytes != rec->total) {
        shi_q_item_free_list(it);
        return malformed(ch, s, "region of an item to read");
    }
    int st = comm->tp->mem_read(comm, &region, 0, it->data, it->bytes);
    ch->in[s].pulled++;
    if (st != SHOAL_OK) {
        shi_q_item_free_list(it);
        if (st == SHOAL_EPEER) {
            return 0;
        }
        snprintf(ch->fault, sizeof(ch->fault),
            "reading an item from rank %d: %s", s, shi_error_text());
        atomic_store(&ch->faulty, st);
        return -1;
    }
    it->filled = it->bytes;
    complete(ch, s, it);
    return 0;
}

// An ITEM record: a new item with its first piece. 0, 1 when its queue
// is full (left unread), -1 when malformed.
static int
on_item(struct shi_q_channel *ch, int s, const struct shi_q_rec *rec,
    const unsigned char *data, size_t bytes)
{
    if (ch->in[s].partial != NULL || !check_meta(rec)
        || (bytes > rec->total && !(rec->flags & SHI_Q_F_PULL))
        || ((rec->flags & SHI_Q_F_REPLY)
            && (rec->arg < 0 || rec->arg >= ch->n))) {
        return malformed(ch, s, "item");
    }
    if (!(rec->flags & SHI_Q_F_REPLY)) {
        struct shi_q_store *st = shi_q_store(ch, rec->queue, 0);
        if (st != NULL && st->count >= ch->capacity) {
            return 1;
        }
    }
    shoal_queue_item *it = calloc(1, sizeof(*it));
    if (it == NULL
        || (it->data = shi_q_buf_take(ch, rec->total, &it->cap)) == NULL) {
        free(it);
        return malformed(ch, s, "out of memory for its item");
    }
    it->kind   = rec->flags & SHI_Q_F_OBJECT ? SHOAL_QUEUE_OBJECT
                                             : SHOAL_QUEUE_TENSOR;
    it->sender = rec->flags & SHI_Q_F_REPLY ? rec->arg : s;
    it->dtype  = (shoal_dtype) rec->dtype;
    it->ndim   = it->kind == SHOAL_QUEUE_TENSOR ? rec->ndim : 0;
    memcpy(it->shape, rec->shape, sizeof(it->shape));
    it->bytes = rec->total;
    it->flags = rec->flags;
    it->queue = rec->queue;
    if (rec->flags & SHI_Q_F_PULL) {
        return pull(ch, s, rec, data, bytes, it);
    }
    it->filled = bytes;
    memcpy(it->data, data, bytes);
    ch->in[s].partial = it;
    if (it->filled == it->bytes) {
        complete(ch, s, it);
    }
    return 0;
}

static int
on_chunk(struct shi_q_channel *ch, int s, const struct shi_q_rec *rec,
    const unsigned char *data, size_t bytes)
{
    shoal_queue_item *it = ch->in[s].partial;

    if (it == NULL || rec->queue != it->queue
        || bytes > it->bytes - it->filled) {
        return malformed(ch, s, "chunk");
    }
    memcpy(it->data + it->filled, data, bytes);
    it->filled += bytes;
    if (it->filled == it->bytes) {
        complete(ch, s, it);
    }
    return 0;
}

// Reads the next record of sender s: 0 read, 1 left unread (full
// queue), -1 malformed.
static int
read_one(struct shi_q_channel *ch, int s)
{
    struct shi_q_in *in  = &ch->in[s];
    size_t           pos = (size_t) (in->head % ch->ring);
    struct shi_q_rec rec;
    int              r = 0;

    if (ch->ring - pos < sizeof(rec)) {
        return malformed(ch, s, "ring position");
    }
    memcpy(&rec, in->ring + pos, sizeof(rec));
    if (rec.bytes < sizeof(rec) || rec.bytes % SHI_Q_ALIGN != 0
        || rec.bytes > ch->ring - pos) {
        return malformed(ch, s, "length");
    }
    const unsigned char *data = in->ring + pos + sizeof(rec);
    if (rec.part > rec.bytes - sizeof(rec)) {
        return malformed(ch, s, "data length");
    }
    switch (rec.type) {
        case SHI_Q_PAD:
            break;
        case SHI_Q_ITEM:
            r = on_item(ch, s, &rec, data, (size_t) rec.part);
            break;
        case SHI_Q_CHUNK:
            r = on_chunk(ch, s, &rec, data, (size_t) rec.part);
            break;
        case SHI_Q_ASK:
            r = on_ask(ch, s, &rec);
            break;
        case SHI_Q_ANSWER:
            on_answer(ch, s, rec.queue, rec.total, NULL);
            break;
        default:
            return malformed(ch, s, "type");
    }
    if (r == 0) {
        in->head += rec.bytes;
        atomic_fetch_add_explicit(&in->done, 1, memory_order_release);
    }
    return r;
}

// One look at every ring: what arrived before each was looked at.
static int
drain_pass(struct shi_q_channel *ch)
{
    int moved = 0;

    for (int s = 0; s < ch->n && !ch->faulty && !ch->closed; s++) {
        struct shi_q_in *in = &ch->in[s];
        uint64_t         arrived
            = atomic_load_explicit(in->signals, memory_order_acquire);
        while (atomic_load_explicit(&in->done, memory_order_relaxed) < arrived
            && read_one(ch, s) == 0) {
            moved++;
        }
    }
    return moved;
}

// Deferred asks are answered once the rings hold nothing more that came
// before them: a ring looked at before the ask was read is looked at
// again (a few passes at most, so that a steady stream cannot hold the
// answer back).
#define DEFERRED_PASSES 8

int
shi_q_drain(struct shi_q_channel *ch)
{
    int moved = drain_pass(ch), more = moved;

    for (int i = 0; ch->deferred != NULL && more > 0 && i < DEFERRED_PASSES;
         i++) {
        more = drain_pass(ch);
        moved += more;
    }
    if (ch->deferred != NULL) {
        if (more > 0 || moved == 0) {
            moved += drain_pass(ch); // the ask came in this pass's last look
        }
        answer_deferred(ch);
    }
    if (moved > 0) {
        shi_q_kick(ch);
    }
    return moved;
}
