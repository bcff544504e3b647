// Queues (shoal.h, "Queues"): many senders to one location with each
// sender's order checked, remote gets, multicast, named queues, objects
// and tensors mixed, transactions, items larger than a ring, time-outs,
// and a location killed while others wait on it.
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "mptest.h"

#define ITEMS 200

static int shared_queue; // several ranks take from the queue

// A tensor of 3 int32: sender, sequence, a check word.
static int
put_seq(shoal_queue *q, int rank, int k, unsigned flags)
{
    int32_t v[3]     = { rank, k, rank * 1000003 + k };
    int64_t shape[1] = { 3 };

    return shoal_queue_put(
        q, SHOAL_QUEUE_TENSOR, v, sizeof(v), SHOAL_INT32, 1, shape, flags, -1);
}

// Takes one item made by put_seq and checks it against each sender's next
// expected sequence number in `next`: that number itself, or where other
// ranks take from the same queue too, that number or a later one.
static int
get_seq(shoal_queue *q, int *next, int64_t timeout_ms)
{
    shoal_queue_item *it;

    MP_OK(shoal_queue_get(q, timeout_ms, &it));
    int32_t *v = shoal_queue_item_data(it);
    MP_CHECK(shoal_queue_item_kind(it) == SHOAL_QUEUE_TENSOR);
    MP_CHECK(shoal_queue_item_dtype(it) == SHOAL_INT32);
    MP_CHECK(shoal_queue_item_ndim(it) == 1);
    MP_CHECK(shoal_queue_item_shape(it)[0] == 3);
    MP_CHECK(shoal_queue_item_bytes(it) == 12);
    MP_CHECK(v[0] == shoal_queue_item_sender(it));
    MP_CHECK(v[1] == next[v[0]] || (shared_queue && v[1] > next[v[0]]));
    MP_CHECK(v[2] == v[0] * 1000003 + v[1]);
    next[v[0]] = v[1] + 1;
    shoal_queue_item_free(it);
    return 0;
}

// Every rank puts ITEMS items into a queue on the last rank; rank 0 takes
// half of them from afar, the location the rest; each sender's items come
// in order. Then size, wait and time-outs on an empty queue.
static int
many_to_one(shoal_comm *comm)
{
    int          rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int          where = size - 1, next[64] = { 0 };
    shoal_queue *q;
    size_t       n;

    MP_CHECK(size <= 64);
    MP_OK(shoal_queue_create(comm, &where, 1, 0, &q));
    for (int k = 0; k < ITEMS; k++) {
        MP_OK(put_seq(q, rank, k, 0));
    }
    int total = ITEMS * size, mine = rank == where ? total / 2 : 0;
    if (size == 1) {
        mine = total;
    } else if (rank == 0) {
        mine = total - total / 2;
    }
    shared_queue = size > 1;
    for (int i = 0; i < mine; i++) {
        if (get_seq(q, next, 20000) != 0) {
            return 1;
        }
    }
    shared_queue = 0;
    MP_OK(shoal_barrier(comm));
    MP_OK(shoal_queue_size(q, &n));
    MP_CHECK(n == 0);
    MP_EXPECT(shoal_queue_wait(q, 0), SHOAL_EAGAIN);
    double            t0 = mp_now();
    shoal_queue_item *it;
    MP_EXPECT(shoal_queue_get(q, 100, &it), SHOAL_EAGAIN);
    MP_CHECK(mp_now() - t0 >= 0.09);
    MP_EXPECT(shoal_queue_get(q, 0, &it), SHOAL_EAGAIN);
    MP_OK(shoal_barrier(comm));
    // The time-outs left the communicator usable.
    if (rank == 0) {
        MP_OK(put_seq(q, rank, ITEMS, 0));
    }
    MP_OK(shoal_barrier(comm));
    MP_OK(shoal_queue_wait(q, 10000));
    MP_OK(shoal_queue_size(q, &n));
    MP_CHECK(n == 1);
    MP_OK(shoal_barrier(comm));
    if (rank == where) {
        next[0] = ITEMS;
        MP_CHECK(get_seq(q, next, 0) == 0);
    }
    MP_OK(shoal_barrier(comm));
    shoal_queue_free(q);
    return 0;
}

