// shoal-tune: the candidates of one (collective, size) measured in
// lockstep on every rank.
//
// Steps: warm-up calls of every candidate; the ranks agree (maximum over
// ranks) on failures and on the warm-up times, which set the repetitions;
// then each candidate's timed calls in two blocks (forward order, then
// reverse), each call started by a barrier on the candidates'
// communicator and timed alone. The ranks exchange every call's time and
// any failure, so each call counts at its slowest rank and every rank
// reaches the same verdict.
//
// Why blocks and not rounds of one call each: interleaving algorithms call
// by call leaves each call the caches of another algorithm's data, which
// made one-shot all-reduce 20% slower at 8-16 KiB than back to back (what
// shoal-perf and applications see) and chose two-shot wrongly. Two blocks
// in mirrored order still spread a slow spell of the machine over every
// candidate.
//
// A failed call stops the rank's measurement at once and names its
// candidate; a failure of a barrier names none. After the exchange the
// named candidates are excluded on every rank, the candidates'
// communicator (which the failure may have aborted) is made again, and
// the survivors are measured anew. The exchanges run on the world
// communicator, which a failed candidate leaves alone; their deadline
// outlasts a candidate's, so a rank still blocked in a failed candidate
// (until its deadline) is waited for.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

#define ATTEMPTS 3

// One measurement's exchange: v[0] a failure naming no candidate,
// v[1 + k] candidate k failed, v[1 + n + k * reps + i] its i-th time.
typedef struct tune_vec {
    double *v;
    int     n, reps;
} tune_vec;

static double *
slot(tune_vec *x, int k, int i)
{
    return &x->v[1 + x->n + k * x->reps + i];
}

