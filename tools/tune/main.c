// shoal-tune: main. The world communicator carries the exchanges between
// ranks; candidates run on a communicator split from it (made again after
// a candidate fails). Both are created with no tuning file and no
// SHOAL_ALGO, so "default" means the built-in table.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tune.h"

double
tune_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

int
tune_fail(const tune_ctx *t, const char *what, int st)
{
    fprintf(stderr, "shoal-tune: rank %d: %s failed: %s: %s\n",
        t != NULL ? t->rank : -1, what, shoal_status_name(st),
        shoal_last_error());
    return st < 0 ? st : SHOAL_EINVAL;
}

static void
free_buffers(tune_ctx *t)
{
    if (t->o->alloc_shoal) {
        shoal_free(t->work, t->sbuf);
        shoal_free(t->work, t->rbuf);
    } else {
        free(t->sbuf);
        free(t->rbuf);
    }
    t->sbuf = t->rbuf = NULL;
}

// Buffers for the largest call, pages touched so that no page fault lands
// in a timed call.
static int
alloc_buffers(tune_ctx *t)
{
    int st = SHOAL_OK;

    if (t->o->alloc_shoal) {
        st = shoal_alloc(t->work, t->cap, &t->sbuf);
        st = st == SHOAL_OK ? shoal_alloc(t->work, t->cap, &t->rbuf) : st;
    } else {
        // Page-aligned, as tensors' storage is (torch aligns to 64 bytes):
        // malloc's 16-byte alignment would slow every vector copy.
        t->sbuf = t->rbuf = NULL;
        st                = posix_memalign(&t->sbuf, 4096, t->cap) == 0
                && posix_memalign(&t->rbuf, 4096, t->cap) == 0
                           ? SHOAL_OK
                           : SHOAL_ENOMEM;
    }
    if (st != SHOAL_OK) {
        return tune_fail(t, "allocating buffers", st);
    }
    memset(t->sbuf, 0, t->cap);
    memset(t->rbuf, 0, t->cap);
    return SHOAL_OK;
}

// The candidates' communicator, (re)made from the world one.
int
tune_new_work(tune_ctx *t)
{
    int st;

    if (t->work != NULL) {
        free_buffers(t);
        shoal_comm_destroy(t->work);
        t->work = NULL;
    }
    if ((st = shoal_comm_split(t->world, 0, t->rank, &t->work)) != SHOAL_OK) {
        return tune_fail(t, "shoal_comm_split", st);
    }
    return alloc_buffers(t);
}

static int
count_sizes(const tune_opts *o)
{
    int n = 0;

    for (size_t b = o->minbytes; b <= o->maxbytes && b != 0; b *= 2) {
        n++;
    }
    return n;
}

// Measures every candidate of one (collective, size) into *p.
static int
tune_point_run(tune_ctx *t, int coll, size_t bytes, tune_point *p)
{
    const char *deflt = NULL;
    int         st;

    memset(p, 0, sizeof(*p));
    p->coll  = coll;
    p->bytes = bytes;
    p->deflt = p->chosen = -1;
    p->ncand             = shoal_comm_algorithms(
                    t->work, tune_coll_name(coll), p->cand, TUNE_MAX_ALGOS);
    if (p->ncand < 0) {
        return tune_fail(t, "shoal_comm_algorithms", p->ncand);
    }
    p->ncand = p->ncand < TUNE_MAX_ALGOS ? p->ncand : TUNE_MAX_ALGOS;
    shoal_comm_algorithm_for(t->work, tune_coll_name(coll), bytes, &deflt);
    for (int i = 0; i < p->ncand; i++) {
        p->deflt
            = deflt != NULL && strcmp(p->cand[i], deflt) == 0 ? i : p->deflt;
    }
    tune_progress(t, p, -1);
    st = tune_measure_point(t, p);
    t->steps_done++;
    if (st != SHOAL_OK) {
        return tune_fail(t, "exchanging times between ranks", st);
    }
    tune_choose(p, t->o->margin);
    return SHOAL_OK;
}

static void
plan_steps(tune_ctx *t)
{
    for (int c = 0; c < TUNE_NCOLLS; c++) {
        for (size_t b = t->o->minbytes;
             (t->o->colls & (1u << c)) && b <= t->o->maxbytes && b != 0;
             b *= 2) {
            t->total_steps += tune_call_bytes(c, b, t->nranks) != 0;
        }
    }
}

