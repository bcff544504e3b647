// shoalrun: runs N ranks of a shoal job on this host.
//
//   shoalrun -n N [--timeout S] [--tag-output] [--grace S] prog args...
//
// Order matters here: signals are blocked before the store server's thread
// starts (so the thread never takes them), the launcher becomes a child
// subreaper before any rank starts (so what ranks leave behind comes back
// to it), and the store is stopped only after every process of the job has
// been reaped.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "platform/auth.h"
#include "platform/net.h"
#include "shoalrun.h"
#include "store/store.h"

// Descriptors 0-2 must be open, or pipes and sockets would take their
// numbers and a rank's output could land in them.
static void
main_open_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            open("/dev/null", O_RDWR);
        }
    }
}

// Ends the launcher by `sig`, as the shell expects of a program the user
// interrupted; returns 128+sig if that did not end it.
static int
main_end_by_signal(int sig)
{
    struct sigaction dfl;
    sigset_t         set;

    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    raise(sig);
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    return 128 + sig;
}

// Starts the store server on an ephemeral port of the loopback interface.
static int
main_start_store(struct sr_job *job, shi_store_server **srv)
{
    shi_secret secret;

    if (shi_secret_from_string(&secret, job->secret) != 0) {
        fprintf(stderr, "shoalrun: bad job secret: %s\n", shi_error_text());
        return SR_EXIT_FAILURE;
    }
    if (shi_store_server_start(srv, "127.0.0.1", 0, &secret) != 0) {
        fprintf(stderr, "shoalrun: cannot start the rendezvous store: %s\n",
            shi_error_text());
        return SR_EXIT_FAILURE;
    }
    snprintf(job->store_addr, sizeof(job->store_addr), "127.0.0.1:%d",
        shi_store_server_port(*srv));
    SHI_INFO("shoalrun: store at %s", job->store_addr);
    job->torch_port = sr_free_port();
    return 0;
}

int
main(int argc, char **argv)
{
    static char       program[PATH_MAX];
    struct sr_job     job;
    shi_store_server *srv       = NULL;
    int               raise_sig = 0, rc;

    memset(&job, 0, sizeof(job));
    job.sigfd = -1;
    main_open_std_fds();
    rc = sr_parse_options(&job.opt, argc, argv);
    if (rc != 0) {
        return rc == 1 ? 0 : rc;
    }
    rc = sr_find_program(job.opt.argv[0], program, sizeof(program));
    if (rc != 0) {
        return rc;
    }
    job.program = program;
    if (sr_job_secret(job.secret, sizeof(job.secret)) != 0) {
        return SR_EXIT_FAILURE;
    }
    job.ranks = calloc((size_t) job.opt.nranks, sizeof(*job.ranks));
    job.sigfd = sr_signals_init();
    if (job.ranks == NULL || job.sigfd < 0) {
        fprintf(stderr, "shoalrun: cannot set up: %s\n", strerror(errno));
        free(job.ranks);
        return SR_EXIT_FAILURE;
    }
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        SHI_WARN(
            "shoalrun: cannot become a child subreaper: %s", strerror(errno));
    }
    shi_raise_fd_limit(); // two pipes per rank, the store's connections
    rc = main_start_store(&job, &srv);
    if (rc == 0) {
        rc = sr_spawn_all(&job);
    }
    if (rc == 0) {
        rc = sr_supervise(&job, &raise_sig);
    }
    sr_reap_leftovers(&job);
    shi_store_server_stop(srv);
    free(job.ranks);
    close(job.sigfd);
    if (raise_sig != 0) {
        return main_end_by_signal(raise_sig);
    }
    return rc;
}
