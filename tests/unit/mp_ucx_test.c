// The UCX transport on one host: the multi-process cases with
// SHOAL_TRANSPORT=ucx, through UCX's TCP transport (UCX_TLS=tcp, as
// between hosts without RDMA) and through its shared memory
// (UCX_TLS=sm,self), and the failures (a killed rank, a mismatched
// receive). Without UCX in the build, SHOAL_TRANSPORT=ucx must refuse
// with a clear error. The cases across separate network stacks are in
// tests/net.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define UCX    "SHOAL_TRANSPORT=ucx"
#define UCXTCP "UCX_TLS=tcp"
#define UCXSM  "UCX_TLS=sm,self"

#define ENV(...) ((const char *const[]) { __VA_ARGS__, NULL })

#if SHOAL_HAVE_UCX

static void
ucx_expect(int n, const char *name, const char *arg, const char *const *env,
    int want_rc, int want_ok)
{
    char *out;
    int   rc = test_run_mptest(n, name, arg, env, &out, 150);

    if (rc != want_rc || test_count(out, " OK\n") < want_ok) {
        test_fail(__FILE__, __LINE__,
            "case %s %s on %d ranks over UCX (%s): exit %d, wanted %d\n%s",
            name, arg ? arg : "", n, env[1], rc, want_rc, out);
    }
    free(out);
}

#define UCX_CASE(tname, n, case_name, arg, tls)                               \
    TEST_T(tname, 160)                                                        \
    {                                                                         \
        ucx_expect(n, case_name, arg, ENV(UCX, tls), 0, n);                   \
    }

// Through UCX's TCP transport, at 2 and 3 ranks.
#define OVER_TCP(name, case_name, arg)                                        \
    UCX_CASE(ucx_tcp_##name##_2, 2, case_name, arg, UCXTCP)                   \
    UCX_CASE(ucx_tcp_##name##_3, 3, case_name, arg, UCXTCP)

OVER_TCP(p2p, "p2p", NULL)
OVER_TCP(p2p_tags, "p2p_tags", NULL)
OVER_TCP(p2p_any, "p2p_any", NULL)
OVER_TCP(p2p_any_early, "p2p_any_early", NULL)
OVER_TCP(p2p_async, "p2p_async", NULL)
OVER_TCP(bcast, "bcast", NULL)
OVER_TCP(barrier, "barrier", NULL)
OVER_TCP(split, "split", NULL)
OVER_TCP(all_reduce, "coll_all_reduce", "sample")
OVER_TCP(all_gather_v, "coll_all_gather_v", "sample")
OVER_TCP(reduce_scatter, "coll_reduce_scatter", "sample")
OVER_TCP(all_to_all_v, "coll_all_to_all_v", "sample")
OVER_TCP(gather, "coll_gather", "sample")
OVER_TCP(scatter, "coll_scatter", "sample")
OVER_TCP(inflight, "coll_inflight", "sample")
OVER_TCP(plan_random, "plan_random", "40")
OVER_TCP(plan_errors, "plan_errors", NULL)
OVER_TCP(window_ring, "window_ring", NULL)
OVER_TCP(queue, "queue", NULL)
OVER_TCP(p2p_mismatch, "p2p_mismatch", NULL)
OVER_TCP(mem_reg, "mem_reg", NULL)
OVER_TCP(timeout, "timeout", NULL)

// Without UCX's peer error handling (SHOAL_UCX_PEER_ERRORS=0: zero copy
// over TCP, deaths found by deadlines).
#define NOERR "SHOAL_UCX_PEER_ERRORS=0"
TEST_T(ucx_noerr_all_reduce_3, 160)
{
    ucx_expect(3, "coll_all_reduce", "sample", ENV(UCX, UCXTCP, NOERR), 0, 3);
}
TEST_T(ucx_noerr_p2p_any_3, 160)
{
    ucx_expect(3, "p2p_any", NULL, ENV(UCX, UCXTCP, NOERR), 0, 3);
}
TEST_T(ucx_noerr_timeout_2, 160)
{
    ucx_expect(2, "timeout", NULL, ENV(UCX, UCXTCP, NOERR), 0, 2);
}

// Through UCX's shared memory (the same-host endpoints open without peer
// error handling there, see src/transport/ucx/ucx_lanes.c), at 2 and 4.
#define OVER_SM(name, case_name, arg)                                         \
    UCX_CASE(ucx_sm_##name##_2, 2, case_name, arg, UCXSM)                     \
    UCX_CASE(ucx_sm_##name##_4, 4, case_name, arg, UCXSM)

OVER_SM(p2p_any, "p2p_any", NULL)
OVER_SM(all_reduce, "coll_all_reduce", "sample")
OVER_SM(all_to_all_v, "coll_all_to_all_v", "sample")
OVER_SM(plan_random, "plan_random", "40")
OVER_SM(window_ring, "window_ring", NULL)
OVER_SM(queue_all, "queue_all", NULL)
OVER_SM(mem_reg, "mem_reg", NULL)

// A rank killed while rank 0 waits for it in an any-source receive: the
// others fail naming it (UCX's TCP transport sees the closed connection).
// (A rank killed in the middle of large transfers to it can make UCX 1.13
// itself abort a survivor, an assertion in its TCP endpoint's purge of
// the dead peer's operations; the kill case, mid-broadcast, shows it in
// about one run of eight. Not run here until a UCX without it.)
TEST_T(ucx_p2p_any_kill_3, 60)
{
    ucx_expect(3, "p2p_any_kill", NULL, ENV(UCX, UCXTCP), 137, 2);
}

// A bad UCX_TLS is a clear error at creation, not a hang.
TEST_T(ucx_bad_tls, 60)
{
    char       *out;
    const char *argv[] = { test_build_path("tools/shoalrun"), "-n", "2",
        test_build_path("tests/shoal_mptest"), "barrier", NULL };
    int         rc = test_run(argv, ENV(UCX, "UCX_TLS=no-such-tl"), &out, 50);

    CHECK_MSG(rc != 0 && strstr(out, "UCX") != NULL, "exit %d\n%s", rc, out);
    free(out);
}

#else

// Built without UCX: asking for it is refused, saying why.
TEST_T(ucx_absent, 60)
{
    char       *out;
    const char *argv[] = { test_build_path("tools/shoalrun"), "-n", "2",
        test_build_path("tests/shoal_mptest"), "barrier", NULL };
    int         rc     = test_run(argv, ENV(UCX), &out, 50);

    CHECK_MSG(rc != 0 && strstr(out, "built without UCX") != NULL,
        "exit %d\n%s", rc, out);
    free(out);
}

#endif
