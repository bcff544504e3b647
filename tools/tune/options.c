// shoal-tune: the command line.
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

static const char *const coll_names[TUNE_NCOLLS] = {
    [TUNE_ALLREDUCE]     = "all_reduce",
    [TUNE_REDUCE]        = "reduce",
    [TUNE_ALLGATHER]     = "all_gather",
    [TUNE_REDUCESCATTER] = "reduce_scatter",
    [TUNE_ALLTOALL]      = "all_to_all",
    [TUNE_GATHER]        = "gather",
    [TUNE_SCATTER]       = "scatter",
    [TUNE_BROADCAST]     = "broadcast",
};

const char *
tune_coll_name(int coll)
{
    return coll >= 0 && coll < TUNE_NCOLLS ? coll_names[coll] : NULL;
}

// Underscores are optional, as in SHOAL_ALGO ("allreduce").
static int
same_name(const char *want, const char *s, size_t len)
{
    size_t i = 0;

    for (; *want != '\0'; want++) {
        while (i < len && s[i] == '_') {
            i++;
        }
        if (*want == '_') {
            continue;
        }
        if (i >= len || s[i] != *want) {
            return 0;
        }
        i++;
    }
    while (i < len && s[i] == '_') {
        i++;
    }
    return i == len;
}

int
tune_coll_by_name(const char *name, size_t len)
{
    for (int c = 0; c < TUNE_NCOLLS; c++) {
        if (same_name(coll_names[c], name, len)) {
            return c;
        }
    }
    return -1;
}

// "64K", "256M", "8": bytes (powers of 1024).
static int
parse_size(const char *s, size_t *out)
{
    char              *end;
    unsigned long long v;

    errno = 0;
    v     = strtoull(s, &end, 10);
    if (errno != 0 || end == s || s[0] == '-') {
        return -1;
    }
    switch (*end) {
        case 'G':
            v <<= 10; /* fall through */
        case 'M':
            v <<= 10; /* fall through */
        case 'K':
            v <<= 10;
            end++;
            break;
        default:
            break;
    }
    if (*end != '\0' || v == 0 || v > ((size_t) 1 << 40)) {
        return -1;
    }
    *out = (size_t) v;
    return 0;
}

static int
parse_colls(const char *s, unsigned *out)
{
    *out = 0;
    if (strcmp(s, "all") == 0) {
        *out = (1u << TUNE_NCOLLS) - 1;
        return 0;
    }
    while (*s != '\0') {
        size_t n = strcspn(s, ",");
        int    c = tune_coll_by_name(s, n);
        if (c < 0) {
            return -1;
        }
        *out |= 1u << c;
        s += n + (s[n] == ',');
    }
    return *out != 0 ? 0 : -1;
}

static int
parse_number(const char *s, double lo, double hi, double *out)
{
    char *end;

    errno = 0;
    *out  = strtod(s, &end);
    return errno == 0 && end != s && *end == '\0' && *out >= lo && *out <= hi
        ? 0
        : -1;
}

enum {
    OPT_MIN = 256,
    OPT_MAX,
    OPT_WARMUP,
    OPT_REPS,
    OPT_BUDGET,
    OPT_TIMEOUT,
    OPT_MARGIN,
    OPT_ALLOC,
    OPT_PROGRESS,
    OPT_NO_PROGRESS
};

