// shoalrun's command line. Options come before the program; everything from
// the program on is passed to the ranks untouched.
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shoalrun.h"

// Seconds above this (about 30 years) are refused, so nanosecond deadlines
// cannot overflow.
#define OPTIONS_MAX_SECONDS 1e9

void
sr_usage(FILE *f)
{
    fprintf(f,
        "usage: shoalrun -n N [--timeout S] [--tag-output] [--grace S] "
        "program [args...]\n"
        "\n"
        "Runs N copies of program on this host as the ranks of one shoal "
        "job,\n"
        "with a rendezvous store served by shoalrun itself.\n"
        "\n"
        "  -n N           number of ranks (1..%d)\n"
        "  --timeout S    stop the job after S seconds and exit 124\n"
        "  --tag-output   prefix every output line with \"[rank] \"\n"
        "  --grace S      after a rank fails, give the others S seconds "
        "(default 3)\n"
        "                 to exit before stopping them\n"
        "  -h, --help     show this text\n"
        "\n"
        "Each rank gets SHOAL_RANK, SHOAL_SIZE, SHOAL_LOCAL_RANK, "
        "SHOAL_LOCAL_SIZE,\n"
        "SHOAL_STORE, SHOAL_SECRET (SHOAL_SECRET from the environment, or "
        "a new\n"
        "random one) and SHOAL_LAUNCHER=shoalrun. Exit status: 0 if every "
        "rank\n"
        "exits 0, else the first failing rank's (128+N for signal N), 124 "
        "on\n"
        "timeout, 2 on bad usage.\n",
        SR_MAX_RANKS);
}

static int options_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

// Prints "shoalrun: <message>" and the usage; returns SR_EXIT_USAGE.
static int
options_error(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "shoalrun: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    sr_usage(stderr);
    return SR_EXIT_USAGE;
}

static int
options_parse_ranks(const char *text, int *out)
{
    char *end;
    long  n;

    errno = 0;
    n     = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || n < 1
        || n > SR_MAX_RANKS) {
        return -1;
    }
    *out = (int) n;
    return 0;
}

// Parses seconds (fractions allowed); zero is allowed only if allow_zero.
static int
options_parse_seconds(const char *text, int allow_zero, double *out)
{
    char  *end;
    double s;

    errno = 0;
    s     = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !isfinite(s) || s < 0
        || s > OPTIONS_MAX_SECONDS || (s == 0 && !allow_zero)) {
        return -1;
    }
    *out = s;
    return 0;
}

// If argv[*i] is `--name VALUE` or `--name=VALUE`, sets *value (advancing
// *i past a separate VALUE) and returns 1; returns -1 if VALUE is missing.
static int
options_value(
    int argc, char **argv, int *i, const char *name, const char **value)
{
    size_t len = strlen(name);

    if (strncmp(argv[*i], name, len) != 0) {
        return 0;
    }
    if (argv[*i][len] == '=') {
        *value = argv[*i] + len + 1;
        return 1;
    }
    if (argv[*i][len] != '\0') {
        return 0;
    }
    if (*i + 1 >= argc) {
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

int
sr_parse_options(struct sr_options *opt, int argc, char **argv)
{
    const char *v;
    int         i, got;

    memset(opt, 0, sizeof(*opt));
    opt->grace_s = 3;
    for (i = 1; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            sr_usage(stdout);
            return 1;
        }
        if (strcmp(a, "--tag-output") == 0) {
            opt->tag_output = 1;
            continue;
        }
        if (strncmp(a, "-n", 2) == 0 && a[2] != '\0' && a[2] != '-') {
            v   = a + 2; // -nN
            got = 1;
        } else {
            got = options_value(argc, argv, &i, "-n", &v);
        }
        if (got != 0) {
            if (got < 0 || options_parse_ranks(v, &opt->nranks) != 0) {
                return options_error(
                    "-n wants a number of ranks from 1 to %d, got '%s'",
                    SR_MAX_RANKS, got < 0 ? "" : v);
            }
            continue;
        }
        got = options_value(argc, argv, &i, "--timeout", &v);
        if (got != 0) {
            if (got < 0 || options_parse_seconds(v, 0, &opt->timeout_s)) {
                return options_error(
                    "--timeout wants a positive number of seconds, got '%s'",
                    got < 0 ? "" : v);
            }
            continue;
        }
        got = options_value(argc, argv, &i, "--grace", &v);
        if (got != 0) {
            if (got < 0 || options_parse_seconds(v, 1, &opt->grace_s)) {
                return options_error(
                    "--grace wants a number of seconds >= 0, got '%s'",
                    got < 0 ? "" : v);
            }
            continue;
        }
        return options_error("unknown option '%s'", a);
    }
    if (opt->nranks == 0) {
        return options_error("the number of ranks (-n N) is required");
    }
    if (i >= argc) {
        return options_error("no program to run");
    }
    opt->argv = argv + i;
    return 0;
}
