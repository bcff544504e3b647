// `stopped`: rank 1 stops itself (SIGSTOP) before an all_reduce that the
// others call with a 1 s deadline. Each of them must fail with
// SHOAL_ETIMEDOUT naming rank 1 (over TCP the rank a wait is blocked on is
// often another survivor, whose own wait chain ends at rank 1) within
// 1.2 s; then rank 0 kills rank 1. The test runs it over TCP.
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "mptest.h"

int
mp_case_stopped(shoal_comm *world, int argc, char **argv)
{
    int          rank = shoal_comm_rank(world), size = shoal_comm_size(world);
    int          me   = (int) getpid(), pids[64];
    shoal_config cfg  = SHOAL_CONFIG_INIT;
    shoal_comm  *comm = NULL;
    float        x    = 1.0f;

    (void) argc;
    (void) argv;
    MP_CHECK(size >= 3 && size <= 64);
    MP_OK(shoal_all_gather(world, &me, pids, 1, SHOAL_INT32));
    cfg.name       = "stopped";
    cfg.timeout_ms = 1000;
    MP_OK(shoal_comm_create(&comm, &cfg));
    MP_OK(shoal_barrier(comm));
    if (rank == 1) {
        raise(SIGSTOP);
        pause();
    }
    double t0 = mp_now();
    int    st = shoal_all_reduce(
           comm, &x, &x, 1, SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_SUM));
    double took = mp_now() - t0;
    printf(
        "rank %d failed after %.3f s: %s\n", rank, took, shoal_last_error());
    MP_CHECK(st == SHOAL_ETIMEDOUT);
    MP_CHECK(strstr(shoal_last_error(), "waiting for rank 1 ") != NULL);
    MP_CHECK(took < 1.2);
    if (rank == 0) {
        kill(pids[1], SIGKILL);
    }
    shoal_comm_destroy(comm);
    return 0;
}
