// Multi-process tests: shoal_mptest cases run as N ranks through the
// launcher, for world sizes 1, 2, 3, 4 and 8 (on 2 cores), plus failure
// cases started by hand to control each rank's environment.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "test.h"

static const char *
mptest_path(void)
{
    return test_build_path("tests/shoal_mptest");
}

static int
run_case(int n, const char *name, const char *arg, char **out)
{
    return test_run_mptest(n, name, arg, NULL, out, 120);
}

// Every rank must print "case NAME OK" and the job must exit 0.
static void
expect_pass(int n, const char *name, const char *arg)
{
    char *out;
    int   rc = run_case(n, name, arg, &out);

    if (rc != 0 || test_count(out, " OK\n") < n) {
        test_fail(__FILE__, __LINE__, "case %s %s on %d ranks: exit %d\n%s",
            name, arg ? arg : "", n, rc, out);
    }
    free(out);
}

// A case on 2, 3 and 4 ranks (cases that need a peer).
#define MP_TEST_234(name, case_name, arg)                                     \
    TEST_T(name##_2, 120)                                                     \
    {                                                                         \
        expect_pass(2, case_name, arg);                                       \
    }                                                                         \
    TEST_T(name##_3, 120)                                                     \
    {                                                                         \
        expect_pass(3, case_name, arg);                                       \
    }                                                                         \
    TEST_T(name##_4, 120)                                                     \
    {                                                                         \
        expect_pass(4, case_name, arg);                                       \
    }

// The same on 1 and 8 ranks too.
#define MP_TEST(name, case_name, arg)                                         \
    TEST_T(name##_1, 120)                                                     \
    {                                                                         \
        expect_pass(1, case_name, arg);                                       \
    }                                                                         \
    MP_TEST_234(name, case_name, arg)                                         \
    TEST_T(name##_8, 180)                                                     \
    {                                                                         \
        expect_pass(8, case_name, arg);                                       \
    }

MP_TEST(mp_p2p, "p2p", NULL)
MP_TEST_234(mp_p2p_heap, "p2p", "heap")

// Sends and receives without a request, completed by sync and barrier.
MP_TEST_234(mp_p2p_untracked, "p2p_untracked", NULL)

// Messages larger than the channel: read from the sender's memory through
// process_vm_readv (above), from its shared heap without it, or through
// the channel's slots when neither can be read.
static void
expect_pass_without_cma(int n, const char *name, const char *arg)
{
    static const char *const env[] = { "SHOAL_CMA=0", NULL };
    char                    *out;
    int rc = test_run_mptest(n, name, arg, env, &out, 120);

    CHECK_MSG(rc == 0 && test_count(out, " OK\n") == n,
        "case %s %s on %d ranks with SHOAL_CMA=0: exit %d\n%s", name,
        arg ? arg : "", n, rc, out);
    free(out);
}

TEST_T(mp_p2p_no_cma_3, 120)
{
    expect_pass_without_cma(3, "p2p", NULL);
}

TEST_T(mp_p2p_heap_no_cma_3, 120)
{
    expect_pass_without_cma(3, "p2p", "heap");
}

TEST_T(mp_p2p_any_no_cma_3, 120)
{
    expect_pass_without_cma(3, "p2p_any", NULL);
}
MP_TEST(mp_p2p_tags, "p2p_tags", NULL)
MP_TEST(mp_p2p_async, "p2p_async", NULL)
MP_TEST_234(mp_p2p_arrived, "p2p_arrived", NULL)
MP_TEST_234(mp_p2p_early, "p2p_early", NULL)
// A false slot header from a peer fails the receive (shared memory).
TEST_T(mp_p2p_forged_big_chunk_2, 60)
{
    expect_pass(2, "p2p_forged", "big");
}
TEST_T(mp_p2p_forged_short_last_chunk_2, 60)
{
    expect_pass(2, "p2p_forged", "short");
}
MP_TEST_234(mp_p2p_threads, "p2p_threads", NULL)
MP_TEST(mp_progress, "progress", NULL)
MP_TEST(mp_progress_after_prompt_waits, "progress", "prompt")
MP_TEST(mp_bcast, "bcast", NULL)
MP_TEST(mp_barrier, "barrier", NULL)
MP_TEST(mp_split, "split", NULL)
// Ranks pinned to a core each (the machine has at least 2) are not taken
// for ranks that share one.
TEST_T(mp_pinned_ranks_count_their_cores_together_2, 120)
{
    expect_pass(2, "pinned_policy", NULL);
}
MP_TEST(mp_bad_args, "bad_args", NULL)

// Any-source receives on 2, 3 and 4 ranks (rank 0 receives from all).
MP_TEST_234(mp_p2p_any, "p2p_any", NULL)
MP_TEST_234(mp_p2p_any_early, "p2p_any_early", NULL)
MP_TEST_234(mp_p2p_any_mixed, "p2p_any_mixed", NULL)
MP_TEST_234(mp_p2p_any_left, "p2p_any_errors", "left")
TEST_T(mp_p2p_any_errors_1, 60)
{
    expect_pass(1, "p2p_any_errors", NULL);
}
TEST_T(mp_p2p_any_timeout_3, 60)
{
    expect_pass(3, "p2p_any_errors", "timeout");
}
TEST_T(mp_p2p_any_mismatch_3, 60)
{
    expect_pass(3, "p2p_any_errors", "mismatch");
}
// Compiled custom collectives (compile_op's core).
MP_TEST(mp_plan_examples, "plan_examples", NULL)
MP_TEST(mp_plan_random, "plan_random", "150")
// Tiny gathers and scatters ride in their flags' lines: none is
// overwritten before its readers took it.
MP_TEST_234(mp_inline_rooted, "inline_rooted", NULL)
TEST_T(mp_inline_rooted_8, 180)
{
    expect_pass(8, "inline_rooted", "1000");
}
MP_TEST(mp_plan_alias, "plan_alias", NULL)
// Strided single-copy transfers: malloc tensors read through
// process_vm_readv, shoal_alloc ones in the shared heap, and (without the
// kernel's help) through the channel's slots.
MP_TEST_234(mp_plan_large, "plan_large", NULL)
MP_TEST_234(mp_plan_large_heap, "plan_large", "heap")
TEST_T(mp_plan_large_no_cma_3, 120)
{
    expect_pass_without_cma(3, "plan_large", NULL);
}
MP_TEST(mp_plan_errors, "plan_errors", NULL)
// Several named tensors in one plan, one local tensor per tensor.
MP_TEST(mp_plan_tensors, "plan_tensors", NULL)

TEST_T(mp_idle_cpu_2, 60)
{
    expect_pass(2, "idle", NULL);
}

TEST_T(mp_idle_cpu_8, 60)
{
    expect_pass(8, "idle", NULL);
}

// shoal_wait_for leaves a late operation running; shoal_comm_abort fails
// every rank with its reason.
MP_TEST_234(mp_wait_for_abort, "wait_for_abort", NULL)
// Per-call options: one call's deadline, the default untouched.
MP_TEST_234(mp_call_opts, "call_opts", NULL)
// caller_waits: no wake at issue, yet completed without a wait.
MP_TEST_234(mp_caller_waits, "caller_waits", NULL)

// The last rank kills itself (case `name`): the others fail within 2 s
// naming it, the launcher reports the kill and exits 137.
static void
expect_killed(int n, const char *name)
{
    char *out;
    char  want[64], ok[64];
    int   rc = run_case(n, name, NULL, &out);

    snprintf(want, sizeof(want), "rank %d killed by signal 9", n - 1);
    snprintf(ok, sizeof(ok), "case %s OK", name);
    CHECK_MSG(rc == 137, "exit %d, wanted 137\n%s", rc, out);
    CHECK_MSG(strstr(out, want) != NULL, "no '%s' in\n%s", want, out);
    CHECK_MSG(test_count(out, ok) == n - 1,
        "not every survivor saw the failure:\n%s", out);
    free(out);
}

// A rank dies during a rendezvous: in a split, in the middle of creating
// a communicator, before the others re-create one after its death. The
// others fail within 2 s of the death naming it (the cases check), over
// shared memory and TCP.
static void
expect_killed_env(int n, const char *name, const char *const *env)
{
    char *out;
    char  want[64], ok[64];
    int   rc = test_run_mptest(n, name, NULL, env, &out, 60);

    snprintf(want, sizeof(want), "rank %d killed by signal 9", n - 1);
    snprintf(ok, sizeof(ok), "case %s OK", name);
    CHECK_MSG(rc == 137, "%s: exit %d, wanted 137\n%s", name, rc, out);
    CHECK_MSG(strstr(out, want) != NULL, "no '%s' in\n%s", want, out);
    CHECK_MSG(test_count(out, ok) == n - 1,
        "not every survivor of %s saw the failure in time:\n%s", name, out);
    free(out);
}

#define RDV_KILL_TESTS(name, n)                                               \
    TEST_T(mp_rdv_##name##_shm_##n, 60)                                       \
    {                                                                         \
        const char *env[] = { "SHOAL_TRANSPORT=shm", NULL };                  \
        expect_killed_env(n, #name, env);                                     \
    }                                                                         \
    TEST_T(mp_rdv_##name##_tcp_##n, 60)                                       \
    {                                                                         \
        const char *env[] = { "SHOAL_TRANSPORT=tcp", NULL };                  \
        expect_killed_env(n, #name, env);                                     \
    }

RDV_KILL_TESTS(split_kill, 3)
RDV_KILL_TESTS(create_kill, 3)
RDV_KILL_TESTS(recreate_kill, 3)
RDV_KILL_TESTS(split_kill, 8)
RDV_KILL_TESTS(create_kill, 8)

// A stopped (SIGSTOP) rank is a time-out waiting for it, over shared
// memory and over TCP (where its host still answers), not a dead link.
static void
expect_frozen(const char *transport)
{
    const char *env[] = { transport, "SHOAL_TIMEOUT_SECONDS=3", NULL };
    char       *out;
    int         rc = test_run_mptest(2, "freeze", NULL, env, &out, 60);

    CHECK_MSG(rc == 137, "%s: exit %d, wanted 137\n%s", transport, rc, out);
    CHECK_MSG(test_count(out, "case freeze OK") == 1,
        "%s: rank 0 did not report a time-out naming rank 1:\n%s", transport,
        out);
    free(out);
}

TEST_T(mp_freeze_shm, 60)
{
    expect_frozen("SHOAL_TRANSPORT=shm");
}

TEST_T(mp_freeze_tcp, 60)
{
    expect_frozen("SHOAL_TRANSPORT=tcp");
}

// A rank that destroys its communicator instead of splitting it is named
// at once; one that published its choice first is no failure.
TEST_T(mp_split_left_4, 60)
{
    const char *env[] = { "SHOAL_TRANSPORT=shm", NULL };
    char       *out;
    int         rc = test_run_mptest(4, "split_left", NULL, env, &out, 30);

    CHECK_MSG(rc == 0 && test_count(out, "case split_left OK") == 4,
        "exit %d\n%s", rc, out);
    free(out);
}

TEST_T(mp_split_left_tcp_4, 60)
{
    const char *env[] = { "SHOAL_TRANSPORT=tcp", NULL };
    char       *out;
    int         rc = test_run_mptest(4, "split_left", NULL, env, &out, 30);

    CHECK_MSG(rc == 0 && test_count(out, "case split_left OK") == 4,
        "exit %d\n%s", rc, out);
    free(out);
}

// Splits delete their keys from the store once every rank read them.
MP_TEST_234(mp_split_keys, "split_keys", NULL)

// A communicator's store keys follow from its name and size, not from how
// many communicators each process made before.
MP_TEST_234(mp_create_history, "create_history", NULL)

// A rank alone in its group still waits for every rank's choice.
MP_TEST_234(mp_split_waits, "split_waits", NULL)

// The transport's memory operations (expose, view, read, write).
MP_TEST(mp_tp_mem, "tp_mem", NULL)
MP_TEST(mp_mem_reg, "mem_reg", NULL)

// A forked child cannot hurt its parent's communicator.
MP_TEST_234(mp_fork, "fork", NULL)

// Requests kept past their communicator's destruction (a peer died).
TEST_T(mp_req_after_destroy_2, 60)
{
    expect_killed(2, "req_after_destroy");
}

TEST_T(mp_req_after_destroy_3, 60)
{
    expect_killed(3, "req_after_destroy");
}

// A rank killed mid-broadcast.
TEST_T(mp_kill_2, 60)
{
    expect_killed(2, "kill");
}

TEST_T(mp_kill_4, 60)
{
    expect_killed(4, "kill");
}

TEST_T(mp_kill_8, 90)
{
    expect_killed(8, "kill");
}

// A rank killed while rank 0 waits in an any-source receive.
TEST_T(mp_p2p_any_kill_2, 60)
{
    expect_killed(2, "p2p_any_kill");
}

TEST_T(mp_p2p_any_kill_4, 60)
{
    expect_killed(4, "p2p_any_kill");
}

TEST_T(mp_timeout_3, 60)
{
    expect_pass(3, "timeout", NULL);
}

TEST_T(mp_mismatch_kind_3, 60)
{
    expect_pass(3, "mismatch", "kind");
}

TEST_T(mp_mismatch_count_2, 60)
{
    expect_pass(2, "mismatch", "count");
}

TEST_T(mp_mismatch_dtype_4, 60)
{
    expect_pass(4, "mismatch", "dtype");
}

TEST_T(mp_mismatch_root_3, 60)
{
    expect_pass(3, "mismatch", "root");
}

TEST_T(mp_p2p_mismatch_3, 60)
{
    expect_pass(3, "p2p_mismatch", NULL);
}

// Runs one rank by hand with the given environment; returns its exit code.
static int
run_rank(const char *const *env, const char *name, char **out)
{
    const char *argv[] = { mptest_path(), name, NULL };

    return test_run(argv, env, out, 30);
}

TEST_T(mp_unreachable_store, 30)
{
    const char *env[]
        = { "SHOAL_RANK=1", "SHOAL_SIZE=2", "SHOAL_STORE=127.0.0.1:9",
              "SHOAL_TIMEOUT_SECONDS=1", "SHOAL_SECRET=s", NULL };
    char   *out;
    int64_t t0 = shi_now_ns();
    int     rc = run_rank(env, "barrier", &out);
    double  s  = (double) (shi_now_ns() - t0) / 1e9;

    CHECK_MSG(rc == 1, "exit %d\n%s", rc, out);
    CHECK_MSG(strstr(out, "SHOAL_ECONNECT") != NULL, "%s", out);
    CHECK_MSG(
        strstr(out, "127.0.0.1:9") != NULL, "address not named: %s", out);
    CHECK_MSG(s < 5, "took %.1f s", s);
    free(out);
}

TEST_T(mp_missing_environment, 30)
{
    const char *env[] = { "SHOAL_RANK=", "SHOAL_SIZE=", NULL };
    char       *out;
    int         rc;

    // Clear every launcher variable the test process might have.
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMI_RANK");
    unsetenv("PMI_SIZE");
    unsetenv("SLURM_PROCID");
    unsetenv("SLURM_NTASKS");
    unsetenv("SHOAL_RANK");
    unsetenv("SHOAL_SIZE");
    rc = run_rank(env + 2, "barrier", &out);
    CHECK_MSG(rc == 1, "exit %d\n%s", rc, out);
    CHECK_MSG(strstr(out, "SHOAL_EENV") != NULL, "%s", out);
    CHECK_MSG(strstr(out, "OMPI_COMM_WORLD_RANK") != NULL
            && strstr(out, "SLURM_PROCID") != NULL
            && strstr(out, "MASTER_ADDR") != NULL,
        "variables not named: %s", out);
    free(out);
}

// Two ranks with different job secrets: rank 0 serves the store with its
// secret, rank 1's connection is refused (SHOAL_EAUTH) and rank 0, left
// alone, times out; neither hangs.
TEST_T(mp_wrong_secret, 30)
{
    char        port[64];
    int         p      = test_store_port();
    const char *env0[] = { "SHOAL_RANK=0", "SHOAL_SIZE=2", port,
        "SHOAL_TIMEOUT_SECONDS=3", "SHOAL_SECRET=right", NULL };
    const char *env1[] = { "SHOAL_RANK=1", "SHOAL_SIZE=2", port,
        "SHOAL_TIMEOUT_SECONDS=3", "SHOAL_SECRET=wrong", NULL };
    char       *out0, *out1;
    pid_t       pid;

    snprintf(port, sizeof(port), "SHOAL_STORE=127.0.0.1:%d", p);
    pid = fork();
    if (pid == 0) {
        int rc = run_rank(env0, "barrier", &out0);
        // Rank 0 must fail (its peer never joins) and say it waited.
        if (rc != 1 || strstr(out0, "rank 1") == NULL) {
            fprintf(stderr, "rank 0: exit %d\n%s", rc, out0);
            _exit(1);
        }
        _exit(0);
    }
    usleep(300000);
    int rc = run_rank(env1, "barrier", &out1);
    CHECK_MSG(rc == 1, "rank 1 exit %d\n%s", rc, out1);
    CHECK_MSG(strstr(out1, "SHOAL_EAUTH") != NULL, "%s", out1);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "rank 0 did not fail cleanly");
    free(out1);
}

// Who arrives last: a rank 2 ms late at every all-reduce is seen by the
// others' shoal_comm_stats (case stragglers).
TEST_T(mp_stragglers_3, 60)
{
    expect_pass(3, "stragglers", NULL);
}