// Every put to a multicast queue reaches each location; others cannot get.
static int
multicast(shoal_comm *comm)
{
    int          rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int          where[64], nw = 0, next[64] = { 0 }, here = 0;
    shoal_queue *q;

    for (int r = 0; r < size; r += 2) {
        where[nw++] = r;
        here |= r == rank;
    }
    MP_OK(shoal_queue_create(comm, where, nw, 0, &q));
    for (int k = 0; k < 10; k++) {
        MP_OK(put_seq(q, rank, k, 0));
    }
    if (here) {
        for (int i = 0; i < 10 * size; i++) {
            if (get_seq(q, next, 20000) != 0) {
                return 1;
            }
        }
    } else if (nw > 1) {
        shoal_queue_item *it;
        MP_EXPECT(shoal_queue_get(q, 0, &it), SHOAL_EINVAL);
    }
    MP_OK(shoal_barrier(comm));
    shoal_queue_free(q);
    return 0;
}

// A named queue opened by two ranks alone: rank 1 (or 0) sends objects
// and tensors mixed; a transaction shows its items together.
static int
named_and_tx(shoal_comm *comm)
{
    int          rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int          where = 0, other = size - 1, next[64] = { 0 };
    shoal_queue *q, *q2;
    shoal_queue_item *it;
    size_t            n;

    MP_OK(shoal_queue_channel_open(comm));
    if (rank == other) {
        MP_OK(shoal_queue_open(comm, "jobs", &where, 1, 0, &q));
        if (other != where) {
            MP_EXPECT(shoal_queue_open(comm, "jobs", &other, 1, 0, &q2),
                SHOAL_EINVAL);
        }
        MP_OK(shoal_queue_put(
            q, SHOAL_QUEUE_OBJECT, "hello", 5, SHOAL_UINT8, 0, NULL, 0, -1));
        MP_OK(put_seq(q, rank, 0, 0));
        // A transaction of three, the last one closing it.
        MP_OK(put_seq(q, rank, 1, SHOAL_QUEUE_MORE));
        MP_OK(put_seq(q, rank, 2, SHOAL_QUEUE_MORE));
        MP_OK(shoal_queue_size(q, &n));
        MP_CHECK(n <= 2 || rank == where); // the two held back are not counted
        MP_OK(put_seq(q, rank, 3, 0));
        shoal_queue_free(q);
    }
    if (rank == where) {
        MP_OK(shoal_queue_open(comm, "jobs", &where, 1, 0, &q));
        MP_OK(shoal_queue_get(q, 20000, &it));
        MP_CHECK(shoal_queue_item_kind(it) == SHOAL_QUEUE_OBJECT);
        MP_CHECK(shoal_queue_item_bytes(it) == 5);
        MP_CHECK(memcmp(shoal_queue_item_data(it), "hello", 5) == 0);
        shoal_queue_item_free(it);
        next[other] = 0;
        MP_CHECK(get_seq(q, next, 20000) == 0);
        MP_OK(shoal_queue_wait(q, 20000));
        MP_OK(shoal_queue_size(q, &n));
        MP_CHECK(n == 3); // the transaction came whole
        for (int i = 0; i < 3; i++) {
            MP_CHECK(get_seq(q, next, 0) == 0);
        }
        shoal_queue_free(q);
    }
    MP_OK(shoal_barrier(comm));
    return 0;
}

// An item of several rings' size, from every rank to rank 0, and back
// from afar.
static int
large(shoal_comm *comm)
{
    int          rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int          where   = 0;
    size_t       bytes   = (size_t) 3 << 20;
    int64_t      shape[] = { (int64_t) (bytes / 8) };
    shoal_queue *q;
    shoal_queue_item *it;
    unsigned char    *buf = malloc(bytes);

    MP_CHECK(buf != NULL);
    MP_OK(shoal_queue_create(comm, &where, 1, 0, &q));
    mp_fill(buf, bytes, rank, 1);
    MP_OK(shoal_queue_put(
        q, SHOAL_QUEUE_TENSOR, buf, bytes, SHOAL_FLOAT64, 1, shape, 0, -1));
    if (rank == 0) {
        for (int i = 0; i < size; i++) {
            MP_OK(shoal_queue_get(q, 30000, &it));
            MP_CHECK(shoal_queue_item_bytes(it) == bytes);
            MP_CHECK(mp_verify(shoal_queue_item_data(it), bytes,
                shoal_queue_item_sender(it), 1));
            shoal_queue_item_free(it);
        }
        MP_OK(shoal_queue_put(q, SHOAL_QUEUE_TENSOR, buf, bytes, SHOAL_FLOAT64,
            1, shape, 0, -1));
    }
    MP_OK(shoal_barrier(comm));
    if (rank == size - 1) {
        MP_OK(shoal_queue_get(q, 30000, &it));
        MP_CHECK(mp_verify(shoal_queue_item_data(it), bytes, 0, 1));
        shoal_queue_item_free(it);
    }
    MP_OK(shoal_barrier(comm));
    shoal_queue_free(q);
    free(buf);
    return 0;
}

