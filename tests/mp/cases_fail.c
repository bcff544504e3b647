// Failure cases: a killed rank, a passed deadline, mismatched calls, idle
// CPU use. Each checks that every surviving rank gets a clear error.
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mptest.h"

static double
cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec / 1e6
        + (double) ru.ru_stime.tv_sec + (double) ru.ru_stime.tv_usec / 1e6;
}

// The last rank SIGKILLs itself in the middle of a series of broadcasts;
// every other rank must fail within 2 s with an error naming it.
int
mp_case_kill(shoal_comm *comm, int argc, char **argv)
{
    int    rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int    victim = size - 1;
    size_t n      = 1u << 20;
    char   name[32];
    (void) argc;
    (void) argv;
    MP_CHECK(size > 1);
    float *buf = calloc(n, sizeof(float));
    for (int i = 0;; i++) {
        if (rank == victim && i == 5) {
            raise(SIGKILL);
        }
        double t0 = mp_now();
        int    st = shoal_broadcast(comm, buf, n, SHOAL_FLOAT32, 0);
        if (st == SHOAL_OK) {
            MP_CHECK(i < 1000);
            continue;
        }
        double waited = mp_now() - t0;
        printf("rank %d: broadcast %d failed after %.3f s: %s: %s\n", rank, i,
            waited, shoal_status_name(st), shoal_last_error());
        MP_CHECK(st == SHOAL_EPEER);
        snprintf(name, sizeof(name), "rank %d", victim);
        MP_CHECK(strstr(shoal_last_error(), name) != NULL);
        MP_CHECK(waited < 2.0);
        break;
    }
    // Later operations fail at once, naming the same cause.
    MP_EXPECT(shoal_barrier(comm), SHOAL_EABORTED);
    MP_CHECK(strstr(shoal_last_error(), name) != NULL);
    free(buf);
    return 0;
}

// Rank 0 waits in a barrier the others join late: its deadline passes,
// and the others, arriving later, get the same time-out.
int
mp_case_timeout(shoal_comm *comm, int argc, char **argv)
{
    int rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    (void) argc;
    (void) argv;
    MP_CHECK(size > 1);
    MP_OK(shoal_comm_set_timeout(comm, 400));
    if (rank != 0) {
        mp_sleep_ms(1500);
    }
    double t0 = mp_now();
    MP_EXPECT(shoal_barrier(comm), SHOAL_ETIMEDOUT);
    MP_CHECK(strstr(shoal_last_error(), "barrier #1") != NULL);
    if (rank == 0) {
        double waited = mp_now() - t0;
        MP_CHECK(waited > 0.35 && waited < 1.5);
    }
    MP_EXPECT(shoal_barrier(comm), SHOAL_EABORTED);
    return 0;
}

// argv[0] says what differs: "kind" (broadcast vs barrier), "count",
// "dtype" or "root". Rank 0 calls the odd one; everyone then calls a
// barrier. Every rank must see SHOAL_EMISMATCH from one of the two.
int
mp_case_mismatch(shoal_comm *comm, int argc, char **argv)
{
    int         rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    const char *what    = argc > 0 ? argv[0] : "kind";
    float       buf[16] = { 0 };
    int         st1, st2;
    MP_CHECK(size > 1);
    int odd = rank == 0;
    if (strcmp(what, "kind") == 0) {
        st1 = odd ? shoal_broadcast(comm, buf, 4, SHOAL_FLOAT32, 0)
                  : shoal_barrier(comm);
    } else if (strcmp(what, "count") == 0) {
        st1 = shoal_broadcast(comm, buf, odd ? 8 : 4, SHOAL_FLOAT32, 0);
    } else if (strcmp(what, "dtype") == 0) {
        st1 = shoal_broadcast(
            comm, buf, 4, odd ? SHOAL_INT32 : SHOAL_FLOAT32, 0);
    } else {
        st1 = shoal_broadcast(comm, buf, 4, SHOAL_FLOAT32, odd ? 0 : 1);
    }
    char first[1024];
    snprintf(first, sizeof(first), "%s", shoal_last_error());
    st2 = shoal_barrier(comm);
    printf("rank %d: %s mismatch: first %s (%s), then %s: %s\n", rank, what,
        shoal_status_name(st1), first, shoal_status_name(st2),
        shoal_last_error());
    MP_CHECK(st1 == SHOAL_EMISMATCH || st1 == SHOAL_OK);
    MP_CHECK(st2 == (st1 == SHOAL_OK ? SHOAL_EMISMATCH : SHOAL_EABORTED));
    MP_CHECK(strstr(shoal_last_error(), "does not match") != NULL);
    return 0;
}

