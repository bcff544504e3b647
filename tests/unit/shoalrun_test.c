// The launcher, end to end: shoalrun runs /bin/sh scripts as ranks. Ranks
// that must be gone afterwards write their pid to a file in a scratch
// directory (passed as SRT_DIR) and the test checks that no such process is
// left.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "platform/auth.h"
#include "store/store.h"
#include "test.h"

struct srtest_dir {
    char path[64];
    char env[96]; // "SRT_DIR=<path>" for test_run
};

static const char *
srtest_launcher(void)
{
    const char *path = test_build_path("tools/shoalrun");

    if (access(path, X_OK) != 0) {
        SKIP("%s is not built", path);
    }
    return path;
}

static void
srtest_mkdir(struct srtest_dir *d)
{
    snprintf(d->path, sizeof(d->path), "/tmp/shoalrun_test.XXXXXX");
    CHECK_MSG(mkdtemp(d->path) != NULL, "mkdtemp: %s", strerror(errno));
    snprintf(d->env, sizeof(d->env), "SRT_DIR=%s", d->path);
}

static void
srtest_rmdir(struct srtest_dir *d)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
    CHECK(system(cmd) == 0);
}

// The pid in file `name` of d, or 0 if there is none yet.
static pid_t
srtest_read_pid(const struct srtest_dir *d, const char *name)
{
    char  path[128];
    FILE *f;
    int   pid = 0;

    snprintf(path, sizeof(path), "%s/%s", d->path, name);
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    if (fscanf(f, "%d", &pid) != 1) {
        pid = 0;
    }
    fclose(f);
    return (pid_t) pid;
}

// Checks that the process whose pid is in file `name` no longer exists.
static void
srtest_check_gone(const struct srtest_dir *d, const char *name)
{
    pid_t pid = srtest_read_pid(d, name);

    CHECK_MSG(pid > 0, "no pid in %s/%s", d->path, name);
    CHECK_MSG(kill(pid, 0) != 0 && errno == ESRCH,
        "process %d (%s) is still running", (int) pid, name);
}

// Runs shoalrun with `opts` (up to 4, NULL-terminated) and `nranks` ranks
// of `/bin/sh -c script`; returns test_run's result.
static int
srtest_run(const char *const *opts, int nranks, const char *script,
    const char *const *env, char **output, int timeout_s)
{
    const char *argv[16];
    char        n[16];
    int         a = 0;

    snprintf(n, sizeof(n), "%d", nranks);
    argv[a++] = srtest_launcher();
    argv[a++] = "-n";
    argv[a++] = n;
    for (int i = 0; opts != NULL && opts[i] != NULL && i < 4; i++) {
        argv[a++] = opts[i];
    }
    argv[a++] = "/bin/sh";
    argv[a++] = "-c";
    argv[a++] = script;
    argv[a]   = NULL;
    return test_run(argv, env, output, timeout_s);
}

// The value after `key` (up to a space or end of line) in the line of
// `out` that starts with `line_start`, copied to buf; "" if absent.
static const char *
srtest_field(const char *out, const char *line_start, const char *key,
    char *buf, size_t len)
{
    const char *line = strstr(out, line_start);
    const char *eol, *v;
    size_t      n;

    buf[0] = '\0';
    if (line == NULL) {
        return buf;
    }
    eol = strchr(line, '\n');
    v   = strstr(line, key);
    if (v == NULL || (eol != NULL && v > eol)) {
        return buf;
    }
    v += strlen(key);
    n = strcspn(v, " \n");
    if (n >= len) {
        n = len - 1;
    }
    memcpy(buf, v, n);
    buf[n] = '\0';
    return buf;
}

static double
srtest_seconds_since(int64_t start)
{
    return (double) (shi_now_ns() - start) / 1e9;
}

// An upper bound on a duration, stretched like the runner's time limits
// (SHOAL_TEST_TIMEOUT_MULTIPLIER, for slow sanitizer builds).
static double
srtest_within(double seconds)
{
    return seconds * test_timeout_multiplier();
}

