// Non-blocking sends and receives from several threads at once, whose
// requests are freed by the thread that issued them and by another one:
// request blocks kept for reuse per thread (core/request_cache.c) must
// neither leak at a thread's exit (valgrind) nor race (ThreadSanitizer).
#include <pthread.h>
#include <string.h>

#include "mptest.h"

#define THREADS 3
#define ROUNDS  60
#define BATCH   6 // pairs in flight per thread: more than a thread keeps

struct worker {
    shoal_comm    *comm;
    int            id, next, prev, failed;
    shoal_request *left[2 * BATCH]; // the last round's, freed by main
    int32_t        out[BATCH], in[BATCH];
};

static int32_t
value_of(int rank, int thread, int round, int k)
{
    return ((rank * THREADS + thread) * ROUNDS + round) * BATCH + k;
}

// One round: BATCH exchanges with the ring neighbours on the thread's own
// tag, waited for and checked; freed here unless `keep`.
static int
round_of(struct worker *w, int round, int keep)
{
    shoal_request *req[2 * BATCH];
    int            rank = shoal_comm_rank(w->comm), tag = 40 + w->id;

    for (int k = 0; k < BATCH; k++) {
        w->out[k] = value_of(rank, w->id, round, k);
        w->in[k]  = -1;
        MP_OK(shoal_irecv(
            w->comm, &w->in[k], 1, SHOAL_INT32, w->prev, tag, &req[2 * k]));
        MP_OK(shoal_isend(w->comm, &w->out[k], 1, SHOAL_INT32, w->next, tag,
            &req[2 * k + 1]));
    }
    for (int i = 2 * BATCH - 1; i >= 0; i--) {
        MP_OK(shoal_wait(req[i], -1));
    }
    for (int k = 0; k < BATCH; k++) {
        MP_CHECK(w->in[k] == value_of(w->prev, w->id, round, k));
    }
    for (int i = 0; i < 2 * BATCH; i++) {
        if (keep) {
            w->left[i] = req[i];
        } else {
            shoal_request_free(req[i]);
        }
    }
    return 0;
}

static void *
work(void *arg)
{
    struct worker *w = arg;

    for (int r = 0; r < ROUNDS && !w->failed; r++) {
        w->failed = round_of(w, r, r == ROUNDS - 1);
    }
    return NULL;
}

int
mp_case_p2p_threads(shoal_comm *comm, int argc, char **argv)
{
    int           rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    struct worker w[THREADS];
    pthread_t     t[THREADS];
    (void) argc;
    (void) argv;
    if (size == 1) {
        return 0;
    }
    for (int i = 0; i < THREADS; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].comm = comm;
        w[i].id   = i;
        w[i].next = (rank + 1) % size;
        w[i].prev = (rank + size - 1) % size;
        MP_CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        MP_CHECK(pthread_join(t[i], NULL) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        MP_CHECK(!w[i].failed);
        for (int k = 0; k < 2 * BATCH; k++) { // issued on a thread now gone
            MP_OK(shoal_test(w[i].left[k]));
            shoal_request_free(w[i].left[k]);
        }
    }
    // A block another thread freed serves this one's next request.
    shoal_request *rr, *sr;
    int32_t        mine = rank, theirs = -1;
    MP_OK(shoal_irecv(
        comm, &theirs, 1, SHOAL_INT32, (rank + size - 1) % size, 39, &rr));
    MP_OK(
        shoal_isend(comm, &mine, 1, SHOAL_INT32, (rank + 1) % size, 39, &sr));
    MP_OK(shoal_wait(rr, -1));
    MP_OK(shoal_wait(sr, -1));
    shoal_request_free(rr);
    shoal_request_free(sr);
    MP_CHECK(theirs == (rank + size - 1) % size);
    MP_OK(shoal_comm_sync(comm));
    return 0;
}
