// Starting the ranks: the program is looked up once, then every rank is
// forked into one process group (led by rank 0), so that one kill(2)
// reaches every rank and every process a rank started. The launcher is not
// in that group, so it can SIGKILL the group without killing itself.
//
// The launcher has threads (the store server), so a forked child only makes
// async-signal-safe calls before execve(2). It reports a failed exec
// through a close-on-exec pipe, so the launcher can tell "could not run the
// program" (exit 2) from "the program failed".
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "shoalrun.h"

// True if `path` is a regular file we may execute; else sets errno.
static int
spawn_executable(const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        return 0;
    }
    if (S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        errno = EACCES;
        return 0;
    }
    return access(path, X_OK) == 0;
}

static int
spawn_bad_program(const char *name, const char *why)
{
    fprintf(stderr, "shoalrun: cannot run '%s': %s\n", name, why);
    sr_usage(stderr);
    return SR_EXIT_USAGE;
}

int
sr_find_program(const char *name, char *out, size_t len)
{
    char        default_path[256];
    const char *path       = getenv("PATH");
    int         saw_denied = 0;

    if (*name == '\0') {
        return spawn_bad_program(name, "empty program name");
    }
    if (strchr(name, '/') != NULL) {
        if (!spawn_executable(name)) {
            return spawn_bad_program(name, strerror(errno));
        }
        if (strlen(name) >= len) {
            return spawn_bad_program(name, "path too long");
        }
        strcpy(out, name);
        return 0;
    }
    if (path == NULL) {
        size_t n = confstr(_CS_PATH, default_path, sizeof(default_path));
        path     = n > 0 && n <= sizeof(default_path) ? default_path
                                                      : "/usr/bin:/bin";
    }
    // Like execvp: each PATH entry in turn; an empty entry is ".".
    for (const char *p = path;; p++) {
        size_t      dir_len = strcspn(p, ":");
        const char *dir     = dir_len > 0 ? p : ".";
        int         n       = snprintf(
                          out, len, "%.*s/%s", dir_len > 0 ? (int) dir_len : 1, dir, name);
        if (n > 0 && (size_t) n < len) {
            if (spawn_executable(out)) {
                return 0;
            }
            saw_denied |= errno == EACCES;
        }
        p += dir_len;
        if (*p == '\0') {
            break;
        }
    }
    return spawn_bad_program(
        name, saw_denied ? "permission denied" : "command not found in PATH");
}

struct spawn_plan {
    int    devnull_stdin; // give ranks /dev/null as stdin
    pid_t  launcher;
    pid_t  pgid; // 0: this rank starts the group
    char **env;
    int    out_w, err_w; // pipe write ends, -1 without --tag-output
    int    exec_w; // exec-failure report pipe
};

// Makes `fd` the descriptor `target`, open across exec.
static void
spawn_child_dup(int fd, int target)
{
    if (fd == target) {
        fcntl(fd, F_SETFD, 0);
    } else {
        dup2(fd, target);
    }
}

// In the child: async-signal-safe calls only.
static void __attribute__((noreturn))
spawn_child(const struct sr_job *job, const struct spawn_plan *plan)
{
    struct sigaction dfl;
    sigset_t         none;
    int              err;

    // Undo what the launcher changed: blocked signals and SIGPIPE.
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setpgid(0, plan->pgid);
    // If the launcher is killed outright, its ranks die with it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != plan->launcher) {
        _exit(127);
    }
    if (plan->devnull_stdin) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd >= 0 && fd != STDIN_FILENO) {
            dup2(fd, STDIN_FILENO);
            close(fd);
        }
    }
    if (plan->out_w >= 0) {
        spawn_child_dup(plan->out_w, STDOUT_FILENO);
        spawn_child_dup(plan->err_w, STDERR_FILENO);
    }
    execve(job->program, job->opt.argv, plan->env);
    err = errno;
    if (write(plan->exec_w, &err, sizeof(err)) != (ssize_t) sizeof(err)) {
        // Nothing more to do: the launcher sees exit status 127.
    }
    _exit(127);
}