#define SRTEST_ENV_SCRIPT                                                     \
    "echo \"rank=$SHOAL_RANK size=$SHOAL_SIZE"                                \
    " local=$SHOAL_LOCAL_RANK/$SHOAL_LOCAL_SIZE"                              \
    " launcher=$SHOAL_LAUNCHER store=$SHOAL_STORE secret=$SHOAL_SECRET"       \
    " others=[${OMPI_COMM_WORLD_RANK-}${SLURM_PROCID-}]"                      \
    " torch=${RANK-}/${WORLD_SIZE-}/${LOCAL_RANK-}/${LOCAL_WORLD_SIZE-}"      \
    "@${MASTER_ADDR-}:${MASTER_PORT-}"                                        \
    "\""

TEST(shoalrun_gives_each_rank_its_environment)
{
    const char *env[] = { "RANK=7", "WORLD_SIZE=9", "OMPI_COMM_WORLD_RANK=4",
        "SLURM_PROCID=2", NULL };
    char       *out;
    char        store0[64], secret0[128], v[128], line[128];
    int         rc;

    unsetenv("SHOAL_SECRET");
    rc = srtest_run(NULL, 3, SRTEST_ENV_SCRIPT, env, &out, 30);
    CHECK_MSG(rc == 0, "exit %d, output:\n%s", rc, out);
    CHECK_MSG(test_count(out, "rank=") == 3, "output:\n%s", out);
    srtest_field(out, "rank=0 ", "store=", store0, sizeof(store0));
    srtest_field(out, "rank=0 ", "secret=", secret0, sizeof(secret0));
    CHECK_MSG(strncmp(store0, "127.0.0.1:", 10) == 0 && atoi(store0 + 10) > 0,
        "store '%s'", store0);
    CHECK_MSG(
        strlen(secret0) == 64 && strspn(secret0, "0123456789abcdef") == 64,
        "secret '%s' is not 32 bytes in hex", secret0);
    for (int r = 0; r < 3; r++) {
        snprintf(line, sizeof(line), "rank=%d ", r);
        CHECK_MSG(
            test_count(out, line) == 1, "no single %s in:\n%s", line, out);
        CHECK(
            strcmp(srtest_field(out, line, "size=", v, sizeof(v)), "3") == 0);
        snprintf(line + strlen(line), sizeof(line) - strlen(line),
            "size=3 local=%d/3 launcher=shoalrun ", r);
        CHECK_MSG(strstr(out, line) != NULL, "no '%s' in:\n%s", line, out);
        snprintf(line, sizeof(line), "rank=%d ", r);
        CHECK(strcmp(srtest_field(out, line, "store=", v, sizeof(v)), store0)
            == 0);
        CHECK(strcmp(srtest_field(out, line, "secret=", v, sizeof(v)), secret0)
            == 0);
        // Other launchers' variables are removed; torch's env:// ones are
        // set afresh (a program may call init_process_group).
        CHECK_MSG(
            strcmp(srtest_field(out, line, "others=", v, sizeof(v)), "[]")
                == 0,
            "rank %d sees other launchers' variables: %s", r, v);
        char want[64];
        snprintf(want, sizeof(want), "%d/3/%d/3@127.0.0.1:", r, r);
        srtest_field(out, line, "torch=", v, sizeof(v));
        CHECK_MSG(
            strncmp(v, want, strlen(want)) == 0 && atoi(v + strlen(want)) > 0,
            "rank %d: torch's variables '%s', want '%sPORT'", r, v, want);
    }
    free(out);
}

