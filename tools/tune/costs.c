// shoal-tune: the cost model fitted to the measurements. Each algorithm's
// registry row says how many latency rounds (a), moved bytes (b) and
// reduced bytes (g) a call costs; here alpha, beta and gamma (seconds per
// round, per byte moved, per byte reduced) are fitted per (collective,
// algorithm) so that alpha*a + beta*b + gamma*g predicts the measured
// times on this machine. The fit minimises the relative error (times span
// six orders of magnitude), with no constant negative: every subset of
// the three constants is tried and the best fit with all of them >= 0
// wins. Written to FILE.costs:
//
//   # collective, algorithm, ranks, hosts, alpha s, beta s/B, gamma s/B,
//   #   rms relative error, points
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

typedef struct fit_row {
    double c[3]; // a, b, g of the call
    double secs;
} fit_row;

// Solves the k x k system m x = r (Gaussian elimination, partial
// pivoting); -1 if singular.
static int
solve(double m[3][3], double r[3], int k, double x[3])
{
    for (int col = 0; col < k; col++) {
        int piv = col;
        for (int i = col + 1; i < k; i++) {
            piv = fabs(m[i][col]) > fabs(m[piv][col]) ? i : piv;
        }
        if (fabs(m[piv][col]) < 1e-300) {
            return -1;
        }
        for (int j = 0; j < k; j++) {
            double tmp = m[col][j];
            m[col][j]  = m[piv][j];
            m[piv][j]  = tmp;
        }
        double tr = r[col];
        r[col]    = r[piv];
        r[piv]    = tr;
        for (int i = col + 1; i < k; i++) {
            double f = m[i][col] / m[col][col];
            for (int j = col; j < k; j++) {
                m[i][j] -= f * m[col][j];
            }
            r[i] -= f * r[col];
        }
    }
    for (int i = k - 1; i >= 0; i--) {
        double s = r[i];
        for (int j = i + 1; j < k; j++) {
            s -= m[i][j] * x[j];
        }
        x[i] = s / m[i][i];
    }
    return 0;
}

// Root mean square of the relative errors of `x` (all three constants).
static double
rms_error(const fit_row *rows, int n, const double x[3])
{
    double sum = 0;

    for (int i = 0; i < n; i++) {
        double pred
            = x[0] * rows[i].c[0] + x[1] * rows[i].c[1] + x[2] * rows[i].c[2];
        double e = (pred - rows[i].secs) / rows[i].secs;
        sum += e * e;
    }
    return sqrt(sum / n);
}

// Least squares over the constants in `mask` (bits 0..2), the rest 0;
// -1 when singular or a constant comes out negative.
static int
fit_subset(const fit_row *rows, int n, unsigned mask, double x[3])
{
    int    idx[3], k = 0;
    double m[3][3] = { { 0 } }, r[3] = { 0 }, y[3] = { 0 };

    for (int j = 0; j < 3; j++) {
        if (mask & (1u << j)) {
            idx[k++] = j;
        }
    }
    for (int i = 0; i < n; i++) {
        double w = 1 / rows[i].secs; // relative error
        for (int a = 0; a < k; a++) {
            for (int b = 0; b < k; b++) {
                m[a][b] += rows[i].c[idx[a]] * w * rows[i].c[idx[b]] * w;
            }
            r[a] += rows[i].c[idx[a]] * w;
        }
    }
    if (solve(m, r, k, y) != 0) {
        return -1;
    }
    x[0] = x[1] = x[2] = 0;
    for (int a = 0; a < k; a++) {
        if (!(y[a] >= 0)) {
            return -1;
        }
        x[idx[a]] = y[a];
    }
    return 0;
}

static int
fit(const fit_row *rows, int n, double best[3], double *err)
{
    int found = 0;

    *err = INFINITY;
    for (unsigned mask = 1; mask < 8; mask++) {
        double x[3];
        if (fit_subset(rows, n, mask, x) == 0) {
            double e = rms_error(rows, n, x);
            if (e < *err) {
                *err = e;
                memcpy(best, x, sizeof(x));
                found = 1;
            }
        }
    }
    return found ? 0 : -1;
}

// The measurements of (coll, algo) with their cost coefficients.
static int
rows_of(const tune_ctx *t, int coll, const char *algo, fit_row *rows)
{
    int n = 0;

    for (int i = 0; i < t->npoints; i++) {
        const tune_point *p = &t->points[i];
        for (int j = 0; p->coll == coll && j < p->ncand; j++) {
            if (strcmp(p->cand[j], algo) != 0 || p->secs[j] <= 0
                || shoal_comm_algorithm_cost(t->work, tune_coll_name(coll),
                       algo, p->bytes, rows[n].c)
                    != SHOAL_OK) {
                continue;
            }
            rows[n++].secs = p->secs[j];
        }
    }
    return n;
}

static void
write_fits(const tune_ctx *t, FILE *out, fit_row *rows)
{
    for (int c = 0; c < TUNE_NCOLLS; c++) {
        const char *names[TUNE_MAX_ALGOS];
        int         n = shoal_comm_algorithms(
                    t->work, tune_coll_name(c), names, TUNE_MAX_ALGOS);
        for (int a = 0; a < n && a < TUNE_MAX_ALGOS; a++) {
            double x[3], err;
            int    m = rows_of(t, c, names[a], rows);
            if (m >= 3 && fit(rows, m, x, &err) == 0) {
                fprintf(out, "%s, %s, %d, %d, %.4g, %.4g, %.4g, %.3f, %d\n",
                    tune_coll_name(c), names[a], t->nranks, t->hosts, x[0],
                    x[1], x[2], err, m);
            }
        }
    }
}

int
tune_write_costs(const tune_ctx *t, const char *path)
{
    char     name[1100];
    FILE    *out;
    fit_row *rows = calloc((size_t) t->npoints + 1, sizeof(*rows));

    if (rows == NULL
        || snprintf(name, sizeof(name), "%s.costs", path) >= (int) sizeof(name)
        || (out = fopen(name, "w")) == NULL) {
        fprintf(stderr, "shoal-tune: cannot write %s.costs\n", path);
        free(rows);
        return SHOAL_EINVAL;
    }
    fprintf(out,
        "# shoal cost model fitted by shoal-tune: time = alpha * rounds + "
        "beta *\n# bytes moved + gamma * bytes reduced, per algorithm "
        "(registry formulas).\n# collective, algorithm, ranks, hosts, alpha "
        "s, beta s/B, gamma s/B,\n# rms relative error, points\n");
    write_fits(t, out, rows);
    free(rows);
    if (fclose(out) != 0) {
        fprintf(stderr, "shoal-tune: cannot write %s\n", name);
        return SHOAL_EINVAL;
    }
    return SHOAL_OK;
}
