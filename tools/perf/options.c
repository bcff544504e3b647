// Command line of shoal-perf: the nccl-tests flags that make sense here.
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "perf.h"

// nccl-tests' type names, mapped to shoal's.
static const struct {
    const char *alias;
    shoal_dtype dtype;
} options_aliases[] = {
    { "float", SHOAL_FLOAT32 },
    { "half", SHOAL_FLOAT16 },
    { "double", SHOAL_FLOAT64 },
    { "int", SHOAL_INT32 },
    { "char", SHOAL_INT8 },
    { "bf16", SHOAL_BFLOAT16 },
};

// Parses "64M", "1K", "8", "0.5G": a number with an optional K/M/G
// (binary) suffix. Returns 0 on success.
static int
parse_size(const char *s, size_t *out)
{
    char  *end;
    double v, unit = 1;

    errno = 0;
    v     = strtod(s, &end);
    if (end == s || errno != 0 || !(v >= 0)) {
        return -1;
    }
    switch (*end) {
        case 'K':
        case 'k':
            unit = 1024.0;
            end++;
            break;
        case 'M':
        case 'm':
            unit = 1024.0 * 1024.0;
            end++;
            break;
        case 'G':
        case 'g':
            unit = 1024.0 * 1024.0 * 1024.0;
            end++;
            break;
        default:
            break;
    }
    if (*end == 'B' || *end == 'b') {
        end++;
    }
    v *= unit;
    if (*end != '\0' || v > 1e15 || v != floor(v)) {
        return -1;
    }
    *out = (size_t) v;
    return 0;
}

static int
parse_int(const char *s, int lo, int *out)
{
    char *end;
    long  v;

    errno = 0;
    v     = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || v < lo || v > 1000000000) {
        return -1;
    }
    *out = (int) v;
    return 0;
}

static int
parse_dtype(const char *s, shoal_dtype *out)
{
    for (int i = 0; i < SHOAL_DTYPE_COUNT; i++) {
        if (strcasecmp(s, shoal_dtype_name(i)) == 0) {
            *out = (shoal_dtype) i;
            return 0;
        }
    }
    for (size_t i = 0; i < sizeof(options_aliases) / sizeof(*options_aliases);
         i++) {
        if (strcasecmp(s, options_aliases[i].alias) == 0) {
            *out = options_aliases[i].dtype;
            return 0;
        }
    }
    return -1;
}

// -o names, in table order (bit i of PERF_OP_* is options_ops[i]).
static const char *const options_ops[] = { "allreduce", "reduce", "allgather",
    "reducescatter", "alltoall", "gather", "scatter", "broadcast", "sendrecv",
    "barrier", "put", "queue" };

static const char *const options_redops[] = { [SHOAL_SUM] = "sum",
    [SHOAL_PROD]                                          = "prod",
    [SHOAL_MIN]                                           = "min",
    [SHOAL_MAX]                                           = "max",
    [SHOAL_AVG]                                           = "avg" };

// One op name; underscores are ignored ("all_reduce" as nccl-tests' file
// names spell it).
static int
parse_one_op(const char *s, size_t len, int *bits)
{
    char   name[32];
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        if (s[i] != '_' && n + 1 < sizeof(name)) {
            name[n++] = s[i];
        }
    }
    name[n] = '\0';
    if (strcasecmp(name, "all") == 0) {
        *bits |= PERF_OP_ALL;
        return 0;
    }
    for (size_t i = 0; i < sizeof(options_ops) / sizeof(*options_ops); i++) {
        if (strcasecmp(name, options_ops[i]) == 0) {
            *bits |= 1 << i;
            return 0;
        }
    }
    return -1;
}

// "allreduce", "allgather,reducescatter" or "all".
static int
parse_op(const char *s, int *out)
{
    int bits = 0;

    while (*s != '\0') {
        size_t len = strcspn(s, ",");
        if (len == 0 || parse_one_op(s, len, &bits) != 0) {
            return -1;
        }
        s += len;
        s += *s == ',';
    }
    if (bits == 0) {
        return -1;
    }
    *out = bits;
    return 0;
}

static int
parse_redop(const char *s, shoal_op_kind *out)
{
    for (size_t i = 0; i < sizeof(options_redops) / sizeof(*options_redops);
         i++) {
        if (options_redops[i] != NULL
            && strcasecmp(s, options_redops[i]) == 0) {
            *out = (shoal_op_kind) i;
            return 0;
        }
    }
    return -1;
}

static int
parse_alloc(const char *s, int *out)
{
    if (strcasecmp(s, "malloc") == 0) {
        *out = PERF_ALLOC_MALLOC;
    } else if (strcasecmp(s, "shoal") == 0
        || strcasecmp(s, "shoal_alloc") == 0) {
        *out = PERF_ALLOC_SHOAL;
    } else {
        return -1;
    }
    return 0;
}

