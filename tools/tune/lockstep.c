// shoal-tune: the candidates of one (collective, size) measured in
// lockstep on every rank.
//
// Steps: warm-up calls of every candidate; the ranks agree (maximum over
// ranks) on failures and on the warm-up times, which set the repetitions;
// then rounds, each running every candidate once, each call started by a
// barrier on the candidates' communicator and timed alone. The ranks
// exchange every call's time and any failure, so each repetition counts
// at its slowest rank and every rank reaches the same verdict. Rounds
// interleave the candidates so that a change of the machine's state
// during the measurement (another process waking, a core freed) touches
// all of them alike instead of favouring whichever ran in the quiet spell.
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

// `reps` rounds over the live candidates (with a barrier before each call
// when `timed`), times into x; stops at the first failure, flagged in x.
static void
rounds(tune_ctx *t, const tune_point *p, const int *live, int reps, int timed,
    tune_vec *x)
{
    for (int i = 0; i < reps; i++) {
        for (int k = 0; k < p->ncand; k++) {
            if (!live[k]) {
                continue;
            }
            if (timed && barrier(t) != SHOAL_OK) {
                x->v[0] = 1;
                return;
            }
            double t0 = tune_now();
            int    st = tune_call(t, p->coll, p->bytes, p->cand[k]);
            double dt = tune_now() - t0;
            t->in_candidates += dt;
            if (st != SHOAL_OK) {
                say_failed(t, p, k, st);
                x->v[1 + k] = 1;
                return;
            }
            *slot(x, k, timed ? i : 0) = dt;
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
    rounds(t, p, live, t->o->warmup, 0, &x);
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
    rounds(t, p, live, x.reps, 1, &x);
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
