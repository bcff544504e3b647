// Going on after a lost rank (cases `recover` and `revoke`,
// tests/mp/cases_recover.c): the last rank dies in each phase of a job;
// every survivor must agree on it, shrink, and all-reduce correctly on the
// new communicator within 2 s of the death, leaking no descriptor; with a
// second death during the shrink too; and a revoke reaches every rank and
// leaves a communicator that shrinks back to all of them. make test runs
// a sample; SHOAL_FAULT_FULL=1 (make test-full) every phase on 3 and 8
// ranks over shared memory and TCP.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

static const char *const phases[] = { "all_reduce", "broadcast", "reduce",
    "all_gather", "reduce_scatter", "all_to_all", "gather", "scatter",
    "barrier", "send_recv", "plan", "mid_transfer" };

// Runs the case on n ranks under shoalrun, which lets the survivors go on
// for up to 20 s after a rank dies (its default is 3 s); returns its exit
// status, with the output in *out.
static int
run_case(int n, const char *transport, const char *const *args, char **out)
{
    char        nbuf[16];
    const char *env[]  = { transport, NULL };
    const char *argv[] = { test_build_path("tools/shoalrun"), "-n", nbuf,
        "--grace", "20", "--tag-output", test_build_path("tests/shoal_mptest"),
        args[0], args[1], args[2], NULL };

    snprintf(nbuf, sizeof(nbuf), "%d", n);
    return test_run(argv, env, out, 60);
}

static void
expect_recovery(int n, const char *phase, int twice, const char *transport)
{
    const char *args[] = { "recover", phase, twice ? "twice" : NULL };
    char       *out;
    int         files = test_shm_leftovers();
    int         rc    = run_case(n, transport, args, &out);
    int         left  = n - 1 - twice;

    CHECK_MSG(rc == 137,
        "recover %s%s %s on %d ranks: exit %d, wanted 137\n%s", phase,
        twice ? " twice" : "", transport, n, rc, out);
    CHECK_MSG(test_count(out, "case recover OK") == left,
        "recover %s%s %s on %d ranks: not every survivor went on with "
        "right results within 2 s:\n%s",
        phase, twice ? " twice" : "", transport, n, out);
    CHECK_MSG(test_shm_leftovers() <= files, "files left in /dev/shm after %s",
        phase);
    free(out);
}

static void
expect_revoke(int n, const char *transport)
{
    const char *args[] = { "revoke", NULL, NULL };
    char       *out;
    int         rc = run_case(n, transport, args, &out);

    CHECK_MSG(rc == 0 && test_count(out, "case revoke OK") == n,
        "revoke %s on %d ranks: exit %d\n%s", transport, n, rc, out);
    free(out);
}

static const char *const transports[]
    = { "SHOAL_TRANSPORT=shm", "SHOAL_TRANSPORT=tcp" };

// The sample: two phases per transport on 3 ranks, a second death on 4,
// a revoke on 3. The whole matrix with SHOAL_FAULT_FULL.
TEST_T(recover_after_a_death, 600)
{
    size_t nphases = sizeof(phases) / sizeof(phases[0]);

    if (getenv("SHOAL_FAULT_FULL") != NULL) {
        for (size_t i = 0; i < nphases; i++) {
            for (int n = 3; n <= 8; n += 5) {
                expect_recovery(n, phases[i], 0, transports[0]);
                expect_recovery(n, phases[i], 0, transports[1]);
            }
        }
        return;
    }
    expect_recovery(3, "all_reduce", 0, transports[0]);
    expect_recovery(3, "send_recv", 0, transports[1]);
    expect_recovery(3, "mid_transfer", 0, transports[1]);
    expect_recovery(3, "all_to_all", 0, transports[0]);
}

TEST_T(recover_after_a_second_death_in_the_shrink, 300)
{
    int rounds = getenv("SHOAL_FAULT_FULL") != NULL ? 5 : 1;

    for (int i = 0; i < rounds; i++) {
        expect_recovery(4, "all_reduce", 1, transports[0]);
        expect_recovery(4, "barrier", 1, transports[1]);
        if (rounds > 1) {
            expect_recovery(8, "all_reduce", 1, transports[i % 2]);
        }
    }
}

TEST_T(revoke_reaches_every_rank_and_shrinks_back, 120)
{
    expect_revoke(3, transports[0]);
    expect_revoke(3, transports[1]);
    if (getenv("SHOAL_FAULT_FULL") != NULL) {
        expect_revoke(8, transports[0]);
        expect_revoke(8, transports[1]);
    }
}
