// The fault matrix: the last rank dies in each phase of a job (the case
// `fault PHASE` checks that every survivor fails within 2 s naming it and
// leaks no descriptor), over shared memory and TCP. make test runs a
// sample; SHOAL_FAULT_FULL=1 (make test-full) every phase on 3 and 8
// ranks. Here: the launcher reports the kill, every survivor passed, and
// nothing is left behind (processes of the job, files in /dev/shm).
// Across namespaced hosts, tests/net kills a rank and cuts a link.
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

static const char *const fault_phases[] = { "all_reduce", "broadcast",
    "reduce", "all_gather", "reduce_scatter", "all_to_all", "gather",
    "scatter", "barrier", "send_recv", "plan", "mid_transfer" };

// Whether process `pid` (a /proc entry) was started by this test: it
// carries the test's SHOAL_TEST_TAG, so that tests running side by side do
// not count each other's ranks.
static int
of_this_test(const char *pid)
{
    const char *tag = getenv("SHOAL_TEST_TAG");
    char        want[96];

    if (tag == NULL) {
        return 1;
    }
    snprintf(want, sizeof(want), "SHOAL_TEST_TAG=%s", tag);
    return test_environ_has(pid, want);
}

// Processes of this test running `shoal_mptest fault...` (fault,
// fault_loop).
static int
fault_processes(void)
{
    DIR           *d = opendir("/proc");
    struct dirent *e;
    int            n = 0;

    while (d != NULL && (e = readdir(d)) != NULL) {
        char  path[300], cmd[512];
        FILE *f;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        if (e->d_name[0] < '0' || e->d_name[0] > '9'
            || (f = fopen(path, "re")) == NULL) {
            continue;
        }
        if (!of_this_test(e->d_name)) {
            fclose(f);
            continue;
        }
        size_t k = fread(cmd, 1, sizeof(cmd) - 1, f);
        fclose(f);
        cmd[k] = '\0';
        // argv[0] ends in shoal_mptest and argv[1] starts with "fault".
        n += strstr(cmd, "shoal_mptest") != NULL && k > strlen(cmd) + 1
            && strncmp(cmd + strlen(cmd) + 1, "fault", 5) == 0;
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

static void
expect_fault(int n, const char *phase, const char *transport)
{
    const char *env[] = { transport, NULL };
    char       *out;
    char        killed[64];
    int         files = test_shm_leftovers();
    int         rc    = test_run_mptest(n, "fault", phase, env, &out, 60);

    snprintf(killed, sizeof(killed), "rank %d killed by signal 9", n - 1);
    CHECK_MSG(rc == 137, "%s %s on %d ranks: exit %d, wanted 137\n%s", phase,
        transport, n, rc, out);
    CHECK_MSG(strstr(out, killed) != NULL, "no '%s' in\n%s", killed, out);
    CHECK_MSG(test_count(out, "case fault OK") == n - 1,
        "%s %s on %d ranks: not every survivor failed in time, naming rank "
        "%d, without leaking descriptors:\n%s",
        phase, transport, n, n - 1, out);
    CHECK_MSG(test_shm_leftovers() <= files, "files left in /dev/shm after %s",
        phase);
    CHECK_MSG(fault_processes() == 0, "ranks left running after %s", phase);
    free(out);
}

// The sample: each phase once, transports alternating, on 4 ranks.
TEST_T(fault_sample, 300)
{
    size_t nphases = sizeof(fault_phases) / sizeof(fault_phases[0]);

    if (getenv("SHOAL_FAULT_FULL") != NULL) {
        for (size_t i = 0; i < nphases; i++) {
            for (int n = 3; n <= 8; n += 5) {
                expect_fault(n, fault_phases[i], "SHOAL_TRANSPORT=shm");
                expect_fault(n, fault_phases[i], "SHOAL_TRANSPORT=tcp");
            }
        }
        return;
    }
    for (size_t i = 0; i < nphases; i++) {
        expect_fault(4, fault_phases[i],
            i % 2 ? "SHOAL_TRANSPORT=tcp" : "SHOAL_TRANSPORT=shm");
    }
}

// Rank 0 serves the store itself (no launcher) and dies while the others
// wait in it: they fail within 2 s (the case checks), saying the store's
// process ended; nobody hangs.
TEST_T(fault_store_owner_killed, 60)
{
    char  port[64], rank_var[3][32], out_note[64];
    pid_t pids[3];
    int   p = test_store_port();

    snprintf(port, sizeof(port), "SHOAL_STORE=127.0.0.1:%d", p);
    for (int r = 0; r < 3; r++) {
        snprintf(rank_var[r], sizeof(rank_var[r]), "SHOAL_RANK=%d", r);
        const char *env[]  = { rank_var[r], "SHOAL_SIZE=3", port,
             "SHOAL_SECRET=fault-test", "SHOAL_TIMEOUT_SECONDS=30", NULL };
        const char *argv[] = { test_build_path("tests/shoal_mptest"),
            "store_owner_kill", NULL };
        if ((pids[r] = fork()) == 0) {
            char *out;
            int   rc   = test_run(argv, env, &out, 30);
            int   want = r == 0 ? 128 + 9 : 0;
            if (rc != want) {
                fprintf(stderr, "rank %d: exit %d, wanted %d\n%s", r, rc, want,
                    out);
            }
            _exit(rc == want ? 0 : 1);
        }
        CHECK(pids[r] > 0);
    }
    for (int r = 0; r < 3; r++) {
        int status;
        snprintf(out_note, sizeof(out_note), "rank %d", r);
        CHECK(waitpid(pids[r], &status, 0) == pids[r]);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "%s did not end as it should (see above)", out_note);
    }
}

// The launcher is killed (SIGKILL, no chance to pass anything on) in the
// middle of a job: its ranks must not outlive it.
TEST_T(fault_launcher_killed, 60)
{
    char  sr[512], mp[512];
    pid_t pid;

    snprintf(sr, sizeof(sr), "%s", test_build_path("tools/shoalrun"));
    snprintf(mp, sizeof(mp), "%s", test_build_path("tests/shoal_mptest"));
    if ((pid = fork()) == 0) {
        execl(sr, sr, "-n", "3", mp, "fault_loop", (char *) NULL);
        _exit(127);
    }
    CHECK(pid > 0);
    for (int i = 0; i < 100 && fault_processes() < 3; i++) {
        usleep(100000);
    }
    CHECK_MSG(fault_processes() == 3, "the ranks did not start (%d)",
        fault_processes());
    usleep(300000); // in the middle of their collectives
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    int left = 3;
    for (int i = 0; i < 20 && left > 0; i++) { // 2 s
        usleep(100000);
        left = fault_processes();
    }
    CHECK_MSG(
        left == 0, "%d ranks still running 2 s after the launcher died", left);
}

// A rank stopped (SIGSTOP) before a collective over TCP: every other rank
// fails at the deadline naming it, not the survivor its own wait chain
// ends at, within 1.2 times the deadline (case `stopped` checks).
TEST_T(fault_stopped_rank_is_the_one_named, 60)
{
    const char *env[] = { "SHOAL_TRANSPORT=tcp", NULL };
    char       *out;
    int         rc = test_run_mptest(4, "stopped", NULL, env, &out, 30);

    CHECK_MSG(rc == 137, "exit %d, wanted 137 (rank 1 killed)\n%s", rc, out);
    CHECK_MSG(test_count(out, "case stopped OK") == 3,
        "not every other rank named the stopped rank in time:\n%s", out);
    free(out);
}
