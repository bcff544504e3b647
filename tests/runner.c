// Test runner: forks every registered test into its own process group,
// enforces its time limit, reports pass/fail/skip and checks that the test
// left no shared-memory files or processes behind.
//
// Usage: shoal_tests [--list] [substring...]
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

static int
timeout_multiplier(void)
{
    const char *env = getenv("SHOAL_TEST_TIMEOUT_MULTIPLIER");
    int         m   = env ? atoi(env) : 1;

    return m > 0 ? m : 1;
}

// Waits for `pid` until `deadline`; returns its wait status, or -1 on a
// time-out (the caller kills the group).
static int
wait_until(pid_t pid, int64_t deadline)
{
    int             status;
    struct timespec nap = { 0, 2000000 };

    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) {
            return status;
        }
        if (got < 0 && errno != EINTR) {
            return -1;
        }
        if (shi_now_ns() > deadline) {
            return -1;
        }
        nanosleep(&nap, NULL);
    }
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
static char test_tag[64];

// True if /proc/<pid>/environ holds `entry` (a "NAME=value" string).
static int
environ_has(const char *pid, const char *entry)
{
    char   path[300], buf[1 << 16];
    size_t len = strlen(entry), n;
    FILE  *f;

    snprintf(path, sizeof(path), "/proc/%s/environ", pid);
    if ((f = fopen(path, "r")) == NULL) {
        return 0;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    for (size_t i = 0; i + len <= n; i += strlen(buf + i) + 1) {
        buf[n] = '\0';
        if (strncmp(buf + i, entry, len) == 0 && buf[i + len] == '\0') {
            return 1;
        }
    }
    return 0;
}

// Number of live processes (other than ourselves) carrying `test_tag`.
static int
tagged_processes(void)
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
            && environ_has(ent->d_name, test_tag)) {
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

static int
run_one(int i)
{
    int64_t start = shi_now_ns();
    int64_t limit = (int64_t) tests[i].timeout_s * timeout_multiplier();
    int     leftovers_before = test_shm_leftovers();
    pid_t   pid;
    int     code;

    snprintf(
        test_tag, sizeof(test_tag), "SHOAL_TEST_TAG=%d.%d", (int) getpid(), i);
    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        putenv(test_tag);
        tests[i].fn();
        fflush(stdout);
        _exit(0);
    }
    setpgid(pid, pid);
    code = decode_status(wait_until(pid, start + limit * 1000000000));
    if (code == -1) {
        fprintf(stderr, "test %s timed out after %d s\n", tests[i].name,
            (int) limit);
        kill(-pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    // Grandchildren (ranks) must be gone too: give them a moment, then kill.
    for (int tries = 0; tries < 200 && group_alive(pid); tries++) {
        usleep(10000);
    }
    if (group_alive(pid)) {
        fprintf(stderr, "test %s left processes running\n", tests[i].name);
        kill(-pid, SIGKILL);
        if (code == 0) {
            code = 1;
        }
    }
    for (int tries = 0; tries < 300 && tagged_processes() > 0; tries++) {
        usleep(10000);
    }
    if (tagged_processes() > 0) {
        fprintf(stderr, "test %s left processes running (launched ranks)\n",
            tests[i].name);
        code = code == 0 ? 1 : code;
    }
    if (code == 0 && test_shm_leftovers() > leftovers_before) {
        fprintf(stderr, "test %s left files in /dev/shm\n", tests[i].name);
        code = 1;
    }
    printf("%-6s %s (%.2f s)\n",
        code == 0        ? "[ OK ]"
            : code == 77 ? "[SKIP]"
                         : "[FAIL]",
        tests[i].name, (double) (shi_now_ns() - start) / 1e9);
    return code;
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
        if (strcmp(argv[a], "--area") == 0) {
            a++;
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

int
main(int argc, char **argv)
{
    int passed = 0, failed = 0, skipped = 0;
    int list = 0;

    for (int a = 1; a < argc; a++) {
        list |= strcmp(argv[a], "--list") == 0;
    }

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 0; i < ntests; i++) {
        if (!selected(i, argc, argv)) {
            continue;
        }
        if (list) {
            printf("%s\n", tests[i].name);
            continue;
        }
        int code = run_one(i);
        if (code == 0) {
            passed++;
        } else if (code == 77) {
            skipped++;
        } else {
            failed++;
        }
    }
    if (!list) {
        printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    }
    return failed == 0 ? 0 : 1;
}
