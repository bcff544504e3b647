// shoal-tune: the measurements themselves, beside the tuning file
// (FILE.sweep), one line per algorithm and size:
//
//   # collective, algorithm, ranks, hosts, bytes, seconds
//
// shoal.sharding fits its cost model to them (per size range: one beta
// cannot hold from the core's cache to main memory), and
// shoal.sharding.calibrate() merges its own measurements in. Lines of an
// earlier file for other rank or host counts are kept.
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tune.h"

static void
write_points(const tune_ctx *t, FILE *out)
{
    for (int i = 0; i < t->npoints; i++) {
        const tune_point *p = &t->points[i];
        for (int j = 0; j < p->ncand; j++) {
            if (p->secs[j] > 0) {
                fprintf(out, "%s, %s, %d, %d, %zu, %.6g\n",
                    tune_coll_name(p->coll), p->cand[j], t->nranks, t->hosts,
                    p->bytes, p->secs[j]);
            }
        }
    }
}

int
tune_write_sweep(const tune_ctx *t, const char *path)
{
    char  name[1100], tmp[1200];
    FILE *out;
    int   ok = 1;

    if (snprintf(name, sizeof(name), "%s.sweep", path) >= (int) sizeof(name)
        || snprintf(tmp, sizeof(tmp), "%s.tmp.%d", name, (int) getpid())
            >= (int) sizeof(tmp)
        || (out = fopen(tmp, "w")) == NULL) {
        fprintf(stderr, "shoal-tune: cannot write %s.sweep: %s\n", path,
            strerror(errno));
        return SHOAL_EINVAL;
    }
    fprintf(out,
        "# shoal-tune's measurements: the median time of each algorithm "
        "at each\n# size (bytes as the rules count them), on every rank "
        "alike.\n# collective, algorithm, ranks, hosts, bytes, seconds\n");
    write_points(t, out);
    tune_copy_kept(t, name, out, 2);
    ok &= ferror(out) == 0;
    ok &= fclose(out) == 0;
    if (!ok || rename(tmp, name) != 0) {
        fprintf(stderr, "shoal-tune: cannot write %s: %s\n", name,
            strerror(errno));
        unlink(tmp);
        return SHOAL_EINVAL;
    }
    return SHOAL_OK;
}
