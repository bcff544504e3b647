// shoal-tune: the tuning file. Rules of an existing file for other rank or
// host counts are kept (tune on 2 ranks, then on 4, into one file); ours
// replace those for this communicator's counts. Written beside and renamed
// into place, so a communicator starting meanwhile reads the old file or
// the new one, never half of one.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tune.h"

#define LINE_MAX_LEN 512

// mkdir -p of the folder holding `path`.
static int
make_parent(const char *path)
{
    char dir[1024];

    if (snprintf(dir, sizeof(dir), "%s", path) >= (int) sizeof(dir)) {
        return -1;
    }
    for (char *p = dir + 1; *p != '\0'; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
                return -1;
            }
            *p = '/';
        }
    }
    return 0;
}

// Field `k` (0-based, comma-separated, trimmed) of a rule line into out.
static void
field(const char *line, int k, char *out, size_t len)
{
    const char *p = line;

    for (int i = 0; i < k && p != NULL; i++) {
        p = strchr(p, ',');
        p = p != NULL ? p + 1 : NULL;
    }
    out[0] = '\0';
    if (p == NULL) {
        return;
    }
    while (*p == ' ' || *p == '\t') {
        p++;
    }
    size_t n = strcspn(p, ",#\n");
    while (
        n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r')) {
        n--;
    }
    snprintf(out, len, "%.*s", (int) (n < len ? n : len - 1), p);
}

// Whether an existing line holds other rank or host counts than ours
// (fields ranks_field and the next), so is kept.
static int
keeps(const tune_ctx *t, const char *line, int ranks_field)
{
    char        ranks[32], hosts[32], mine_r[32], mine_h[32];
    const char *p = line + strspn(line, " \t");

    if (*p == '#' || *p == '\n' || *p == '\0') {
        return 0; // comments are ours to write again
    }
    field(line, ranks_field, ranks, sizeof(ranks));
    field(line, ranks_field + 1, hosts, sizeof(hosts));
    snprintf(mine_r, sizeof(mine_r), "%d", t->nranks);
    snprintf(mine_h, sizeof(mine_h), "%d", t->hosts);
    return strcmp(ranks, mine_r) != 0 || strcmp(hosts, mine_h) != 0;
}

void
tune_copy_kept(const tune_ctx *t, const char *path, FILE *out, int ranks_field)
{
    FILE *in = fopen(path, "r");
    char  line[LINE_MAX_LEN];
    int   header = 0;

    if (in == NULL) {
        return;
    }
    while (fgets(line, sizeof(line), in) != NULL) {
        if (keeps(t, line, ranks_field)) {
            if (!header) {
                fprintf(out,
                    "\n# kept from the earlier file: lines for "
                    "other rank or host counts\n");
                header = 1;
            }
            fputs(line, out);
            if (strchr(line, '\n') == NULL) {
                fputc('\n', out);
            }
        }
    }
    fclose(in);
}

static void
write_header(const tune_ctx *t, FILE *out)
{
    char   host[64] = "?";
    time_t now      = time(NULL);
    char   when[64];

    gethostname(host, sizeof(host) - 1);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&now));
    fprintf(out,
        "# shoal tuning file, written by shoal-tune on %s at %s\n"
        "# (%d ranks on %d host%s, sizes %zu to %zu bytes). Read by rank 0\n"
        "# when a communicator is created; SHOAL_ALGO overrides it.\n"
        "# collective, min bytes, max bytes (- for none), ranks, hosts, "
        "algorithm\n",
        host, when, t->nranks, t->hosts, t->hosts == 1 ? "" : "s",
        t->o->minbytes, t->o->maxbytes);
}

int
tune_write_file(const tune_ctx *t, const char *path)
{
    char        tmp[1100];
    FILE       *out;
    int         ok = 1;
    struct stat st;

    // Renamed over, a device or a folder would be replaced by our file.
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        fprintf(stderr,
            "shoal-tune: %s is not a regular file; give -o a "
            "file path\n",
            path);
        return SHOAL_EINVAL;
    }
    if (make_parent(path) != 0
        || snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int) getpid())
            >= (int) sizeof(tmp)
        || (out = fopen(tmp, "w")) == NULL) {
        fprintf(stderr, "shoal-tune: cannot write %s: %s\n", path,
            strerror(errno));
        return SHOAL_EINVAL;
    }
    write_header(t, out);
    for (int c = 0; c < TUNE_NCOLLS; c++) {
        char *rules = tune_rules_text(t, c);
        ok &= rules != NULL;
        if (rules != NULL) {
            fputs(rules, out);
        }
        free(rules);
    }
    tune_copy_kept(t, path, out, 3);
    ok &= ferror(out) == 0;
    ok &= fclose(out) == 0;
    if (!ok || rename(tmp, path) != 0) {
        fprintf(stderr, "shoal-tune: cannot write %s: %s\n", path,
            strerror(errno));
        unlink(tmp);
        return SHOAL_EINVAL;
    }
    return SHOAL_OK;
}
