// The fault matrix: the last rank dies in each phase of a job (the case
// `fault PHASE` checks that every survivor fails within 2 s naming it and
// leaks no descriptor), over shared memory and TCP. make test runs a
// sample; SHOAL_FAULT_FULL=1 (make test-full) every phase on 3 and 8
// ranks. Here: the launcher reports the kill, every survivor passed, and
// nothing is left behind (processes of the job, files in /dev/shm).
// Across namespaced hosts, tests/net kills a rank and cuts a link.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

static const char *const fault_phases[] = { "all_reduce", "broadcast",
    "reduce", "all_gather", "reduce_scatter", "all_to_all", "gather",
    "scatter", "barrier", "send_recv", "plan", "mid_transfer" };

// Entries of /dev/shm whose name mentions shoal.
static int
shm_files(void)
{
    DIR           *d = opendir("/dev/shm");
    struct dirent *e;
    int            n = 0;

    if (d == NULL) {
        return 0;
    }
    while ((e = readdir(d)) != NULL) {
        n += strstr(e->d_name, "shoal") != NULL;
    }
    closedir(d);
    return n;
}

// Processes running `shoal_mptest fault ...`.
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
        size_t k = fread(cmd, 1, sizeof(cmd) - 1, f);
        fclose(f);
        cmd[k] = '\0';
        // argv[0] ends in shoal_mptest and argv[1] is "fault".
        n += strstr(cmd, "shoal_mptest") != NULL
            && strcmp(cmd + strlen(cmd) + 1, "fault") == 0;
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
    int         files = shm_files();
    int         rc    = test_run_mptest(n, "fault", phase, env, &out, 60);

    snprintf(killed, sizeof(killed), "rank %d killed by signal 9", n - 1);
    CHECK_MSG(rc == 137, "%s %s on %d ranks: exit %d, wanted 137\n%s", phase,
        transport, n, rc, out);
    CHECK_MSG(strstr(out, killed) != NULL, "no '%s' in\n%s", killed, out);
    CHECK_MSG(test_count(out, "case fault OK") == n - 1,
        "%s %s on %d ranks: not every survivor failed in time, naming rank "
        "%d, without leaking descriptors:\n%s",
        phase, transport, n, n - 1, out);
    CHECK_MSG(shm_files() <= files, "files left in /dev/shm after %s", phase);
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