TEST(shoalrun_secrets_differ_between_jobs_unless_given)
{
    const char *given[] = { "SHOAL_SECRET=my-job-secret", NULL };
    char       *out1, *out2, *out3;
    char        s1[128], s2[128], v[128];

    unsetenv("SHOAL_SECRET");
    CHECK(srtest_run(NULL, 1, SRTEST_ENV_SCRIPT, NULL, &out1, 30) == 0);
    CHECK(srtest_run(NULL, 1, SRTEST_ENV_SCRIPT, NULL, &out2, 30) == 0);
    srtest_field(out1, "rank=0 ", "secret=", s1, sizeof(s1));
    srtest_field(out2, "rank=0 ", "secret=", s2, sizeof(s2));
    CHECK_MSG(
        strlen(s1) == 64 && strlen(s2) == 64, "secrets '%s' '%s'", s1, s2);
    CHECK_MSG(strcmp(s1, s2) != 0, "two jobs got the same secret %s", s1);
    CHECK(srtest_run(NULL, 2, SRTEST_ENV_SCRIPT, given, &out3, 30) == 0);
    CHECK(strcmp(srtest_field(out3, "rank=0 ", "secret=", v, sizeof(v)),
              "my-job-secret")
        == 0);
    CHECK(strcmp(srtest_field(out3, "rank=1 ", "secret=", v, sizeof(v)),
              "my-job-secret")
        == 0);
    free(out1);
    free(out2);
    free(out3);
}

TEST(shoalrun_all_ranks_succeed)
{
    char   *out;
    int64_t start = shi_now_ns();
    int     rc    = srtest_run(NULL, 4, "exit 0", NULL, &out, 30);

    CHECK_MSG(rc == 0, "exit %d, output:\n%s", rc, out);
    CHECK_MSG(test_count(out, "shoalrun:") == 0, "output:\n%s", out);
    CHECK(srtest_seconds_since(start) < srtest_within(2));
    free(out);
}

TEST(shoalrun_passes_on_a_failing_ranks_status)
{
    char   *out;
    int64_t start = shi_now_ns();
    // Rank 2 fails; the others finish by themselves within the grace.
    int rc = srtest_run(NULL, 3,
        "if [ $SHOAL_RANK = 2 ]; then exit 3; fi; sleep 0.3; exit 0", NULL,
        &out, 30);

    CHECK_MSG(rc == 3, "exit %d, output:\n%s", rc, out);
    CHECK_MSG(strstr(out, "shoalrun: rank 2 exited with status 3\n") != NULL,
        "output:\n%s", out);
    CHECK_MSG(test_count(out, "shoalrun: rank") == 1, "output:\n%s", out);
    CHECK(srtest_seconds_since(start) < srtest_within(2.5));
    free(out);
}

TEST(shoalrun_reports_ranks_failing_during_the_grace_period)
{
    char   *out;
    int64_t start = shi_now_ns();
    // The first failure decides the status; a later one is reported too.
    int rc = srtest_run(NULL, 2,
        "if [ $SHOAL_RANK = 0 ]; then exit 5; fi; sleep 0.5; exit 6", NULL,
        &out, 30);

    CHECK_MSG(rc == 5, "exit %d, output:\n%s", rc, out);
    CHECK(strstr(out, "shoalrun: rank 0 exited with status 5\n") != NULL);
    CHECK(strstr(out, "shoalrun: rank 1 exited with status 6\n") != NULL);
    CHECK(srtest_seconds_since(start) < srtest_within(2.5));
    free(out);
}

