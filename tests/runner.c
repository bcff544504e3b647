// Test runner: forks every registered test into its own process group,
// enforces its time limit, reports pass/fail/skip and checks that the test
// left no shared-memory files or processes behind.
//
// Usage: shoal_tests [--list] [--sample] [-j N] [--area AREA] [substring...]
//
// -j N (or SHOAL_TEST_JOBS) runs N tests at a time; each test's output is
// printed when it ends.
//
// --sample (or SHOAL_TEST_SAMPLE=1; make test uses it) runs each family of
// tests that differ only in their world size (name_2, name_3, name_8, ...)
// at one size: 3 ranks where there is a 3-rank test, else the fewest above
// one, else one; a few families keep their 8-rank test too, so that
// oversubscription stays sampled. The count of tests left out is printed;
// without --sample (make test-full) every test runs.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>

#include "base/clock.h"
#include "test.h"

#define MAX_TESTS 1024

static struct {
    const char *name;
    const char *file;
    test_fn     fn;
    int         timeout_s;
} tests[MAX_TESTS];
static int ntests;

void
test_register(const char *name, const char *file, test_fn fn, int timeout_s)
{
    if (ntests == MAX_TESTS) {
        fprintf(stderr, "too many tests\n");
        exit(2);
    }
    tests[ntests].name      = name;
    tests[ntests].file      = file;
    tests[ntests].fn        = fn;
    tests[ntests].timeout_s = timeout_s;
    ntests++;
}

void
test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    _exit(1);
}

void
test_skip(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "skipped: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    _exit(77);
}

int
test_timeout_multiplier(void)
{
    const char *env = getenv("SHOAL_TEST_TIMEOUT_MULTIPLIER");
    int         m   = env ? atoi(env) : 1;

    return m > 0 ? m : 1;
}

static int
decode_status(int status)
{
    if (status == -1) {
        return -1;
    }
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    return 128 + WTERMSIG(status);
}

// Every test runs with SHOAL_TEST_TAG=<runner pid>.<test index> in its
// environment, which its launchers and ranks inherit even when they leave
// the test's process group; a process still carrying the tag after the test
// is a leftover.

