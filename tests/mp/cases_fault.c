// The fault matrix: the last rank dies at a chosen phase of a job (case
// `fault PHASE`). Every survivor must fail within 2 s of the death with
// SHOAL_EPEER or SHOAL_EABORTED naming the dead rank, then destroy its
// communicator and be back to the file descriptors it had before creating
// it. The launcher's report and the leftovers in /dev/shm are checked by
// the test that runs the case (tests/unit/fault_test.c).
//
// Phases: each collective kind and point-to-point (the survivors are in
// the call when the victim dies), plan (compile_op's set-up), and
// mid_transfer (the victim is killed 20 ms into a 16 MiB all-reduce it
// takes part in).
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mptest.h"

#define FAULT_DELAY_S 0.3

int
mp_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int  n = 0;

    if (d == NULL) {
        return -1;
    }
    while (readdir(d) != NULL) {
        n++;
    }
    closedir(d);
    return n;
}

void
mp_list_fds(void)
{
    for (int fd = 0; fd < 1024; fd++) {
        char    path[64], target[256];
        ssize_t k;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        if ((k = readlink(path, target, sizeof(target) - 1)) > 0) {
            target[k] = '\0';
            fprintf(stderr, "fd %d: %s\n", fd, target);
        }
    }
}

static void *
kill_after(void *arg)
{
    usleep((useconds_t) (*(double *) arg * 1e6));
    raise(SIGKILL);
    return NULL;
}

// One call of the phase's operation on comm; buffers hold MP_FAULT_COUNT
// floats per rank (size of them where a collective needs one per rank).
int
mp_fault_op(shoal_comm *comm, const char *phase, float *a, float *b)
{
    int             rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    size_t          n   = MP_FAULT_COUNT;
    shoal_reduce_op sum = SHOAL_REDUCE_OP(SHOAL_SUM);

    if (strcmp(phase, "all_reduce") == 0) {
        return shoal_all_reduce(comm, a, b, n, SHOAL_FLOAT32, sum);
    }
    if (strcmp(phase, "broadcast") == 0) {
        return shoal_broadcast(comm, a, n, SHOAL_FLOAT32, 0);
    }
    if (strcmp(phase, "reduce") == 0) {
        return shoal_reduce(comm, a, b, n, SHOAL_FLOAT32, sum, 0);
    }
    if (strcmp(phase, "all_gather") == 0) {
        return shoal_all_gather(comm, a, b, n, SHOAL_FLOAT32);
    }
    if (strcmp(phase, "reduce_scatter") == 0) {
        return shoal_reduce_scatter(comm, b, a, n, SHOAL_FLOAT32, sum);
    }
    if (strcmp(phase, "all_to_all") == 0) {
        return shoal_all_to_all(comm, a, b, n, SHOAL_FLOAT32);
    }
    if (strcmp(phase, "gather") == 0) {
        return shoal_gather(comm, a, b, n, SHOAL_FLOAT32, 0);
    }
    if (strcmp(phase, "scatter") == 0) {
        return shoal_scatter(comm, b, a, n, SHOAL_FLOAT32, 0);
    }
    if (strcmp(phase, "barrier") == 0) {
        return shoal_barrier(comm);
    }
    if (strcmp(phase, "send_recv") == 0) { // a ring, even ranks first
        int next = (rank + 1) % size, prev = (rank + size - 1) % size, st;
        if (rank % 2 == 0) {
            st = shoal_send(comm, a, n, SHOAL_FLOAT32, next, 7);
            return st ? st : shoal_recv(comm, b, n, SHOAL_FLOAT32, prev, 7);
        }
        st = shoal_recv(comm, b, n, SHOAL_FLOAT32, prev, 7);
        return st ? st : shoal_send(comm, a, n, SHOAL_FLOAT32, next, 7);
    }
    if (strcmp(phase, "plan") == 0) { // every rank gathers every slice
        int64_t         shape  = (int64_t) size * 64;
        int64_t         in[2]  = { (int64_t) rank * 64, 64 };
        int64_t         out[2] = { 0, shape };
        shoal_plan_spec spec   = SHOAL_PLAN_SPEC_INIT;
        shoal_plan     *plan   = NULL;
        spec.ndim              = 1;
        spec.shape             = &shape;
        spec.ninputs = spec.noutputs = 1;
        spec.inputs                  = in;
        spec.outputs                 = out;
        int st                       = shoal_plan_create(comm, &spec, &plan);
        shoal_plan_free(plan);
        return st;
    }
    if (strcmp(phase, "mid_transfer") == 0) {
        return shoal_all_reduce(comm, a, a, MP_FAULT_BIG, SHOAL_FLOAT32, sum);
    }
    return SHOAL_EINVAL;
}

