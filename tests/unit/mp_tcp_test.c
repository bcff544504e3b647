// The TCP transport on one host: the multi-process cases again with
// SHOAL_TRANSPORT=tcp (every pair of ranks over loopback sockets), with
// tiny frames and pieces so that every message spreads over several
// frames and sockets, with each network algorithm forced, and the failure
// cases (a killed rank, a time-out, mismatched calls). The cases across
// real separate network stacks are in tests/net.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define TCP      "SHOAL_TRANSPORT=tcp"
#define TINY     "SHOAL_TCP_CHUNK_BYTES=1024", "SHOAL_NET_PIECE_BYTES=4096"
#define SOCKETS3 "SHOAL_SOCKETS_PER_PEER=3"

// Runs `shoalrun -n N shoal_mptest CASE ARG` with `env`; every rank must
// print " OK" and the job must exit `want_rc`.
static void
tcp_expect(int n, const char *name, const char *arg, const char *const *env,
    int want_rc, int want_ok, int limit)
{
    char *out;
    int   rc = test_run_mptest(n, name, arg, env, &out, limit);

    if (rc != want_rc || test_count(out, " OK\n") < want_ok) {
        test_fail(__FILE__, __LINE__,
            "case %s %s on %d ranks over TCP (%s%s%s): exit %d, wanted %d\n%s",
            name, arg ? arg : "", n, env[0], env[1] ? ", " : "",
            env[1] ? env[1] : "", rc, want_rc, out);
    }
    free(out);
}

static void
tcp_pass(int n, const char *name, const char *arg, const char *const *env)
{
    tcp_expect(n, name, arg, env, 0, n, 150);
}

#define ENV(...) ((const char *const[]) { __VA_ARGS__, NULL })

#define TCP_CASE(tname, n, case_name, arg, ...)                               \
    TEST_T(tname, 160)                                                        \
    {                                                                         \
        tcp_pass(n, case_name, arg, ENV(__VA_ARGS__));                        \
    }

// Compiled custom collectives over TCP.
TCP_CASE(tcp_plan_examples_4, 4, "plan_examples", NULL, TCP)
TCP_CASE(tcp_plan_random_3, 3, "plan_random", "60", TCP, TINY)
TCP_CASE(tcp_plan_errors_3, 3, "plan_errors", NULL, TCP)

// Point-to-point, broadcast, barrier, split.
TCP_CASE(tcp_p2p_2, 2, "p2p", NULL, TCP)
TCP_CASE(tcp_p2p_4, 4, "p2p", NULL, TCP, TINY)
TCP_CASE(tcp_p2p_tags_3, 3, "p2p_tags", NULL, TCP, TINY, SOCKETS3)
TCP_CASE(tcp_p2p_async_3, 3, "p2p_async", NULL, TCP)
TCP_CASE(tcp_p2p_untracked_3, 3, "p2p_untracked", NULL, TCP)
TCP_CASE(tcp_progress_2, 2, "progress", NULL, TCP)
TCP_CASE(tcp_p2p_any_2, 2, "p2p_any", NULL, TCP)
TCP_CASE(tcp_p2p_any_3, 3, "p2p_any", NULL, TCP, TINY, SOCKETS3)
TCP_CASE(tcp_p2p_any_4, 4, "p2p_any", NULL, TCP)
TCP_CASE(tcp_p2p_any_early_2, 2, "p2p_any_early", NULL, TCP)
TCP_CASE(tcp_p2p_any_early_3, 3, "p2p_any_early", NULL, TCP, TINY)
TCP_CASE(tcp_p2p_any_early_4, 4, "p2p_any_early", NULL, TCP)
TCP_CASE(tcp_p2p_any_mixed_2, 2, "p2p_any_mixed", NULL, TCP, TINY)
TCP_CASE(tcp_p2p_any_mixed_3, 3, "p2p_any_mixed", NULL, TCP)
TCP_CASE(tcp_p2p_any_mixed_4, 4, "p2p_any_mixed", NULL, TCP, TINY, SOCKETS3)
TCP_CASE(tcp_p2p_any_left_3, 3, "p2p_any_errors", "left", TCP)
TCP_CASE(tcp_p2p_any_timeout_2, 2, "p2p_any_errors", "timeout", TCP)
TCP_CASE(tcp_p2p_any_mismatch_3, 3, "p2p_any_errors", "mismatch", TCP)
TCP_CASE(tcp_bcast_3, 3, "bcast", NULL, TCP, TINY)
TCP_CASE(tcp_barrier_5, 5, "barrier", NULL, TCP)
TCP_CASE(tcp_split_4, 4, "split", NULL, TCP)
TCP_CASE(tcp_bad_args_2, 2, "bad_args", NULL, TCP)
TCP_CASE(tcp_idle_2, 2, "idle", NULL, TCP)