int
test_environ_has(const char *pid, const char *entry)
{
    char   path[300], buf[1 << 16];
    size_t len = strlen(entry), n;
    FILE  *f;

    snprintf(path, sizeof(path), "/proc/%s/environ", pid);
    if ((f = fopen(path, "re")) == NULL) {
        return 0;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (size_t i = 0; i + len <= n; i += strlen(buf + i) + 1) {
        if (strncmp(buf + i, entry, len) == 0 && buf[i + len] == '\0') {
            return 1;
        }
    }
    return 0;
}

// Number of live processes (other than ourselves) carrying `tag`.
static int
tagged_processes(const char *tag)
{
    DIR           *proc = opendir("/proc");
    struct dirent *ent;
    char           self[32];
    int            n = 0;

    if (proc == NULL) {
        return 0;
    }
    snprintf(self, sizeof(self), "%d", (int) getpid());
    while ((ent = readdir(proc)) != NULL) {
        if (ent->d_name[0] >= '0' && ent->d_name[0] <= '9'
            && strcmp(ent->d_name, self) != 0
            && test_environ_has(ent->d_name, tag)) {
            n++;
        }
    }
    closedir(proc);
    return n;
}

// True if some process is still in process group `pgid`.
static int
group_alive(pid_t pgid)
{
    return kill(-pgid, 0) == 0;
}

// A test started and not yet reported. Its output goes to a file of its
// own, printed when it ends, so that tests running side by side (-j) do
// not mix their lines.
struct running {
    int     i;
    pid_t   pid;
    int64_t start, deadline;
    int     shm_before;
    FILE   *out;
    char    tag[64];
};

static int
start_one(int i, struct running *r)
{
    int64_t limit = (int64_t) tests[i].timeout_s * test_timeout_multiplier();

    r->i          = i;
    r->start      = shi_now_ns();
    r->deadline   = r->start + limit * 1000000000;
    r->shm_before = test_shm_leftovers();
    r->out        = tmpfile();
    snprintf(
        r->tag, sizeof(r->tag), "SHOAL_TEST_TAG=%d.%d", (int) getpid(), i);
    fflush(stdout);
    fflush(stderr);
    r->pid = fork();
    if (r->pid < 0) {
        perror("fork");
        return -1;
    }
    if (r->pid == 0) {
        setpgid(0, 0);
        if (r->out != NULL) {
            dup2(fileno(r->out), 1);
            dup2(fileno(r->out), 2);
        }
        putenv(r->tag);
        tests[i].fn();
        fflush(stdout);
        _exit(0);
    }
    setpgid(r->pid, r->pid);
    return 0;
}

// The ends of the first failed tests' output, repeated after the summary:
// a CI log may keep only its last lines, and a failed test's name without
// its cause cannot be diagnosed from there.
#define FAILED_TAILS     3
#define FAILED_TAIL_SIZE 1024
static struct {
    const char *name;
    char        text[FAILED_TAIL_SIZE];
} failed_tails[FAILED_TAILS];
static int nfailed_tails;

static void
keep_failed_tail(const struct running *r)
{
    char *text;
    long  end;

    if (nfailed_tails == FAILED_TAILS || fseek(r->out, 0, SEEK_END) != 0
        || (end = ftell(r->out)) < 0) {
        return;
    }
    text = failed_tails[nfailed_tails].text;
    if (fseek(r->out,
            end > FAILED_TAIL_SIZE - 1 ? end - FAILED_TAIL_SIZE + 1 : 0,
            SEEK_SET)
        != 0) {
        return;
    }
    text[fread(text, 1, FAILED_TAIL_SIZE - 1, r->out)] = '\0';
    failed_tails[nfailed_tails++].name                 = tests[r->i].name;
}

static void
print_failed_tails(void)
{
    for (int k = 0; k < nfailed_tails; k++) {
        size_t len = strlen(failed_tails[k].text);

        printf("---- the end of %s's output:\n%s%s", failed_tails[k].name,
            failed_tails[k].text,
            len > 0 && failed_tails[k].text[len - 1] == '\n' ? "" : "\n");
    }
}

// The test's own output, then its line.
static void
report(const struct running *r, int code)
{
    char   buf[4096];
    size_t n;

    if (r->out != NULL) {
        fflush(stdout);
        rewind(r->out);
        while ((n = fread(buf, 1, sizeof(buf), r->out)) > 0) {
            fwrite(buf, 1, n, stderr);
        }
        fflush(stderr);
        if (code != 0 && code != 77) {
            keep_failed_tail(r);
        }
        fclose(r->out);
    }
    printf("%-6s %s (%.2f s)\n",
        code == 0        ? "[ OK ]"
            : code == 77 ? "[SKIP]"
                         : "[FAIL]",
        tests[r->i].name, (double) (shi_now_ns() - r->start) / 1e9);
}

// After the test's process ended with `code` (-1: it ran out of time):
// no process of it may be left, nor files in /dev/shm. Returns the code.
static int
finish_one(struct running *r, int code)
{
    const char *name = tests[r->i].name;

    if (code == -1) {
        fprintf(stderr, "test %s timed out after %d s\n", name,
            (int) ((r->deadline - r->start) / 1000000000));
        kill(-r->pid, SIGKILL);
        waitpid(r->pid, NULL, 0);
    }
    // Grandchildren (ranks) must be gone too: give them a moment, then kill.
    for (int tries = 0; tries < 200 && group_alive(r->pid); tries++) {
        usleep(10000);
    }
    if (group_alive(r->pid)) {
        fprintf(stderr, "test %s left processes running\n", name);
        kill(-r->pid, SIGKILL);
        code = code == 0 ? 1 : code;
    }
    for (int tries = 0; tries < 300 && tagged_processes(r->tag) > 0; tries++) {
        usleep(10000);
    }
    if (tagged_processes(r->tag) > 0) {
        fprintf(
            stderr, "test %s left processes running (launched ranks)\n", name);
        code = code == 0 ? 1 : code;
    }
    if (code == 0 && test_shm_leftovers() > r->shm_before) {
        fprintf(stderr, "test %s left files in /dev/shm\n", name);
        code = 1;
    }
    report(r, code);
    return code;
}

// The code of a test whose process ended, -1 when it ran out of time, or
// -2 while it is still running.
static int
poll_one(const struct running *r)
{
    int   status;
    pid_t got = waitpid(r->pid, &status, WNOHANG);

    if (got == r->pid) {
        return decode_status(status);
    }
    if ((got < 0 && errno != EINTR) || shi_now_ns() > r->deadline) {
        return -1;
    }
    return -2;
}

// Families whose 8-rank test a sample keeps beside its chosen size: 8
// ranks on a machine with fewer cores is where waiting goes wrong.
static const char *const sample_keeps_8[]
    = { "mp_coll_all_reduce", "mp_p2p", "mp_barrier", "mp_bcast" };

// The world size a test's name ends in ("mp_p2p_3": 3), 0 for none; its
// family's length in *prefix.
static int
world_size_of(const char *name, size_t *prefix)
{
    size_t n = strlen(name), i = n;

    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') {
        i--;
    }
    if (i == n || i < 2 || name[i - 1] != '_') {
        return 0;
    }
    *prefix = i - 1;
    return atoi(name + i);
}

// The size a sample runs of the family of test i (see the usage above).
static int
sample_size(int i, size_t prefix)
{
    int best = 0, has3 = 0;

    for (int j = 0; j < ntests; j++) {
        size_t p;
        int    w = world_size_of(tests[j].name, &p);
        if (w == 0 || p != prefix
            || strncmp(tests[j].name, tests[i].name, prefix) != 0) {
            continue;
        }
        has3 |= w == 3;
        if (best == 0 || (w >= 2 && (best < 2 || w < best))) {
            best = w;
        }
    }
    return has3 ? 3 : best;
}