// Non-blocking puts: four 1 MiB items and a small one in flight at once
// from every rank to rank 0, each buffer kept until its request is done;
// rank 0 takes them all, each sender's in order and intact.
static int
iputs(shoal_comm *comm)
{
    int            rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int            where = 0, seen[64] = { 0 };
    size_t         bytes    = (size_t) 1 << 20;
    int64_t        shape[1] = { (int64_t) bytes }, one[1] = { 1 };
    unsigned char *buf[4];
    shoal_request *req[5];

    MP_CHECK(size <= 64);
    shoal_queue *q;
    MP_OK(shoal_queue_create(comm, &where, 1, 0, &q));
    for (int k = 0; k < 4; k++) {
        MP_CHECK((buf[k] = malloc(bytes)) != NULL);
        mp_fill(buf[k], bytes, rank, k);
        MP_OK(shoal_queue_iput(q, SHOAL_QUEUE_TENSOR, buf[k], bytes,
            SHOAL_UINT8, 1, shape, 0, -1, &req[k]));
    }
    unsigned char last = (unsigned char) rank;
    MP_OK(shoal_queue_iput(
        q, SHOAL_QUEUE_TENSOR, &last, 1, SHOAL_UINT8, 1, one, 0, -1, &req[4]));
    MP_CHECK(shoal_test(req[4]) == SHOAL_OK); // small: sent on return
    if (rank == where) {
        for (int i = 0; i < 5 * size; i++) {
            shoal_queue_item *it;
            MP_OK(shoal_queue_get(q, 30000, &it));
            int from = shoal_queue_item_sender(it), k = seen[from]++;
            if (k < 4) {
                MP_CHECK(shoal_queue_item_bytes(it) == bytes);
                MP_CHECK(mp_verify(shoal_queue_item_data(it), bytes, from, k));
            } else {
                MP_CHECK(*(unsigned char *) shoal_queue_item_data(it) == from);
            }
            shoal_queue_item_free(it);
        }
    }
    for (int k = 0; k < 5; k++) {
        MP_OK(shoal_wait(req[k], -1));
        shoal_request_free(req[k]);
    }
    MP_OK(shoal_barrier(comm));
    for (int k = 0; k < 4; k++) {
        free(buf[k]);
    }
    shoal_queue_free(q);
    return 0;
}

// Arguments a rank gets wrong fail there, and the channel goes on.
static int
bad_args(shoal_comm *comm)
{
    int               size = shoal_comm_size(comm), where = 0, bad = size;
    int               twice[2] = { 0, 0 };
    int64_t           shape[1] = { 4 };
    shoal_queue      *q, *q2;
    shoal_queue_item *it;
    char              name[300];

    MP_EXPECT(shoal_queue_create(comm, &bad, 1, 0, &q), SHOAL_EINVAL);
    MP_EXPECT(shoal_queue_create(comm, twice, 2, 0, &q), SHOAL_EINVAL);
    MP_EXPECT(shoal_queue_create(comm, &where, 1, 1, &q), SHOAL_ENOTSUP);
    MP_OK(shoal_queue_create(comm, &where, 1, 0, &q));
    MP_EXPECT(shoal_queue_put(q, SHOAL_QUEUE_TENSOR, "abc", 3, SHOAL_FLOAT32,
                  1, shape, 0, -1),
        SHOAL_EINVAL);
    MP_EXPECT(shoal_queue_put(q, 7, "abc", 3, SHOAL_UINT8, 0, NULL, 0, -1),
        SHOAL_EINVAL);
    MP_EXPECT(shoal_queue_put(q, SHOAL_QUEUE_OBJECT, "abc", 3, SHOAL_UINT8, 0,
                  NULL, 8, -1),
        SHOAL_EINVAL);
    MP_EXPECT(shoal_queue_get(q, 0, NULL), SHOAL_EINVAL);
    memset(name, 'x', sizeof(name) - 1);
    name[sizeof(name) - 1] = 0;
    MP_EXPECT(shoal_queue_open(comm, name, &where, 1, 0, &q2), SHOAL_EINVAL);
    MP_CHECK(q2 == NULL);
    MP_EXPECT(shoal_queue_get(q, 0, &it), SHOAL_EAGAIN);
    MP_OK(shoal_barrier(comm));
    shoal_queue_free(q);
    return 0;
}