// Rank 0 sends 10 ints, rank 1 expects 5: rank 1's receive fails, and
// every other rank's next operation fails with the same cause: with it
// where the operation was waiting when the abort came, or as aborted by
// it where the abort came first (rank 0's eager send returns before rank 1
// looks at it, and a third rank's abort may come as early as the end of
// its creation); either way its message names the cause.
int
mp_case_p2p_mismatch(shoal_comm *comm, int argc, char **argv)
{
    int rank = shoal_comm_rank(comm), v[10] = { 0 };
    (void) argc;
    (void) argv;
    MP_CHECK(shoal_comm_size(comm) > 1);
    if (rank == 0) {
        MP_OK(shoal_send(comm, v, 10, SHOAL_INT32, 1, 4));
    } else if (rank == 1) {
        MP_EXPECT(shoal_recv(comm, v, 5, SHOAL_INT32, 0, 4), SHOAL_EMISMATCH);
        MP_CHECK(strstr(shoal_last_error(), "40 bytes") != NULL);
        MP_EXPECT(shoal_barrier(comm), SHOAL_EABORTED);
        return 0;
    }
    int st = shoal_barrier(comm);
    printf("rank %d: barrier returned %s: %s\n", rank, shoal_status_name(st),
        shoal_last_error());
    MP_CHECK(st == SHOAL_EMISMATCH || st == SHOAL_EABORTED);
    MP_CHECK(
        strstr(shoal_last_error(), "rank 1 reported: rank 0 sent 40 bytes")
        != NULL);
    return 0;
}

// While rank 0 waits for a late peer, and while nothing is pending, it
// uses almost no CPU.
int
mp_case_idle(shoal_comm *comm, int argc, char **argv)
{
    int rank = shoal_comm_rank(comm);
    (void) argc;
    (void) argv;
    MP_OK(shoal_barrier(comm));
    double c0 = cpu_seconds(), t0 = mp_now();
    mp_sleep_ms(1000); // nothing pending
    double idle = cpu_seconds() - c0;
    MP_OK(shoal_barrier(comm));
    c0 = cpu_seconds();
    t0 = mp_now();
    if (rank != 0) {
        mp_sleep_ms(1000);
    }
    MP_OK(shoal_barrier(comm)); // rank 0 waits about 1 s
    double waiting = cpu_seconds() - c0, wall = mp_now() - t0;
    printf("rank %d: idle cpu %.3f s over 1 s; waiting cpu %.3f s over "
           "%.2f s\n",
        rank, idle, waiting, wall);
    MP_CHECK(idle < 0.05);
    MP_CHECK(waiting < 0.1 * wall + 0.02);
    return 0;
}

