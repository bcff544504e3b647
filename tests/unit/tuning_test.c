// Tuning files (coll/tuning.h): rules read into a selection table,
// comments and wildcards, rules for another host count skipped, a missing
// file, malformed lines named by number, SHOAL_ALGO's rules before the
// file's; and, on ranks, rank 0's file applying everywhere (case tuning).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/select.h"
#include "coll/tuning.h"
#include "base/error.h"
#include "test.h"

// Rank 0's file on every rank, SHOAL_ALGO first, a malformed file
// ignored, over shared memory and TCP (tests/mp/cases_tuning.c).
static void
tuning_case(int n, const char *transport)
{
    const char *env[] = { transport, NULL };
    char       *out;
    int         rc = test_run_mptest(n, "tuning", NULL, env, &out, 120);

    CHECK_MSG(rc == 0 && test_count(out, " OK\n") >= n,
        "case tuning on %d ranks (%s): exit %d\n%s", n, transport, rc, out);
    CHECK_MSG(strstr(out, "line 2") != NULL,
        "no warning naming the malformed line:\n%s", out);
    free(out);
}

TEST_T(tuning_rank0_file_applies_3, 120)
{
    tuning_case(3, "SHOAL_TRANSPORT=shm");
}

TEST_T(tuning_rank0_file_applies_tcp_3, 120)
{
    tuning_case(3, "SHOAL_TRANSPORT=tcp");
}

#define K ((size_t) 1024)
#define M (K * K)

#define ALL_ALGOS (((1u << (SHI_ALGO_FLAGS + 1)) - 1u) & ~1u)

// Writes `text` to a fresh temporary file; returns its path (static).
static const char *
write_file(const char *text)
{
    static char path[64];
    int         fd;

    snprintf(path, sizeof(path), "/tmp/shoal-tuning-XXXXXX");
    fd = mkstemp(path);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t) strlen(text)) {
        return NULL;
    }
    close(fd);
    return path;
}

// The table the file makes (after the defaults) for a communicator on
// `hosts` hosts; NULL (and the error text) when the file is refused.
static shi_select_table *
table_of(const char *text, int hosts, int *st)
{
    static shi_select_table t;
    const char             *path = write_file(text);
    char                   *spec = NULL;

    *st = path != NULL ? shi_tuning_read(path, hosts, &spec) : SHOAL_ESYS;
    if (path != NULL) {
        unlink(path);
    }
    if (*st != SHOAL_OK) {
        return NULL;
    }
    shi_select_defaults(&t);
    *st = shi_select_parse(&t, spec);
    free(spec);
    return *st == SHOAL_OK ? &t : NULL;
}

TEST(tuning_rules_select)
{
    int                     st;
    const shi_select_table *t = table_of(
        "# collective, min bytes, max bytes, ranks, hosts, algorithm\n"
        "\n"
        "allreduce, 0, 64K, 2, 1, twoshot   # small: two-shot on 2 ranks\n"
        "all_reduce, 64K, -, *, *, oneshot\n"
        "allgather,0,4096,*,1,direct\n"
        "broadcast, 0, -, *, 2, ring\n", // another host count: skipped
        1, &st);

    CHECK_MSG(t != NULL, "%s", shi_error_text());
    CHECK(shi_select(t, SHI_COLL_ALLREDUCE, 8, 2, ALL_ALGOS)
        == SHI_ALGO_TWOSHOT);
    // Other rank counts fall through to the next rule or the built-in one.
    CHECK(shi_select(t, SHI_COLL_ALLREDUCE, 8, 3, ALL_ALGOS)
        == SHI_ALGO_ONESHOT);
    CHECK(shi_select(t, SHI_COLL_ALLREDUCE, 64 * K, 3, ALL_ALGOS)
        == SHI_ALGO_ONESHOT);
    CHECK(shi_select(t, SHI_COLL_ALLREDUCE, 16 * M, 4, ALL_ALGOS)
        == SHI_ALGO_ONESHOT);
    CHECK(shi_select(t, SHI_COLL_ALLGATHER, 1024, 2, ALL_ALGOS)
        == SHI_ALGO_DIRECT);
    CHECK(
        shi_select(t, SHI_COLL_BROADCAST, 8, 2, ALL_ALGOS) == SHI_ALGO_OUTBOX);
    // An unavailable algorithm falls back as SHOAL_ALGO's rules do.
    CHECK(shi_select(t, SHI_COLL_ALLGATHER, 1024, 2,
              ALL_ALGOS & ~SHI_ALGO_BIT(SHI_ALGO_DIRECT))
        == SHI_ALGO_STAGED);
}

// Overlapping rules: the first in the file wins where they overlap; a
// size no rule covers falls to the built-in table. Every choice says
// which rules made it.
TEST(tuning_overlaps_gaps_and_sources)
{
    int               st;
    shi_rule_source   src;
    shi_select_table *t = table_of("allreduce, 0, 1M, *, *, twoshot\n"
                                   "allreduce, 64K, 2M, *, *, direct\n",
        1, &st);
    shi_select_table  builtin;

    CHECK_MSG(t != NULL, "%s", shi_error_text());
    // table_of parses as SHOAL_ALGO does; mark the rules as the file's.
    for (int i = 0; i < 2; i++) {
        t->rules[i].source = SHI_RULE_FILE;
    }
    shi_select_defaults(&builtin);
    CHECK(shi_select_why(t, SHI_COLL_ALLREDUCE, 128 * K, 2, ALL_ALGOS, &src)
            == SHI_ALGO_TWOSHOT
        && src == SHI_RULE_FILE);
    CHECK(shi_select_why(t, SHI_COLL_ALLREDUCE, 3 * M / 2, 2, ALL_ALGOS, &src)
            == SHI_ALGO_DIRECT
        && src == SHI_RULE_FILE);
    CHECK(shi_select_why(t, SHI_COLL_ALLREDUCE, 4 * M, 2, ALL_ALGOS, &src)
            == shi_select(&builtin, SHI_COLL_ALLREDUCE, 4 * M, 2, ALL_ALGOS)
        && src == SHI_RULE_BUILTIN);
    CHECK_OK(shi_select_parse(t, "allreduce:oneshot@0-8K"));
    CHECK(shi_select_why(t, SHI_COLL_ALLREDUCE, 8, 2, ALL_ALGOS, &src)
            == SHI_ALGO_ONESHOT
        && src == SHI_RULE_ENV);
    CHECK(strcmp(shi_rule_source_name(SHI_RULE_FILE), "tuning file") == 0);
}