// Over shared memory an item is at its location when its put returns;
// over TCP it is on the wire and arrives shortly after: the size then may
// rise to `want` (never past it) within 10 s.
static int
settled_size(shoal_queue *q, size_t want, size_t *n)
{
    const char *tp     = getenv("SHOAL_TRANSPORT");
    int         flight = getenv("SHOAL_TEST_NET") != NULL
        || (tp != NULL && strcmp(tp, "tcp") == 0);
    double until = mp_now() + 10;
    int    st;

    while ((st = shoal_queue_size(q, n)) == SHOAL_OK && flight && *n < want
        && mp_now() < until) {
        mp_sleep_ms(1);
    }
    return st;
}

// Items put before a barrier are counted by a size asked after it from
// any rank, even when they still sit in the location's rings when the ask
// is read (a sender ranked after the asker, a large item in pieces).
static int
sizes_after_barrier(shoal_comm *comm)
{
    int          rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int          where = size > 1 ? 1 : 0, putter = size - 1;
    size_t       big      = (size_t) 2 << 20, n;
    float       *buf      = calloc(big / sizeof(float), sizeof(float));
    int64_t      shape[1] = { (int64_t) (big / sizeof(float)) };
    shoal_queue *q;

    MP_CHECK(buf != NULL);
    MP_OK(shoal_queue_create(comm, &where, 1, 0, &q));
    for (int round = 0; round < 20; round++) {
        size_t want = round % 4 == 0 ? 4 : 3;
        if (rank == putter) {
            for (int k = 0; k < 3; k++) {
                MP_OK(put_seq(q, rank, k, 0));
            }
            if (want == 4) {
                MP_OK(shoal_queue_put(q, SHOAL_QUEUE_TENSOR, buf, big,
                    SHOAL_FLOAT32, 1, shape, 0, -1));
            }
        }
        MP_OK(shoal_barrier(comm));
        MP_OK(settled_size(q, want, &n));
        if (n != want) {
            fprintf(
                stderr, "round %d: size %zu, wanted %zu\n", round, n, want);
            return 1;
        }
        MP_OK(shoal_barrier(comm));
        for (size_t i = 0; rank == where && i < want; i++) {
            shoal_queue_item *it;
            MP_OK(shoal_queue_get(q, 0, &it));
            shoal_queue_item_free(it);
        }
        MP_OK(shoal_barrier(comm));
    }
    shoal_queue_free(q);
    free(buf);
    return 0;
}

int
mp_case_queue(shoal_comm *comm, int argc, char **argv)
{
    (void) argc;
    (void) argv;
    return many_to_one(comm) || sizes_after_barrier(comm) || multicast(comm)
        || named_and_tx(comm) || large(comm) || iputs(comm) || bad_args(comm);
}