TEST(shoalrun_killed_rank_stops_the_others)
{
    struct srtest_dir d;
    const char       *env[2];
    char             *out;
    int64_t           start = shi_now_ns();
    int               rc;

    srtest_mkdir(&d);
    env[0] = d.env;
    env[1] = NULL;
    // Rank 1 is SIGKILLed once rank 0 sleeps; rank 0 would sleep 100 s.
    rc = srtest_run(NULL, 2,
        "if [ $SHOAL_RANK = 1 ]; then"
        "  while [ ! -s $SRT_DIR/pid0 ]; do sleep 0.01; done; kill -9 $$; "
        "fi; echo $$ > $SRT_DIR/pid0.tmp; mv $SRT_DIR/pid0.tmp $SRT_DIR/pid0;"
        " exec sleep 100",
        env, &out, 30);
    CHECK_MSG(rc == 137, "exit %d, output:\n%s", rc, out);
    CHECK_MSG(
        strstr(out, "shoalrun: rank 1 killed by signal 9 (SIGKILL)\n") != NULL,
        "output:\n%s", out);
    // The default grace period is 3 s; SIGTERM ends sleep at once.
    CHECK_MSG(srtest_seconds_since(start) < srtest_within(6), "took %.1f s",
        srtest_seconds_since(start));
    CHECK_MSG(srtest_seconds_since(start) > 2.5, "no grace period (%.1f s)",
        srtest_seconds_since(start));
    srtest_check_gone(&d, "pid0");
    srtest_rmdir(&d);
    free(out);
}

TEST(shoalrun_kills_ranks_that_ignore_sigterm)
{
    struct srtest_dir d;
    const char       *opts[] = { "--grace", "0.2", NULL };
    const char       *env[2];
    char             *out;
    int64_t           start = shi_now_ns();
    int               rc;

    srtest_mkdir(&d);
    env[0] = d.env;
    env[1] = NULL;
    rc     = srtest_run(opts, 2,
            "if [ $SHOAL_RANK = 1 ]; then"
                "  while [ ! -s $SRT_DIR/pid0 ]; do sleep 0.01; done; exit 9; "
                "fi; trap '' TERM; echo $$ > $SRT_DIR/pid0.tmp;"
                " mv $SRT_DIR/pid0.tmp $SRT_DIR/pid0; exec sleep 100",
            env, &out, 30);
    CHECK_MSG(rc == 9, "exit %d, output:\n%s", rc, out);
    CHECK_MSG(strstr(out, "still running after SIGTERM") != NULL,
        "output:\n%s", out);
    // 0.2 s grace, then 2 s from SIGTERM to SIGKILL.
    CHECK_MSG(srtest_seconds_since(start) > 2
            && srtest_seconds_since(start) < srtest_within(5),
        "took %.1f s", srtest_seconds_since(start));
    srtest_check_gone(&d, "pid0");
    srtest_rmdir(&d);
    free(out);
}

TEST(shoalrun_tag_output_prefixes_whole_lines)
{
    const char *opts[] = { "--tag-output", NULL };
    char       *out;
    int         rc;

    // A long line (60000 x) crosses many pipe reads but stays one line;
    // "partial" has no newline and still comes out whole.
    rc = srtest_run(opts, 2,
        "echo \"hello $SHOAL_RANK\"; echo \"err $SHOAL_RANK\" >&2;"
        " head -c 60000 /dev/zero | tr '\\0' x; echo;"
        " printf \"world $SHOAL_RANK\\npartial $SHOAL_RANK\"",
        NULL, &out, 30);
    CHECK_MSG(rc == 0, "exit %d, output:\n%s", rc, out);
    for (int r = 0; r < 2; r++) {
        char        want[64];
        const char *lines[] = { "hello", "err", "world", "partial" };
        for (int i = 0; i < 4; i++) {
            snprintf(want, sizeof(want), "[%d] %s %d\n", r, lines[i], r);
            CHECK_MSG(test_count(out, want) == 1, "no single '%s' in:\n%s",
                want, out);
        }
        snprintf(want, sizeof(want), "[%d] xxxxxxxx", r);
        CHECK(test_count(out, want) == 1);
    }
    // Every line carries a prefix.
    CHECK(out[0] == '[');
    CHECK(test_count(out, "\n") == 10);
    CHECK(test_count(out, "\n[") == 9);
    free(out);
}

