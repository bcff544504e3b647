// shoal_mptest: runs one multi-process test case as one rank.
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mptest.h"

static const struct {
    const char *name;
    mp_case_fn  fn;
} cases[] = {
    { "p2p", mp_case_p2p },
    { "p2p_tags", mp_case_p2p_tags },
    { "p2p_async", mp_case_p2p_async },
    { "p2p_arrived", mp_case_p2p_arrived },
    { "p2p_forged", mp_case_p2p_forged },
    { "p2p_early", mp_case_p2p_early },
    { "p2p_threads", mp_case_p2p_threads },
    { "progress", mp_case_progress },
    { "p2p_untracked", mp_case_p2p_untracked },
    { "p2p_any", mp_case_p2p_any },
    { "p2p_any_early", mp_case_p2p_any_early },
    { "p2p_any_mixed", mp_case_p2p_any_mixed },
    { "p2p_any_kill", mp_case_p2p_any_kill },
    { "p2p_any_errors", mp_case_p2p_any_errors },
    { "bcast", mp_case_bcast },
    { "barrier", mp_case_barrier },
    { "split", mp_case_split },
    { "bad_args", mp_case_bad_args },
    { "kill", mp_case_kill },
    { "wait_for_abort", mp_case_wait_for_abort },
    { "req_after_destroy", mp_case_req_after_destroy },
    { "fork", mp_case_fork },
    { "queue", mp_case_queue },
    { "queue_kill", mp_case_queue_kill },
    { "queue_full", mp_case_queue_full },
    { "queue_all", mp_case_queue_all },
    { "split_kill", mp_case_split_kill },
    { "create_kill", mp_case_create_kill },
    { "recreate_kill", mp_case_recreate_kill },
    { "split_keys", mp_case_split_keys },
    { "create_history", mp_case_create_history },
    { "split_waits", mp_case_split_waits },
    { "tp_mem", mp_case_tp_mem },
    { "mem_reg", mp_case_mem_reg },
    { "window_ring", mp_case_window_ring },
    { "tuning", mp_case_tuning },
    { "tuned", mp_case_tuned },
    { "forced_algo", mp_case_forced_algo },
    { "direct_paused", mp_case_direct_paused },
    { "window_map", mp_case_window_map },
    { "window_errors", mp_case_window_errors },
    { "window_kill", mp_case_window_kill },
    { "window_timeout", mp_case_window_timeout },
    { "call_opts", mp_case_call_opts },
    { "caller_waits", mp_case_caller_waits },
    { "split_left", mp_case_split_left },
    { "freeze", mp_case_freeze },
    { "fault", mp_case_fault },
    { "fault_loop", mp_case_fault_loop },
    { "recover", mp_case_recover },
    { "revoke", mp_case_revoke },
    { "stopped", mp_case_stopped },
    { "stragglers", mp_case_stragglers },
    { "store_owner_kill", mp_case_store_owner_kill },
    { "numa_heap", mp_case_numa_heap },
    { "pinned_policy", mp_case_pinned_policy },
    { "timeout", mp_case_timeout },
    { "mismatch", mp_case_mismatch },
    { "p2p_mismatch", mp_case_p2p_mismatch },
    { "idle", mp_case_idle },
    { "coll_all_reduce", mp_case_coll_all_reduce },
    { "coll_reduce", mp_case_coll_reduce },
    { "coll_all_gather", mp_case_coll_all_gather },
    { "coll_all_gather_v", mp_case_coll_all_gather_v },
    { "coll_reduce_scatter", mp_case_coll_reduce_scatter },
    { "coll_reduce_scatter_v", mp_case_coll_reduce_scatter_v },
    { "coll_all_to_all", mp_case_coll_all_to_all },
    { "coll_all_to_all_v", mp_case_coll_all_to_all_v },
    { "coll_gather", mp_case_coll_gather },
    { "coll_scatter", mp_case_coll_scatter },
    { "coll_nan", mp_case_coll_nan },
    { "coll_inflight", mp_case_coll_inflight },
    { "coll_bad_args", mp_case_coll_bad_args },
    { "coll_mismatch", mp_case_coll_mismatch },
    { "coll_ref", mp_case_coll_ref },
    { "coll_half", mp_case_coll_half },
    { "coll_reuse", mp_case_coll_reuse },
    { "inline_rooted", mp_case_inline_rooted },
    { "coll_destroy", mp_case_coll_destroy },
    { "net_loop", mp_case_net_loop },
    { "plan_examples", mp_case_plan_examples },
    { "plan_random", mp_case_plan_random },
    { "plan_alias", mp_case_plan_alias },
    { "plan_large", mp_case_plan_large },
    { "plan_errors", mp_case_plan_errors },
    { "plan_tensors", mp_case_plan_tensors },
};

void
mp_fill(void *buf, size_t bytes, int r, int k)
{
    unsigned char *p = buf;

    for (size_t i = 0; i < bytes; i++) {
        p[i] = mp_pattern(r, k, i);
    }
}

int
mp_verify(const void *buf, size_t bytes, int r, int k)
{
    const unsigned char *p = buf;

    for (size_t i = 0; i < bytes; i++) {
        if (p[i] != mp_pattern(r, k, i)) {
            fprintf(stderr,
                "byte %zu of message %d from rank %d is %u, "
                "expected %u\n",
                i, k, r, p[i], mp_pattern(r, k, i));
            return 0;
        }
    }
    return 1;
}

double
mp_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

int
mp_meet(shoal_comm *comm)
{
    shoal_request *req;
    int            st = shoal_ibarrier(comm, &req);

    if (st == SHOAL_OK) {
        st = shoal_wait(req, -1);
        shoal_request_free(req);
    }
    return st;
}

// LeakSanitizer calls this before its check at exit. A forked child of a
// rank skips the check: the check locks the whole allocator, and a lock that
// another of the rank's threads held at the fork stays held in the child
// (gcc 12's libasan takes no fork handlers), so the child would hang. The
// child's leak report would be false anyway: its parent's threads, whose
// stacks hold pointers, do not exist in it.
static pid_t rank_pid;

int __lsan_is_turned_off(void);

int
__lsan_is_turned_off(void)
{
    return rank_pid != 0 && getpid() != rank_pid;
}

void
mp_sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000 };

    nanosleep(&ts, NULL);
}

int
main(int argc, char **argv)
{
    shoal_comm *comm;
    int         st;

    setvbuf(stdout, NULL, _IOLBF, 0);
    rank_pid = getpid();
    if (argc < 2) {
        fprintf(stderr, "usage: shoal_mptest CASE [args]\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (strcmp(cases[i].name, argv[1]) != 0) {
            continue;
        }
        st = shoal_comm_create(&comm, NULL);
        if (st != SHOAL_OK) {
            fprintf(stderr, "comm_create: %s: %s\n", shoal_status_name(st),
                shoal_last_error());
            return 1;
        }
        int rc   = cases[i].fn(comm, argc - 2, argv + 2);
        int rank = shoal_comm_rank(comm);
        st       = shoal_comm_destroy(comm);
        if (rc == 0 && st != SHOAL_OK) {
            fprintf(stderr, "rank %d: comm_destroy: %s\n", rank,
                shoal_last_error());
            rc = 1;
        }
        printf(
            "rank %d: case %s %s\n", rank, argv[1], rc == 0 ? "OK" : "FAILED");
        return rc;
    }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
