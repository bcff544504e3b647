// Queues over a communicator's channel (channel.h): creating and opening
// them, put, get, size and wait, and items.
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "core/engine.h"
#include "core/ops.h"
#include "queue/channel.h"

#define UNNAMED_BIT (1ULL << 63) // unnamed ids: this bit and a sequence
#define SPIN_NS     20000 // a getter here looks this long before sleeping

struct shoal_queue {
    struct shi_q_channel *ch;
    uint64_t              id;
    int                   n; // locations
    int                   here; // this rank is one of them
    int                  *locations;
};

// ------------------------------------------------------------ creation

static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++) {
        h = (h ^ b[i]) * 1099511628211ULL;
    }
    return h;
}

static int
check_locations(shoal_comm *comm, const int *locations, int n, int streaming,
    const char *op)
{
    if (comm == NULL) {
        return shi_error(SHOAL_EINVAL, "%s: comm is NULL", op);
    }
    if (streaming) {
        return shi_comm_error(comm,
            shi_error(SHOAL_ENOTSUP,
                "%s: streaming queues are not supported: every put becomes "
                "visible whole; create the queue with streaming off",
                op));
    }
    if (locations == NULL || n < 1 || n > comm->size) {
        return shi_comm_invalid(comm,
            "%s: need 1 to %d locations (ranks of communicator '%s'), got "
            "%d",
            op, comm->size, comm->name, locations == NULL ? 0 : n);
    }
    for (int i = 0; i < n; i++) {
        if (locations[i] < 0 || locations[i] >= comm->size) {
            return shi_comm_invalid(comm,
                "%s: location %d is not a rank of communicator '%s' (size "
                "%d)",
                op, locations[i], comm->name, comm->size);
        }
        for (int j = 0; j < i; j++) {
            if (locations[j] == locations[i]) {
                return shi_comm_invalid(
                    comm, "%s: location %d is listed twice", op, locations[i]);
            }
        }
    }
    return SHOAL_OK;
}

static int
make_handle(struct shi_q_channel *ch, uint64_t id, const int *locations, int n,
    shoal_queue **out)
{
    shoal_queue *q = calloc(1, sizeof(*q));

    if (q == NULL
        || (q->locations = malloc((size_t) n * sizeof(int))) == NULL) {
        free(q);
        return shi_comm_error(
            ch->comm, shi_error(SHOAL_ENOMEM, "queue: out of memory"));
    }
    memcpy(q->locations, locations, (size_t) n * sizeof(int));
    q->ch = ch;
    q->id = id;
    q->n  = n;
    for (int i = 0; i < n; i++) {
        q->here |= locations[i] == ch->rank;
    }
    shi_q_ref(ch);
    *out = q;
    return SHOAL_OK;
}

// Every rank's (id, locations hash), to check that they agree.
static int
agree(shoal_comm *comm, uint64_t id, uint64_t where)
{
    uint64_t  mine[2] = { id, where };
    uint64_t *all     = malloc((size_t) comm->size * sizeof(mine));
    int       st;

    if (all == NULL) {
        return shi_comm_error(
            comm, shi_error(SHOAL_ENOMEM, "queue_create: out of memory"));
    }
    st = shoal_all_gather(comm, mine, all, 2, SHOAL_INT64);
    for (int r = 0; st == SHOAL_OK && r < comm->size; r++) {
        if (all[2 * r] != id || all[2 * r + 1] != where) {
            st = shi_comm_error(comm,
                shi_error(SHOAL_EMISMATCH,
                    "queue_create: rank %d created %s (locations differ, or "
                    "it created a different number of queues before)",
                    r, all[2 * r] != id ? "another queue" : "this queue"));
        }
    }
    free(all);
    return st;
}

