// Going on after a lost rank: shrink, agree, revoke.
//
// `recover PHASE`: the last rank dies (SIGKILL) 0.3 s into a loop of the
// phase's operation, as in the fault matrix. Each survivor's operation
// fails; the survivors agree (the failed set must be the dead rank),
// shrink, and all-reduce on the new communicator; the result must be
// right within 2 s of the death, with no descriptor left over.
// `recover PHASE twice`: rank size - 2 dies too, at a random moment of
// the shrink (before joining it, after, or while the new communicator is
// built). The survivors shrink until an all-reduce on the result passes:
// it must hold size - 2 ranks.
// `revoke`: rank 0 revokes while the others wait in a receive it never
// sends; theirs fails with SHOAL_EREVOKED, and so does rank 0's next
// call. Then an agreement (one rank votes no) and a shrink that keeps
// every rank.
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mptest.h"

#define DEATH_AT_S 0.3
#define RECOVER_S  2.0

static void *
die_after(void *arg)
{
    usleep(*(useconds_t *) arg);
    raise(SIGKILL);
    return NULL;
}

static int
die_in(useconds_t us)
{
    static useconds_t delay;
    pthread_t         t;

    delay = us;
    return pthread_create(&t, NULL, die_after, &delay);
}

// The sum of rank + 1 over comm's ranks, and a vector's, checked.
static int
sum_is_right(shoal_comm *comm, float *v, size_t n)
{
    int   size = shoal_comm_size(comm), rank = shoal_comm_rank(comm);
    float want = (float) size * (float) (size + 1) / 2.0f;

    for (size_t i = 0; i < n; i++) {
        v[i] = (float) (rank + 1);
    }
    int st = shoal_all_reduce(
        comm, v, v, n, SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_SUM));
    if (st != SHOAL_OK) {
        printf("all_reduce on %d ranks: %s: %s\n", size, shoal_status_name(st),
            shoal_last_error());
        return st;
    }
    for (size_t i = 0; i < n; i++) {
        if (v[i] != want) {
            fprintf(stderr, "element %zu: %g, wanted %g\n", i, v[i], want);
            return SHOAL_EPROTO;
        }
    }
    return SHOAL_OK;
}

// The survivors' agreement: flag 1 from all, the victim failed.
static int
agree_on_victim(shoal_comm *comm, int victim)
{
    int flag = 1, failed[8], nfailed = -1;

    MP_OK(shoal_comm_agree(comm, &flag, failed, 8, &nfailed));
    MP_CHECK(flag == 1 && nfailed == 1 && failed[0] == victim);
    nfailed = shoal_comm_get_failed(comm, failed, 8);
    MP_CHECK(nfailed >= 1 && failed[nfailed - 1] == victim);
    return 0;
}

// Shrinks until an all-reduce on the result passes; *out is it.
static int
shrink_until_right(shoal_comm *comm, float *v, shoal_comm **out, int *tries)
{
    shoal_comm *cur = comm;
    int         st  = SHOAL_EPEER;

    for (*tries = 0; st != SHOAL_OK && *tries < 4; (*tries)++) {
        shoal_comm *next = NULL;
        st               = shoal_comm_shrink(cur, &next);
        if (cur != comm) {
            shoal_comm_destroy(cur);
        }
        if (st != SHOAL_OK) {
            fprintf(stderr, "shrink: %s: %s\n", shoal_status_name(st),
                shoal_last_error());
            return 1;
        }
        cur = next;
        st  = sum_is_right(cur, v, MP_FAULT_COUNT);
        MP_CHECK(st == SHOAL_OK || st == SHOAL_EPEER || st == SHOAL_EABORTED);
    }
    *out = cur;
    return st == SHOAL_OK ? 0 : 1;
}

// The victims' part: die at the right moment.
static int
victim(shoal_comm *comm, const char *phase, float *a, float *b)
{
    int big = strcmp(phase, "mid_transfer") == 0;

    MP_CHECK(die_in(big ? 20000 : (useconds_t) (DEATH_AT_S * 1e6)) == 0);
    if (!big) {
        pause(); // dies outside the call, while the others are in it
    }
    mp_fault_op(comm, phase, a, b);
    pause();
    return 1;
}