TEST(tuning_hosts_and_env_order)
{
    int               st;
    shi_select_table *t = table_of("allreduce, 0, -, *, 2, ring\n", 2, &st);

    CHECK_MSG(t != NULL, "%s", shi_error_text());
    CHECK(shi_select(t, SHI_COLL_ALLREDUCE, 8, 4,
              ALL_ALGOS | SHI_ALGO_BIT(SHI_ALGO_RING))
        == SHI_ALGO_RING);
    // SHOAL_ALGO's rules go before the file's (parsed after it).
    CHECK_OK(shi_select_parse(t, "allreduce:oneshot"));
    CHECK(shi_select(t, SHI_COLL_ALLREDUCE, 8, 4,
              ALL_ALGOS | SHI_ALGO_BIT(SHI_ALGO_RING))
        == SHI_ALGO_ONESHOT);
}

TEST(tuning_missing_file_is_silent)
{
    char *spec = NULL;

    CHECK_OK(shi_tuning_read("/nonexistent/shoal/tuning", 1, &spec));
    CHECK(spec != NULL && spec[0] == '\0');
    free(spec);
    CHECK_OK(shi_tuning_read(NULL, 1, &spec));
    free(spec);
}

// A malformed file is refused as a whole, naming the line.
static void
expect_refused(const char *text, const char *line, const char *why)
{
    int st;

    CHECK(table_of(text, 1, &st) == NULL);
    CHECK(st == SHOAL_EINVAL);
    CHECK_MSG(strstr(shi_error_text(), line) != NULL
            && strstr(shi_error_text(), why) != NULL,
        "wanted '%s' and '%s' in: %s", line, why, shi_error_text());
}

TEST(tuning_malformed_lines)
{
    expect_refused("allreduce, 0, -, *, *\n", "line 1", "6 fields");
    expect_refused(
        "# ok\nallreduce, 0, -, *, *, oneshot, x\n", "line 2", "6 fields");
    expect_refused("allreduce, 0, -, *, *, oneshot\nfoo, 0, -, *, *, ring\n",
        "line 2", "foo");
    expect_refused("allreduce, 0, -, *, *, nosuch\n", "line 1", "nosuch");
    expect_refused("barrier, 0, -, *, *, twoshot\n", "line 1", "twoshot");
    expect_refused("allreduce, 1Q, -, *, *, oneshot\n", "line 1", "1Q");
    expect_refused("allreduce, 0, -, two, *, oneshot\n", "line 1", "two");
    expect_refused("allreduce, 0, -, *, none, oneshot\n", "line 1", "hosts");
}

TEST(tuning_path_from_environment)
{
    char buf[256];

    setenv("SHOAL_TUNING_FILE", "/tmp/x/tuning.txt", 1);
    CHECK(strcmp(shi_tuning_path(buf, sizeof(buf)), "/tmp/x/tuning.txt") == 0);
    unsetenv("SHOAL_TUNING_FILE");
    setenv("XDG_CACHE_HOME", "/tmp/cache", 1);
    CHECK(strcmp(shi_tuning_path(buf, sizeof(buf)), "/tmp/cache/shoal/tuning")
        == 0);
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/u", 1);
    CHECK(strcmp(
              shi_tuning_path(buf, sizeof(buf)), "/home/u/.cache/shoal/tuning")
        == 0);
}

// shoal_call_opts.algo: every listed algorithm forced, bad names refused,
// differing choices a mismatch (tests/mp/cases_forced_algo.c).
static void
forced_case(int n, const char *transport)
{
    const char *env[] = { transport, NULL };
    char       *out;
    int         rc = test_run_mptest(n, "forced_algo", NULL, env, &out, 120);

    CHECK_MSG(rc == 0 && test_count(out, " OK\n") >= n,
        "case forced_algo on %d ranks (%s): exit %d\n%s", n, transport, rc,
        out);
    free(out);
}

TEST_T(tuning_forced_algo_1, 120)
{
    forced_case(1, "SHOAL_TRANSPORT=shm");
}

TEST_T(tuning_forced_algo_3, 120)
{
    forced_case(3, "SHOAL_TRANSPORT=shm");
}

// A direct reduction pauses between pieces for an issuing thread and goes
// on after (tests/mp/cases_forced_algo.c, direct_paused).
TEST_T(tuning_direct_pauses_for_an_issue_3, 120)
{
    const char *env[] = { "SHOAL_TRANSPORT=shm", NULL };
    char       *out;
    int         rc = test_run_mptest(3, "direct_paused", NULL, env, &out, 120);

    CHECK_MSG(rc == 0 && test_count(out, " OK\n") >= 3,
        "case direct_paused on 3 ranks: exit %d\n%s", rc, out);
    free(out);
}

TEST_T(tuning_forced_algo_tcp_3, 120)
{
    forced_case(3, "SHOAL_TRANSPORT=tcp");
}
