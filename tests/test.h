// The test harness: every TEST runs in its own forked process (its own
// process group) under a time limit; a test that calls SKIP exits 77 and is
// reported as skipped. Failing CHECKs print where and why, then exit 1.
#ifndef SHOAL_TEST_H
#define SHOAL_TEST_H

#include <stddef.h>

#include "shoal.h"

typedef void (*test_fn)(void);

// Registers a test; `file` (its source) names its area: "store" for
// unit/store_test.c (shoal_tests --area store runs only those).
void test_register(
    const char *name, const char *file, test_fn fn, int timeout_s);
void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
void test_skip(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

// SHOAL_TEST_TIMEOUT_MULTIPLIER (at least 1): sanitizer builds run slower,
// and every time limit of a test and of the jobs it starts stretches by it.
int test_timeout_multiplier(void);

// Declares a test with a time limit in seconds (scaled by
// SHOAL_TEST_TIMEOUT_MULTIPLIER, for sanitizer builds).
#define TEST_T(name, timeout_s)                                               \
    static void                              name(void);                      \
    __attribute__((constructor)) static void test_reg_##name(void)            \
    {                                                                         \
        test_register(#name, __FILE__, name, timeout_s);                      \
    }                                                                         \
    static void name(void)

#define TEST(name) TEST_T(name, 60)

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond)) {                                                        \
            test_fail(__FILE__, __LINE__, "check failed: %s", #cond);         \
        }                                                                     \
    } while (0)

#define CHECK_MSG(cond, ...)                                                  \
    do {                                                                      \
        if (!(cond)) {                                                        \
            test_fail(__FILE__, __LINE__, __VA_ARGS__);                       \
        }                                                                     \
    } while (0)

// Checks that `expr` returns status `want`; on failure prints both status
// names and shoal_last_error().
#define CHECK_ST(expr, want)                                                  \
    do {                                                                      \
        int test_st_ = (expr);                                                \
        if (test_st_ != (want)) {                                             \
            test_fail(__FILE__, __LINE__, "%s returned %s, wanted %s: %s",    \
                #expr, shoal_status_name(test_st_), shoal_status_name(want),  \
                shoal_last_error());                                          \
        }                                                                     \
    } while (0)

#define CHECK_OK(expr) CHECK_ST(expr, SHOAL_OK)

#define SKIP(...) test_skip(__VA_ARGS__)

// Runs argv (argv[0] is a path) with extra environment entries `env`
// ("NAME=value", NULL-terminated, may be NULL), capturing stdout and stderr
// together into a malloc'd string *output (may be NULL). Kills the command's
// process group after timeout_s times test_timeout_multiplier(), the
// stretch every time limit takes in slow sanitizer builds. Returns the exit
// code, 128+signal if it was killed by a signal, or -1 on a time-out.
int test_run(const char *const *argv, const char *const *env, char **output,
    int timeout_s);

// Runs `shoalrun -n N --tag-output shoal_mptest CASE [ARG]` (arg may be
// NULL) with extra environment `env`, as test_run does; returns its exit
// code and the output in *output (caller frees).
int test_run_mptest(int n, const char *name, const char *arg,
    const char *const *env, char **output, int timeout_s);

// Path of a program built in the build tree ("shoalrun",
// "tests/shoal_mptest").
const char *test_build_path(const char *relative);

// Number of entries in /dev/shm whose name contains "shoal".
int test_shm_leftovers(void);

// True if /proc/<pid>/environ holds `entry` (a "NAME=value" string). The
// runner gives each test SHOAL_TEST_TAG=<runner pid>.<test index>, which
// its launchers and ranks inherit: a test finds its own processes by it.
int test_environ_has(const char *pid, const char *entry);

// A port for a store that a test's rank 0 serves on 127.0.0.1: one that
// nothing uses now, drawn below the kernel's ephemeral range (32768 up),
// where no outgoing connection of another test can take it meanwhile.
int test_store_port(void);

// Counts occurrences of `needle` in `haystack`.
int test_count(const char *haystack, const char *needle);

#endif