static void
spawn_close(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

// Starts rank r. Returns 0, SR_EXIT_USAGE or SR_EXIT_FAILURE.
static int
spawn_rank(struct sr_job *job, int r, int devnull_stdin)
{
    struct sr_rank   *rank   = &job->ranks[r];
    struct spawn_plan plan   = { .devnull_stdin = devnull_stdin,
          .launcher                             = getpid(),
          .pgid                                 = job->pgid,
          .out_w                                = -1,
          .err_w                                = -1 };
    int               out[2] = { -1, -1 }, err[2] = { -1, -1 };
    int               exec_pipe[2], exec_errno = 0, rc = SR_EXIT_FAILURE;
    ssize_t           got;
    pid_t             pid;

    plan.env = sr_rank_env(
        r, job->opt.nranks, job->store_addr, job->secret, job->torch_port);
    if (plan.env == NULL) {
        fprintf(stderr, "shoalrun: out of memory\n");
        return SR_EXIT_FAILURE;
    }
    if (pipe2(exec_pipe, O_CLOEXEC) != 0
        || (job->opt.tag_output
            && (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0))) {
        fprintf(stderr, "shoalrun: pipe: %s\n", strerror(errno));
        goto out;
    }
    plan.out_w  = out[1];
    plan.err_w  = err[1];
    plan.exec_w = exec_pipe[1];
    pid         = fork();
    if (pid < 0) {
        fprintf(stderr, "shoalrun: fork: %s\n", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        spawn_child(job, &plan);
    }
    // Also here, so the group exists before the next rank joins it.
    setpgid(pid, job->pgid != 0 ? job->pgid : pid);
    if (job->pgid == 0) {
        job->pgid = pid;
    }
    rank->pid = pid;
    job->nlive++;
    spawn_close(&exec_pipe[1]);
    spawn_close(&out[1]);
    spawn_close(&err[1]);
    do {
        got = read(exec_pipe[0], &exec_errno, sizeof(exec_errno));
    } while (got < 0 && errno == EINTR);
    if (got > 0) {
        fprintf(stderr, "shoalrun: cannot execute '%s': %s\n", job->program,
            strerror(exec_errno));
        sr_usage(stderr);
        rc = SR_EXIT_USAGE;
        goto out;
    }
    if (job->opt.tag_output) {
        fcntl(out[0], F_SETFL, O_NONBLOCK);
        fcntl(err[0], F_SETFL, O_NONBLOCK);
        sr_stream_init(&rank->out, out[0], STDOUT_FILENO, r);
        sr_stream_init(&rank->err, err[0], STDERR_FILENO, r);
        out[0] = err[0] = -1;
    }
    SHI_INFO("shoalrun: rank %d is pid %d", r, (int) pid);
    rc = 0;
out:
    spawn_close(&exec_pipe[0]);
    spawn_close(&exec_pipe[1]);
    spawn_close(&out[0]);
    spawn_close(&out[1]);
    spawn_close(&err[0]);
    spawn_close(&err[1]);
    sr_free_env(plan.env);
    return rc;
}

int
sr_spawn_all(struct sr_job *job)
{
    // Ranks are not in the terminal's foreground group: reading a terminal
    // would stop them (SIGTTIN), so they read /dev/null instead.
    int devnull_stdin = isatty(STDIN_FILENO);

    for (int r = 0; r < job->opt.nranks; r++) {
        job->ranks[r].out.fd = job->ranks[r].err.fd = -1;
    }
    for (int r = 0; r < job->opt.nranks; r++) {
        int rc = spawn_rank(job, r, devnull_stdin);
        if (rc != 0) {
            sr_reap_leftovers(job);
            return rc;
        }
    }
    return 0;
}