// The collective matrix's sample at 2, 3 and 4 ranks with the defaults,
// then with tiny frames over 3 sockets per peer.
#define TCP_COLL(name, case_name)                                             \
    TCP_CASE(tcp_##name##_2, 2, case_name, "sample", TCP)                     \
    TCP_CASE(tcp_##name##_3, 3, case_name, "sample", TCP, TINY, SOCKETS3)     \
    TCP_CASE(tcp_##name##_4, 4, case_name, "sample", TCP)

TCP_COLL(all_reduce, "coll_all_reduce")
TCP_COLL(reduce, "coll_reduce")
TCP_COLL(all_gather, "coll_all_gather")
TCP_COLL(all_gather_v, "coll_all_gather_v")
TCP_COLL(reduce_scatter, "coll_reduce_scatter")
TCP_COLL(reduce_scatter_v, "coll_reduce_scatter_v")
TCP_COLL(all_to_all, "coll_all_to_all")
TCP_COLL(all_to_all_v, "coll_all_to_all_v")
TCP_COLL(gather, "coll_gather")
TCP_COLL(scatter, "coll_scatter")
TCP_COLL(nan, "coll_nan")
TCP_COLL(inflight, "coll_inflight")
TCP_COLL(reuse, "coll_reuse")
TCP_COLL(destroy, "coll_destroy")

// Each network algorithm forced at every size.
#define ALL_RING                                                              \
    "SHOAL_ALGO=allreduce:ring;reduce:ring;allgather:ring;"                   \
    "reducescatter:ring;broadcast:ring"
#define ALL_SMALL                                                             \
    "SHOAL_ALGO=allreduce:rhd;reduce:flat;allgather:flat;"                    \
    "reducescatter:flat;broadcast:flat"
TCP_CASE(
    tcp_ring_all_reduce_5, 5, "coll_all_reduce", "sample", TCP, TINY, ALL_RING)
TCP_CASE(tcp_ring_reduce_3, 3, "coll_reduce", "sample", TCP, ALL_RING)
TCP_CASE(
    tcp_ring_all_gather_3, 3, "coll_all_gather", "sample", TCP, TINY, ALL_RING)
TCP_CASE(tcp_ring_reduce_scatter_4, 4, "coll_reduce_scatter_v", "sample", TCP,
    ALL_RING)
TCP_CASE(tcp_ring_bcast_4, 4, "bcast", NULL, TCP, TINY, ALL_RING)
TCP_CASE(tcp_rhd_all_reduce_5, 5, "coll_all_reduce", "sample", TCP, ALL_SMALL)
TCP_CASE(tcp_flat_reduce_3, 3, "coll_reduce", "sample", TCP, ALL_SMALL)
TCP_CASE(tcp_flat_reduce_scatter_3, 3, "coll_reduce_scatter", "sample", TCP,
    ALL_SMALL)
TCP_CASE(
    tcp_flat_all_gather_v_4, 4, "coll_all_gather_v", "sample", TCP, ALL_SMALL)
// Bruck's all-gather on rank counts that are not powers of two (its last
// round sends fewer slots than the one before).
#define BRUCK "SHOAL_ALGO=allgather:bruck"
TCP_CASE(
    tcp_bruck_all_gather_5, 5, "coll_all_gather", "sample", TCP, TINY, BRUCK)
TCP_CASE(tcp_bruck_all_gather_v_6, 6, "coll_all_gather_v", "sample", TCP,
    SOCKETS3, BRUCK)
TCP_CASE(tcp_one_socket_all_reduce_2, 2, "coll_all_reduce", "sample", TCP,
    "SHOAL_SOCKETS_PER_PEER=1")

// float16/bfloat16 reductions bit for bit as over shared memory (float32
// in rank order, one rounding), with the default algorithms, tiny pieces
// (receive rows reused), and each algorithm forced at every size.
TCP_CASE(tcp_coll_half_3, 3, "coll_half", NULL, TCP, TINY, SOCKETS3)
TCP_CASE(tcp_coll_half_8, 8, "coll_half", NULL, TCP)
TCP_CASE(tcp_ring_coll_half_8, 8, "coll_half", NULL, TCP, TINY, ALL_RING)
TCP_CASE(tcp_small_coll_half_3, 3, "coll_half", NULL, TCP, ALL_SMALL)

// The transport's memory operations: nothing mapped, nothing copied.
TCP_CASE(tcp_tp_mem_3, 3, "tp_mem", NULL, TCP)
TCP_CASE(tcp_mem_reg_3, 3, "mem_reg", NULL, TCP)

// Bad calls and failures.
TCP_CASE(tcp_coll_bad_args_3, 3, "coll_bad_args", NULL, TCP)
TCP_CASE(tcp_timeout_3, 3, "timeout", NULL, TCP)
TCP_CASE(tcp_call_opts_3, 3, "call_opts", NULL, TCP)
TCP_CASE(tcp_mismatch_count_2, 2, "mismatch", "count", TCP)
TCP_CASE(tcp_mismatch_dtype_4, 4, "mismatch", "dtype", TCP)
TCP_CASE(tcp_p2p_mismatch_3, 3, "p2p_mismatch", NULL, TCP)
TCP_CASE(
    tcp_mismatch_gather_scatter_3, 3, "coll_mismatch", "gather_scatter", TCP)
TCP_CASE(tcp_mismatch_broadcast_root_3, 3, "coll_mismatch",
    "broadcast_root_large", TCP)
TCP_CASE(
    tcp_mismatch_send_collective_3, 3, "coll_mismatch", "send_collective", TCP)

// A rank killed mid-broadcast: the others fail within 2 s naming it.
TEST_T(tcp_kill_3, 60)
{
    tcp_expect(3, "kill", NULL, ENV(TCP), 137, 2, 50);
}

// A rank killed while rank 0 waits in an any-source receive.
TEST_T(tcp_p2p_any_kill_3, 60)
{
    tcp_expect(3, "p2p_any_kill", NULL, ENV(TCP), 137, 2, 50);
}

// A bad SHOAL_TRANSPORT or SHOAL_SOCKETS_PER_PEER is a clear error.
TEST_T(tcp_bad_env, 60)
{
    char       *out;
    const char *argv[] = { test_build_path("tools/shoalrun"), "-n", "2",
        test_build_path("tests/shoal_mptest"), "barrier", NULL };

    int rc = test_run(argv, ENV("SHOAL_TRANSPORT=carrier-pigeon"), &out, 50);
    CHECK_MSG(rc != 0 && strstr(out, "SHOAL_TRANSPORT") != NULL
            && strstr(out, "shm or auto") != NULL,
        "exit %d\n%s", rc, out);
    free(out);
    rc = test_run(argv, ENV(TCP, "SHOAL_SOCKETS_PER_PEER=0"), &out, 50);
    CHECK_MSG(rc != 0 && strstr(out, "SHOAL_SOCKETS_PER_PEER=0") != NULL,
        "exit %d\n%s", rc, out);
    free(out);
}