int
shoal_queue_create(shoal_comm *comm, const int *locations, int nlocations,
    int streaming, shoal_queue **out)
{
    int st;

    if (out == NULL) {
        return shi_comm_invalid(comm, "queue_create: out is NULL");
    }
    *out = NULL;
    if ((st = check_locations(
             comm, locations, nlocations, streaming, "queue_create"))
            != SHOAL_OK
        || (st = shoal_queue_channel_open(comm)) != SHOAL_OK) {
        return st;
    }
    struct shi_q_channel *ch = shi_q_channel_of(comm);
    pthread_mutex_lock(&ch->mu);
    uint64_t id = UNNAMED_BIT | ++ch->unnamed;
    pthread_mutex_unlock(&ch->mu);
    uint64_t where = fnv(
        14695981039346656037ULL, locations, (size_t) nlocations * sizeof(int));
    if ((st = agree(comm, id, where)) != SHOAL_OK) {
        return st;
    }
    return make_handle(ch, id, locations, nlocations, out);
}

int
shoal_queue_open(shoal_comm *comm, const char *name, const int *locations,
    int nlocations, int streaming, shoal_queue **out)
{
    struct shi_q_channel *ch  = shi_q_channel_of(comm);
    size_t                len = name != NULL ? strlen(name) : 0;
    int                   st;

    if (out == NULL) {
        return shi_comm_invalid(comm, "queue_open: out is NULL");
    }
    *out = NULL;
    if ((st = check_locations(
             comm, locations, nlocations, streaming, "queue_open"))
        != SHOAL_OK) {
        return st;
    }
    if (len == 0 || len > 255) {
        return shi_comm_invalid(comm,
            "queue_open: the name must have 1 to 255 bytes, not %zu", len);
    }
    if (ch == NULL) {
        return shi_comm_invalid(comm,
            "queue_open: communicator '%s' has no queue channel open; open "
            "it on every rank first (shoal_queue_channel_open, or create an "
            "unnamed queue)",
            comm->name);
    }
    uint64_t where = fnv(
        14695981039346656037ULL, locations, (size_t) nlocations * sizeof(int));
    uint64_t id
        = fnv(fnv(14695981039346656037ULL, name, len), &where, sizeof(where))
        & ~UNNAMED_BIT;
    pthread_mutex_lock(&ch->mu);
    struct shi_q_name *nm = ch->names;
    while (nm != NULL && strcmp(nm->name, name) != 0) {
        nm = nm->next;
    }
    if (nm == NULL && (nm = calloc(1, sizeof(*nm))) != NULL) {
        memcpy(nm->name, name, len + 1);
        nm->id    = id;
        nm->where = where;
        nm->next  = ch->names;
        ch->names = nm;
    }
    pthread_mutex_unlock(&ch->mu);
    if (nm == NULL) {
        return shi_comm_error(
            comm, shi_error(SHOAL_ENOMEM, "queue_open: out of memory"));
    }
    if (nm->where != where) {
        return shi_comm_invalid(comm,
            "queue_open: queue '%s' was opened on this rank with other "
            "locations",
            name);
    }
    return make_handle(ch, id, locations, nlocations, out);
}

void
shoal_queue_free(shoal_queue *q)
{
    if (q == NULL) {
        return;
    }
    shi_q_unref(q->ch);
    free(q->locations);
    free(q);
}

uint64_t
shoal_queue_id(const shoal_queue *q)
{
    return q != NULL ? q->id : 0;
}

// ------------------------------------------------------------ put