int
mp_case_recover(shoal_comm *world, int argc, char **argv)
{
    int          size = shoal_comm_size(world), rank = shoal_comm_rank(world);
    const char  *phase = argc > 0 ? argv[0] : "all_reduce";
    int          twice = argc > 1 && strcmp(argv[1], "twice") == 0;
    shoal_config cfg   = SHOAL_CONFIG_INIT;
    shoal_comm  *comm = NULL, *small = NULL;
    int          tries = 0, st;
    size_t       n     = strcmp(phase, "mid_transfer") == 0
                  ? MP_FAULT_BIG
                  : (size_t) MP_FAULT_COUNT * (size_t) size;

    MP_CHECK(size >= (twice ? 3 : 2));
    float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
    MP_CHECK(a != NULL && b != NULL);
    int fds  = mp_open_fds();
    cfg.name = "recovering";
    MP_OK(shoal_comm_create(&comm, &cfg));
    st            = shoal_barrier(comm);
    double death  = mp_now() + DEATH_AT_S;
    int    is_big = strcmp(phase, "mid_transfer") == 0;
    death         = is_big ? death - DEATH_AT_S + 0.02 : death;
    if (rank == size - 1) {
        return victim(comm, phase, a, b);
    }
    while (st == SHOAL_OK) {
        st = mp_fault_op(comm, phase, a, b);
    }
    MP_CHECK(st == SHOAL_EPEER || st == SHOAL_EABORTED);
    if (twice && rank == size - 2) { // dies somewhere in the shrink
        srand((unsigned) getpid() ^ (unsigned) time(NULL));
        MP_CHECK(die_in((useconds_t) (rand() % 20000)) == 0);
        shoal_comm_shrink(comm, &small);
        pause();
    }
    if (!twice && agree_on_victim(comm, size - 1) != 0) {
        return 1;
    }
    if (shrink_until_right(comm, a, &small, &tries) != 0) {
        return 1;
    }
    double took = mp_now() - death;
    printf("rank %d: %d ranks left, right results %.3f s after the death "
           "(%d shrinks)\n",
        rank, shoal_comm_size(small), took, tries);
    MP_CHECK(shoal_comm_size(small) == size - 1 - twice);
    MP_CHECK(shoal_comm_rank(small) == rank); // the dead were the last
    MP_CHECK(twice || tries == 1);
    MP_CHECK(took < RECOVER_S);
    shoal_comm_destroy(small);
    shoal_comm_destroy(comm);
    free(a);
    free(b);
    if (mp_open_fds() != fds) {
        fprintf(
            stderr, "%d descriptors open, %d before\n", mp_open_fds(), fds);
        mp_list_fds();
        return 1;
    }
    return 0;
}

int
mp_case_revoke(shoal_comm *world, int argc, char **argv)
{
    int          rank = shoal_comm_rank(world), size = shoal_comm_size(world);
    shoal_config cfg  = SHOAL_CONFIG_INIT;
    shoal_comm  *comm = NULL, *again = NULL;
    float        x    = 0, v[64];
    int          flag = rank != 1, failed[8], nfailed = -1;

    (void) argc;
    (void) argv;
    cfg.name = "revoked";
    MP_OK(shoal_comm_create(&comm, &cfg));
    MP_OK(shoal_barrier(comm));
    double t0 = mp_now();
    if (rank == 0) {
        mp_sleep_ms(200);
        MP_OK(shoal_comm_revoke(comm, "the test says so"));
        MP_EXPECT(shoal_barrier(comm), SHOAL_EREVOKED);
    } else {
        MP_EXPECT(
            shoal_recv(comm, &x, 1, SHOAL_FLOAT32, 0, 9), SHOAL_EREVOKED);
        MP_CHECK(strstr(shoal_last_error(), "the test says so") != NULL);
        MP_CHECK(mp_now() - t0 < 2.0);
    }
    MP_CHECK(shoal_comm_get_async_error(comm) == SHOAL_EREVOKED);
    MP_OK(shoal_comm_agree(comm, &flag, failed, 8, &nfailed));
    MP_CHECK(flag == (size < 2) && nfailed == 0);
    MP_OK(shoal_comm_shrink(comm, &again));
    MP_CHECK(shoal_comm_size(again) == size && shoal_comm_rank(again) == rank);
    MP_CHECK(shoal_comm_get_async_error(again) == SHOAL_OK);
    MP_OK(sum_is_right(again, v, 64));
    shoal_comm_destroy(again);
    shoal_comm_destroy(comm);
    return 0;
}
