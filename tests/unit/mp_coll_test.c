// Multi-process correctness tests of the collectives with reductions and
// data movement: every coll_* case of shoal_mptest (tests/mp/cases_coll_*)
// as 1, 2, 3, 4 and 8 ranks through the launcher, the bad-argument case,
// one job per kind of mismatched call, and some cases again with the
// library's algorithm, staging or SIMD choices overridden.
//
// The matrix cases run their "sample" (a few minutes in all on 2 cores);
// SHOAL_COLL_FULL=1 runs the full matrix instead, with time limits 20 times
// longer (SHOAL_TEST_TIMEOUT_MULTIPLIER still applies on top).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

static int
coll_full(void)
{
    const char *env = getenv("SHOAL_COLL_FULL");

    return env != NULL && strcmp(env, "1") == 0;
}

// Time limit of a matrix job: generous for the sample, 20x for full.
static int
coll_limit(int seconds)
{
    return coll_full() ? seconds * 20 : seconds;
}

// Runs `shoalrun -n N shoal_mptest CASE ARG` with extra environment
// entries `env` (NULL-terminated, may be NULL); every rank must print
// "case CASE OK" and the job must exit 0.
static void
coll_expect_pass_env(int n, const char *name, const char *arg, int limit,
    const char *const *env)
{
    char *out;
    int   rc = test_run_mptest(n, name, arg, env, &out, limit);

    if (rc != 0 || test_count(out, " OK\n") < n) {
        test_fail(__FILE__, __LINE__,
            "case %s %s on %d ranks%s%s: exit %d\n%s", name, arg ? arg : "", n,
            env ? " with " : "", env ? env[0] : "", rc, out);
    }
    free(out);
}

static void
coll_expect_pass(int n, const char *name, const char *arg, int limit)
{
    coll_expect_pass_env(n, name, arg, limit, NULL);
}

static void
coll_matrix(int n, const char *name)
{
    coll_expect_pass(n, name, coll_full() ? "full" : "sample",
        coll_limit(n >= 8 ? 240 : 150));
}

