// The launcher's event loop. One poll(2) waits on a signalfd (child exits,
// SIGINT, SIGTERM, SIGHUP, and SIGTSTP/SIGCONT, which are passed on) and, with
// --tag-output, on the ranks' pipes, with a time-out set by the next deadline;
// nothing spins.
//
// Stopping the ranks goes through phases, each only forward:
//   RUNNING  until a rank fails, the user signals, or --timeout passes;
//   GRACE    the other ranks may exit by themselves (--grace seconds:
//            they notice a dead peer and report it);
//   TERM     SIGTERM sent; SIGKILL follows after SUPERVISE_TERM_S;
//   KILL     SIGKILL sent; waiting for the exits.
// A failing rank starts GRACE; --timeout, SIGTERM and SIGHUP start TERM
// (the signal itself is passed on); a first SIGINT is passed on and starts
// GRACE, a second one starts KILL.
//
// Exit status: the first cause wins. A rank failing by itself gives its
// status (128+signal if killed); a timeout 124; a signal to the launcher
// makes it end by that signal. Ranks that die while being stopped are not
// reported as failures.
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "shoalrun.h"

#define SUPERVISE_TERM_S 2 // from SIGTERM to SIGKILL

enum supervise_phase { PHASE_RUNNING, PHASE_GRACE, PHASE_TERM, PHASE_KILL };

enum supervise_cause {
    CAUSE_NONE,
    CAUSE_FAILURE,
    CAUSE_SIGNAL,
    CAUSE_TIMEOUT
};

struct supervise {
    struct sr_job *job;
    int            phase;
    int64_t        phase_deadline; // end of GRACE or TERM
    int64_t        timeout_deadline; // --timeout, or SHI_NO_DEADLINE
    int            cause; // why the ranks are being stopped
    int            exit_status;
    int            raise_sig; // signal the launcher ends by
    int            sigints;
};

static const struct {
    int         sig;
    const char *name;
} supervise_signal_names[] = {
    { SIGHUP, "SIGHUP" },
    { SIGINT, "SIGINT" },
    { SIGQUIT, "SIGQUIT" },
    { SIGILL, "SIGILL" },
    { SIGTRAP, "SIGTRAP" },
    { SIGABRT, "SIGABRT" },
    { SIGBUS, "SIGBUS" },
    { SIGFPE, "SIGFPE" },
    { SIGKILL, "SIGKILL" },
    { SIGUSR1, "SIGUSR1" },
    { SIGSEGV, "SIGSEGV" },
    { SIGUSR2, "SIGUSR2" },
    { SIGPIPE, "SIGPIPE" },
    { SIGALRM, "SIGALRM" },
    { SIGTERM, "SIGTERM" },
    { SIGXCPU, "SIGXCPU" },
    { SIGXFSZ, "SIGXFSZ" },
    { SIGSYS, "SIGSYS" },
};

const char *
sr_signal_name(int sig)
{
    for (size_t i = 0;
         i < sizeof(supervise_signal_names) / sizeof(*supervise_signal_names);
         i++) {
        if (supervise_signal_names[i].sig == sig) {
            return supervise_signal_names[i].name;
        }
    }
    return NULL;
}

int
sr_signals_init(void)
{
    struct sigaction act;
    sigset_t         set;

    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTSTP);
    sigaddset(&set, SIGCONT);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
        return -1;
    }
    memset(&act, 0, sizeof(act));
    // SIGCHLD ignored by whoever started us would make the kernel reap the
    // ranks itself, and their statuses would be lost.
    act.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &act, NULL);
    // A closed stdout must not kill the launcher (and so orphan the job).
    act.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &act, NULL);
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

static int64_t
supervise_after_s(double s)
{
    return shi_now_ns() + (int64_t) (s * 1e9);
}

static void
supervise_term(struct supervise *sv)
{
    SHI_INFO("shoalrun: sending SIGTERM to %d ranks", sv->job->nlive);
    sr_signal_ranks(sv->job, SIGTERM);
    sv->phase          = PHASE_TERM;
    sv->phase_deadline = supervise_after_s(SUPERVISE_TERM_S);
}

static void
supervise_kill(struct supervise *sv)
{
    SHI_INFO("shoalrun: sending SIGKILL to %d ranks", sv->job->nlive);
    sr_signal_ranks(sv->job, SIGKILL);
    sv->phase          = PHASE_KILL;
    sv->phase_deadline = SHI_NO_DEADLINE;
}

