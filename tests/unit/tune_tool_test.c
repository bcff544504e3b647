// shoal-tune (tools/tune): it tunes on 2 ranks and writes a tuning file
// whose rules communicators then follow (the choices its table printed);
// rules an earlier file had for other rank counts survive; bad options
// are refused with usage; a rank killed mid-tuning makes the others fail,
// naming it, instead of hanging.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "test.h"

#define MAX_BYTES "262144"

// Runs shoal-tune on 2 ranks over all_reduce and all_gather into `path`.
static int
run_tune(const char *path, char **out)
{
    const char *argv[] = { test_build_path("tools/shoalrun"), "-n", "2",
        test_build_path("tools/shoal-tune"), "-c", "all_reduce,all_gather",
        "--min", "8", "--max", MAX_BYTES, "--budget-ms", "1", "-o", path,
        NULL };

    return test_run(argv, NULL, out, 120);
}

static int
read_text(const char *path, char *buf, size_t len)
{
    FILE  *f = fopen(path, "r");
    size_t n;

    if (f == NULL) {
        return -1;
    }
    n      = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    return 0;
}

// Every row of the tool's table ("coll bytes default time best time
// speedup chosen") must be what a communicator reading the file chooses.
static void
check_choices(const char *table, const char *choices)
{
    const char *line = table;
    int         rows = 0;

    for (; line != NULL && *line != '\0'; line = strchr(line, '\n')) {
        char   coll[32], deflt[16], best[16], chosen[16], want[96];
        size_t bytes;
        double t1, t2, speedup;
        line += *line == '\n';
        if (sscanf(line, "%31s %zu %15s %lf %15s %lf %lf %15s", coll, &bytes,
                deflt, &t1, best, &t2, &speedup, chosen)
            != 8) {
            continue;
        }
        rows++;
        snprintf(
            want, sizeof(want), "choice %s %zu %s\n", coll, bytes, chosen);
        CHECK_MSG(strstr(choices, want) != NULL,
            "the table chose %s for %s of %zu bytes, the file did not:\n%s",
            chosen, coll, bytes, choices);
    }
    // 8 B .. 256 KiB: 16 sizes of all_reduce, 16 of all_gather.
    CHECK_MSG(
        rows == 32, "expected 32 table rows, found %d:\n%s", rows, table);
}

TEST_T(tune_tool_round_trip_2, 240)
{
    char        path[] = "/tmp/shoal-tune-test-XXXXXX";
    char        env_file[128], text[8192];
    char       *out = NULL, *choices = NULL;
    int         fd    = mkstemp(path), rc;
    const char *env[] = { env_file, "SHOAL_DEBUG=INFO", NULL, NULL };

    CHECK(fd >= 0);
    // An earlier file's rule for 3 ranks, and a comment of its own.
    CHECK(write(fd, "# old header\nall_reduce, 0, -, 3, 1, twoshot\n", 45)
        == 45);
    close(fd);
    rc = run_tune(path, &out);
    CHECK_MSG(rc == 0, "shoal-tune exited %d:\n%s", rc, out);
    CHECK_MSG(strstr(out, "# wrote ") != NULL, "no 'wrote' line:\n%s", out);
    CHECK_OK(read_text(path, text, sizeof(text)));
    CHECK_MSG(strstr(text, "all_reduce, 0, -, 3, 1, twoshot\n") != NULL,
        "the 3-rank rule was dropped:\n%s", text);
    CHECK_MSG(strstr(text, "# old header") == NULL,
        "the old header was kept:\n%s", text);
    CHECK_MSG(strstr(text, ", 2, 1, ") != NULL, "no 2-rank rules:\n%s", text);
    snprintf(env_file, sizeof(env_file), "SHOAL_TUNING_FILE=%s", path);
    rc = test_run_mptest(2, "tuned", MAX_BYTES, env, &choices, 60);
    CHECK_MSG(rc == 0, "case tuned exited %d:\n%s", rc, choices);
    check_choices(out, choices);
    CHECK_MSG(strstr(choices, "all_reduce of 32 bytes on 2 ranks runs ")
            && strstr(choices, "chosen by tuning file"),
        "INFO did not say the tuning file chose:\n%s", choices);
    free(choices);
    // SHOAL_ALGO comes before the file, and INFO says so.
    env[2] = "SHOAL_ALGO=allreduce:twoshot";
    rc     = test_run_mptest(2, "tuned", "8", env, &choices, 60);
    CHECK_MSG(rc == 0 && strstr(choices, "choice all_reduce 8 twoshot\n")
            && strstr(choices, "runs twoshot, chosen by SHOAL_ALGO"),
        "case tuned under SHOAL_ALGO exited %d:\n%s", rc, choices);
    // The cost model beside the rules: a fitted line per algorithm.
    snprintf(env_file, sizeof(env_file), "%s.costs", path);
    CHECK_OK(read_text(env_file, text, sizeof(text)));
    CHECK_MSG(strstr(text, "all_reduce, oneshot, 2, 1, ") != NULL,
        "no fitted cost of all_reduce oneshot:\n%s", text);
    unlink(env_file);
    unlink(path);
    free(out);
    free(choices);
}