const char *
perf_redop_name(shoal_op_kind op)
{
    if ((size_t) op < sizeof(options_redops) / sizeof(*options_redops)
        && options_redops[op] != NULL) {
        return options_redops[op];
    }
    return shoal_op_name((int) op);
}

const char *
perf_alloc_name(int alloc)
{
    return alloc == PERF_ALLOC_SHOAL ? "shoal" : "malloc";
}

int
perf_iters_for(const perf_opts *o, size_t bytes)
{
    if (o->iter_bytes == 0 || bytes == 0
        || bytes <= o->iter_bytes / (size_t) o->iters) {
        return o->iters;
    }
    size_t n = o->iter_bytes / bytes;
    if (n < (size_t) o->min_iters) {
        n = (size_t) o->min_iters;
    }
    return n < (size_t) o->iters ? (int) n : o->iters;
}

int
perf_warmup_for(const perf_opts *o, size_t bytes)
{
    int iters = perf_iters_for(o, bytes);

    if (o->warmup == 0 || iters == o->iters) {
        return o->warmup;
    }
    // Rounded up: ceil(warmup x iters / o->iters) >= 1.
    return (int) (((long long) o->warmup * iters + o->iters - 1) / o->iters);
}

// Long options without a short form.
enum { OPT_ITER_BYTES = 256, OPT_MIN_ITERS, OPT_COLD, OPT_CACHE };

