// Any-source receive cases (SHOAL_ANY_SOURCE): every rank but 0 sends to
// rank 0, which receives without naming the sender. Message k of rank r
// carries mp_fill's pattern for (r, k), so checking a payload against the
// reported sender's next k proves both who sent it and that each sender's
// messages arrive in send order.
#include <signal.h>
#include <string.h>

#include "mptest.h"

#define SMALL ((size_t) 8)
#define LARGE (((size_t) 1 << 20) + 3) // over a shared-memory ring
#define MID   ((size_t) 100003) // several slots, under a ring
#define K     6 // small and large messages per sender (p2p_any)
#define LBASE 100 // pattern index of large message 0, apart from small ones

// Checks that buf holds src's next message of a series (next[src], from
// pattern index base + next[src]) and counts it.
static int
take_next(const void *buf, size_t n, int src, int size, int base, int *next)
{
    if (src <= 0 || src >= size) {
        fprintf(stderr, "rank 0: a message came from rank %d\n", src);
        return 1;
    }
    if (!mp_verify(buf, n, src, base + next[src])) {
        fprintf(stderr, "rank 0: wrong payload or order from rank %d\n", src);
        return 1;
    }
    next[src]++;
    return 0;
}

// Every sender's series is complete: want messages each.
static int
all_taken(const int *next, int size, int want)
{
    for (int r = 1; r < size; r++) {
        MP_CHECK(next[r] == want);
    }
    return 0;
}

static int
send_pattern(shoal_comm *comm, unsigned char *buf, size_t n, int k, int tag)
{
    mp_fill(buf, n, shoal_comm_rank(comm), k);
    MP_OK(shoal_send(comm, buf, n, SHOAL_UINT8, 0, tag));
    return 0;
}

// Blocking: each sender alternates small (tag 11) and large (tag 12)
// messages; rank 0 alternates any-source receives of each, so it takes
// small ones that waited aside and large ones still at their ring's head.
int
mp_case_p2p_any(shoal_comm *comm, int argc, char **argv)
{
    int            rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    unsigned char *buf            = malloc(LARGE);
    int            next_small[64] = { 0 }, next_large[64] = { 0 }, src;
    (void) argc;
    (void) argv;
    MP_CHECK(size <= 64);
    for (int k = 0; rank != 0 && k < K; k++) {
        MP_CHECK(send_pattern(comm, buf, SMALL, k, 11) == 0);
        MP_CHECK(send_pattern(comm, buf, LARGE, LBASE + k, 12) == 0);
    }
    for (int i = 0; rank == 0 && i < (size - 1) * K; i++) {
        MP_OK(shoal_recv_any(comm, buf, SMALL, SHOAL_UINT8, 11, &src));
        MP_CHECK(take_next(buf, SMALL, src, size, 0, next_small) == 0);
        MP_OK(shoal_recv_any(comm, buf, LARGE, SHOAL_UINT8, 12, &src));
        MP_CHECK(take_next(buf, LARGE, src, size, LBASE, next_large) == 0);
    }
    if (rank == 0) {
        MP_CHECK(all_taken(next_small, size, K) == 0);
        MP_CHECK(all_taken(next_large, size, K) == 0);
    }
    free(buf);
    return 0;
}

// Non-blocking any-source receives posted before any message is sent
// (the barrier orders them): n small (tag 21) and n large (tag 22) per
// sender; each request names its sender once complete.
#define EARLY_N 3

static int
early_receiver(shoal_comm *comm, int size)
{
    int             total          = (size - 1) * EARLY_N;
    shoal_request **reqs           = calloc((size_t) total * 2, sizeof(*reqs));
    unsigned char  *small          = malloc((size_t) total * SMALL);
    unsigned char  *large          = malloc((size_t) total * LARGE);
    int             next_small[64] = { 0 }, next_large[64] = { 0 };

    for (int i = 0; i < total; i++) {
        MP_OK(shoal_irecv(comm, small + i * SMALL, SMALL, SHOAL_UINT8,
            SHOAL_ANY_SOURCE, 21, &reqs[2 * i]));
        MP_OK(shoal_irecv(comm, large + i * LARGE, LARGE, SHOAL_UINT8,
            SHOAL_ANY_SOURCE, 22, &reqs[2 * i + 1]));
    }
    MP_OK(shoal_barrier(comm));
    // Receives complete in post order per sender: check them in that order.
    for (int i = 0; i < total; i++) {
        MP_OK(shoal_wait(reqs[2 * i], -1));
        MP_OK(shoal_wait(reqs[2 * i + 1], -1));
        int s = shoal_request_source(reqs[2 * i]);
        int l = shoal_request_source(reqs[2 * i + 1]);
        MP_CHECK(
            take_next(small + i * SMALL, SMALL, s, size, 0, next_small) == 0);
        MP_CHECK(
            take_next(large + i * LARGE, LARGE, l, size, LBASE, next_large)
            == 0);
        shoal_request_free(reqs[2 * i]);
        shoal_request_free(reqs[2 * i + 1]);
    }
    MP_CHECK(all_taken(next_small, size, EARLY_N) == 0);
    MP_CHECK(all_taken(next_large, size, EARLY_N) == 0);
    free(reqs);
    free(small);
    free(large);
    return 0;
}

