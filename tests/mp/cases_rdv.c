// A rank dying during a rendezvous (a split, a creation): the survivors
// fail within 2 s of the death, naming the dead rank, instead of waiting
// for the deadline; later calls on the aborted communicator fail at once.
#include <pthread.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "mptest.h"
#include "platform/auth.h"
#include "store/store.h"

#define DEATH_DELAY_S 0.3

static void *
die_later(void *arg)
{
    (void) arg;
    usleep((useconds_t) (DEATH_DELAY_S * 1e6));
    raise(SIGKILL);
    return NULL;
}

// Checks a survivor's failure: in time (the death came DEATH_DELAY_S
// after t0), naming the victim.
static int
check_failure(int st, double t0, int victim, const char *what)
{
    char   name[32];
    double waited = mp_now() - t0;

    printf("%s failed after %.3f s: %s: %s\n", what, waited,
        shoal_status_name(st), shoal_last_error());
    snprintf(name, sizeof(name), "rank %d", victim);
    MP_CHECK(st == SHOAL_EPEER || st == SHOAL_EABORTED);
    MP_CHECK(strstr(shoal_last_error(), name) != NULL);
    MP_CHECK(waited < DEATH_DELAY_S + 2.0);
    return 0;
}

// The last rank dies while the others wait in shoal_comm_split for its
// choice; a second split on the aborted communicator fails at once.
int
mp_case_split_kill(shoal_comm *comm, int argc, char **argv)
{
    int         rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int         victim = size - 1;
    shoal_comm *child  = NULL;
    (void) argc;
    (void) argv;
    MP_CHECK(size > 1);
    MP_EXPECT(shoal_barrier(comm), SHOAL_OK);
    if (rank == victim) {
        die_later(NULL);
    }
    double t0 = mp_now();
    int    st = shoal_comm_split(comm, 0, rank, &child);
    MP_CHECK(child == NULL);
    if (check_failure(st, t0, victim, "split") != 0) {
        return 1;
    }
    t0 = mp_now();
    MP_EXPECT(shoal_comm_split(comm, 0, rank, &child), SHOAL_EABORTED);
    MP_CHECK(mp_now() - t0 < 0.1);
    char name[32];
    snprintf(name, sizeof(name), "rank %d", victim);
    MP_CHECK(strstr(shoal_last_error(), name) != NULL);
    MP_EXPECT(shoal_barrier(comm), SHOAL_EABORTED);
    return 0;
}

// The last rank dies in the middle of creating a second communicator
// (the others are late, so it is waiting for them); they must not wait for
// the deadline when they come.
int
mp_case_create_kill(shoal_comm *comm, int argc, char **argv)
{
    int          rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int          victim = size - 1;
    shoal_comm  *second = NULL;
    shoal_config cfg    = SHOAL_CONFIG_INIT;
    pthread_t    t;
    (void) argc;
    (void) argv;
    MP_CHECK(size > 1);
    cfg.name = "second";
    MP_EXPECT(shoal_barrier(comm), SHOAL_OK);
    if (rank == victim) {
        MP_CHECK(pthread_create(&t, NULL, die_later, NULL) == 0);
        shoal_comm_create(&second, &cfg);
        MP_CHECK(0); // not reached: killed while creating
    }
    usleep(1000000); // the victim is dead when we come
    double t0 = mp_now() - DEATH_DELAY_S; // measured from our start
    int    st = shoal_comm_create(&second, &cfg);
    MP_CHECK(second == NULL);
    return check_failure(st, t0, victim, "create");
}

// The last rank dies; the others see it fail a barrier, then re-create
// the communicator (as a job recovering from a failure would): the dead
// rank never comes, and they must not wait for the deadline.
int
mp_case_recreate_kill(shoal_comm *comm, int argc, char **argv)
{
    int          rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int          victim = size - 1;
    shoal_comm  *again  = NULL;
    shoal_config cfg    = SHOAL_CONFIG_INIT;
    (void) argc;
    (void) argv;
    MP_CHECK(size > 1);
    cfg.name = "again";
    MP_EXPECT(shoal_barrier(comm), SHOAL_OK);
    if (rank == victim) {
        usleep(200000); // everyone is out of the barrier
        raise(SIGKILL);
    }
    MP_CHECK(shoal_barrier(comm) != SHOAL_OK);
    double t0 = mp_now();
    int    st = shoal_comm_create(&again, &cfg);
    MP_CHECK(again == NULL);
    return check_failure(st, t0, victim, "re-create");
}

// Splits and creations leave nothing behind in the store: after 20 splits
// of each kind the keys under "shoal/" are the few of the job's own, not
// hundreds (each split used to leave about 1.5 KB).
int
mp_case_split_keys(shoal_comm *comm, int argc, char **argv)
{
    int         rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int         all[64];
    shoal_comm *child;
    (void) argc;
    (void) argv;
    MP_CHECK(size <= 64);
    for (int i = 0; i < size; i++) {
        all[i] = i;
    }
    for (int i = 0; i < 20; i++) {
        MP_EXPECT(shoal_comm_split(comm, rank % 2, rank, &child), SHOAL_OK);
        MP_EXPECT(shoal_barrier(child), SHOAL_OK);
        MP_EXPECT(shoal_comm_destroy(child), SHOAL_OK);
        MP_EXPECT(shoal_comm_split_ranks(comm, all, size, &child), SHOAL_OK);
        MP_EXPECT(shoal_comm_destroy(child), SHOAL_OK);
    }
    MP_EXPECT(shoal_barrier(comm), SHOAL_OK);
    if (rank == 0 && getenv("SHOAL_STORE") != NULL) {
        shi_store *st;
        shi_secret secret;
        int64_t    left     = -1;
        int64_t    deadline = shi_deadline_in_ms(10000);
        MP_CHECK(shi_secret_from_string(&secret, getenv("SHOAL_SECRET"))
            == SHOAL_OK);
        MP_CHECK(shi_store_open(&st, getenv("SHOAL_STORE"), &secret, deadline)
            == SHOAL_OK);
        int rc = shi_store_delete_prefix(st, "shoal/", &left, deadline);
        shi_store_close(st);
        printf("keys left under shoal/ after 40 splits: %lld\n",
            (long long) left);
        MP_CHECK(rc == SHOAL_OK || rc == SHOAL_ENOTSUP);
        MP_CHECK(rc == SHOAL_ENOTSUP || left < 8);
    }
    MP_EXPECT(shoal_barrier(comm), SHOAL_OK);
    return 0;
}