static int
check_item(shoal_queue_kind kind, const void *data, size_t bytes,
    shoal_dtype dtype, int ndim, const int64_t *shape, unsigned flags)
{
    if (kind != SHOAL_QUEUE_TENSOR && kind != SHOAL_QUEUE_OBJECT) {
        return shi_error(
            SHOAL_EINVAL, "queue_put: unknown item kind %d", (int) kind);
    }
    if (data == NULL && bytes > 0) {
        return shi_error(SHOAL_EINVAL, "queue_put: data is NULL");
    }
    if (flags & ~SHOAL_QUEUE_MORE) {
        return shi_error(SHOAL_EINVAL, "queue_put: unknown flags 0x%x", flags);
    }
    if (kind == SHOAL_QUEUE_OBJECT) {
        return SHOAL_OK;
    }
    size_t elem = shoal_dtype_size(dtype);
    if (elem == 0 || ndim < 0 || ndim > SHOAL_QUEUE_MAX_DIMS
        || (ndim > 0 && shape == NULL)) {
        return shi_error(SHOAL_EINVAL,
            "queue_put: a tensor needs a known dtype and 0 to %d dimensions",
            SHOAL_QUEUE_MAX_DIMS);
    }
    size_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) {
            return shi_error(
                SHOAL_EINVAL, "queue_put: dimension %d is negative", d);
        }
        n *= (size_t) shape[d];
    }
    if (n * elem != bytes) {
        return shi_error(SHOAL_EINVAL,
            "queue_put: the shape holds %zu bytes of %s, but %zu were given",
            n * elem, shoal_dtype_name(dtype), bytes);
    }
    return SHOAL_OK;
}

// A put not yet read by its location (shoal_queue_iput): the request's
// step watches the location's read count.
struct put_state {
    struct shi_q_channel *ch; // a reference, dropped at completion
    uint64_t              pull;
};

static int
pulled_step(shoal_comm *comm, shoal_request *req)
{
    struct put_state *s    = shi_algo_state(req, struct put_state);
    int               peer = req->peer, st = SHOAL_OK;

    // Under the communicator's lock: looks only at atomics (a failure of
    // the communicator itself fails the request in the engine).
    if (shi_q_pulled(s->ch, peer, s->pull)) {
        st = SHOAL_OK;
    } else if (atomic_load(&s->ch->closed) || atomic_load(&s->ch->faulty)) {
        st = shi_error(SHOAL_EABORTED,
            "queue_iput: the queue channel stopped before rank %d read the "
            "item",
            peer);
    } else if (atomic_load(&comm->peers[peer].state) != SHI_PEER_LIVE) {
        st = shi_error(SHOAL_EPEER,
            "queue_iput: rank %d is gone before it read the item", peer);
    } else {
        req->blocked_on = peer;
        return 0;
    }
    shi_q_unref(s->ch);
    shi_engine_complete(comm, req, st);
    return 1;
}

static int
done_step(shoal_comm *comm, shoal_request *req)
{
    shi_engine_complete(comm, req, SHOAL_OK);
    return 1;
}

// The request of an iput: done already, or waiting for its one location
// to read the item (`pull`).
static int
put_request(struct shi_q_channel *ch, int dst, uint64_t pull, const void *data,
    size_t bytes, shoal_request **out)
{
    shoal_request req;

    shi_req_fill(&req, SHI_OP_PUT, data, bytes, SHOAL_UINT8, dst);
    req.step = pull > 0 ? pulled_step : done_step;
    if (pull > 0) {
        shi_q_ref(ch);
        shi_algo_state(&req, struct put_state)->ch   = ch;
        shi_algo_state(&req, struct put_state)->pull = pull;
    }
    int st = shi_start_async(ch->comm, &req, out);
    if (st != SHOAL_OK && pull > 0) {
        shi_q_unref(ch);
    }
    return st;
}