int
mp_case_p2p_any_early(shoal_comm *comm, int argc, char **argv)
{
    int rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    (void) argc;
    (void) argv;
    MP_CHECK(size <= 64);
    if (size == 1) {
        return 0;
    }
    if (rank == 0) {
        return early_receiver(comm, size);
    }
    unsigned char *buf = malloc(LARGE);
    MP_OK(shoal_barrier(comm));
    for (int k = 0; k < EARLY_N; k++) {
        MP_CHECK(send_pattern(comm, buf, SMALL, k, 21) == 0);
        MP_CHECK(send_pattern(comm, buf, LARGE, LBASE + k, 22) == 0);
    }
    free(buf);
    return 0;
}

// Posted before the sends: named, any-source, named receives for tag 31
// take rank 1's three messages in post order (as in MPI), whatever their
// kind.
static int
mixed_posted(shoal_comm *comm, int rank)
{
    unsigned char *buf = malloc(3 * MID);
    shoal_request *reqs[3];
    int            peers[3] = { 1, SHOAL_ANY_SOURCE, 1 };

    for (int i = 0; rank == 0 && i < 3; i++) {
        MP_OK(shoal_irecv(
            comm, buf + i * MID, MID, SHOAL_UINT8, peers[i], 31, &reqs[i]));
    }
    MP_OK(mp_meet(comm)); // the receives stay posted
    for (int k = 0; rank == 1 && k < 3; k++) {
        MP_CHECK(send_pattern(comm, buf, MID, k, 31) == 0);
    }
    for (int i = 0; rank == 0 && i < 3; i++) {
        MP_OK(shoal_wait(reqs[i], -1));
        MP_CHECK(shoal_request_source(reqs[i]) == 1);
        MP_CHECK(mp_verify(buf + i * MID, MID, 1, i));
        shoal_request_free(reqs[i]);
    }
    free(buf);
    return 0;
}

// Arrived before the receives: every sender's small messages (tag 32)
// wait aside and its large ones (tag 33, non-blocking) at its ring's
// head; rank 0 then takes some by name and the rest from any source. A
// pending receive of another tag keeps rank 0's engine looking at the
// channels meanwhile, so the messages are seen before they are received.
static int
mixed_arrived(shoal_comm *comm, int rank, int size)
{
    unsigned char *small = malloc(4 * SMALL), *large = malloc(2 * LARGE);
    int            next_small[64] = { 0 }, next_large[64] = { 0 }, src, end;
    shoal_request *reqs[6], *late                         = NULL;

    if (rank == 0) {
        MP_OK(shoal_irecv(comm, &end, 1, SHOAL_INT32, 1, 39, &late));
    }
    // Small ones first: behind a large one they would wait in the sender's
    // queue, not at rank 0 (see "Point-to-point matching" in
    // docs/architecture.md).
    for (int k = 0; rank != 0 && k < 4; k++) {
        mp_fill(small + k * SMALL, SMALL, rank, k);
        MP_OK(shoal_isend(
            comm, small + k * SMALL, SMALL, SHOAL_UINT8, 0, 32, &reqs[k]));
    }
    for (int k = 0; rank != 0 && k < 2; k++) {
        mp_fill(large + k * LARGE, LARGE, rank, LBASE + k);
        MP_OK(shoal_isend(
            comm, large + k * LARGE, LARGE, SHOAL_UINT8, 0, 33, &reqs[4 + k]));
    }
    MP_OK(mp_meet(comm)); // everything stays pending
    if (rank == 0) {
        mp_sleep_ms(100);
        MP_CHECK(shoal_test(late) == SHOAL_INPROGRESS);
        // Rank 1's first of each by name, then everything from any source.
        MP_OK(shoal_recv(comm, small, SMALL, SHOAL_UINT8, 1, 32));
        MP_CHECK(take_next(small, SMALL, 1, size, 0, next_small) == 0);
        MP_OK(shoal_recv(comm, large, LARGE, SHOAL_UINT8, 1, 33));
        MP_CHECK(take_next(large, LARGE, 1, size, LBASE, next_large) == 0);
        for (int i = 1; i < (size - 1) * 4; i++) {
            MP_OK(shoal_recv_any(comm, small, SMALL, SHOAL_UINT8, 32, &src));
            MP_CHECK(take_next(small, SMALL, src, size, 0, next_small) == 0);
            if (i < (size - 1) * 2) {
                MP_OK(
                    shoal_recv_any(comm, large, LARGE, SHOAL_UINT8, 33, &src));
                MP_CHECK(take_next(large, LARGE, src, size, LBASE, next_large)
                    == 0);
            }
        }
        MP_CHECK(all_taken(next_small, size, 4) == 0);
        MP_CHECK(all_taken(next_large, size, 2) == 0);
    }
    for (int i = 0; rank != 0 && i < 6; i++) {
        MP_OK(shoal_wait(reqs[i], -1));
        shoal_request_free(reqs[i]);
    }
    MP_OK(mp_meet(comm)); // tag 39 only once rank 0 has the rest
    if (rank == 1) {
        end = 7;
        MP_OK(shoal_send(comm, &end, 1, SHOAL_INT32, 0, 39));
    } else if (rank == 0) {
        MP_OK(shoal_wait(late, -1));
        MP_CHECK(end == 7 && shoal_request_source(late) == 1);
        shoal_request_free(late);
    }
    free(small);
    free(large);
    return 0;
}

