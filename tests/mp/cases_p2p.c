// Point-to-point cases.
#include <string.h>

#include "mptest.h"

// Sizes in bytes: empty, tiny, odd, one slot, several slots, > the ring.
static const size_t p2p_sizes[]
    = { 0, 1, 7, 1023, 32768, 100003, (1u << 20) + 3 };
#define NSIZES (sizeof(p2p_sizes) / sizeof(p2p_sizes[0]))

// Every rank sends to (rank + 1) and receives from (rank - 1), for every
// size, with blocking calls ordered so the ring cannot deadlock. Argument
// "heap": the buffers come from shoal_alloc (a message larger than the
// channel is then read from the sender's heap even without
// process_vm_readv, SHOAL_CMA=0).
int
mp_case_p2p(shoal_comm *comm, int argc, char **argv)
{
    int rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int heap = argc > 0 && strcmp(argv[0], "heap") == 0;
    if (size == 1) {
        return 0;
    }
    int            next = (rank + 1) % size, prev = (rank + size - 1) % size;
    unsigned char *out = NULL, *in = NULL;
    if (heap) {
        MP_OK(shoal_alloc(comm, p2p_sizes[NSIZES - 1], (void **) &out));
        MP_OK(shoal_alloc(comm, p2p_sizes[NSIZES - 1], (void **) &in));
    } else {
        out = malloc(p2p_sizes[NSIZES - 1]);
        in  = malloc(p2p_sizes[NSIZES - 1]);
    }
    MP_CHECK(out != NULL && in != NULL);
    for (size_t k = 0; k < NSIZES; k++) {
        size_t n = p2p_sizes[k];
        mp_fill(out, n, rank, (int) k);
        memset(in, 0, n);
        if (rank % 2 == 0) {
            MP_OK(shoal_send(comm, out, n, SHOAL_UINT8, next, 5));
            MP_OK(shoal_recv(comm, in, n, SHOAL_UINT8, prev, 5));
        } else {
            MP_OK(shoal_recv(comm, in, n, SHOAL_UINT8, prev, 5));
            MP_OK(shoal_send(comm, out, n, SHOAL_UINT8, next, 5));
        }
        MP_CHECK(mp_verify(in, n, prev, (int) k));
    }
    // Typed: float64 count is elements, not bytes.
    double d[3] = { 1.5, -2.25, (double) rank }, e[3];
    if (rank % 2 == 0) {
        MP_OK(shoal_send(comm, d, 3, SHOAL_FLOAT64, next, 0));
        MP_OK(shoal_recv(comm, e, 3, SHOAL_FLOAT64, prev, 0));
    } else {
        MP_OK(shoal_recv(comm, e, 3, SHOAL_FLOAT64, prev, 0));
        MP_OK(shoal_send(comm, d, 3, SHOAL_FLOAT64, next, 0));
    }
    MP_CHECK(e[0] == 1.5 && e[1] == -2.25 && e[2] == (double) prev);
    if (heap) {
        MP_OK(shoal_free(comm, out));
        MP_OK(shoal_free(comm, in));
    } else {
        free(out);
        free(in);
    }
    return 0;
}

// Messages with the same tag arrive in order; receives posted in another
// tag order than the sends still match by tag.
int
mp_case_p2p_tags(shoal_comm *comm, int argc, char **argv)
{
    int rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    (void) argc;
    (void) argv;
    if (size < 2 || rank > 1) {
        return 0;
    }
    if (rank == 0) {
        for (int i = 0; i < 20; i++) {
            int v = i;
            MP_OK(shoal_send(comm, &v, 1, SHOAL_INT32, 1, i % 2 ? 7 : 3));
        }
        return 0;
    }
    // Receive tag 7's messages first: tag 3's wait aside in order.
    for (int want = 1; want < 20; want += 2) {
        int v = -1;
        MP_OK(shoal_recv(comm, &v, 1, SHOAL_INT32, 0, 7));
        MP_CHECK(v == want);
    }
    for (int want = 0; want < 20; want += 2) {
        int v = -1;
        MP_OK(shoal_recv(comm, &v, 1, SHOAL_INT32, 0, 3));
        MP_CHECK(v == want);
    }
    return 0;
}