TEST(shoalrun_timeout_stops_the_job)
{
    struct srtest_dir d;
    const char       *opts[] = { "--timeout", "1", NULL };
    const char       *env[2];
    char             *out, pidfile[16];
    int64_t           start = shi_now_ns();
    int               rc;

    srtest_mkdir(&d);
    env[0] = d.env;
    env[1] = NULL;
    rc     = srtest_run(opts, 2,
            "echo $$ > $SRT_DIR/pid$SHOAL_RANK; exec sleep 100", env, &out, 30);
    CHECK_MSG(rc == 124, "exit %d, output:\n%s", rc, out);
    CHECK_MSG(strstr(out, "shoalrun: job timed out after 1 s\n") != NULL,
        "output:\n%s", out);
    CHECK_MSG(test_count(out, "shoalrun: rank") == 0, "output:\n%s", out);
    CHECK(srtest_seconds_since(start) < srtest_within(4));
    for (int r = 0; r < 2; r++) {
        snprintf(pidfile, sizeof(pidfile), "pid%d", r);
        srtest_check_gone(&d, pidfile);
    }
    srtest_rmdir(&d);
    free(out);
}

TEST(shoalrun_kills_what_ranks_leave_behind)
{
    struct srtest_dir d;
    const char       *env[2];
    char             *out;
    int               rc;

    srtest_mkdir(&d);
    env[0] = d.env;
    env[1] = NULL;
    // Each rank starts a background sleep and exits 0 at once; one of the
    // sleeps even leaves the process group (setsid).
    rc = srtest_run(NULL, 2,
        "if [ $SHOAL_RANK = 0 ]; then sleep 100 & echo $! > $SRT_DIR/bg0;"
        " else setsid sleep 100 & echo $! > $SRT_DIR/bg1; fi; exit 0",
        env, &out, 30);
    CHECK_MSG(rc == 0, "exit %d, output:\n%s", rc, out);
    srtest_check_gone(&d, "bg0");
    srtest_check_gone(&d, "bg1");
    srtest_rmdir(&d);
    free(out);
}

// Starts shoalrun (output to d/out) without waiting; returns its pid.
static pid_t
srtest_start(const struct srtest_dir *d, const char *script)
{
    char  out[128];
    pid_t pid;

    snprintf(out, sizeof(out), "%s/out", d->path);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        setenv("SRT_DIR", d->path, 1);
        execl(srtest_launcher(), "shoalrun", "-n", "3", "/bin/sh", "-c",
            script, (char *) NULL);
        _exit(127);
    }
    return pid;
}

// Waits until every rank wrote d/pid<rank>.
static void
srtest_wait_pids(const struct srtest_dir *d, int nranks)
{
    int64_t deadline = shi_now_ns() + 10 * (int64_t) 1000000000;
    char    name[16];

    for (int r = 0; r < nranks; r++) {
        snprintf(name, sizeof(name), "pid%d", r);
        while (srtest_read_pid(d, name) == 0) {
            CHECK_MSG(shi_now_ns() < deadline, "rank %d did not start", r);
            usleep(10000);
        }
    }
}

// Waits up to timeout_s for pid; returns its wait status, or -1.
static int
srtest_wait(pid_t pid, int timeout_s)
{
    int64_t deadline = shi_now_ns() + (int64_t) timeout_s * 1000000000;
    int     status;

    while (shi_now_ns() < deadline) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            return status;
        }
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

#define SRTEST_PID_SCRIPT                                                     \
    "echo $$ > $SRT_DIR/pid$SHOAL_RANK.tmp;"                                  \
    " mv $SRT_DIR/pid$SHOAL_RANK.tmp $SRT_DIR/pid$SHOAL_RANK;"