int
mp_case_p2p_any_mixed(shoal_comm *comm, int argc, char **argv)
{
    int rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    (void) argc;
    (void) argv;
    MP_CHECK(size <= 64);
    if (size == 1) {
        return 0;
    }
    MP_CHECK(mixed_posted(comm, rank) == 0);
    MP_CHECK(mixed_arrived(comm, rank, size) == 0);
    return 0;
}

// The last rank SIGKILLs itself while rank 0 waits in an any-source
// receive nobody sends to: the receive fails within 2 s naming it, since
// the dead rank might have been its sender.
int
mp_case_p2p_any_kill(shoal_comm *comm, int argc, char **argv)
{
    int            rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int            victim = size - 1, x = 0;
    shoal_request *req = NULL;
    char           name[32];
    (void) argc;
    (void) argv;
    MP_CHECK(size > 1);
    snprintf(name, sizeof(name), "rank %d", victim);
    if (rank == 0) {
        MP_OK(
            shoal_irecv(comm, &x, 1, SHOAL_INT32, SHOAL_ANY_SOURCE, 41, &req));
    }
    MP_OK(mp_meet(comm));
    if (rank == victim) {
        mp_sleep_ms(100); // rank 0 is waiting by now
        raise(SIGKILL);
    }
    double t0     = mp_now();
    int    st     = rank == 0 ? shoal_wait(req, -1)
                              : shoal_recv(comm, &x, 1, SHOAL_INT32, victim, 41);
    double waited = mp_now() - t0;
    printf("rank %d: failed after %.3f s: %s: %s\n", rank, waited,
        shoal_status_name(st), shoal_last_error());
    MP_CHECK(st == SHOAL_EPEER);
    MP_CHECK(strstr(shoal_last_error(), name) != NULL);
    MP_CHECK(waited < 2.0);
    shoal_request_free(req);
    MP_EXPECT(shoal_barrier(comm), SHOAL_EABORTED);
    return 0;
}

// Requests report their source: still pending (an error), an any-source
// receive (its sender), a named one (its peer), a send (an error).
static int
errors_source(shoal_comm *comm, int rank, int size)
{
    shoal_request *req;
    int            x = rank, src = -5;

    if (rank == 0) {
        MP_OK(
            shoal_irecv(comm, &x, 1, SHOAL_INT32, SHOAL_ANY_SOURCE, 51, &req));
        MP_EXPECT(shoal_request_source(req), SHOAL_EINVAL); // pending
        MP_CHECK(strstr(shoal_last_error(), "not completed") != NULL);
    }
    MP_OK(shoal_barrier(comm));
    if (rank == 1) {
        MP_OK(shoal_send(comm, &x, 1, SHOAL_INT32, 0, 51));
        MP_OK(shoal_isend(comm, &x, 1, SHOAL_INT32, 0, 52, &req));
        MP_EXPECT(shoal_request_source(req), SHOAL_EINVAL); // a send
        MP_OK(shoal_wait(req, -1));
        shoal_request_free(req);
    }
    if (rank == size - 1) {
        MP_OK(shoal_send(comm, &x, 1, SHOAL_INT32, 0, 53));
    }
    if (rank == 0) {
        MP_OK(shoal_wait(req, -1));
        MP_CHECK(x == 1 && shoal_request_source(req) == 1);
        shoal_request_free(req);
        MP_OK(shoal_recv_any(comm, &x, 1, SHOAL_INT32, 52, &src));
        MP_CHECK(x == 1 && src == 1);
        MP_OK(shoal_irecv(comm, &x, 1, SHOAL_INT32, size - 1, 53, &req));
        MP_OK(shoal_wait(req, -1));
        MP_CHECK(x == size - 1 && shoal_request_source(req) == size - 1);
        shoal_request_free(req);
    }
    return 0;
}