// Calls the phase's operation (then a barrier) until it fails; checks how.
// `st` is the set-up barrier's result: a survivor the scheduler held back
// may still be in it when the victim dies, and must fail there the same way.
static int
survive(
    shoal_comm *comm, const char *phase, float *a, float *b, double t0, int st)
{
    int  victim = shoal_comm_size(comm) - 1;
    char name[32];

    for (int i = 0; st == SHOAL_OK && i < 100000; i++) {
        st = mp_fault_op(comm, phase, a, b);
        if (st == SHOAL_OK) {
            st = shoal_barrier(comm);
        }
    }
    double waited = mp_now() - t0;
    printf("%s failed %.3f s after the start: %s: %s\n", phase, waited,
        shoal_status_name(st), shoal_last_error());
    snprintf(name, sizeof(name), "rank %d", victim);
    MP_CHECK(st == SHOAL_EPEER || st == SHOAL_EABORTED);
    MP_CHECK(strstr(shoal_last_error(), name) != NULL);
    MP_CHECK(waited < FAULT_DELAY_S + 2.0);
    return 0;
}

int
mp_case_fault(shoal_comm *world, int argc, char **argv)
{
    int           size = shoal_comm_size(world), rank = shoal_comm_rank(world);
    shoal_config  cfg  = SHOAL_CONFIG_INIT;
    shoal_comm   *comm = NULL;
    pthread_t     t;
    const char   *phase = argc > 0 ? argv[0] : "all_reduce";
    int           big   = strcmp(phase, "mid_transfer") == 0;
    size_t        n     = big ? MP_FAULT_BIG : (size_t) MP_FAULT_COUNT * size;
    static double delay = FAULT_DELAY_S, soon = 0.02;

    MP_CHECK(size > 1);
    float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
    MP_CHECK(a != NULL && b != NULL);
    int fds  = mp_open_fds();
    cfg.name = "faulty";
    MP_EXPECT(shoal_comm_create(&comm, &cfg), SHOAL_OK);
    int    setup = shoal_barrier(comm);
    double t0    = mp_now();
    if (rank == size - 1) {
        MP_EXPECT(setup, SHOAL_OK);
        MP_CHECK(
            pthread_create(&t, NULL, kill_after, big ? &soon : &delay) == 0);
        if (!big) {
            pause(); // dies outside the call, while the others are in it
        }
        mp_fault_op(comm, phase, a, b);
        pause();
    }
    int rc = survive(
        comm, phase, a, b, big ? t0 + soon - FAULT_DELAY_S : t0, setup);
    shoal_comm_destroy(comm);
    if (mp_open_fds() != fds) {
        fprintf(stderr, "%d file descriptors open, %d before\n", mp_open_fds(),
            fds);
        mp_list_fds();
        return 1;
    }
    free(a);
    free(b);
    return rc;
}

// All-reduces for a minute (the launcher-kill test ends it sooner).
int
mp_case_fault_loop(shoal_comm *comm, int argc, char **argv)
{
    float  x = 1.0f;
    double t = mp_now();
    (void) argc;
    (void) argv;
    while (mp_now() - t < 60) {
        MP_OK(shoal_all_reduce(
            comm, &x, &x, 1, SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_MAX)));
    }
    return 0;
}