// Sets the cause of stopping and the exit status, if none is set yet.
static void
supervise_cause(struct supervise *sv, int cause, int exit_status)
{
    if (sv->cause == CAUSE_NONE) {
        sv->cause       = cause;
        sv->exit_status = exit_status;
    }
}

static void
supervise_rank_exit(struct supervise *sv, int r, int wait_status)
{
    int         code, sig = 0;
    const char *name;

    if (WIFSIGNALED(wait_status)) {
        sig  = WTERMSIG(wait_status);
        code = 128 + sig;
    } else {
        code = WEXITSTATUS(wait_status);
    }
    if (code == 0) {
        SHI_INFO("shoalrun: rank %d exited with status 0", r);
        return;
    }
    // Report ranks that fail by themselves: the first one, and those that
    // fail during the grace period; not those the launcher is stopping.
    if (sv->cause == CAUSE_NONE
        || (sv->cause == CAUSE_FAILURE && sv->phase == PHASE_GRACE)) {
        if (sig == 0) {
            fprintf(
                stderr, "shoalrun: rank %d exited with status %d\n", r, code);
        } else if ((name = sr_signal_name(sig)) != NULL) {
            fprintf(stderr, "shoalrun: rank %d killed by signal %d (%s)\n", r,
                sig, name);
        } else {
            fprintf(stderr, "shoalrun: rank %d killed by signal %d\n", r, sig);
        }
    } else {
        SHI_INFO("shoalrun: rank %d ended with status %d", r, code);
    }
    if (sv->cause == CAUSE_NONE) {
        supervise_cause(sv, CAUSE_FAILURE, code);
        sv->phase          = PHASE_GRACE;
        sv->phase_deadline = supervise_after_s(sv->job->opt.grace_s);
    }
}

static void
supervise_user_signal(struct supervise *sv, int sig)
{
    if (sv->cause == CAUSE_NONE) {
        sv->raise_sig = sig;
    }
    supervise_cause(sv, CAUSE_SIGNAL, 128 + sig);
    if (sig == SIGINT && ++sv->sigints >= 2) {
        fprintf(stderr, "shoalrun: second SIGINT: killing the ranks\n");
        if (sv->phase < PHASE_KILL) {
            supervise_kill(sv);
        }
        return;
    }
    fprintf(stderr, "shoalrun: got %s, passing it on to the ranks%s\n",
        sr_signal_name(sig), sig == SIGINT ? " (again to kill them)" : "");
    sr_signal_ranks(sv->job, sig);
    if (sig == SIGINT && sv->phase == PHASE_RUNNING) {
        sv->phase          = PHASE_GRACE;
        sv->phase_deadline = supervise_after_s(sv->job->opt.grace_s);
    } else if (sig != SIGINT && sv->phase < PHASE_TERM) {
        sv->phase          = PHASE_TERM;
        sv->phase_deadline = supervise_after_s(SUPERVISE_TERM_S);
    }
}

// Flushes what rank r wrote before exiting, so its last lines come out
// before the launcher's message about it.
static void
supervise_pump_rank(struct supervise *sv, int r)
{
    if (sv->job->opt.tag_output) {
        sr_stream_pump(&sv->job->ranks[r].out);
        sr_stream_pump(&sv->job->ranks[r].err);
    }
}

static void
supervise_signals(struct supervise *sv)
{
    struct signalfd_siginfo si;
    int                     r, status;

    while (read(sv->job->sigfd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
        if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM
            || si.ssi_signo == SIGHUP) {
            supervise_user_signal(sv, (int) si.ssi_signo);
        } else if (si.ssi_signo == SIGTSTP) {
            // Ctrl-Z reaches only the launcher's group: stop the ranks
            // too, then the launcher (the shell's SIGCONT resumes it).
            sr_signal_ranks(sv->job, SIGTSTP);
            raise(SIGSTOP);
        } else if (si.ssi_signo == SIGCONT) {
            sr_signal_ranks(sv->job, SIGCONT);
        }
    }
    while (sr_reap_one(sv->job, &r, &status)) {
        if (r >= 0) {
            supervise_pump_rank(sv, r);
            supervise_rank_exit(sv, r, status);
        }
    }
}