static int
put_op(shoal_queue *q, shoal_queue_kind kind, const void *data, size_t bytes,
    shoal_dtype dtype, int ndim, const int64_t *shape, unsigned flags,
    int64_t timeout_ms, shoal_request **out)
{
    const char *op = out != NULL ? "queue_iput" : "queue_put";
    int         st;

    if (q == NULL) {
        return shi_error(SHOAL_EINVAL, "%s: queue is NULL", op);
    }
    struct shi_q_channel *ch = q->ch;
    if ((st = shi_q_usable(ch, -1, op)) != SHOAL_OK) {
        return st;
    }
    if ((st = check_item(kind, data, bytes, dtype, ndim, shape, flags))
        != SHOAL_OK) {
        return atomic_load(&ch->closed) ? st : shi_comm_error(ch->comm, st);
    }
    struct shi_q_rec rec = { .queue = q->id,
        .total                      = bytes,
        .flags = (kind == SHOAL_QUEUE_OBJECT ? SHI_Q_F_OBJECT : 0)
            | (flags & SHOAL_QUEUE_MORE ? SHI_Q_F_MORE : 0),
        .dtype = kind == SHOAL_QUEUE_TENSOR ? (int32_t) dtype : 0,
        .ndim  = kind == SHOAL_QUEUE_TENSOR ? ndim : 0 };
    for (int d = 0; kind == SHOAL_QUEUE_TENSOR && d < ndim; d++) {
        rec.shape[d] = shape[d];
    }
    // Only a single location's read is left to wait for by a request; a
    // multicast put waits for every location's here.
    int      async    = out != NULL && q->n == 1;
    uint64_t pull     = 0;
    int64_t  deadline = shi_deadline_in_ms(timeout_ms);
    for (int i = 0; i < q->n; i++) {
        if ((st = shi_q_usable(ch, q->locations[i], op)) != SHOAL_OK
            || (st = shi_q_send_item(ch, q->locations[i], &rec, data, deadline,
                    async ? &pull : NULL))
                != SHOAL_OK) {
            return atomic_load(&ch->closed) ? st
                                            : shi_comm_error(ch->comm, st);
        }
    }
    return out == NULL
        ? SHOAL_OK
        : put_request(ch, q->locations[0], pull, data, bytes, out);
}

int
shoal_queue_put(shoal_queue *q, shoal_queue_kind kind, const void *data,
    size_t bytes, shoal_dtype dtype, int ndim, const int64_t *shape,
    unsigned flags, int64_t timeout_ms)
{
    return put_op(
        q, kind, data, bytes, dtype, ndim, shape, flags, timeout_ms, NULL);
}

int
shoal_queue_iput(shoal_queue *q, shoal_queue_kind kind, const void *data,
    size_t bytes, shoal_dtype dtype, int ndim, const int64_t *shape,
    unsigned flags, int64_t timeout_ms, shoal_request **req)
{
    if (req == NULL) {
        return shi_missing_req("queue_iput");
    }
    *req = NULL;
    return put_op(
        q, kind, data, bytes, dtype, ndim, shape, flags, timeout_ms, req);
}

// ------------------------------------------------------------ get here

// Waits for news on the channel: spins a while (a put from a peer that
// runs now is seen at once, and while this getter looks senders do not
// ring), then sleeps until the bell rings or `deadline`.
static void
await(struct shi_q_channel *ch, uint32_t seen, int64_t deadline, int64_t start)
{
    int64_t now = shi_now_ns();

    if (now - start < SPIN_NS) {
        if (!shi_q_pending(ch)) {
            sched_yield();
        }
        return;
    }
    shi_q_look(ch, 0);
    shi_q_wait_events(ch, seen, deadline - now);
    shi_q_look(ch, 1);
}

static int
time_out(const char *op, const shoal_queue *q, int64_t timeout_ms)
{
    return shi_error(SHOAL_EAGAIN, "%s: queue %s empty after %lld ms", op,
        q->n == 1 ? "is" : "was",
        (long long) (timeout_ms < 0 ? 0 : timeout_ms));
}