// Rank 0 serves the store (no launcher does) and dies while the others
// wait in the store to create a second communicator: they must fail
// within 2 s, saying the store's process ended.
int
mp_case_store_owner_kill(shoal_comm *comm, int argc, char **argv)
{
    int          rank   = shoal_comm_rank(comm);
    shoal_comm  *second = NULL;
    shoal_config cfg    = SHOAL_CONFIG_INIT;
    (void) argc;
    (void) argv;
    cfg.name = "second";
    MP_EXPECT(shoal_barrier(comm), SHOAL_OK);
    if (rank == 0) {
        die_later(NULL);
    }
    double t0     = mp_now();
    int    st     = shoal_comm_create(&second, &cfg);
    double waited = mp_now() - t0;
    printf("create failed after %.3f s: %s: %s\n", waited,
        shoal_status_name(st), shoal_last_error());
    MP_CHECK(second == NULL && st != SHOAL_OK);
    MP_CHECK(strstr(shoal_last_error(), "rank 0") != NULL);
    MP_CHECK(waited < DEATH_DELAY_S + 2.0);
    return 0;
}

// The last rank destroys its communicator instead of splitting it: the
// others' split fails at once naming it, a rank asking for no group
// (SHOAL_SPLIT_NONE) too, since a split returns only once every rank has
// chosen.
int
mp_case_split_left(shoal_comm *comm, int argc, char **argv)
{
    int         rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    shoal_comm *child = NULL;
    char        name[32];
    (void) argc;
    (void) argv;
    MP_CHECK(size > 2);
    if (rank == size - 1) {
        MP_EXPECT(shoal_comm_destroy(comm), SHOAL_OK);
        printf("rank %d: case split_left OK\n", rank);
        fflush(stdout);
        _exit(0);
    }
    double t0 = mp_now();
    int    st = shoal_comm_split(
           comm, rank == size - 2 ? SHOAL_SPLIT_NONE : 0, rank, &child);
    printf("split failed after %.3f s: %s: %s\n", mp_now() - t0,
        shoal_status_name(st), shoal_last_error());
    snprintf(name, sizeof(name), "rank %d", size - 1);
    MP_CHECK(st == SHOAL_EPEER && child == NULL);
    MP_CHECK(strstr(shoal_last_error(), name) != NULL);
    MP_CHECK(mp_now() - t0 < 2.0);
    return 0;
}

// Creation does not depend on a process's past: rank 0 makes one more
// communicator of its own first, then every rank makes "again" on the
// job's store twice (made, destroyed, made), and they meet each time.
int
mp_case_create_history(shoal_comm *comm, int argc, char **argv)
{
    int          rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    shoal_config cfg = SHOAL_CONFIG_INIT;
    shoal_comm  *other;
    (void) argc;
    (void) argv;
    cfg.timeout_ms = 10000;
    if (rank == 0) {
        shoal_config alone = SHOAL_CONFIG_INIT;
        alone.rank = 0, alone.nranks = 1, alone.name = "again";
        MP_EXPECT(shoal_comm_create(&other, &alone), SHOAL_OK);
        MP_EXPECT(shoal_comm_destroy(other), SHOAL_OK);
    }
    cfg.name = "again";
    for (int i = 0; i < 2; i++) {
        int32_t v = rank + 1;
        MP_EXPECT(shoal_comm_create(&other, &cfg), SHOAL_OK);
        MP_EXPECT(shoal_all_reduce(other, &v, &v, 1, SHOAL_INT32,
                      SHOAL_REDUCE_OP(SHOAL_SUM)),
            SHOAL_OK);
        MP_CHECK(v == size * (size + 1) / 2);
        MP_EXPECT(shoal_comm_destroy(other), SHOAL_OK);
    }
    return 0;
}

// A split is collective: rank 0, alone in its group, returns only once
// every rank has chosen (the others choose 300 ms later), so it cannot
// leave while they still need the store.
int
mp_case_split_waits(shoal_comm *comm, int argc, char **argv)
{
    int         rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int         zero = 0, *rest = calloc((size_t) size, sizeof(int));
    shoal_comm *child = NULL;
    (void) argc;
    (void) argv;
    MP_CHECK(rest != NULL);
    for (int r = 1; r < size; r++) {
        rest[r - 1] = r;
    }
    double t0 = mp_now();
    if (rank == 0) {
        MP_EXPECT(shoal_comm_split_ranks(comm, &zero, 1, &child), SHOAL_OK);
        printf("split returned after %.3f s\n", mp_now() - t0);
        MP_CHECK(mp_now() - t0 > 0.25);
    } else {
        usleep(300000);
        MP_EXPECT(
            shoal_comm_split_ranks(comm, rest, size - 1, &child), SHOAL_OK);
        MP_EXPECT(shoal_barrier(child), SHOAL_OK);
    }
    MP_EXPECT(shoal_comm_destroy(child), SHOAL_OK);
    free(rest);
    return 0;
}