// Non-blocking exchange of large messages in both directions at once: with
// blocking sends this would need the peer to receive first.
int
mp_case_p2p_async(shoal_comm *comm, int argc, char **argv)
{
    int    rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    size_t n = (4u << 20) + 5;
    (void) argc;
    (void) argv;
    if (size == 1) {
        return 0;
    }
    int            next = (rank + 1) % size, prev = (rank + size - 1) % size;
    unsigned char *out = malloc(n), *in = malloc(n);
    shoal_request *sreq, *rreq;
    mp_fill(out, n, rank, 9);
    MP_OK(shoal_isend(comm, out, n, SHOAL_UINT8, next, 1, &sreq));
    MP_OK(shoal_irecv(comm, in, n, SHOAL_UINT8, prev, 1, &rreq));
    // Overlap: poll with test() while "computing".
    int polls = 0;
    while (shoal_test(rreq) == SHOAL_INPROGRESS) {
        polls++;
        mp_sleep_ms(1);
    }
    MP_OK(shoal_test(rreq));
    MP_OK(shoal_wait(sreq, -1));
    shoal_request_free(sreq);
    shoal_request_free(rreq);
    MP_CHECK(mp_verify(in, n, prev, 9));
    MP_OK(shoal_comm_sync(comm));
    free(out);
    free(in);
    return 0;
}

// A large message (read in one copy) that arrived before its non-blocking
// receive was posted: the receive is issued without reading it (its caller
// goes on to issue), and it completes both when the caller only polls with
// test() (the progress thread reads it once the caller stops issuing) and
// when the caller issues its own large send next and then waits for both.
// Pairs of ranks (0 with 1, 2 with 3, ...); an odd last rank only syncs.
int
mp_case_p2p_arrived(shoal_comm *comm, int argc, char **argv)
{
    int    rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int    peer = rank ^ 1;
    size_t n    = (8u << 20) + 3;
    (void) argc;
    (void) argv;
    if (peer >= size) {
        MP_OK(shoal_comm_sync(comm));
        return 0;
    }
    unsigned char *out = malloc(n), *in = malloc(n);
    shoal_request *sreq, *rreq;
    MP_CHECK(out != NULL && in != NULL);
    mp_fill(out, n, rank, 4);
    // Round 1: the odd rank sends; the even one polls only.
    if (rank % 2 == 1) {
        MP_OK(shoal_send(comm, out, n, SHOAL_UINT8, peer, 5));
    } else {
        mp_sleep_ms(20); // the message waits at the head of the channel
        MP_OK(shoal_irecv(comm, in, n, SHOAL_UINT8, peer, 5, &rreq));
        while (shoal_test(rreq) == SHOAL_INPROGRESS) {
            mp_sleep_ms(1);
        }
        MP_OK(shoal_test(rreq));
        shoal_request_free(rreq);
        MP_CHECK(mp_verify(in, n, peer, 4));
    }
    // Round 2: both ways; the even rank posts its receive after the odd
    // rank's message arrived, then its send, then waits for both.
    memset(in, 0, n);
    if (rank % 2 == 0) {
        mp_sleep_ms(20);
    }
    MP_OK(shoal_irecv(comm, in, n, SHOAL_UINT8, peer, 6, &rreq));
    MP_OK(shoal_isend(comm, out, n, SHOAL_UINT8, peer, 6, &sreq));
    MP_OK(shoal_wait(rreq, -1));
    MP_OK(shoal_wait(sreq, -1));
    shoal_request_free(rreq);
    shoal_request_free(sreq);
    MP_CHECK(mp_verify(in, n, peer, 4));
    MP_OK(shoal_comm_sync(comm));
    free(out);
    free(in);
    return 0;
}