// Rank 0 holds the queue and dies while the others wait to take from it:
// each wait fails within 2 s with SHOAL_EPEER naming rank 0.
int
mp_case_queue_kill(shoal_comm *comm, int argc, char **argv)
{
    int               rank = shoal_comm_rank(comm), where = 0;
    shoal_queue      *q;
    shoal_queue_item *it;

    (void) argc;
    (void) argv;
    MP_OK(shoal_queue_create(comm, &where, 1, 0, &q));
    MP_OK(shoal_barrier(comm));
    if (rank == where) {
        mp_sleep_ms(300);
        raise(SIGKILL);
    }
    double t0 = mp_now();
    int    st = shoal_queue_get(q, -1, &it);
    printf("rank %d: get after %.2f s: %s: %s\n", rank, mp_now() - t0,
        shoal_status_name(st), shoal_last_error());
    MP_CHECK(st == SHOAL_EPEER || st == SHOAL_EABORTED);
    MP_CHECK(strstr(shoal_last_error(), "rank 0") != NULL);
    MP_CHECK(mp_now() - t0 < 2.3);
    MP_CHECK(shoal_queue_put(
                 q, SHOAL_QUEUE_OBJECT, "x", 1, SHOAL_UINT8, 0, NULL, 0, -1)
        != SHOAL_OK);
    shoal_queue_free(q);
    return 0;
}

// Rank 0's queue holds SHOAL_QUEUE_CAPACITY items; past them the last
// rank's puts fill its ring, then a put that may not wait fails with
// SHOAL_EAGAIN, sending nothing. Rank 0 then takes every item in order,
// and a put goes through again.
int
mp_case_queue_full(shoal_comm *comm, int argc, char **argv)
{
    int          rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int          where = 0, sender = size - 1, next[64] = { 0 }, sent = 0;
    shoal_queue *q;
    const char  *cap = getenv("SHOAL_QUEUE_CAPACITY");

    (void) argc;
    (void) argv;
    MP_CHECK(size >= 2 && cap != NULL);
    MP_OK(shoal_queue_create(comm, &where, 1, 0, &q));
    if (rank == sender) {
        int32_t v[3]     = { rank, 0, 0 };
        int64_t shape[1] = { 3 };
        int     st;
        for (;; sent++) {
            v[1] = sent;
            v[2] = rank * 1000003 + sent;
            st   = shoal_queue_put(q, SHOAL_QUEUE_TENSOR, v, sizeof(v),
                  SHOAL_INT32, 1, shape, 0, sent < atoi(cap) ? -1 : 0);
            if (st != SHOAL_OK) {
                break;
            }
            MP_CHECK(sent < 100000);
        }
        MP_EXPECT(st, SHOAL_EAGAIN);
        MP_CHECK(sent > atoi(cap)); // the ring took more past the queue
    }
    MP_OK(shoal_broadcast(comm, &sent, 1, SHOAL_INT32, sender));
    if (rank == where) {
        size_t n;
        MP_OK(settled_size(q, (size_t) atoi(cap), &n));
        MP_CHECK(n == (size_t) atoi(cap));
        for (int i = 0; i < sent; i++) {
            MP_CHECK(get_seq(q, next, 20000) == 0);
        }
        MP_CHECK(next[sender] == sent);
    }
    MP_OK(shoal_barrier(comm));
    if (rank == sender) {
        MP_OK(put_seq(q, rank, sent, 0));
    }
    if (rank == where) {
        MP_CHECK(get_seq(q, next, 20000) == 0);
    }
    MP_OK(shoal_barrier(comm));
    shoal_queue_free(q);
    return 0;
}

// Every rank puts 500 items into the queue of every rank, all at once,
// before any rank takes: with small rings every sender waits for room, so
// the locations' service threads must take items in while their
// application is busy putting. Then each rank takes its items, each
// sender's in order.
int
mp_case_queue_all(shoal_comm *comm, int argc, char **argv)
{
    int           rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int           next[64] = { 0 };
    shoal_queue **q        = calloc((size_t) size, sizeof(*q));
    size_t        left;

    (void) argc;
    (void) argv;
    MP_CHECK(q != NULL && size <= 64);
    for (int r = 0; r < size; r++) {
        MP_OK(shoal_queue_create(comm, &r, 1, 0, &q[r]));
    }
    for (int k = 0; k < 500; k++) {
        for (int d = 0; d < size; d++) {
            MP_OK(put_seq(q[(rank + d) % size], rank, k, 0));
        }
    }
    for (int i = 0; i < 500 * size; i++) {
        MP_CHECK(get_seq(q[rank], next, 30000) == 0);
    }
    MP_OK(shoal_barrier(comm));
    MP_OK(shoal_queue_size(q[rank], &left));
    MP_CHECK(left == 0);
    for (int r = 0; r < size; r++) {
        shoal_queue_free(q[r]);
    }
    free(q);
    return 0;
}