static const struct option long_opts[] = {
    { "collectives", required_argument, NULL, 'c' },
    { "min", required_argument, NULL, OPT_MIN },
    { "max", required_argument, NULL, OPT_MAX },
    { "output", required_argument, NULL, 'o' },
    { "warmup", required_argument, NULL, OPT_WARMUP },
    { "reps", required_argument, NULL, OPT_REPS },
    { "budget-ms", required_argument, NULL, OPT_BUDGET },
    { "timeout", required_argument, NULL, OPT_TIMEOUT },
    { "margin", required_argument, NULL, OPT_MARGIN },
    { "alloc", required_argument, NULL, OPT_ALLOC },
    { "progress", no_argument, NULL, OPT_PROGRESS },
    { "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

static void
set_defaults(tune_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->colls     = (1u << TUNE_NCOLLS) - 1;
    o->minbytes  = 8;
    o->maxbytes  = (size_t) 64 << 20;
    o->warmup    = 2;
    o->min_reps  = 5;
    o->max_reps  = 30;
    o->budget_s  = 0.010;
    o->timeout_s = 10;
    o->margin    = 0.05;
    o->progress  = -1;
}

static int
apply(tune_opts *o, int c, const char *arg)
{
    double v;

    switch (c) {
        case 'c':
            return parse_colls(arg, &o->colls);
        case OPT_MIN:
            return parse_size(arg, &o->minbytes);
        case OPT_MAX:
            return parse_size(arg, &o->maxbytes);
        case 'o':
            o->out = arg;
            return 0;
        case OPT_WARMUP:
            if (parse_number(arg, 1, 100, &v) != 0) {
                return -1;
            }
            o->warmup = (int) v;
            return 0;
        case OPT_REPS:
            if (parse_number(arg, 3, TUNE_MAX_REPS, &v) != 0) {
                return -1;
            }
            o->max_reps = (int) v;
            o->min_reps
                = o->min_reps < o->max_reps ? o->min_reps : o->max_reps;
            return 0;
        case OPT_BUDGET:
            if (parse_number(arg, 0.01, 10000, &v) != 0) {
                return -1;
            }
            o->budget_s = v / 1000;
            return 0;
        case OPT_TIMEOUT:
            return parse_number(arg, 0.01, 86400, &o->timeout_s);
        case OPT_MARGIN:
            if (parse_number(arg, 0, 50, &v) != 0) {
                return -1;
            }
            o->margin = v / 100;
            return 0;
        case OPT_ALLOC:
            if (strcmp(arg, "shoal") != 0 && strcmp(arg, "malloc") != 0) {
                return -1;
            }
            o->alloc_shoal = strcmp(arg, "shoal") == 0;
            return 0;
        case OPT_PROGRESS:
            o->progress = 1;
            return 0;
        case OPT_NO_PROGRESS:
            o->progress = 0;
            return 0;
    }
    return -1;
}

int
tune_parse_options(
    tune_opts *o, int argc, char **argv, char *err, size_t errlen)
{
    int c;

    set_defaults(o);
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:o:h", long_opts, NULL)) != -1) {
        if (c == 'h') {
            return TUNE_PARSE_HELP;
        }
        if (c == '?' || c == ':') {
            snprintf(err, errlen, "unknown option or missing value: %s",
                argv[optind - 1]);
            return TUNE_PARSE_ERROR;
        }
        if (apply(o, c, optarg) != 0) {
            snprintf(err, errlen, "bad value '%s' for %s", optarg,
                argv[optind - 1]);
            return TUNE_PARSE_ERROR;
        }
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
        return TUNE_PARSE_ERROR;
    }
    if (o->minbytes > o->maxbytes) {
        snprintf(err, errlen, "--min is above --max");
        return TUNE_PARSE_ERROR;
    }
    return TUNE_PARSE_OK;
}

void
tune_usage(const char *prog, const char *err)
{
    if (err != NULL) {
        fprintf(stderr, "%s: %s\n", prog, err);
    }
    fprintf(err ? stderr : stdout,
        "usage: shoalrun -n N %s [options]\n"
        "Measures every algorithm of every collective at sizes --min to "
        "--max\n(powers of 2) in lockstep on every rank and writes a tuning "
        "file.\n"
        "  -c, --collectives LIST  all_reduce,reduce,all_gather,"
        "reduce_scatter,\n"
        "                          all_to_all,gather,scatter,broadcast "
        "(default: all)\n"
        "  --min BYTES, --max BYTES  sizes as the rules count them, K/M/G "
        "suffixes\n"
        "                          (default 8 .. 64M)\n"
        "  -o, --output FILE       tuning file (default: SHOAL_TUNING_FILE, "
        "else\n"
        "                          $XDG_CACHE_HOME/shoal/tuning or "
        "~/.cache/shoal/tuning);\n"
        "                          its rules for other rank or host counts "
        "are kept;\n"
        "                          FILE.costs gets the fitted cost model,\n"
        "                          FILE.sweep every measurement\n"
        "  --warmup N              warm-up calls per candidate (default 2)\n"
        "  --reps N                most timed repetitions (default 30, at "
        "least 5)\n"
        "  --budget-ms MS          timed time to aim for per candidate "
        "(default 10)\n"
        "  --timeout SEC           deadline of each call (default 10)\n"
        "  --margin PCT            keep the built-in choice unless another "
        "is this\n"
        "                          much faster (default 5)\n"
        "  --alloc malloc|shoal    where the buffers come from (default "
        "malloc)\n"
        "  --progress, --no-progress  progress line on stderr (default: "
        "on a terminal)\n",
        prog);
}
