// Helpers shared by tests: running commands, finding built programs,
// looking for leftovers.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "platform/net.h"
#include "test.h"

extern char **environ;

int
test_store_port(void)
{
    unsigned seed = (unsigned) getpid() ^ (unsigned) shi_now_ns();

    for (int tries = 0; tries < 100; tries++) {
        int fd, bound, port = 20000 + (int) (rand_r(&seed) % 12000);
        if (shi_tcp_listen("127.0.0.1", port, 1, &fd, &bound) == SHOAL_OK) {
            close(fd);
            return port;
        }
    }
    return 20000 + (int) (getpid() % 12000); // all taken: let the test say so
}

const char *
test_build_path(const char *relative)
{
    // A few rotating buffers, so that several paths can be used in one
    // expression (an argv initializer).
    static _Thread_local char paths[8][4096];
    static _Thread_local int  next;
    char                     *path = paths[next++ % 8];

    snprintf(path, sizeof(paths[0]), "%s/%s", SHOAL_BIN_DIR, relative);
    return path;
}

int
test_shm_leftovers(void)
{
    DIR           *dir = opendir("/dev/shm");
    struct dirent *ent;
    int            n = 0;

    if (dir == NULL) {
        return 0;
    }
    while ((ent = readdir(dir)) != NULL) {
        if (strstr(ent->d_name, "shoal") != NULL) {
            n++;
        }
    }
    closedir(dir);
    return n;
}

int
test_count(const char *haystack, const char *needle)
{
    int n = 0;

    if (haystack == NULL || *needle == '\0') {
        return 0;
    }
    for (const char *p = haystack; (p = strstr(p, needle)) != NULL; p++) {
        n++;
    }
    return n;
}

static void
child_exec(const char *const *argv, const char *const *env, int out_fd)
{
    setpgid(0, 0);
    dup2(out_fd, STDOUT_FILENO);
    dup2(out_fd, STDERR_FILENO);
    for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
        putenv((char *) env[i]);
    }
    execv(argv[0], (char *const *) argv);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

// Appends what is readable on fd to *buf; returns 0 at EOF.
static int
drain(int fd, char **buf, size_t *len, size_t *cap)
{
    char    chunk[4096];
    ssize_t n = read(fd, chunk, sizeof(chunk));

    if (n <= 0) {
        return n < 0 && errno == EINTR;
    }
    if (*len + (size_t) n + 1 > *cap) {
        *cap = (*len + (size_t) n + 1) * 2;
        *buf = realloc(*buf, *cap);
    }
    memcpy(*buf + *len, chunk, (size_t) n);
    *len += (size_t) n;
    (*buf)[*len] = '\0';
    return 1;
}

int
test_run(const char *const *argv, const char *const *env, char **output,
    int timeout_s)
{
    int     pipefd[2];
    char   *buf = calloc(1, 1);
    size_t  len = 0, cap = 1;
    int64_t deadline = shi_now_ns()
        + (int64_t) timeout_s * test_timeout_multiplier() * 1000000000;
    int   status, timed_out = 0;
    pid_t pid;

    if (pipe(pipefd) != 0) {
        test_fail(__FILE__, __LINE__, "pipe: %s", strerror(errno));
    }
    pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        child_exec(argv, env, pipefd[1]);
    }
    close(pipefd[1]);
    for (;;) {
        struct pollfd pfd = { .fd = pipefd[0], .events = POLLIN };
        int           ms  = shi_poll_timeout_ms(deadline);
        if (ms == 0) {
            timed_out = 1;
            kill(-pid, SIGKILL);
            break;
        }
        if (poll(&pfd, 1, ms) > 0 && !drain(pipefd[0], &buf, &len, &cap)) {
            break;
        }
    }
    close(pipefd[0]);
    waitpid(pid, &status, 0);
    if (output != NULL) {
        *output = buf;
    } else {
        free(buf);
    }
    if (timed_out) {
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int
test_run_mptest(int n, const char *name, const char *arg,
    const char *const *env, char **output, int timeout_s)
{
    char        nbuf[16];
    const char *argv[]
        = { test_build_path("tools/shoalrun"), "-n", nbuf, "--tag-output",
              test_build_path("tests/shoal_mptest"), name, arg, NULL };

    snprintf(nbuf, sizeof(nbuf), "%d", n);
    return test_run(argv, env, output, timeout_s);
}