// Takes (take) or waits for an item of a queue held here; `*size` gets
// the count when not taking.
static int
local_get(shoal_queue *q, int take, int64_t timeout_ms, shoal_queue_item **out,
    size_t *size, const char *op)
{
    struct shi_q_channel *ch       = q->ch;
    int64_t               start    = shi_now_ns();
    int64_t               deadline = shi_deadline_in_ms(timeout_ms);
    int                   st;

    shi_q_look(ch, 1);
    for (;;) {
        uint32_t seen = atomic_load(&ch->bell->events);
        pthread_mutex_lock(&ch->mu);
        st = shi_q_usable(ch, -1, op);
        shi_q_drain(ch);
        struct shi_q_store *s  = shi_q_store(ch, q->id, 0);
        size_t              n  = s != NULL ? s->count : 0;
        shoal_queue_item   *it = take && n > 0 ? shi_q_pop(ch, s) : NULL;
        if (it != NULL) {
            shi_q_drain(ch); // a full queue has room again
        }
        pthread_mutex_unlock(&ch->mu);
        shi_q_flush(ch);
        if (it != NULL || (!take && n > 0) || st != SHOAL_OK) {
            *out  = it;
            *size = n;
            break;
        }
        if (shi_now_ns() >= deadline) {
            st = time_out(op, q, timeout_ms);
            break;
        }
        await(ch, seen, deadline, start);
    }
    shi_q_look(ch, 0);
    return st;
}

// ------------------------------------------------------------ get there

static int
ask_location(shoal_queue *q, uint32_t what, int64_t timeout_ms,
    shoal_queue_item **out, uint64_t *value, const char *op)
{
    struct shi_q_channel *ch = q->ch;
    int                   to = q->locations[0];
    struct shi_q_ask     *a  = calloc(1, sizeof(*a));
    int                   st;

    if (a == NULL) {
        return shi_error(SHOAL_ENOMEM, "%s: out of memory", op);
    }
    pthread_mutex_lock(&ch->mu);
    a->id    = ++ch->next_ask;
    a->to    = to;
    a->next  = ch->asks;
    ch->asks = a;
    pthread_mutex_unlock(&ch->mu);
    struct shi_q_rec rec = { .type = SHI_Q_ASK,
        .queue                     = q->id,
        .total                     = a->id,
        .flags                     = what,
        .arg                       = timeout_ms < 0        ? -1
                                  : timeout_ms > INT32_MAX ? INT32_MAX
                                                           : (int32_t) timeout_ms };
    st                   = shi_q_send_rec(ch, to, &rec, SHI_NO_DEADLINE);
    // The answer always comes (the location answers "empty" when the
    // time runs out there), unless the location dies.
    int64_t start = shi_now_ns();
    shi_q_look(ch, 1);
    for (;;) {
        uint32_t seen = atomic_load(&ch->bell->events);
        pthread_mutex_lock(&ch->mu);
        if (st == SHOAL_OK) {
            st = shi_q_usable(ch, to, op);
        }
        shi_q_drain(ch);
        int done = a->done || st != SHOAL_OK;
        if (done) {
            struct shi_q_ask **pp = &ch->asks;
            while (*pp != a) {
                pp = &(*pp)->next;
            }
            *pp = a->next;
        }
        pthread_mutex_unlock(&ch->mu);
        shi_q_flush(ch);
        if (done) {
            break;
        }
        await(ch, seen, SHI_NO_DEADLINE, start);
    }
    shi_q_look(ch, 0);
    *out   = a->item;
    *value = a->value;
    free(a);
    if (st == SHOAL_OK && *out == NULL && *value == SHI_Q_EMPTY) {
        return time_out(op, q, timeout_ms);
    }
    return st;
}

// ------------------------------------------------------------ API

static int
queue_checked(shoal_queue *q, const char *op)
{
    if (q == NULL) {
        return shi_error(SHOAL_EINVAL, "%s: queue is NULL", op);
    }
    return shi_q_usable(q->ch, -1, op);
}

// A bad argument, recorded as for every call on the communicator.
static int
invalid(shoal_queue *q, const char *msg)
{
    int st = shi_error(SHOAL_EINVAL, "%s", msg);

    return atomic_load(&q->ch->closed) ? st : shi_comm_error(q->ch->comm, st);
}