TEST(shoalrun_sigterm_stops_the_ranks)
{
    struct srtest_dir d;
    char              name[16];
    int64_t           start;
    int               status;
    pid_t             pid;

    srtest_mkdir(&d);
    pid = srtest_start(&d, SRTEST_PID_SCRIPT " exec sleep 100");
    srtest_wait_pids(&d, 3);
    start = shi_now_ns();
    CHECK(kill(pid, SIGTERM) == 0);
    status = srtest_wait(pid, 10);
    CHECK_MSG(status != -1, "shoalrun did not end after SIGTERM");
    CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
        "wait status %#x: shoalrun should end by SIGTERM", status);
    CHECK(srtest_seconds_since(start) < srtest_within(2));
    for (int r = 0; r < 3; r++) {
        snprintf(name, sizeof(name), "pid%d", r);
        srtest_check_gone(&d, name);
    }
    srtest_rmdir(&d);
}

TEST(shoalrun_second_sigint_kills_the_ranks)
{
    struct srtest_dir d;
    char              name[16];
    int64_t           start;
    int               status;
    pid_t             pid;

    srtest_mkdir(&d);
    // The ranks ignore SIGINT (and SIGTERM): only SIGKILL ends them.
    pid = srtest_start(
        &d, "trap '' INT TERM; " SRTEST_PID_SCRIPT " exec sleep 100");
    srtest_wait_pids(&d, 3);
    start = shi_now_ns();
    CHECK(kill(pid, SIGINT) == 0);
    usleep(200000);
    CHECK_MSG(srtest_read_pid(&d, "pid0") > 0
            && kill(srtest_read_pid(&d, "pid0"), 0) == 0,
        "one SIGINT should only be passed on");
    CHECK(kill(pid, SIGINT) == 0);
    status = srtest_wait(pid, 10);
    CHECK_MSG(status != -1, "shoalrun did not end after two SIGINTs");
    CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT,
        "wait status %#x: shoalrun should end by SIGINT", status);
    CHECK(srtest_seconds_since(start) < srtest_within(2));
    for (int r = 0; r < 3; r++) {
        snprintf(name, sizeof(name), "pid%d", r);
        srtest_check_gone(&d, name);
    }
    srtest_rmdir(&d);
}

TEST(shoalrun_serves_a_store_that_wants_the_job_secret)
{
    struct srtest_dir d;
    char              path[128], line[512], addr[64], text[128];
    int64_t           deadline = shi_deadline_in_ms(10000);
    shi_secret        secret, wrong;
    shi_store        *st = NULL;
    void             *value;
    size_t            len;
    FILE             *f;
    int               status;
    pid_t             pid;

    unsetenv("SHOAL_SECRET");
    srtest_mkdir(&d);
    // Rank 0 reports its store address and secret, then every rank waits
    // for the test to be done with the store.
    pid = srtest_start(&d,
        "echo \"$SHOAL_STORE $SHOAL_SECRET\" > $SRT_DIR/tmp$SHOAL_RANK;"
        " mv $SRT_DIR/tmp$SHOAL_RANK $SRT_DIR/info$SHOAL_RANK;"
        " while [ ! -e $SRT_DIR/go ]; do sleep 0.01; done");
    snprintf(path, sizeof(path), "%s/info0", d.path);
    while ((f = fopen(path, "r")) == NULL) {
        CHECK_MSG(shi_now_ns() < deadline, "rank 0 did not start");
        usleep(10000);
    }
    CHECK(fgets(line, sizeof(line), f) != NULL);
    fclose(f);
    CHECK_MSG(sscanf(line, "%63s %127s", addr, text) == 2, "'%s'", line);
    CHECK_OK(shi_secret_from_string(&secret, text));
    CHECK_OK(shi_secret_from_string(&wrong, "not the job secret"));
    CHECK_OK(shi_store_open(&st, addr, &secret, deadline));
    CHECK_OK(shi_store_set(st, "shoalrun_test", "hi", 2, deadline));
    CHECK_OK(shi_store_get(st, "shoalrun_test", &value, &len, deadline));
    CHECK(len == 2 && memcmp(value, "hi", 2) == 0);
    free(value);
    shi_store_close(st);
    st = NULL;
    CHECK_ST(shi_store_open(&st, addr, &wrong, deadline), SHOAL_EAUTH);
    snprintf(path, sizeof(path), "%s/go", d.path);
    f = fopen(path, "w");
    CHECK(f != NULL);
    fclose(f);
    status = srtest_wait(pid, 10);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "wait status %#x",
        status);
    srtest_rmdir(&d);
}

