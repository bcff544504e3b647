// Signalling and reaping ranks, and the final sweep that leaves nothing
// running. The launcher is a child subreaper (main.c), so processes a rank
// leaves behind become the launcher's children when the rank exits; the
// sweep kills and reaps those too, even ones that left the rank process
// group.
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "shoalrun.h"

// Rounds of the final sweep, each waiting up to REAP_ROUND_MS for a child
// to exit: about two seconds in all.
#define REAP_ROUNDS   200
#define REAP_ROUND_MS 10

static int
reap_rank_of(const struct sr_job *job, pid_t pid)
{
    for (int r = 0; r < job->opt.nranks; r++) {
        if (job->ranks[r].pid == pid) {
            return r;
        }
    }
    return -1;
}

void
sr_signal_ranks(struct sr_job *job, int sig)
{
    if (job->pgid <= 0) {
        return;
    }
    // Unreaped ranks keep the group's id reserved, so this cannot hit an
    // unrelated group.
    kill(-job->pgid, sig);
    // A rank that moved to a group of its own is signalled by pid (safe:
    // an unreaped child's pid is not reused).
    for (int r = 0; r < job->opt.nranks; r++) {
        pid_t pid = job->ranks[r].pid;
        if (pid > 0 && getpgid(pid) != job->pgid) {
            kill(pid, sig);
        }
    }
}

int
sr_reap_one(struct sr_job *job, int *rank, int *wait_status)
{
    siginfo_t info;
    int       status = 0, r;

    // Look first (WNOWAIT), reap after: the group may need killing while
    // this child still holds its id.
    memset(&info, 0, sizeof(info));
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0
        || info.si_pid == 0) {
        return 0;
    }
    r = reap_rank_of(job, info.si_pid);
    if (r >= 0 && job->nlive == 1 && getpgid(info.si_pid) == job->pgid) {
        kill(-job->pgid, SIGKILL);
    }
    while (waitpid(info.si_pid, &status, 0) < 0 && errno == EINTR) { }
    if (r >= 0) {
        job->ranks[r].pid         = 0;
        job->ranks[r].wait_status = status;
        job->nlive--;
    } else {
        SHI_INFO("shoalrun: reaped pid %d, left behind by a rank",
            (int) info.si_pid);
    }
    *rank        = r;
    *wait_status = status;
    return 1;
}

// The parent pid in /proc/<pid>/stat, or -1.
static pid_t
reap_parent_of(const char *pid_name)
{
    char  path[64], line[1024];
    FILE *f;
    char *paren;
    int   ppid = -1;

    snprintf(path, sizeof(path), "/proc/%s/stat", pid_name);
    f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    if (fgets(line, sizeof(line), f) != NULL
        && (paren = strrchr(line, ')')) != NULL
        && sscanf(paren + 1, " %*c %d", &ppid) != 1) {
        ppid = -1;
    }
    fclose(f);
    return (pid_t) ppid;
}

// SIGKILLs every child of the launcher (an unreaped child's pid is ours
// until we reap it, so this is safe).
static void
reap_kill_children(void)
{
    DIR           *dir = opendir("/proc");
    struct dirent *ent;
    pid_t          self = getpid();

    if (dir == NULL) {
        return;
    }
    while ((ent = readdir(dir)) != NULL) {
        if (isdigit((unsigned char) ent->d_name[0])
            && reap_parent_of(ent->d_name) == self) {
            kill((pid_t) atoi(ent->d_name), SIGKILL);
        }
    }
    closedir(dir);
}

// True if the launcher has a child, exited or not.
static int
reap_have_children(void)
{
    siginfo_t info;

    memset(&info, 0, sizeof(info));
    return waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

// Waits up to `ms` for a signal (SIGCHLD), then empties the signalfd.
static void
reap_nap(int sigfd, int ms)
{
    struct signalfd_siginfo si;
    struct pollfd           pfd = { .fd = sigfd, .events = POLLIN };

    if (sigfd < 0) {
        usleep((useconds_t) ms * 1000);
        return;
    }
    poll(&pfd, 1, ms);
    while (read(sigfd, &si, sizeof(si)) == (ssize_t) sizeof(si)) { }
}

void
sr_reap_leftovers(struct sr_job *job)
{
    int r, status;

    if (job->nlive > 0) {
        sr_signal_ranks(job, SIGKILL);
    }
    for (int round = 0; round < REAP_ROUNDS; round++) {
        while (sr_reap_one(job, &r, &status)) { }
        if (!reap_have_children()) {
            return;
        }
        reap_kill_children();
        reap_nap(job->sigfd, REAP_ROUND_MS);
    }
    fprintf(stderr,
        "shoalrun: warning: some processes of the job would "
        "not exit\n");
}