static void
supervise_deadlines(struct supervise *sv)
{
    int64_t now = shi_now_ns();

    if (now >= sv->timeout_deadline && sv->phase < PHASE_TERM) {
        fprintf(stderr, "shoalrun: job timed out after %g s\n",
            sv->job->opt.timeout_s);
        supervise_cause(sv, CAUSE_TIMEOUT, SR_EXIT_TIMEOUT);
        supervise_term(sv);
    }
    if (sv->phase == PHASE_GRACE && now >= sv->phase_deadline) {
        fprintf(stderr,
            "shoalrun: stopping the %d remaining rank%s (SIGTERM)\n",
            sv->job->nlive, sv->job->nlive == 1 ? "" : "s");
        supervise_term(sv);
    }
    if (sv->phase == PHASE_TERM && now >= sv->phase_deadline) {
        fprintf(stderr,
            "shoalrun: %d rank%s still running after SIGTERM: SIGKILL\n",
            sv->job->nlive, sv->job->nlive == 1 ? "" : "s");
        supervise_kill(sv);
    }
}

// The poll(2) time-out: until the next deadline.
static int
supervise_poll_ms(const struct supervise *sv)
{
    int64_t next = SHI_NO_DEADLINE;

    if (sv->phase < PHASE_TERM) {
        next = sv->timeout_deadline;
    }
    if ((sv->phase == PHASE_GRACE || sv->phase == PHASE_TERM)
        && sv->phase_deadline < next) {
        next = sv->phase_deadline;
    }
    return shi_poll_timeout_ms(next);
}

// Fills pfds with the signalfd and the open rank pipes; streams[i] is the
// stream of pfds[i] (NULL for the signalfd). Returns the count.
static int
supervise_fds(
    struct sr_job *job, struct pollfd *pfds, struct sr_stream **streams)
{
    int n = 0;

    pfds[n]      = (struct pollfd) { .fd = job->sigfd, .events = POLLIN };
    streams[n++] = NULL;
    for (int r = 0; job->opt.tag_output && r < job->opt.nranks; r++) {
        struct sr_stream *pair[2] = { &job->ranks[r].out, &job->ranks[r].err };
        for (int k = 0; k < 2; k++) {
            if (pair[k]->fd >= 0) {
                pfds[n]
                    = (struct pollfd) { .fd = pair[k]->fd, .events = POLLIN };
                streams[n++] = pair[k];
            }
        }
    }
    return n;
}

int
sr_supervise(struct sr_job *job, int *raise_sig)
{
    size_t             max     = 1 + 2 * (size_t) job->opt.nranks;
    struct pollfd     *pfds    = calloc(max, sizeof(*pfds));
    struct sr_stream **streams = calloc(max, sizeof(*streams));
    struct supervise   sv      = { .job = job,
               .phase                   = PHASE_RUNNING,
               .phase_deadline          = SHI_NO_DEADLINE,
               .timeout_deadline        = SHI_NO_DEADLINE };

    *raise_sig = 0;
    if (pfds == NULL || streams == NULL) {
        fprintf(stderr, "shoalrun: out of memory\n");
        free(pfds);
        free(streams);
        return SR_EXIT_FAILURE;
    }
    if (job->opt.timeout_s > 0) {
        sv.timeout_deadline = supervise_after_s(job->opt.timeout_s);
    }
    // Children that exited before the loop began are reaped on the first
    // round (their SIGCHLD is pending on the signalfd anyway).
    while (job->nlive > 0) {
        int n, ms;

        supervise_deadlines(&sv);
        n  = supervise_fds(job, pfds, streams);
        ms = supervise_poll_ms(&sv);
        if (poll(pfds, (nfds_t) n, ms) < 0 && errno != EINTR) {
            fprintf(stderr, "shoalrun: poll: %s\n", strerror(errno));
            supervise_cause(&sv, CAUSE_FAILURE, SR_EXIT_FAILURE);
            break; // the caller's sweep kills the ranks
        }
        for (int i = 1; i < n; i++) {
            if (pfds[i].revents != 0) {
                sr_stream_pump(streams[i]);
            }
        }
        if (pfds[0].revents != 0) {
            supervise_signals(&sv);
        }
    }
    // What the ranks wrote last is still in the pipes; processes they left
    // behind (already killed) might hold the pipes open, so do not wait.
    for (int r = 0; job->opt.tag_output && r < job->opt.nranks; r++) {
        sr_stream_finish(&job->ranks[r].out);
        sr_stream_finish(&job->ranks[r].err);
    }
    free(pfds);
    free(streams);
    *raise_sig = sv.cause == CAUSE_SIGNAL ? sv.raise_sig : 0;
    return sv.exit_status;
}