// shoal_wait_for returns SHOAL_INPROGRESS while a late peer has not come,
// leaving the operation running (it then completes); shoal_comm_abort on
// rank 0 fails a later operation everywhere, naming rank 0 and the reason.
int
mp_case_wait_for_abort(shoal_comm *comm, int argc, char **argv)
{
    int            rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    float          x = 1.0f;
    shoal_request *req;
    (void) argc;
    (void) argv;
    MP_CHECK(size > 1);
    if (rank == size - 1) {
        mp_sleep_ms(300);
    }
    MP_OK(shoal_iall_reduce(
        comm, &x, &x, 1, SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_SUM), &req));
    if (rank == 0) {
        double t0 = mp_now();
        MP_EXPECT(shoal_wait_for(req, 20), SHOAL_INPROGRESS);
        MP_CHECK(mp_now() - t0 < 1.0);
    }
    MP_EXPECT(shoal_wait_for(NULL, 1), SHOAL_EINVAL);
    MP_EXPECT(shoal_wait_for(req, -1), SHOAL_EINVAL);
    // Rank 0 is done once it has every rank's value and then aborts; the
    // abort fails what is still in flight elsewhere, this all-reduce
    // included, and every later barrier.
    int st = shoal_wait(req, -1);
    shoal_request_free(req);
    MP_CHECK(st == SHOAL_OK || (rank != 0 && st == SHOAL_EABORTED));
    MP_CHECK(st != SHOAL_OK || x == (float) size);
    if (rank == 0) {
        MP_OK(shoal_comm_abort(comm, "stopped by the test"));
        MP_OK(shoal_comm_abort(comm, "a second time")); // keeps the first
    }
    while (st == SHOAL_OK) {
        st = shoal_barrier(comm);
    }
    printf(
        "rank %d: %s: %s\n", rank, shoal_status_name(st), shoal_last_error());
    MP_CHECK(st == SHOAL_EABORTED);
    MP_CHECK(strstr(shoal_last_error(),
                 "rank 0 aborted the communicator: stopped by the test")
        != NULL);
    MP_EXPECT(shoal_comm_abort(NULL, NULL), SHOAL_EINVAL);
    return 0;
}

// Requests outlive their communicator: the last rank dies, the others'
// receive from it fails, they destroy the communicator while still holding
// that request and two completed ones (a barrier's, and a small send's,
// which completes as it is issued), then test, wait for and free them
// (under ASan this proves nothing reads the freed communicator).
int
mp_case_req_after_destroy(shoal_comm *world, int argc, char **argv)
{
    int            size = shoal_comm_size(world), victim = size - 1;
    int            all[64], x                            = 0;
    shoal_comm    *comm;
    shoal_request *done, *failed, *sent;
    char           name[32];
    (void) argc;
    (void) argv;
    MP_CHECK(size > 1 && size <= 64);
    for (int r = 0; r < size; r++) {
        all[r] = r;
    }
    MP_OK(shoal_comm_split_ranks(world, all, size, &comm));
    MP_OK(shoal_ibarrier(comm, &done));
    MP_OK(shoal_wait(done, -1));
    // The victim dies once everyone is past the barrier (it may leave
    // the barrier first) and has posted the receive that its death fails:
    // each survivor tells it so, after posting.
    if (shoal_comm_rank(comm) == victim) {
        for (int r = 0; r < victim; r++) {
            MP_OK(shoal_recv(comm, &x, 1, SHOAL_INT32, r, 1));
        }
        raise(SIGKILL);
    }
    MP_OK(shoal_irecv(comm, &x, 1, SHOAL_INT32, victim, 3, &failed));
    MP_OK(shoal_isend(comm, &x, 1, SHOAL_INT32, victim, 1, &sent));
    MP_EXPECT(shoal_wait(failed, -1), SHOAL_EPEER);
    MP_OK(shoal_comm_destroy(comm)); // failed: a local release
    snprintf(name, sizeof(name), "rank %d", victim);
    MP_OK(shoal_test(done));
    MP_OK(shoal_wait(done, -1));
    MP_OK(shoal_wait_for(done, 0));
    MP_EXPECT(shoal_test(failed), SHOAL_EPEER);
    MP_CHECK(strstr(shoal_last_error(), name) != NULL);
    MP_CHECK(strstr(shoal_last_error(), "recv") != NULL);
    MP_EXPECT(shoal_wait(failed, -1), SHOAL_EPEER);
    MP_EXPECT(shoal_wait_for(failed, 10), SHOAL_EPEER);
    MP_EXPECT(shoal_request_source(failed), SHOAL_EINVAL);
    MP_OK(shoal_test(sent));
    MP_OK(shoal_wait(sent, -1));
    MP_OK(shoal_wait_for(sent, 0));
    shoal_request_free(done);
    shoal_request_free(failed);
    shoal_request_free(sent);
    return 0;
}