// Runs shoalrun with argv (after the program name) and expects exit 2, a
// message containing `why`, and the usage.
static void
srtest_bad_usage(const char *const *args, const char *why)
{
    const char *argv[12];
    char       *out;
    int         a = 0, rc;

    argv[a++] = srtest_launcher();
    for (int i = 0; args[i] != NULL; i++) {
        argv[a++] = args[i];
    }
    argv[a] = NULL;
    rc      = test_run(argv, NULL, &out, 30);
    CHECK_MSG(rc == 2, "'%s': exit %d, output:\n%s", why, rc, out);
    CHECK_MSG(strstr(out, why) != NULL, "no '%s' in:\n%s", why, out);
    CHECK_MSG(strstr(out, "usage: shoalrun -n N") != NULL, "output:\n%s", out);
    free(out);
}

TEST(shoalrun_bad_usage_exits_2)
{
    const char       *none[]    = { NULL };
    const char       *no_n[]    = { "/bin/true", NULL };
    const char       *zero[]    = { "-n", "0", "/bin/true", NULL };
    const char       *word[]    = { "-n", "two", "/bin/true", NULL };
    const char       *no_prog[] = { "-n", "2", NULL };
    const char       *missing[] = { "-n", "2", "no-such-program-xyz", NULL };
    struct srtest_dir d;
    char              plain[128];
    int               fd;
    const char       *not_exec[] = { "-n", "2", plain, NULL };
    const char       *dir[]      = { "-n", "2", "/tmp", NULL };
    const char       *timeout[]
        = { "-n", "2", "--timeout", "-1", "/bin/true", NULL };
    const char *unknown[] = { "-n", "2", "--frobnicate", "/bin/true", NULL };
    char       *out;
    int         rc;

    srtest_bad_usage(none, "the number of ranks (-n N) is required");
    srtest_bad_usage(no_n, "the number of ranks (-n N) is required");
    srtest_bad_usage(zero, "-n wants a number of ranks");
    srtest_bad_usage(word, "-n wants a number of ranks");
    srtest_bad_usage(no_prog, "no program to run");
    srtest_bad_usage(missing, "no-such-program-xyz");
    srtest_mkdir(&d);
    snprintf(plain, sizeof(plain), "%s/plain", d.path);
    fd = creat(plain, 0644);
    CHECK(fd >= 0);
    close(fd);
    srtest_bad_usage(not_exec, "Permission denied");
    chmod(plain, 0700); // executable, but neither ELF nor script
    srtest_bad_usage(not_exec, "Exec format error");
    srtest_rmdir(&d);
    srtest_bad_usage(dir, "Is a directory");
    srtest_bad_usage(timeout, "--timeout wants a positive number");
    srtest_bad_usage(unknown, "unknown option '--frobnicate'");
    {
        const char *argv[] = { srtest_launcher(), "--help", NULL };
        rc                 = test_run(argv, NULL, &out, 30);
        CHECK_MSG(rc == 0, "--help: exit %d", rc);
        CHECK(strstr(out, "usage: shoalrun -n N") != NULL);
        CHECK(strstr(out, "--tag-output") != NULL);
        free(out);
    }
}

TEST(shoalrun_passes_arguments_through)
{
    const char *argv[] = { srtest_launcher(), "-n", "2", "--", "/bin/sh", "-c",
        "echo \"[$1|$2]\"", "sh", "-n", "two words", NULL };
    char       *out;
    int         rc = test_run(argv, NULL, &out, 30);

    CHECK_MSG(rc == 0, "exit %d, output:\n%s", rc, out);
    CHECK_MSG(test_count(out, "[-n|two words]\n") == 2, "output:\n%s", out);
    free(out);
}