// Every other rank destroys its communicator while rank 0 waits in an
// any-source receive nothing matches: it can never complete (SHOAL_EPEER).
static int
fault_left(shoal_comm *comm, int rank)
{
    int x, src = -5;

    if (rank != 0) {
        return 0; // main destroys the communicator
    }
    MP_EXPECT(shoal_recv_any(comm, &x, 1, SHOAL_INT32, 54, &src), SHOAL_EPEER);
    MP_CHECK(strstr(shoal_last_error(), "can never complete") != NULL);
    MP_CHECK(src == SHOAL_ANY_SOURCE);
    return 0;
}

// Rank 0's any-source receive that nothing matches passes its deadline;
// the others, in a barrier rank 0 never joins, get its abort.
static int
fault_timeout(shoal_comm *comm, int rank)
{
    int x, src = -5;

    if (rank != 0) {
        MP_CHECK(shoal_barrier(comm) == SHOAL_ETIMEDOUT);
        return 0;
    }
    MP_OK(shoal_comm_set_timeout(comm, 300));
    MP_EXPECT(
        shoal_recv_any(comm, &x, 1, SHOAL_INT32, 55, &src), SHOAL_ETIMEDOUT);
    MP_CHECK(strstr(shoal_last_error(), "from any rank") != NULL);
    MP_CHECK(src == SHOAL_ANY_SOURCE);
    return 0;
}

// Rank 1 sends 10 ints where rank 0's any-source receive expects 5: the
// receive fails as a named one would, and so does everyone's next call.
static int
fault_mismatch(shoal_comm *comm, int rank)
{
    int v[10] = { 0 }, src = -5;

    if (rank == 1) {
        MP_OK(shoal_send(comm, v, 10, SHOAL_INT32, 0, 56));
    }
    if (rank == 0) {
        MP_EXPECT(shoal_recv_any(comm, v, 5, SHOAL_INT32, 56, &src),
            SHOAL_EMISMATCH);
        MP_CHECK(strstr(shoal_last_error(), "40 bytes") != NULL);
    }
    MP_CHECK(shoal_barrier(comm) < 0);
    return 0;
}

// argv[0] picks the fault: "left", "timeout" or "mismatch". Rank 0 sees
// it within seconds, and its communicator is aborted after.
static int
errors_fault(shoal_comm *comm, int rank, const char *how)
{
    double t0 = mp_now();
    int    rc;

    if (strcmp(how, "left") == 0) {
        rc = fault_left(comm, rank);
    } else if (strcmp(how, "timeout") == 0) {
        rc = fault_timeout(comm, rank);
    } else {
        rc = fault_mismatch(comm, rank);
    }
    if (rc != 0 || rank != 0) {
        return rc;
    }
    MP_CHECK(mp_now() - t0 < 5.0);
    MP_EXPECT(shoal_barrier(comm), SHOAL_EABORTED);
    return 0;
}

// Bad arguments fail at once and leave the communicator usable; then the
// source of each kind of request, then a fault (errors_fault).
int
mp_case_p2p_any_errors(shoal_comm *comm, int argc, char **argv)
{
    int            rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int            x = 0, src = -5;
    shoal_request *req = (shoal_request *) &x;

    MP_EXPECT(shoal_recv(comm, &x, 1, SHOAL_INT32, -2, 0), SHOAL_EINVAL);
    MP_EXPECT(shoal_send(comm, &x, 1, SHOAL_INT32, SHOAL_ANY_SOURCE, 0),
        SHOAL_EINVAL);
    MP_EXPECT(
        shoal_recv_any(comm, &x, 1, SHOAL_INT32, -1, &src), SHOAL_EINVAL);
    MP_CHECK(src == SHOAL_ANY_SOURCE);
    MP_EXPECT(shoal_request_source(NULL), SHOAL_EINVAL);
    if (size == 1) { // nobody could send: refused like a send to oneself
        MP_EXPECT(
            shoal_recv_any(comm, &x, 1, SHOAL_INT32, 0, NULL), SHOAL_EINVAL);
        MP_EXPECT(
            shoal_irecv(comm, &x, 1, SHOAL_INT32, SHOAL_ANY_SOURCE, 0, &req),
            SHOAL_EINVAL);
        MP_CHECK(req == NULL);
        return 0;
    }
    MP_OK(shoal_barrier(comm));
    MP_CHECK(errors_source(comm, rank, size) == 0);
    return errors_fault(comm, rank, argc > 0 ? argv[0] : "left");
}