// Whether a sample runs test i.
static int
sampled(int i)
{
    size_t prefix;
    int    w = world_size_of(tests[i].name, &prefix);

    if (w == 0 || w == sample_size(i, prefix)) {
        return 1;
    }
    for (size_t k = 0; w == 8 && k < sizeof(sample_keeps_8) / sizeof(char *);
         k++) {
        if (strlen(sample_keeps_8[k]) == prefix
            && strncmp(tests[i].name, sample_keeps_8[k], prefix) == 0) {
            return 1;
        }
    }
    return 0;
}

// Whether source `file` is ".../<area>_test.c".
static int
in_area(const char *file, const char *area)
{
    const char *base = strrchr(file, '/');
    size_t      n    = strlen(area);

    base = base != NULL ? base + 1 : file;
    return strncmp(base, area, n) == 0 && strcmp(base + n, "_test.c") == 0;
}

// A test runs if it is in the --area given (if any) and its name contains
// one of the other arguments (if any).
static int
selected(int i, int argc, char **argv)
{
    const char *name = tests[i].name;
    int         any  = 0;

    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--area") == 0 && a + 1 < argc
            && !in_area(tests[i].file, argv[++a])) {
            return 0;
        }
    }
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--area") == 0 || strcmp(argv[a], "-j") == 0) {
            a++; // and its value
            continue;
        }
        if (argv[a][0] == '-') {
            continue;
        }
        any = 1;
        if (strstr(name, argv[a]) != NULL) {
            return 1;
        }
    }
    return !any;
}

// The names of the tests that failed, repeated at the end so that the
// last lines of a long run (all a CI log may keep) say which.
static char failed_names[2048];

static void
note_failure(const char *name)
{
    size_t used = strlen(failed_names);

    if (used + strlen(name) + 2 < sizeof(failed_names)) {
        snprintf(
            failed_names + used, sizeof(failed_names) - used, " %s", name);
    } else if (used + 5 < sizeof(failed_names)
        && strcmp(failed_names + used - 4, " ...") != 0) {
        strcat(failed_names, " ...");
    }
}

// Runs the tests the arguments select, `jobs` at a time.
static void
run_all(int argc, char **argv, int sample, int jobs, int *counts)
{
    struct running run[16];
    int            nrun = 0, next = 0;

    for (;;) {
        while (nrun < jobs && next < ntests) {
            int i = next++;
            if (!selected(i, argc, argv)) {
                continue;
            }
            if (sample && !sampled(i)) {
                counts[3]++;
                continue;
            }
            if (start_one(i, &run[nrun]) == 0) {
                nrun++;
            } else {
                counts[1]++;
                note_failure(tests[i].name);
            }
        }
        if (nrun == 0) {
            return;
        }
        for (int k = 0; k < nrun; k++) {
            int code = poll_one(&run[k]);
            if (code == -2) {
                continue;
            }
            code = finish_one(&run[k], code);
            counts[code == 0 ? 0 : code == 77 ? 2 : 1]++;
            if (code != 0 && code != 77) {
                note_failure(tests[run[k].i].name);
            }
            run[k--] = run[--nrun];
        }
        struct timespec nap = { 0, 2000000 };
        nanosleep(&nap, NULL);
    }
}

int
main(int argc, char **argv)
{
    int         counts[4] = { 0 }; // passed, failed, skipped, left out
    int         list = 0, jobs = 1;
    const char *env    = getenv("SHOAL_TEST_SAMPLE");
    int         sample = env != NULL && strcmp(env, "1") == 0;

    if ((env = getenv("SHOAL_TEST_JOBS")) != NULL) {
        jobs = atoi(env);
    }
    for (int a = 1; a < argc; a++) {
        list |= strcmp(argv[a], "--list") == 0;
        sample |= strcmp(argv[a], "--sample") == 0;
        if (strcmp(argv[a], "-j") == 0 && a + 1 < argc) {
            jobs = atoi(argv[++a]);
        }
    }
    jobs = jobs < 1 ? 1 : jobs > 16 ? 16 : jobs;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (list) {
        for (int i = 0; i < ntests; i++) {
            if (selected(i, argc, argv) && (!sample || sampled(i))) {
                printf("%s\n", tests[i].name);
            }
        }
        return 0;
    }
    run_all(argc, argv, sample, jobs, counts);
    if (counts[1] > 0) {
        print_failed_tails();
        printf("failed:%s\n", failed_names);
    }
    printf(
        "%d passed, %d failed, %d skipped\n", counts[0], counts[1], counts[2]);
    if (counts[3] > 0) {
        printf("(a sample: %d tests of other world sizes were left out; "
               "make test-full, or shoal_tests without --sample, runs "
               "them)\n",
            counts[3]);
    }
    return counts[1] == 0 ? 0 : 1;
}