// Element-wise maximum over the ranks, in place.
static int
agree_max(tune_ctx *t, tune_vec *x)
{
    shoal_call_opts opts = {
        .timeout_ms = (int64_t) ((2 * t->o->timeout_s + 30) * 1000),
    };
    size_t n = 1 + (size_t) x->n * (1 + (size_t) x->reps);
    int    st;

    if ((st = shoal_next_call_opts(&opts)) != SHOAL_OK) {
        return st;
    }
    return shoal_all_reduce(
        t->world, x->v, x->v, n, SHOAL_FLOAT64, SHOAL_REDUCE_OP(SHOAL_MAX));
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
    qsort(v, (size_t) n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Repetitions that fill the time budget when a round takes `round` s.
static int
reps_for(const tune_opts *o, double round)
{
    double r = round > 0 ? o->budget_s / round : o->max_reps;

    if (r < o->min_reps) {
        return o->min_reps;
    }
    return r > o->max_reps ? o->max_reps : (int) r;
}

static int
barrier(tune_ctx *t)
{
    shoal_call_opts opts = {
        .timeout_ms = (int64_t) (t->o->timeout_s * 1000),
    };
    int st = shoal_next_call_opts(&opts);

    return st == SHOAL_OK ? shoal_barrier(t->work) : st;
}

// Says why a candidate failed here (other ranks may have failed first).
static void
say_failed(const tune_ctx *t, const tune_point *p, int k, int st)
{
    fprintf(stderr,
        "shoal-tune: rank %d: %s of %zu bytes with %s failed (excluded on "
        "every rank): %s: %s\n",
        t->rank, tune_coll_name(p->coll), p->bytes, p->cand[k],
        shoal_status_name(st), shoal_last_error());
}

// One call of candidate k, timed into *dt; on failure flags k in x and
// says why. Returns the call's status.
static int
one_call(tune_ctx *t, const tune_point *p, int k, tune_vec *x, double *dt)
{
    double t0 = tune_now();
    int    st = tune_call(t, p->coll, p->bytes, p->cand[k]);

    *dt = tune_now() - t0;
    t->in_candidates += *dt;
    if (st != SHOAL_OK) {
        say_failed(t, p, k, st);
        x->v[1 + k] = 1;
    }
    return st;
}

// Warm-up: `calls` rounds of one call of every live candidate (no
// barrier); the last round's times into slot (k, 0). Stops at the first
// failure, flagged in x.
static void
warm_rounds(
    tune_ctx *t, const tune_point *p, const int *live, int calls, tune_vec *x)
{
    for (int i = 0; i < calls; i++) {
        for (int k = 0; k < p->ncand; k++) {
            if (live[k] && one_call(t, p, k, x, slot(x, k, 0)) != SHOAL_OK) {
                return;
            }
        }
    }
}

// A block of `n` timed calls of candidate k into slots first.., each
// after a barrier, opened by an untimed call (the candidate before it
// left the caches to its own data). 0, or -1 after a failure (flagged).
static int
block(tune_ctx *t, const tune_point *p, int k, int first, int n, tune_vec *x)
{
    double dt;

    tune_progress(t, p, k);
    if (one_call(t, p, k, x, &dt) != SHOAL_OK) {
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (barrier(t) != SHOAL_OK) {
            x->v[0] = 1;
            return -1;
        }
        if (one_call(t, p, k, x, slot(x, k, first + i)) != SHOAL_OK) {
            return -1;
        }
    }
    return 0;
}

// The timed calls: every live candidate's `reps` calls in two blocks,
// the candidates in order and then in reverse, so that a slow spell of
// the machine (another process waking, a core taken) weighs on all of
// them rather than on whichever ran then, while each block runs one
// algorithm back to back as an application's loop would.
static void
timed_blocks(
    tune_ctx *t, const tune_point *p, const int *live, int reps, tune_vec *x)
{
    int half = reps / 2;

    for (int pass = 0; pass < 2; pass++) {
        for (int j = 0; j < p->ncand; j++) {
            int k     = pass == 0 ? j : p->ncand - 1 - j;
            int first = pass == 0 ? 0 : half;
            int n     = pass == 0 ? half : reps - half;
            if (live[k] && n > 0 && block(t, p, k, first, n, x) != 0) {
                return;
            }
        }
    }
}

// Excludes the candidates any rank flagged; 1 if anything failed.
static int
failed(tune_ctx *t, tune_point *p, int *live, const tune_vec *x)
{
    int any = x->v[0] != 0;

    for (int k = 0; k < p->ncand; k++) {
        if (live[k] && x->v[1 + k] != 0) {
            live[k]    = 0;
            p->secs[k] = -1;
            t->failures++;
            any = 1;
        }
    }
    return any;
}

// One attempt: warm-up, agreement, timed rounds, agreement. Returns
// SHOAL_OK with *again set when something failed (retry), or the
// exchange's error.
static int
attempt(tune_ctx *t, tune_point *p, int *live, double *buf, int *again)
{
    tune_vec x     = { .v = buf, .n = p->ncand, .reps = 1 };
    double   round = 0;
    int      st;

    memset(buf, 0, sizeof(double) * (size_t) (1 + 2 * p->ncand));
    warm_rounds(t, p, live, t->o->warmup, &x);
    if ((st = agree_max(t, &x)) != SHOAL_OK) {
        return st;
    }
    if ((*again = failed(t, p, live, &x)) != 0) {
        return SHOAL_OK;
    }
    for (int k = 0; k < p->ncand; k++) {
        round += live[k] ? *slot(&x, k, 0) : 0;
    }
    x.reps = reps_for(t->o, round);
    memset(buf, 0, sizeof(double) * (size_t) (1 + p->ncand * (1 + x.reps)));
    timed_blocks(t, p, live, x.reps, &x);
    if ((st = agree_max(t, &x)) != SHOAL_OK) {
        return st;
    }
    if ((*again = failed(t, p, live, &x)) != 0) {
        return SHOAL_OK;
    }
    for (int k = 0; k < p->ncand; k++) {
        p->secs[k] = live[k] ? median(slot(&x, k, 0), x.reps) : -1;
    }
    return SHOAL_OK;
}

int
tune_measure_point(tune_ctx *t, tune_point *p)
{
    int     live[TUNE_MAX_ALGOS], st = SHOAL_OK, again = 1;
    double *buf = malloc(
        sizeof(double) * (size_t) (1 + p->ncand * (1 + TUNE_MAX_REPS)));

    if (buf == NULL) {
        return tune_fail(t, "allocating times", SHOAL_ENOMEM);
    }
    for (int k = 0; k < p->ncand; k++) {
        live[k]    = 1;
        p->secs[k] = -1;
    }
    t->candidates += p->ncand;
    for (int a = 0; a < ATTEMPTS && again && st == SHOAL_OK; a++) {
        st = attempt(t, p, live, buf, &again);
        if (st == SHOAL_OK && again) {
            st = tune_new_work(t);
        }
    }
    free(buf);
    if (st == SHOAL_OK && again) {
        fprintf(stderr,
            "shoal-tune: rank %d: %s of %zu bytes kept failing; "
            "no candidate measured\n",
            t->rank, tune_coll_name(p->coll), p->bytes);
    }
    return st;
}