// An error's status, recorded on the communicator unless it is a time
// that ran out (not a failure) or the communicator is gone.
static int
finish(shoal_queue *q, int st)
{
    return st == SHOAL_OK || st == SHOAL_EAGAIN || atomic_load(&q->ch->closed)
        ? st
        : shi_comm_error(q->ch->comm, st);
}

int
shoal_queue_get(shoal_queue *q, int64_t timeout_ms, shoal_queue_item **out)
{
    uint64_t value;
    size_t   n;
    int      st;

    if ((st = queue_checked(q, "queue_get")) != SHOAL_OK) {
        return st;
    }
    if (out == NULL) {
        return invalid(q, "queue_get: out is NULL");
    }
    *out = NULL;
    if (q->here) {
        st = local_get(q, 1, timeout_ms, out, &n, "queue_get");
        shi_q_item_hand_out(q->ch, *out);
        return finish(q, st);
    }
    if (q->n > 1) {
        return invalid(q,
            "queue_get: this rank is not a location of this multicast "
            "queue: only its locations take from it, each from its own copy");
    }
    st = ask_location(q, SHI_Q_ASK_TAKE, timeout_ms, out, &value, "queue_get");
    shi_q_item_hand_out(q->ch, *out);
    return finish(q, st);
}

int
shoal_queue_size(shoal_queue *q, size_t *out)
{
    shoal_queue_item *it = NULL;
    uint64_t          value;
    int               st;

    if ((st = queue_checked(q, "queue_size")) != SHOAL_OK) {
        return st;
    }
    if (out == NULL) {
        return invalid(q, "queue_size: out is NULL");
    }
    if (q->here) {
        struct shi_q_channel *ch = q->ch;
        pthread_mutex_lock(&ch->mu);
        shi_q_drain(ch);
        struct shi_q_store *s = shi_q_store(ch, q->id, 0);
        *out                  = s != NULL ? s->count : 0;
        pthread_mutex_unlock(&ch->mu);
        shi_q_flush(ch);
        return SHOAL_OK;
    }
    st   = ask_location(q, SHI_Q_ASK_SIZE, 0, &it, &value, "queue_size");
    *out = st == SHOAL_OK ? (size_t) value : 0;
    return finish(q, st);
}

int
shoal_queue_wait(shoal_queue *q, int64_t timeout_ms)
{
    shoal_queue_item *it = NULL;
    uint64_t          value;
    size_t            n;
    int               st;

    if ((st = queue_checked(q, "queue_wait")) != SHOAL_OK) {
        return st;
    }
    if (q->here) {
        return finish(q, local_get(q, 0, timeout_ms, &it, &n, "queue_wait"));
    }
    return finish(q,
        ask_location(
            q, SHI_Q_ASK_WAIT, timeout_ms, &it, &value, "queue_wait"));
}

// ------------------------------------------------------------ items

shoal_queue_kind
shoal_queue_item_kind(const shoal_queue_item *it)
{
    return it != NULL ? (shoal_queue_kind) it->kind : SHOAL_QUEUE_OBJECT;
}

void *
shoal_queue_item_data(shoal_queue_item *it)
{
    return it != NULL ? it->data : NULL;
}

size_t
shoal_queue_item_bytes(const shoal_queue_item *it)
{
    return it != NULL ? it->bytes : 0;
}

shoal_dtype
shoal_queue_item_dtype(const shoal_queue_item *it)
{
    return it != NULL ? it->dtype : SHOAL_UINT8;
}

int
shoal_queue_item_ndim(const shoal_queue_item *it)
{
    return it != NULL ? it->ndim : 0;
}

const int64_t *
shoal_queue_item_shape(const shoal_queue_item *it)
{
    return it != NULL ? it->shape : NULL;
}

int
shoal_queue_item_sender(const shoal_queue_item *it)
{
    return it != NULL ? it->sender : -1;
}

void
shoal_queue_item_free(shoal_queue_item *it)
{
    shi_q_item_free_list(it);
}