// A forked child cannot use its parent's communicator (SHOAL_EINVAL naming
// the fork, at once), its destroy is a silent local release, and the
// parent's communicator is untouched: later sums are right.
int
mp_case_fork(shoal_comm *comm, int argc, char **argv)
{
    int   rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    float x = 1.0f;
    int   status;
    (void) argc;
    (void) argv;
    MP_OK(shoal_all_reduce(
        comm, &x, &x, 1, SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_SUM)));
    pid_t child = fork();
    MP_CHECK(child >= 0);
    if (child == 0) {
        float y  = 1.0f;
        int   ok = shoal_all_reduce(comm, &y, &y, 1, SHOAL_FLOAT32,
                       SHOAL_REDUCE_OP(SHOAL_SUM))
                == SHOAL_EINVAL
            && strstr(shoal_last_error(), "is a fork of it") != NULL
            && shoal_barrier(comm) == SHOAL_EINVAL
            && shoal_comm_abort(comm, "from the child") == SHOAL_EINVAL
            && shoal_comm_destroy(comm) == SHOAL_OK;
        exit(ok ? 0 : 1); // a normal exit: atexit handlers and destructors
    }
    MP_CHECK(waitpid(child, &status, 0) == child);
    MP_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < 3; i++) {
        x = (float) (rank + 1);
        MP_OK(shoal_all_reduce(
            comm, &x, &x, 1, SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_SUM)));
        MP_CHECK(x == (float) (size * (size + 1) / 2));
    }
    return 0;
}

// The last rank stops (SIGSTOP: alive, its host answering, the process
// not) in the middle of a series of all-reduces large enough to fill the
// socket buffers. The others must report a time-out waiting for it, not a
// dead link or host; the launcher ends the stopped rank afterwards.
int
mp_case_freeze(shoal_comm *comm, int argc, char **argv)
{
    int    rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int    victim = size - 1;
    size_t n      = argc > 0 ? (size_t) atol(argv[0]) : (size_t) 1 << 22;
    char   name[32];
    MP_CHECK(size > 1);
    float *buf = calloc(n, sizeof(float));
    MP_CHECK(buf != NULL);
    for (int i = 0;; i++) {
        if (rank == victim && i == 3) {
            // A watchman ends the stopped rank once the others are done.
            pid_t me = getpid();
            if (fork() == 0) {
                sleep(8);
                kill(me, SIGKILL);
                _exit(0);
            }
            raise(SIGSTOP);
        }
        int st = shoal_all_reduce(
            comm, buf, buf, n, SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_SUM));
        if (st == SHOAL_OK) {
            MP_CHECK(i < 1000);
            continue;
        }
        printf("rank %d: all_reduce %d failed: %s: %s\n", rank, i,
            shoal_status_name(st), shoal_last_error());
        MP_CHECK(st == SHOAL_ETIMEDOUT);
        snprintf(name, sizeof(name), "rank %d", victim);
        MP_CHECK(strstr(shoal_last_error(), name) != NULL);
        MP_CHECK(strstr(shoal_last_error(), "link or host is down") == NULL);
        break;
    }
    free(buf);
    return 0;
}

