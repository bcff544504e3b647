// Replays inputs through a fuzz harness without libFuzzer: every file
// named, and every file in every directory named (in name order, so a
// failure is reproducible), goes to LLVMFuzzerTestOneInput once. Built
// with the ordinary compiler, this is how make test keeps the checked-in
// corpora passing; a failing input aborts with the harness's message.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

// Feeds one file to the harness, in a buffer of exactly its size so that
// a sanitizer build sees reads past the end. Returns 0 if unreadable.
static int
replay_file(const char *path)
{
    FILE          *f = fopen(path, "rb");
    unsigned char *buf;
    long           n;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0
        || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        if (f != NULL) {
            fclose(f);
        }
        return 0;
    }
    buf = malloc(n > 0 ? (size_t) n : 1);
    if (buf == NULL || fread(buf, 1, (size_t) n, f) != (size_t) n) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(buf);
        fclose(f);
        return 0;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t) n);
    free(buf);
    return 1;
}

static int
skip_entry(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

// Replays every regular file of `dir`; returns how many, -1 on an error.
static int
replay_dir(const char *dir)
{
    struct dirent **names;
    int             n    = scandir(dir, &names, skip_entry, alphasort);
    int             done = 0, bad = 0;

    if (n < 0) {
        fprintf(stderr, "replay: cannot list %s\n", dir);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char        path[4096];
        struct stat st;

        snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay_file(path)) {
                done++;
            } else {
                bad = 1;
            }
        }
        free(names[i]);
    }
    free(names);
    return bad ? -1 : done;
}

int
main(int argc, char **argv)
{
    int total = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int         is_dir = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode);
        int         n = is_dir ? replay_dir(argv[i]) : replay_file(argv[i]);

        if (n < 0 || (n == 0 && !is_dir)) {
            return 1;
        }
        total += n;
    }
    // No input at all is a misnamed corpus, not a pass.
    if (total == 0) {
        fprintf(stderr, "replay: no inputs in %s\n", argv[1]);
        return 1;
    }
    printf("%s: %d inputs replayed\n", argv[0], total);
    return 0;
}
