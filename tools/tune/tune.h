// shoal-tune: measures every algorithm the registry offers for every
// collective and size, in lockstep on every rank, and writes a tuning file
// (src/coll/tuning.h documents its format) that communicators read when
// they are created.
//
//   shoalrun -n 4 shoal-tune [--collectives all_reduce,all_gather]
//            [--min 8 --max 64M] [-o FILE]
//
// Files, one job each:
//   main.c      communicators, the loop over collectives and sizes, exit
//   options.c   command line and usage
//   calls.c     one call of a collective at a size, with a given algorithm
//   lockstep.c  one candidate measured on every rank alike
//   choose.c    the winner of a size, rules merged into size ranges
//   output.c    the tuning file (rules of other rank counts kept)
//   costs.c     alpha/beta/gamma fitted to the measurements (FILE.costs)
//   sweep.c     the measurements themselves (FILE.sweep)
//   report.c    progress on a terminal and the default-against-best table
//
// Method, per (collective, size): warm-up calls of every algorithm (their
// times, maximum over ranks, set the repetitions to fill a time budget),
// then rounds running every algorithm once, each call started by a
// barrier and timed alone on every rank; the ranks exchange their times,
// each call counts at its slowest rank's time, and an algorithm's time is
// the median of those (lockstep.c). Candidates run on a communicator
// split from the world one, so a failure (or a deadline passed) in one
// aborts that communicator alone: every rank learns it in the exchange
// that follows, the candidate is excluded on every rank, and tuning goes
// on with a new split.
#ifndef SHOAL_TUNE_H
#define SHOAL_TUNE_H

#include <stddef.h>
#include <stdio.h>

#include "shoal.h"

#define TUNE_MAX_ALGOS 16
#define TUNE_MAX_REPS  64

// The collectives shoal-tune knows, in the order it tunes them.
enum {
    TUNE_ALLREDUCE = 0,
    TUNE_REDUCE,
    TUNE_ALLGATHER,
    TUNE_REDUCESCATTER,
    TUNE_ALLTOALL,
    TUNE_GATHER,
    TUNE_SCATTER,
    TUNE_BROADCAST,
    TUNE_NCOLLS
};

// Name as shoal_comm_algorithms takes it ("all_reduce"); -1 if unknown.
const char *tune_coll_name(int coll);
int         tune_coll_by_name(const char *name, size_t len);

typedef struct tune_opts {
    unsigned    colls; // bit per TUNE_* collective
    size_t      minbytes, maxbytes;
    int         warmup, min_reps, max_reps;
    double      budget_s; // measured time to aim for per candidate
    double      timeout_s; // deadline of each call
    double      margin; // a candidate must beat the default by this fraction
    const char *out; // tuning file; NULL: the default path
    int         alloc_shoal; // buffers from shoal_alloc
    int         progress; // -1: when stderr is a terminal
} tune_opts;

enum { TUNE_PARSE_OK = 0, TUNE_PARSE_HELP = 1, TUNE_PARSE_ERROR = 2 };
int tune_parse_options(
    tune_opts *o, int argc, char **argv, char *err, size_t errlen);
void tune_usage(const char *prog, const char *err);

// One (collective, size): the candidates, their times (seconds, median of
// per-repetition maxima; < 0: failed on some rank), the default and the
// winner.
typedef struct tune_point {
    int         coll;
    size_t      bytes; // as the rules count them
    int         ncand;
    const char *cand[TUNE_MAX_ALGOS];
    double      secs[TUNE_MAX_ALGOS];
    int         deflt; // index of the built-in table's choice
    int         chosen; // index written to the file
} tune_point;

typedef struct tune_ctx {
    shoal_comm      *world; // the exchange of times and failures
    shoal_comm      *work; // where candidates run
    int              rank, nranks, hosts;
    const tune_opts *o;
    void            *sbuf, *rbuf;
    size_t           cap;
    // Bookkeeping (rank 0 prints it).
    double      start, in_candidates;
    int         candidates, failures;
    tune_point *points;
    int         npoints;
    int         total_steps, steps_done; // progress
} tune_ctx;

// Reports a failure of `what` with the library's message; returns st.
int tune_fail(const tune_ctx *t, const char *what, int st);

double tune_now(void);

// calls.c: the element count per rank block of `coll` at `bytes` (0: the
// size does not fit whole elements on this many ranks) and the bytes the
// rules count for it; one call with algorithm `algo` on t->work.
size_t tune_call_bytes(int coll, size_t bytes, int nranks);
int    tune_call(tune_ctx *t, int coll, size_t bytes, const char *algo);

// lockstep.c: measures the candidates of p into p->secs (< 0: failed on
// some rank). Returns SHOAL_OK, or the error of an exchange between ranks
// (fatal: a rank is gone).
int tune_measure_point(tune_ctx *t, tune_point *p);

// main.c: makes the candidates' communicator (again).
int tune_new_work(tune_ctx *t);

// choose.c
void tune_choose(tune_point *p, double margin);
// The rules of collective `coll` as lines "lo, hi, algo" into a malloc'd
// text (ranges merged); NULL when out of memory.
char *tune_rules_text(const tune_ctx *t, int coll);

// output.c (rank 0): writes the tuning file; returns SHOAL_OK or reports.
int tune_write_file(const tune_ctx *t, const char *path);
// Copies to `out` the lines of the file at `path` (if any) whose ranks
// (field ranks_field, 0-based) or hosts (the next field) differ from ours.
void tune_copy_kept(
    const tune_ctx *t, const char *path, FILE *out, int ranks_field);
// costs.c (rank 0): fits and writes path + ".costs".
int tune_write_costs(const tune_ctx *t, const char *path);
// sweep.c (rank 0): writes every measurement to path + ".sweep".
int tune_write_sweep(const tune_ctx *t, const char *path);

// report.c (rank 0)
// The progress line: point p, candidate k (-1: warming up).
void tune_progress(tune_ctx *t, const tune_point *p, int k);
void tune_progress_done(tune_ctx *t);
void tune_report(const tune_ctx *t);

#endif