// Per-call options (shoal_next_call_opts): a deadline given to one call
// is taken by that call alone, even when it fails its argument checks,
// and never changes the communicator's default; then a barrier whose
// ranks arrive 1.5 s apart times out after its own 400 ms on the rank
// that waits, under a default of 60 s.
int
mp_case_call_opts(shoal_comm *comm, int argc, char **argv)
{
    int             rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    float           x = 1, y = 0;
    shoal_call_opts tiny = { .timeout_ms = 1 }, bad = { .timeout_ms = -5 };
    shoal_call_opts short_wait = { .timeout_ms = 400 };
    (void) argc;
    (void) argv;
    MP_CHECK(size > 1);
    MP_OK(shoal_comm_set_timeout(comm, 60000));
    MP_EXPECT(shoal_next_call_opts(&bad), SHOAL_EINVAL);
    // Taken by a refused call: the barrier after it keeps the default.
    MP_OK(shoal_next_call_opts(&tiny));
    MP_EXPECT(shoal_all_reduce(comm, &x, &y, 1, (shoal_dtype) 99,
                  (shoal_reduce_op) { .kind = SHOAL_SUM }),
        SHOAL_EINVAL);
    if (rank == 0) {
        mp_sleep_ms(200);
    }
    MP_OK(shoal_barrier(comm));
    // Taken by a call that succeeds (a small send completes at once): the
    // receive and the barrier after it have none.
    if (rank == 0) {
        MP_OK(shoal_next_call_opts(&tiny));
        MP_OK(shoal_send(comm, &x, 1, SHOAL_FLOAT32, 1, 7));
        mp_sleep_ms(200);
    } else if (rank == 1) {
        MP_OK(shoal_recv(comm, &y, 1, SHOAL_FLOAT32, 0, 7));
        MP_CHECK(y == 1);
    }
    MP_OK(shoal_barrier(comm));
    // Dropped before any call: none left.
    MP_OK(shoal_next_call_opts(&tiny));
    MP_OK(shoal_next_call_opts(NULL));
    if (rank == 0) {
        mp_sleep_ms(200);
    }
    MP_OK(shoal_barrier(comm));
    // Its own deadline, while the default stays 60 s.
    if (rank != 0) {
        mp_sleep_ms(1500);
    }
    MP_OK(shoal_next_call_opts(&short_wait));
    double t0 = mp_now();
    int    st = shoal_barrier(comm);
    if (rank == 0) {
        double waited = mp_now() - t0;
        MP_CHECK(st == SHOAL_ETIMEDOUT);
        MP_CHECK(waited > 0.35 && waited < 1.4);
    } else {
        MP_CHECK(st != SHOAL_OK);
    }
    return 0;
}

// caller_waits: the progress thread is not woken at issue, and takes over
// when the caller's wait returns early. Rank 0 issues a 64 MiB two-shot
// all-reduce (many staged rounds with every peer) with caller_waits,
// waits 1 ms for it (shoal_wait_for, as the Python layer waits in slices)
// and then sleeps 2 s without a call; the other ranks' blocking
// all-reduces need rank 0's part of every round, so they finish early
// only if rank 0's progress thread took over.
int
mp_case_caller_waits(shoal_comm *comm, int argc, char **argv)
{
    int             rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    size_t          count = (size_t) 16 << 20;
    float          *buf   = malloc(count * sizeof(float));
    shoal_call_opts opts  = { .algo = "twoshot", .caller_waits = rank == 0 };
    shoal_request  *req   = NULL;
    (void) argc;
    (void) argv;
    MP_CHECK(buf != NULL);
    for (size_t i = 0; i < count; i++) {
        buf[i] = (float) (rank + 1);
    }
    MP_OK(shoal_barrier(comm));
    double t0 = mp_now();
    MP_OK(shoal_next_call_opts(&opts));
    if (rank == 0) {
        MP_OK(shoal_iall_reduce(comm, buf, buf, count, SHOAL_FLOAT32,
            (shoal_reduce_op) { .kind = SHOAL_SUM }, &req));
        int st = shoal_wait_for(req, 1);
        MP_CHECK(st == SHOAL_OK || st == SHOAL_INPROGRESS);
        mp_sleep_ms(2000);
        MP_OK(shoal_wait(req, -1));
        shoal_request_free(req);
    } else {
        MP_OK(shoal_all_reduce(comm, buf, buf, count, SHOAL_FLOAT32,
            (shoal_reduce_op) { .kind = SHOAL_SUM }));
        double took = mp_now() - t0;
        if (took >= 1.5) {
            fprintf(
                stderr, "rank %d: the all-reduce took %.2f s\n", rank, took);
        }
        MP_CHECK(took < 1.5);
    }
    for (size_t i = 0; i < count; i += 4099) {
        MP_CHECK(buf[i] == (float) (size * (size + 1) / 2));
    }
    free(buf);
    return 0;
}