#define COLL_TEST(name, case_name)                                            \
    TEST_T(name##_1, coll_limit(160))                                         \
    {                                                                         \
        coll_matrix(1, case_name);                                            \
    }                                                                         \
    TEST_T(name##_2, coll_limit(160))                                         \
    {                                                                         \
        coll_matrix(2, case_name);                                            \
    }                                                                         \
    TEST_T(name##_3, coll_limit(160))                                         \
    {                                                                         \
        coll_matrix(3, case_name);                                            \
    }                                                                         \
    TEST_T(name##_4, coll_limit(160))                                         \
    {                                                                         \
        coll_matrix(4, case_name);                                            \
    }                                                                         \
    TEST_T(name##_8, coll_limit(250))                                         \
    {                                                                         \
        coll_matrix(8, case_name);                                            \
    }

COLL_TEST(mp_coll_all_reduce, "coll_all_reduce")
COLL_TEST(mp_coll_reduce, "coll_reduce")
COLL_TEST(mp_coll_all_gather, "coll_all_gather")
COLL_TEST(mp_coll_all_gather_v, "coll_all_gather_v")
COLL_TEST(mp_coll_reduce_scatter, "coll_reduce_scatter")
COLL_TEST(mp_coll_reduce_scatter_v, "coll_reduce_scatter_v")
COLL_TEST(mp_coll_all_to_all, "coll_all_to_all")
COLL_TEST(mp_coll_all_to_all_v, "coll_all_to_all_v")
COLL_TEST(mp_coll_gather, "coll_gather")
COLL_TEST(mp_coll_scatter, "coll_scatter")
COLL_TEST(mp_coll_nan, "coll_nan")
COLL_TEST(mp_coll_inflight, "coll_inflight")
COLL_TEST(mp_coll_reuse, "coll_reuse")
COLL_TEST(mp_coll_destroy, "coll_destroy")

#define COLL_BAD(n)                                                           \
    TEST_T(mp_coll_bad_args_##n, 90)                                          \
    {                                                                         \
        coll_expect_pass(n, "coll_bad_args", NULL, 80);                       \
    }

COLL_BAD(1)
COLL_BAD(2)
COLL_BAD(3)
COLL_BAD(4)
COLL_BAD(8)

TEST_T(mp_coll_reference_selftest, 60)
{
    coll_expect_pass(1, "coll_ref", NULL, 50);
}

// One job per mismatch (the communicator is aborted after it), on world
// sizes 2 to 8.
#define COLL_MISMATCH(what, n)                                                \
    TEST_T(mp_coll_mismatch_##what##_##n, 60)                                 \
    {                                                                         \
        coll_expect_pass(n, "coll_mismatch", #what, 50);                      \
    }

COLL_MISMATCH(all_reduce_count, 2)
COLL_MISMATCH(all_reduce_count, 8)
COLL_MISMATCH(all_reduce_dtype, 3)
COLL_MISMATCH(all_reduce_op, 4)
COLL_MISMATCH(reduce_op, 2)
COLL_MISMATCH(reduce_scatter_op, 3)
COLL_MISMATCH(reduce_root, 3)
COLL_MISMATCH(reduce_count, 2)
COLL_MISMATCH(all_gather_count, 4)
COLL_MISMATCH(all_gather_v_counts, 3)
COLL_MISMATCH(all_gather_v_split, 2)
COLL_MISMATCH(reduce_scatter_v_split, 3)
COLL_MISMATCH(reduce_scatter_count, 2)
COLL_MISMATCH(reduce_scatter_v_counts, 4)
COLL_MISMATCH(all_to_all_count, 3)
COLL_MISMATCH(all_to_all_v_counts, 4)
COLL_MISMATCH(gather_root, 3)
COLL_MISMATCH(broadcast_root_large, 3)
COLL_MISMATCH(gather_scatter, 3)
COLL_MISMATCH(send_collective, 3)
COLL_MISMATCH(scatter_count, 2)
COLL_MISMATCH(kind, 3)

// The same cases with the library pushed off its default choices: every
// rank on the staged algorithms (no single-copy path), each all-reduce and
// reduce algorithm at every size, staging small enough that 1023 elements
// take several chunks, and each SIMD level of the reduction kernels.
#define COLL_VARIANT(name, case_name, n, envs...)                             \
    TEST_T(mp_coll_##name##_##n, coll_limit(n >= 8 ? 150 : 90))               \
    {                                                                         \
        const char *env[] = { envs, NULL };                                   \
        coll_expect_pass_env(n, case_name, coll_full() ? "full" : "sample",   \
            coll_limit(n >= 8 ? 140 : 80), env);                              \
    }

#define COLL_STAGED "SHOAL_CMA=0"
COLL_VARIANT(staged_all_gather, "coll_all_gather", 3, COLL_STAGED)
COLL_VARIANT(staged_all_gather_v, "coll_all_gather_v", 3, COLL_STAGED)
COLL_VARIANT(staged_reduce_scatter, "coll_reduce_scatter", 3, COLL_STAGED)
COLL_VARIANT(staged_reduce_scatter_v, "coll_reduce_scatter_v", 3, COLL_STAGED)
COLL_VARIANT(staged_all_to_all, "coll_all_to_all", 3, COLL_STAGED)
COLL_VARIANT(staged_all_to_all_v, "coll_all_to_all_v", 3, COLL_STAGED)
COLL_VARIANT(staged_all_to_all_v, "coll_all_to_all_v", 8, COLL_STAGED)
COLL_VARIANT(staged_gather, "coll_gather", 3, COLL_STAGED)
COLL_VARIANT(staged_scatter, "coll_scatter", 3, COLL_STAGED)
COLL_VARIANT(staged_inflight, "coll_inflight", 8, COLL_STAGED)

#define COLL_TWOSHOT "SHOAL_ALGO=allreduce:twoshot@0-;reduce:direct@0-"
#define COLL_DIRECT  "SHOAL_ALGO=allreduce:direct@0-;reduce:oneshot@0-"
COLL_VARIANT(twoshot_all_reduce, "coll_all_reduce", 3, COLL_TWOSHOT)
COLL_VARIANT(twoshot_all_reduce, "coll_all_reduce", 8, COLL_TWOSHOT)
COLL_VARIANT(direct_reduce, "coll_reduce", 3, COLL_TWOSHOT)
COLL_VARIANT(direct_all_reduce, "coll_all_reduce", 3, COLL_DIRECT)
COLL_VARIANT(oneshot_reduce, "coll_reduce", 4, COLL_DIRECT)
COLL_VARIANT(twoshot_nan, "coll_nan", 4, COLL_TWOSHOT)

#define COLL_SMALL_STAGING "SHOAL_SHM_BYTES=65536"
COLL_VARIANT(
    small_staging_all_reduce, "coll_all_reduce", 3, COLL_SMALL_STAGING)
COLL_VARIANT(small_staging_reduce_scatter_v, "coll_reduce_scatter_v", 3,
    COLL_SMALL_STAGING)
COLL_VARIANT(small_staging_oneshot_reduce, "coll_reduce", 3,
    COLL_SMALL_STAGING, COLL_DIRECT)
COLL_VARIANT(small_staging_all_to_all_v, "coll_all_to_all_v", 4,
    COLL_SMALL_STAGING, COLL_STAGED)
COLL_VARIANT(small_staging_inflight, "coll_inflight", 4, COLL_SMALL_STAGING,
    COLL_STAGED)

COLL_VARIANT(scalar_all_reduce, "coll_all_reduce", 3, "SHOAL_SIMD=scalar")
COLL_VARIANT(scalar_nan, "coll_nan", 3, "SHOAL_SIMD=scalar")
COLL_VARIANT(avx2_all_reduce, "coll_all_reduce", 3, "SHOAL_SIMD=avx2")
COLL_VARIANT(avx2_nan, "coll_nan", 3, "SHOAL_SIMD=avx2")