static int
tune_all(tune_ctx *t)
{
    int nsizes = count_sizes(t->o), st;

    t->points = calloc((size_t) (nsizes * TUNE_NCOLLS), sizeof(*t->points));
    if (t->points == NULL) {
        return tune_fail(t, "allocating results", SHOAL_ENOMEM);
    }
    plan_steps(t);
    for (int c = 0; c < TUNE_NCOLLS; c++) {
        for (size_t b = t->o->minbytes;
             (t->o->colls & (1u << c)) && b <= t->o->maxbytes && b != 0;
             b *= 2) {
            size_t bytes = tune_call_bytes(c, b, t->nranks);
            if (bytes == 0) {
                continue; // not a whole element per rank
            }
            st = tune_point_run(t, c, bytes, &t->points[t->npoints]);
            if (st != SHOAL_OK) {
                return st;
            }
            t->npoints++;
        }
    }
    tune_progress_done(t);
    return SHOAL_OK;
}

// The output path (chosen before the environment is changed below), and
// the environment our communicators are created with.
static int
prepare_env(const tune_opts *o, char *path, size_t len, int rank0)
{
    if (o->out != NULL) {
        snprintf(path, len, "%s", o->out);
    } else if (shoal_tuning_file_path(path, len) == NULL) {
        fprintf(stderr,
            "shoal-tune: no default tuning file path (HOME "
            "unset); give -o FILE\n");
        return -1;
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (rank0) {
            fprintf(stderr,
                "shoal-tune: %s is not a regular file; give -o a "
                "file path\n",
                path);
        }
        return -1;
    }
    if (getenv("SHOAL_ALGO") != NULL && rank0) {
        fprintf(stderr, "shoal-tune: ignoring SHOAL_ALGO while tuning\n");
    }
    unsetenv("SHOAL_ALGO");
    setenv("SHOAL_TUNING_FILE", "/dev/null", 1);
    return 0;
}

static int
env_rank0(void)
{
    const char *r = getenv("SHOAL_RANK");

    return r == NULL || strcmp(r, "0") == 0;
}

static int
finish(tune_ctx *t, const char *path)
{
    int st = SHOAL_OK;

    if (t->rank != 0) {
        return SHOAL_OK;
    }
    tune_report(t);
    st = tune_write_file(t, path);
    if (st == SHOAL_OK) {
        st = tune_write_costs(t, path);
    }
    if (st == SHOAL_OK) {
        st = tune_write_sweep(t, path);
    }
    if (st == SHOAL_OK) {
        printf("# wrote %s, %s.costs and %s.sweep\n", path, path, path);
    }
    fflush(stdout);
    return st;
}

int
main(int argc, char **argv)
{
    tune_opts o;
    tune_ctx  t;
    char      err[256], path[1024];
    int       st;

    memset(&t, 0, sizeof(t));
    t.o = &o;
    st  = tune_parse_options(&o, argc, argv, err, sizeof(err));
    if (st != TUNE_PARSE_OK) {
        if (env_rank0()) {
            tune_usage("shoal-tune", st == TUNE_PARSE_ERROR ? err : NULL);
        }
        return st == TUNE_PARSE_HELP ? 0 : 2;
    }
    if (prepare_env(&o, path, sizeof(path), env_rank0()) != 0) {
        return 2;
    }
    if (o.progress < 0) {
        o.progress = isatty(STDERR_FILENO);
    }
    if ((st = shoal_comm_create(&t.world, NULL)) != SHOAL_OK) {
        return tune_fail(&t, "shoal_comm_create", st) != 0;
    }
    t.rank   = shoal_comm_rank(t.world);
    t.nranks = shoal_comm_size(t.world);
    t.hosts  = shoal_comm_hosts(t.world);
    t.cap    = o.maxbytes;
    t.start  = tune_now();
    st       = tune_new_work(&t);
    st       = st == SHOAL_OK ? tune_all(&t) : st;
    st       = st == SHOAL_OK ? finish(&t, path) : st;
    if (st != SHOAL_OK) {
        shoal_comm_abort(t.world, "shoal-tune failed on this rank");
    }
    if (t.work != NULL) {
        free_buffers(&t);
        shoal_comm_destroy(t.work);
    }
    shoal_comm_destroy(t.world);
    free(t.points);
    return st == SHOAL_OK ? 0 : 1;
}
