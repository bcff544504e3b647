// Tuning files (see tuning.h): each line becomes one rule in SHOAL_ALGO
// syntax, checked by the same parser as SHOAL_ALGO, so that a file and the
// variable mean the same thing and a bad line is reported with its number.
#include "coll/tuning.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/select.h"
#include "base/error.h"
#include "shoal.h"

#define TUNING_LINE_MAX 512
#define TUNING_FIELDS   6

const char *
shi_tuning_path(char *buf, size_t len)
{
    const char *env  = getenv("SHOAL_TUNING_FILE");
    const char *xdg  = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int         n;

    if (env != NULL && env[0] != '\0') {
        n = snprintf(buf, len, "%s", env);
    } else if (xdg != NULL && xdg[0] != '\0') {
        n = snprintf(buf, len, "%s/shoal/tuning", xdg);
    } else if (home != NULL && home[0] != '\0') {
        n = snprintf(buf, len, "%s/.cache/shoal/tuning", home);
    } else {
        return NULL;
    }
    return n > 0 && (size_t) n < len ? buf : NULL;
}

static char *
trim(char *s)
{
    char *end;

    while (*s == ' ' || *s == '\t') {
        s++;
    }
    end = s + strlen(s);
    while (end > s
        && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n'
            || end[-1] == '\r')) {
        *--end = '\0';
    }
    return s;
}

// Splits `line` at commas into exactly TUNING_FIELDS trimmed fields.
static int
split_fields(char *line, char **f)
{
    int n = 0;

    for (char *p = line;; n++) {
        char *comma = strchr(p, ',');
        if (n == TUNING_FIELDS) {
            return 0; // too many
        }
        if (comma != NULL) {
            *comma = '\0';
        }
        f[n] = trim(p);
        if (comma == NULL) {
            return n + 1 == TUNING_FIELDS;
        }
        p = comma + 1;
    }
}

// One rule in SHOAL_ALGO syntax from the fields, into `out`; 0 when the
// rule is for another host count (skipped), 1 when written, -1 on error.
static int
rule_of(char **f, int nhosts, char *out, size_t len)
{
    const char *coll = f[0], *lo = f[1], *hi = f[2], *ranks = f[3];
    const char *hosts = f[4], *algo = f[5];
    char       *end;
    int         n;

    if (strcmp(hosts, "*") != 0) {
        errno      = 0;
        long count = strtol(hosts, &end, 10);
        if (errno != 0 || *end != '\0' || end == hosts || count < 1) {
            shi_error(SHOAL_EINVAL, "hosts '%s' is not a count or '*'", hosts);
            return -1;
        }
        if (count != nhosts) {
            return 0;
        }
    }
    if (strcmp(hi, "-") == 0) {
        hi = "";
    }
    if (strcmp(ranks, "*") == 0) {
        n = snprintf(out, len, "%s:%s@%s-%s", coll, algo, lo, hi);
    } else {
        n = snprintf(
            out, len, "%s:%s@%s-%s#%s-%s", coll, algo, lo, hi, ranks, ranks);
    }
    if (n < 0 || (size_t) n >= len) {
        shi_error(SHOAL_EINVAL, "the rule is too long");
        return -1;
    }
    return 1;
}

// Checks one rule with the SHOAL_ALGO parser.
static int
check_rule(const char *rule)
{
    shi_select_table *t = calloc(1, sizeof(*t));
    int               st;

    if (t == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    st = shi_select_parse(t, rule);
    free(t);
    return st;
}

// Appends `rule` and a ';' to the growing spec.
static int
append(char **spec, size_t *used, size_t *cap, const char *rule)
{
    size_t n = strlen(rule);

    if (*used + n + 2 > *cap) {
        size_t want  = (*cap + n + 2) * 2;
        char  *grown = realloc(*spec, want);
        if (grown == NULL) {
            return shi_error(SHOAL_ENOMEM, "out of memory");
        }
        *spec = grown;
        *cap  = want;
    }
    memcpy(*spec + *used, rule, n);
    *used += n;
    (*spec)[(*used)++] = ';';
    (*spec)[*used]     = '\0';
    return SHOAL_OK;
}

// One line: nothing (blank, comment), a rule appended, or an error.
static int
read_line(char *line, int nhosts, char **spec, size_t *used, size_t *cap)
{
    char *fields[TUNING_FIELDS];
    char  rule[TUNING_LINE_MAX + 32];
    char *hash = strchr(line, '#');
    int   r;

    if (hash != NULL) {
        *hash = '\0';
    }
    line = trim(line);
    if (line[0] == '\0') {
        return SHOAL_OK;
    }
    if (!split_fields(line, fields)) {
        return shi_error(SHOAL_EINVAL,
            "expected 6 fields (collective, min bytes, max bytes, ranks, "
            "hosts, algorithm)");
    }
    if ((r = rule_of(fields, nhosts, rule, sizeof(rule))) <= 0) {
        return r < 0 ? SHOAL_EINVAL : SHOAL_OK;
    }
    if (check_rule(rule) != SHOAL_OK) {
        return SHOAL_EINVAL;
    }
    return append(spec, used, cap, rule);
}

int
shi_tuning_read(const char *path, int nhosts, char **spec)
{
    char   line[TUNING_LINE_MAX + 2];
    size_t used = 0, cap = 0;
    int    lineno = 0, st = SHOAL_OK;
    FILE  *f;

    *spec = NULL;
    if (path == NULL || (f = fopen(path, "r")) == NULL) {
        *spec = strdup("");
        return *spec != NULL ? SHOAL_OK
                             : shi_error(SHOAL_ENOMEM, "out of memory");
    }
    while (st == SHOAL_OK && fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        if (strlen(line) > TUNING_LINE_MAX) {
            st = shi_error(SHOAL_EINVAL, "the line is longer than %d bytes",
                TUNING_LINE_MAX);
            break;
        }
        st = read_line(line, nhosts, spec, &used, &cap);
    }
    fclose(f);
    if (st != SHOAL_OK) {
        free(*spec);
        *spec = NULL;
        return shi_error_wrap(st, "tuning file %s, line %d", path, lineno);
    }
    if (*spec == NULL && (*spec = strdup("")) == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    return SHOAL_OK;
}
