// shoalrun, the local launcher: shared types and the functions its files
// offer each other. One file per job:
//   main.c      setup (store server, secret), run, teardown, exit status
//   options.c   command line
//   rankenv.c   job secret and each rank's environment
//   spawn.c     program lookup, fork/exec of ranks into one process group
//   output.c    --tag-output: "[rank] " before every line
//   supervise.c the event loop: signals, exits, deadlines, stopping ranks
//   reap.c      the final sweep: nothing is left running
#ifndef SHOALRUN_H
#define SHOALRUN_H

#include <signal.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

// Exit statuses of the launcher itself (rank statuses pass through).
#define SR_EXIT_FAILURE 1 // the launcher could not run the job
#define SR_EXIT_USAGE   2 // bad command line or program
#define SR_EXIT_TIMEOUT 124 // --timeout passed

#define SR_MAX_RANKS 4096

struct sr_options {
    int    nranks;
    double timeout_s; // job wall-clock limit; <= 0: none
    double grace_s; // after a rank fails, before the others are stopped
    int    tag_output;
    char **argv; // program and its arguments (NULL-terminated)
};

// Parses the command line. Returns 0 to run, 1 after printing --help (exit
// 0), or SR_EXIT_USAGE after printing what is wrong and the usage.
int sr_parse_options(struct sr_options *opt, int argc, char **argv);

// Prints the usage text.
void sr_usage(FILE *f);

// Job secret: SHOAL_SECRET from the environment when set and non-empty,
// else 32 random bytes in hex. Writes a NUL-terminated string to out.
int sr_job_secret(char *out, size_t len);

// The environment of rank `rank` of `size`: the launcher's own, less the
// variables of other launchers, plus SHOAL_* and torch's env:// variables
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, and MASTER_ADDR and
// MASTER_PORT = torch_port unless already set), so that a program calling
// torch.distributed.init_process_group runs under shoalrun as under
// torchrun. A malloc'd NULL-terminated array of malloc'd strings
// (sr_free_env frees it), or NULL (out of memory).
char **sr_rank_env(int rank, int size, const char *store_addr,
    const char *secret, int torch_port);

// A TCP port on 127.0.0.1 free right now (for torch's store: rank 0 of the
// program listens on it), or 0 if none could be found.
int  sr_free_port(void);
void sr_free_env(char **env);

// Finds `name` like execvp would (a name with '/' is used as is, else PATH
// is searched). Returns 0 and the path in out, or prints why not and
// returns SR_EXIT_USAGE.
int sr_find_program(const char *name, char *out, size_t len);

// Output forwarding of one rank stream (stdout or stderr) with a prefix.
struct sr_stream {
    int    fd; // read end of the rank's pipe; -1 once closed
    int    dest; // where lines go (STDOUT_FILENO or STDERR_FILENO)
    int    rank;
    char  *buf; // the current, unfinished line
    size_t len, cap;
};

void sr_stream_init(struct sr_stream *s, int fd, int dest, int rank);

// Reads what the pipe has (fd is non-blocking) and writes out the complete
// lines. At end of file writes any unfinished line, with a newline, and
// closes the pipe. Returns 1 while the pipe is open, 0 once closed.
int sr_stream_pump(struct sr_stream *s);

// Reads until the pipe is empty (not waiting for writers), writes
// everything out and closes the pipe. For after the ranks have exited.
// (sr_stream_pump also reads until the pipe is empty, up to a bound.)
void sr_stream_finish(struct sr_stream *s);

struct sr_rank {
    pid_t            pid; // 0 once reaped
    int              wait_status; // valid once reaped
    struct sr_stream out, err; // used with --tag-output
};

struct sr_job {
    struct sr_options opt;
    const char       *program; // resolved path of opt.argv[0]
    char              store_addr[64];
    char              secret[128];
    int               torch_port; // MASTER_PORT for torch's env://
    pid_t             pgid; // process group of every rank (0: none yet)
    struct sr_rank   *ranks; // opt.nranks of them
    int               nlive; // ranks not yet reaped
    int               sigfd; // signalfd of sr_signals_init
};

// Blocks the signals the launcher handles (call before any thread starts,
// so every thread inherits the mask), ignores SIGPIPE, restores SIGCHLD's
// default and returns a non-blocking signalfd for SIGCHLD, SIGINT, SIGTERM,
// SIGHUP, SIGTSTP and SIGCONT, or -1.
int sr_signals_init(void);

// Starts every rank. Returns 0, SR_EXIT_USAGE (the program could not be
// executed) or SR_EXIT_FAILURE; on failure no rank is left running.
int sr_spawn_all(struct sr_job *job);

// Runs the job until every rank has exited; returns the exit status the
// launcher should give (a rank's status, 124, or 128+signal) and in
// *raise_sig a signal the launcher received and should end by (0: none).
int sr_supervise(struct sr_job *job, int *raise_sig);

// Sends `sig` to every rank and their children.
void sr_signal_ranks(struct sr_job *job, int sig);

// Reaps one exited child, without waiting. Returns 1 with *rank (-1 for a
// child that is not a rank, such as an adopted orphan) and *wait_status
// set, or 0 if no child has exited. When the last rank goes, whatever it
// left in the rank process group is killed first (while the group's id
// cannot yet have been reused).
int sr_reap_one(struct sr_job *job, int *rank, int *wait_status);

// Kills whatever is left of the job (the rank process group and any
// adopted orphan) and reaps it all, within a bounded time.
void sr_reap_leftovers(struct sr_job *job);

// "SIGKILL" for SIGKILL, or NULL for a signal without a known name.
const char *sr_signal_name(int sig);

#endif