// Ranks 0 and 1 exchange `times` small messages through non-blocking
// calls each waited for at once: issue then stops waking the progress
// thread (deferred wakes, engine.c).
static int
prompt_exchanges(shoal_comm *comm, int rank, int times)
{
    for (int i = 0; i < times; i++) {
        int            mine = i * 2 + rank, theirs = -1;
        shoal_request *rr, *sr;
        MP_OK(shoal_irecv(comm, &theirs, 1, SHOAL_INT32, 1 - rank, 7, &rr));
        MP_OK(shoal_isend(comm, &mine, 1, SHOAL_INT32, 1 - rank, 7, &sr));
        MP_OK(shoal_wait(rr, -1));
        MP_OK(shoal_wait(sr, -1));
        shoal_request_free(rr);
        shoal_request_free(sr);
        MP_CHECK(theirs == i * 2 + 1 - rank);
    }
    return 0;
}

// A non-blocking send larger than the ring completes while its caller
// sleeps and never calls into shoal: the progress thread moves it. With
// "prompt", after 100 exchanges waited for at once (the progress thread
// is no longer woken at issue, and must find the send on its own).
int
mp_case_progress(shoal_comm *comm, int argc, char **argv)
{
    int    rank = shoal_comm_rank(comm);
    size_t n    = 8u << 20;
    if (shoal_comm_size(comm) < 2 || rank > 1) {
        return 0;
    }
    if (argc > 0 && strcmp(argv[0], "prompt") == 0
        && prompt_exchanges(comm, rank, 100) != 0) {
        return 1;
    }
    unsigned char *buf = malloc(n);
    if (rank == 0) {
        shoal_request *req;
        mp_fill(buf, n, 0, 3);
        MP_OK(shoal_isend(comm, buf, n, SHOAL_UINT8, 1, 0, &req));
        mp_sleep_ms(500); // no shoal call while the transfer runs
        // Already complete without any wait or test call.
        MP_OK(shoal_test(req));
        shoal_request_free(req);
        int done = 0;
        MP_OK(shoal_recv(comm, &done, 1, SHOAL_INT32, 1, 1));
        MP_CHECK(done == 1);
    } else {
        double t0 = mp_now();
        MP_OK(shoal_recv(comm, buf, n, SHOAL_UINT8, 0, 0));
        MP_CHECK(mp_now() - t0 < 0.45); // did not wait for rank 0 to wake
        MP_CHECK(mp_verify(buf, n, 0, 3));
        int done = 1;
        MP_OK(shoal_send(comm, &done, 1, SHOAL_INT32, 0, 1));
    }
    free(buf);
    return 0;
}