TEST_T(tune_tool_refuses_bad_options, 60)
{
    const char *argv[]
        = { test_build_path("tools/shoal-tune"), "-c", "all_reduse", NULL };
    char *out = NULL;
    int   rc  = test_run(argv, NULL, &out, 30);

    CHECK_MSG(rc == 2 && strstr(out, "bad value 'all_reduse'") != NULL
            && strstr(out, "usage:") != NULL,
        "exit %d:\n%s", rc, out);
    free(out);
}

// The pid of the process whose environment holds both `mark` and
// "SHOAL_RANK=1", or -1.
static pid_t
find_rank1(const char *mark)
{
    DIR           *proc = opendir("/proc");
    struct dirent *e;
    pid_t          found = -1;

    while (proc != NULL && found < 0 && (e = readdir(proc)) != NULL) {
        char  path[64], env[16384];
        pid_t pid = (pid_t) atoi(e->d_name);
        if (pid <= 0) {
            continue;
        }
        snprintf(path, sizeof(path), "/proc/%d/environ", (int) pid);
        int    fd = open(path, O_RDONLY);
        size_t n  = fd >= 0 ? (size_t) read(fd, env, sizeof(env) - 1) : 0;
        if (fd >= 0) {
            close(fd);
        }
        int has_mark = 0, is_rank1 = 0;
        for (size_t i = 0; i < n && n < sizeof(env);
             i += strlen(env + i) + 1) {
            env[n] = '\0';
            has_mark |= strcmp(env + i, mark) == 0;
            is_rank1 |= strcmp(env + i, "SHOAL_RANK=1") == 0;
        }
        found = has_mark && is_rank1 ? pid : -1;
    }
    if (proc != NULL) {
        closedir(proc);
    }
    return found;
}

// Rank 1 killed in the middle of tuning: the other ranks fail (they do
// not hang), each naming rank 1 as dead, within seconds.
TEST_T(tune_tool_killed_rank_3, 120)
{
    char  out_path[] = "/tmp/shoal-tune-kill-XXXXXX", mark[64], text[65536];
    char  tuning[64];
    int   fd = mkstemp(out_path);
    pid_t child, victim = -1;
    int   status = 0;

    CHECK(fd >= 0);
    snprintf(mark, sizeof(mark), "SHOAL_TUNE_TEST_MARK=%d", (int) getpid());
    snprintf(tuning, sizeof(tuning), "%s.tuning", out_path);
    child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        putenv(mark);
        execl(test_build_path("tools/shoalrun"), "shoalrun", "-n", "3",
            "--tag-output", test_build_path("tools/shoal-tune"), "--max",
            "64M", "--no-progress", "-o", tuning, (char *) NULL);
        _exit(127);
    }
    close(fd);
    for (int i = 0; i < 100 && victim < 0; i++) {
        usleep(50000);
        victim = find_rank1(mark);
    }
    CHECK_MSG(victim > 0, "rank 1 of shoal-tune never appeared");
    usleep(500000); // into the tuning
    kill(victim, SIGKILL);
    int64_t deadline = shi_now_ns() + INT64_C(30) * 1000000000;
    while (waitpid(child, &status, WNOHANG) == 0 && shi_now_ns() < deadline) {
        usleep(50000);
    }
    if (waitpid(child, &status, WNOHANG) == 0) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        CHECK_MSG(0, "shoal-tune still ran 30 s after rank 1 died");
    }
    CHECK_OK(read_text(out_path, text, sizeof(text)));
    unlink(out_path);
    CHECK_MSG(access(tuning, F_OK) != 0, "a failed tuning wrote %s", tuning);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) != 0,
        "shoalrun status %d:\n%s", status, text);
    for (int r = 0; r <= 2; r += 2) {
        char want[64];
        snprintf(want, sizeof(want), "[%d] shoal-tune: rank %d: ", r, r);
        CHECK_MSG(
            strstr(text, want) != NULL, "rank %d said nothing:\n%s", r, text);
    }
    CHECK_MSG(
        strstr(text, "rank 1 (pid ") != NULL && strstr(text, "died") != NULL,
        "no rank named rank 1 dead:\n%s", text);
}
