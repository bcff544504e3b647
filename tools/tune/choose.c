// shoal-tune: the winner at each size, and the rules that say it.
//
// The built-in table's choice stays unless another candidate is faster by
// more than the margin: measurements on a shared machine wobble by a few
// percent, and a rule that follows the wobble would make the tuned table
// slower than the built-in one about as often as faster.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

void
tune_choose(tune_point *p, double margin)
{
    int best = -1;

    for (int i = 0; i < p->ncand; i++) {
        if (p->secs[i] >= 0 && (best < 0 || p->secs[i] < p->secs[best])) {
            best = i;
        }
    }
    p->chosen = best;
    if (p->deflt >= 0 && p->secs[p->deflt] >= 0
        && p->secs[best] > p->secs[p->deflt] * (1 - margin)) {
        p->chosen = p->deflt;
    }
}

// A byte count as the rules read it: the largest exact K/M/G suffix.
static void
put_size(char *buf, size_t len, size_t v)
{
    static const char suffix[] = { 'G', 'M', 'K' };

    for (int i = 0; v != 0 && i < 3; i++) {
        size_t unit = (size_t) 1 << (10 * (3 - i));
        if (v % unit == 0) {
            snprintf(buf, len, "%zu%c", v / unit, suffix[i]);
            return;
        }
    }
    snprintf(buf, len, "%zu", v);
}

// The measured points of `coll` whose winner is known, in size order
// (they are measured in size order).
static int
points_of(const tune_ctx *t, int coll, const tune_point **out, int max)
{
    int n = 0;

    for (int i = 0; i < t->npoints && n < max; i++) {
        if (t->points[i].coll == coll && t->points[i].chosen >= 0) {
            out[n++] = &t->points[i];
        }
    }
    return n;
}

// Each measured size stands for sizes from itself up to the next measured
// one (the first from 0, the last without bound); neighbours with one
// winner merge into one rule.
char *
tune_rules_text(const tune_ctx *t, int coll)
{
    const tune_point **pts = calloc((size_t) t->npoints + 1, sizeof(*pts));
    size_t             cap = 64 * ((size_t) t->npoints + 1), len = 0;
    char              *text = malloc(cap);
    int                n;

    if (pts == NULL || text == NULL) {
        free(pts);
        free(text);
        return NULL;
    }
    text[0] = '\0';
    n       = points_of(t, coll, pts, t->npoints);
    for (int i = 0; i < n;) {
        const char *algo = pts[i]->cand[pts[i]->chosen];
        int         j    = i + 1;
        while (j < n && strcmp(pts[j]->cand[pts[j]->chosen], algo) == 0) {
            j++;
        }
        char lo[32], hi[32];
        put_size(lo, sizeof(lo), i == 0 ? 0 : pts[i]->bytes);
        if (j < n) {
            put_size(hi, sizeof(hi), pts[j]->bytes);
        } else {
            snprintf(hi, sizeof(hi), "-");
        }
        len += (size_t) snprintf(text + len, cap - len,
            "%s, %s, %s, %d, %d, %s\n", tune_coll_name(coll), lo, hi,
            t->nranks, t->hosts, algo);
        i = j;
    }
    free(pts);
    return text;
}