// The native communicator view's contract: a send or receive issued
// without a request is tracked by the communicator and complete once
// shoal_comm_sync or shoal_barrier returns (every size, both ways round a
// ring); the barrier also completes tracked requests issued before it (a
// 64 MiB send is done when it returns); an untracked receive that fails is
// reported by the next sync, naming it.
int
mp_case_p2p_untracked(shoal_comm *comm, int argc, char **argv)
{
    int rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    (void) argc;
    (void) argv;
    if (size == 1) {
        return 0;
    }
    int            next = (rank + 1) % size, prev = (rank + size - 1) % size;
    size_t         big = (size_t) 64 << 20;
    unsigned char *out = malloc(big), *in = malloc(big);
    MP_CHECK(out != NULL && in != NULL);
    for (int by_barrier = 0; by_barrier < 2; by_barrier++) {
        for (size_t k = 0; k < NSIZES; k++) {
            size_t n = p2p_sizes[k];
            mp_fill(out, n, rank, (int) k);
            memset(in, 0, n);
            MP_OK(shoal_irecv(comm, in, n, SHOAL_UINT8, prev, 9, NULL));
            MP_OK(shoal_isend(comm, out, n, SHOAL_UINT8, next, 9, NULL));
            MP_OK(by_barrier ? shoal_barrier(comm) : shoal_comm_sync(comm));
            MP_CHECK(mp_verify(in, n, prev, (int) k));
        }
    }
    shoal_request *send, *recv;
    mp_fill(out, big, rank, 77);
    MP_OK(shoal_irecv(comm, in, big, SHOAL_UINT8, prev, 10, &recv));
    MP_OK(shoal_isend(comm, out, big, SHOAL_UINT8, next, 10, &send));
    MP_OK(shoal_barrier(comm));
    MP_EXPECT(shoal_test(send), SHOAL_OK); // done: no wait needed
    MP_EXPECT(shoal_test(recv), SHOAL_OK);
    MP_CHECK(mp_verify(in, big, prev, 77));
    shoal_request_free(send);
    shoal_request_free(recv);
    // A receive of 8 elements meets a send of 4: its failure comes back
    // from the sync, naming the receive (unless a peer's report of the same
    // mismatch aborted the communicator first: then the issue fails). The
    // mismatch starts only once every rank has checked the calls above,
    // which this barrier shows; a rank still in it when a faster one's
    // abort comes sees the abort here.
    int st = shoal_barrier(comm);
    if (st == SHOAL_OK) {
        st = shoal_irecv(comm, in, 8, SHOAL_INT32, prev, 11, NULL);
    }
    if (st == SHOAL_OK) {
        st = shoal_isend(comm, out, 4, SHOAL_INT32, next, 11, NULL);
    }
    if (st == SHOAL_OK) {
        st = shoal_comm_sync(comm);
        printf("sync: %s: %s\n", shoal_status_name(st), shoal_last_error());
        MP_CHECK(
            strstr(shoal_last_error(), "issued without a request") != NULL);
    }
    MP_CHECK(st == SHOAL_EMISMATCH || st == SHOAL_EABORTED);
    free(out);
    free(in);
    return 0;
}

// Registered memory (shoal_mem_register) carries messages and collectives
// like any other: each rank registers a send and a receive buffer, passes
// sizes from small to beyond every transport's zero-copy threshold around
// the ring and all-reduces in them, then deregisters them.
int
mp_case_mem_reg(shoal_comm *comm, int argc, char **argv)
{
    int            rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    size_t         max = p2p_sizes[NSIZES - 1];
    unsigned char *out = malloc(max), *in = malloc(max);
    shoal_mem_reg *rout = NULL, *rin = NULL;

    (void) argc;
    (void) argv;
    MP_CHECK(out != NULL && in != NULL);
    MP_OK(shoal_mem_register(comm, out, max, &rout));
    MP_OK(shoal_mem_register(comm, in, max, &rin));
    MP_CHECK(shoal_mem_reg_kind(rout) >= 0);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (size_t k = 0; size > 1 && k < NSIZES; k++) {
        size_t n = p2p_sizes[k];
        mp_fill(out, n, rank, (int) k);
        memset(in, 0, n);
        shoal_request *rq;
        MP_OK(shoal_irecv(comm, in, n, SHOAL_UINT8, prev, 9, &rq));
        MP_OK(shoal_send(comm, out, n, SHOAL_UINT8, next, 9));
        MP_OK(shoal_wait(rq, -1));
        shoal_request_free(rq);
        MP_CHECK(mp_verify(in, n, prev, (int) k));
    }
    int32_t *v = (int32_t *) out;
    for (size_t i = 0; i < max / 4; i++) {
        v[i] = rank + 1;
    }
    MP_OK(shoal_all_reduce(
        comm, out, in, max / 4, SHOAL_INT32, SHOAL_REDUCE_OP(SHOAL_SUM)));
    for (size_t i = 0; i < max / 4; i++) {
        MP_CHECK(((int32_t *) in)[i] == size * (size + 1) / 2);
    }
    MP_OK(shoal_mem_deregister(rout));
    MP_OK(shoal_mem_deregister(rin));
    free(out);
    free(in);
    return 0;
}