static const struct option options_long[] = {
    { "op", required_argument, NULL, 'o' },
    { "minbytes", required_argument, NULL, 'b' },
    { "maxbytes", required_argument, NULL, 'e' },
    { "stepfactor", required_argument, NULL, 'f' },
    { "iters", required_argument, NULL, 'n' },
    { "warmup_iters", required_argument, NULL, 'w' },
    { "check", required_argument, NULL, 'c' },
    { "datatype", required_argument, NULL, 'd' },
    { "root", required_argument, NULL, 'r' },
    { "redop", required_argument, NULL, 'O' },
    { "alloc", required_argument, NULL, 'a' },
    { "iter_bytes", required_argument, NULL, OPT_ITER_BYTES },
    { "min_iters", required_argument, NULL, OPT_MIN_ITERS },
    { "cold", no_argument, NULL, OPT_COLD },
    { "cache", required_argument, NULL, OPT_CACHE },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

// Applies one option; returns 0 or -1 (err filled).
static int
apply_option(perf_opts *o, int opt, const char *arg, char *err, size_t len)
{
    int bad = 0;

    switch (opt) {
        case 'o':
            bad = parse_op(arg, &o->ops);
            break;
        case 'O':
            bad = parse_redop(arg, &o->redop);
            break;
        case 'a':
            bad = parse_alloc(arg, &o->alloc);
            break;
        case OPT_ITER_BYTES:
            bad = parse_size(arg, &o->iter_bytes);
            break;
        case OPT_MIN_ITERS:
            bad = parse_int(arg, 1, &o->min_iters);
            break;
        case OPT_COLD:
            o->cold = 1;
            break;
        case OPT_CACHE:
            bad = parse_size(arg, &o->cache_bytes) || o->cache_bytes == 0;
            break;
        case 'b':
            bad = parse_size(arg, &o->minbytes);
            break;
        case 'e':
            bad = parse_size(arg, &o->maxbytes);
            break;
        case 'f': {
            char *end;
            o->stepfactor = strtod(arg, &end);
            bad = end == arg || *end != '\0' || !(o->stepfactor > 1.0)
                || o->stepfactor > 1e6;
            break;
        }
        case 'n':
            bad = parse_int(arg, 1, &o->iters);
            break;
        case 'w':
            bad = parse_int(arg, 0, &o->warmup);
            break;
        case 'c':
            bad = parse_int(arg, 0, &o->check);
            break;
        case 'd':
            bad = parse_dtype(arg, &o->dtype);
            break;
        case 'r':
            bad = parse_int(arg, 0, &o->root);
            break;
        default:
            bad = 1;
            break;
    }
    if (bad) {
        const char *name = "?";
        for (const struct option *l = options_long; l->name != NULL; l++) {
            if (l->val == opt) {
                name = l->name;
            }
        }
        if (opt < 256) {
            snprintf(err, len, "bad value '%s' for -%c/--%s", arg, opt, name);
        } else {
            snprintf(err, len, "bad value '%s' for --%s", arg, name);
        }
        return -1;
    }
    return 0;
}

int
perf_parse_options(
    perf_opts *o, int argc, char **argv, char *err, size_t errlen)
{
    int opt;

    *o     = (perf_opts) { .ops = PERF_OP_ALL,
            .minbytes           = 8,
            .maxbytes           = 64u << 20,
            .stepfactor         = 2.0,
            .iters              = 20,
            .warmup             = 5,
            .check              = 1,
            .dtype              = SHOAL_FLOAT32,
            .redop              = SHOAL_SUM,
            .root               = 0,
            .iter_bytes         = 0,
            .min_iters          = 5,
            .alloc              = PERF_ALLOC_MALLOC };
    err[0] = '\0';
    opterr = 0; // we print our own message, on rank 0 only
    optind = 1;
    while ((opt = getopt_long(
                argc, argv, "o:b:e:f:n:w:c:d:r:O:a:h", options_long, NULL))
        != -1) {
        if (opt == 'h') {
            return PERF_PARSE_HELP;
        }
        if (opt == '?' || opt == ':') {
            if (optopt != 0) {
                snprintf(err, errlen, "unknown option or missing value: -%c",
                    optopt);
            } else {
                snprintf(err, errlen, "unknown option or missing value: %s",
                    argv[optind - 1]);
            }
            return PERF_PARSE_ERROR;
        }
        if (apply_option(o, opt, optarg, err, errlen) != 0) {
            return PERF_PARSE_ERROR;
        }
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
        return PERF_PARSE_ERROR;
    }
    if (perf_redop_valid(o->dtype, o->redop) != 0) {
        snprintf(err, errlen, "reduce op %s is not defined on %s",
            perf_redop_name(o->redop), shoal_dtype_name(o->dtype));
        return PERF_PARSE_ERROR;
    }
    if (o->min_iters > o->iters) {
        o->min_iters = o->iters;
    }
    if (o->minbytes > o->maxbytes) {
        snprintf(err, errlen, "minbytes (%zu) is larger than maxbytes (%zu)",
            o->minbytes, o->maxbytes);
        return PERF_PARSE_ERROR;
    }
    return PERF_PARSE_OK;
}

void
perf_usage(const char *prog, const char *err)
{
    FILE *f = err != NULL ? stderr : stdout;

    if (err != NULL) {
        fprintf(f, "%s: %s\n", prog, err);
    }
    fprintf(f,
        "usage: shoalrun -n N %s [options]\n"
        "\n"
        "nccl-tests style benchmark of libshoal (run every rank with the "
        "same flags).\n"
        "\n"
        "  -o, --op NAME[,NAME...]  allreduce reduce allgather "
        "reducescatter alltoall\n"
        "                           gather scatter broadcast sendrecv "
        "barrier put\n"
        "                           (window put + signal) queue (queue put"
        " + get),\n"
        "                           or all\n"
        "                           (default all)\n"
        "  -b, --minbytes SIZE      smallest message (default 8)\n"
        "  -e, --maxbytes SIZE      largest message (default 64M)\n"
        "  -f, --stepfactor F       multiply the size by F each step "
        "(default 2)\n"
        "  -n, --iters N            timed iterations per size (default 20)\n"
        "      --iter_bytes SIZE    fewer iterations for big sizes: as many "
        "as fit SIZE\n"
        "                           (iterations x size), at most -n "
        "(default 0: off)\n"
        "      --min_iters N        ... but at least N (default 5); "
        "warm-up shrinks alike\n"
        "  -w, --warmup_iters N     untimed iterations first (default 5)\n"
        "  -c, --check 0|1          verify the data of every timed "
        "iteration (default 1)\n"
        "  -d, --datatype TYPE      any shoal dtype: bool uint8 int8 int16 "
        "int32 int64\n"
        "                           float16 bfloat16 float32 float64 "
        "(default float32)\n"
        "  -O, --redop OP           sum prod min max avg (default sum)\n"
        "  -r, --root R             root of reduce, gather, scatter, "
        "broadcast (default 0)\n"
        "  -a, --alloc KIND         malloc: private buffers; shoal: "
        "shoal_alloc buffers\n"
        "                           (zero copy) (default malloc)\n"
        "      --cold               cache-cold: every iteration's buffers "
        "lie past\n"
        "                           twice the last-level cache of "
        "earlier ones (not for\n"
        "                           put and queue, whose memory is "
        "registered once)\n"
        "      --cache SIZE         the last-level cache --cold steps past "
        "(default:\n"
        "                           what the system reports, else 32M)\n"
        "  -h, --help               show this text\n"
        "\n"
        "SIZE takes a K, M or G suffix (powers of 1024). Output (rank 0): "
        "nccl-tests\n"
        "columns, then busbw relative to a memcpy baseline measured in the "
        "same run and\n"
        "min/p90/max times. For allgather, reducescatter, alltoall, gather "
        "and scatter\n"
        "SIZE is the total of every rank's block, as in nccl-tests.\n"
        "Exit status: 0 ok, 1 wrong data or a failed call, 2 bad usage.\n",
        prog);
}
