// shoal-tune: what rank 0 prints. A progress line on stderr (on a terminal,
// or with --progress), and at the end, per collective and size, the
// built-in table's choice and time against the best candidate's.
#include <stdio.h>

#include "tune.h"

void
tune_progress(tune_ctx *t, const tune_point *p, int k)
{
    double elapsed = tune_now() - t->start;
    double left    = t->steps_done > 0
           ? elapsed / t->steps_done * (t->total_steps - t->steps_done)
           : 0;

    if (t->rank != 0 || !t->o->progress) {
        return;
    }
    fprintf(stderr,
        "\r\033[K[%d/%d] %s %zu B: %s (%d of %d), %.0f s elapsed, about "
        "%.0f s left",
        t->steps_done + 1, t->total_steps, tune_coll_name(p->coll), p->bytes,
        k >= 0 ? p->cand[k] : "warm-up", k + 1, p->ncand, elapsed, left);
    fflush(stderr);
}

void
tune_progress_done(tune_ctx *t)
{
    if (t->rank == 0 && t->o->progress) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
}

static void
print_point(const tune_point *p)
{
    const int   best = p->chosen;
    const char *d    = p->deflt >= 0 ? p->cand[p->deflt] : "?";
    double      ds   = p->deflt >= 0 ? p->secs[p->deflt] : -1;
    int         fast = -1;

    for (int i = 0; i < p->ncand; i++) {
        if (p->secs[i] >= 0 && (fast < 0 || p->secs[i] < p->secs[fast])) {
            fast = i;
        }
    }
    printf("%-15s %10zu  %-8s %10.2f  %-8s %10.2f  %7.2f  %-8s\n",
        tune_coll_name(p->coll), p->bytes, d, ds * 1e6,
        fast >= 0 ? p->cand[fast] : "-", fast >= 0 ? p->secs[fast] * 1e6 : -1,
        fast >= 0 && ds > 0 ? ds / p->secs[fast] : 0,
        best >= 0 ? p->cand[best] : "-");
}

void
tune_report(const tune_ctx *t)
{
    double total    = tune_now() - t->start;
    double overhead = total - t->in_candidates;

    printf("# shoal-tune: %d ranks on %d host%s; times in us: median over "
           "repetitions of the slowest rank\n",
        t->nranks, t->hosts, t->hosts == 1 ? "" : "s");
    printf("%-15s %10s  %-8s %10s  %-8s %10s  %7s  %-8s\n", "# collective",
        "bytes", "default", "time", "best", "time", "speedup", "chosen");
    for (int i = 0; i < t->npoints; i++) {
        print_point(&t->points[i]);
    }
    printf("# %d candidates (%d failed) in %.1f s: %.1f s inside the "
           "candidates' calls (rank 0), %.1f s of overhead = %.2f ms per "
           "candidate\n",
        t->candidates, t->failures, total, t->in_candidates, overhead,
        t->candidates > 0 ? overhead / t->candidates * 1e3 : 0);
}
