// Multi-process test cases: shoal_mptest CASE runs one case on the rank it
// was started as (under shoalrun, or with SHOAL_RANK/SHOAL_SIZE/SHOAL_STORE
// set by a test); the case returns 0 on success. Failures print a line
// naming the rank, then the case returns 1.
#ifndef SHOAL_MPTEST_H
#define SHOAL_MPTEST_H

#include <stdio.h>
#include <stdlib.h>

#include "shoal.h"

#define MP_CHECK(cond)                                                        \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,  \
                #cond);                                                       \
            return 1;                                                         \
        }                                                                     \
    } while (0)

#define MP_OK(expr)                                                           \
    do {                                                                      \
        int mp_st_ = (expr);                                                  \
        if (mp_st_ != SHOAL_OK) {                                             \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__,          \
                __LINE__, #expr, shoal_status_name(mp_st_),                   \
                shoal_last_error());                                          \
            return 1;                                                         \
        }                                                                     \
    } while (0)

// Expects `expr` to return `want`; prints the message of a failure.
#define MP_EXPECT(expr, want)                                                 \
    do {                                                                      \
        int mp_st_ = (expr);                                                  \
        if (mp_st_ != (want)) {                                               \
            fprintf(stderr, "%s:%d: %s returned %s, wanted %s: %s\n",         \
                __FILE__, __LINE__, #expr, shoal_status_name(mp_st_),         \
                shoal_status_name(want), shoal_last_error());                 \
            return 1;                                                         \
        }                                                                     \
        if (mp_st_ != SHOAL_OK) {                                             \
            printf("expected error %s: %s\n", shoal_status_name(mp_st_),      \
                shoal_last_error());                                          \
        }                                                                     \
    } while (0)

typedef int (*mp_case_fn)(shoal_comm *comm, int argc, char **argv);

// Deterministic test pattern: byte i of rank r's message number k.
static inline unsigned char
mp_pattern(int r, int k, size_t i)
{
    return (unsigned char) (i * 131u + (unsigned) r * 17u + (unsigned) k * 7u
        + 1u);
}

void   mp_fill(void *buf, size_t bytes, int r, int k);
int    mp_verify(const void *buf, size_t bytes, int r, int k);
double mp_now(void);
void   mp_sleep_ms(int ms);
// Every rank has entered; unlike shoal_barrier (which implies
// shoal_comm_sync) operations pending on this rank stay pending, as a
// receive posted for a message its sender sends after the meeting.
int mp_meet(shoal_comm *comm);

int mp_case_p2p(shoal_comm *comm, int argc, char **argv);
int mp_case_queue(shoal_comm *comm, int argc, char **argv);
int mp_case_queue_kill(shoal_comm *comm, int argc, char **argv);
int mp_case_queue_full(shoal_comm *comm, int argc, char **argv);
int mp_case_queue_all(shoal_comm *comm, int argc, char **argv);
int mp_case_p2p_tags(shoal_comm *comm, int argc, char **argv);
int mp_case_p2p_async(shoal_comm *comm, int argc, char **argv);
int mp_case_p2p_arrived(shoal_comm *comm, int argc, char **argv);
int mp_case_p2p_forged(shoal_comm *comm, int argc, char **argv);
int mp_case_p2p_early(shoal_comm *comm, int argc, char **argv);
int mp_case_p2p_threads(shoal_comm *comm, int argc, char **argv);
int mp_case_progress(shoal_comm *comm, int argc, char **argv);
int mp_case_p2p_untracked(shoal_comm *comm, int argc, char **argv);
int mp_case_p2p_any(shoal_comm *comm, int argc, char **argv);
int mp_case_p2p_any_early(shoal_comm *comm, int argc, char **argv);
int mp_case_p2p_any_mixed(shoal_comm *comm, int argc, char **argv);
int mp_case_p2p_any_kill(shoal_comm *comm, int argc, char **argv);
int mp_case_p2p_any_errors(shoal_comm *comm, int argc, char **argv);
int mp_case_bcast(shoal_comm *comm, int argc, char **argv);
int mp_case_barrier(shoal_comm *comm, int argc, char **argv);
int mp_case_split(shoal_comm *comm, int argc, char **argv);
int mp_case_bad_args(shoal_comm *comm, int argc, char **argv);
int mp_case_kill(shoal_comm *comm, int argc, char **argv);
int mp_case_wait_for_abort(shoal_comm *comm, int argc, char **argv);
int mp_case_req_after_destroy(shoal_comm *world, int argc, char **argv);
int mp_case_fork(shoal_comm *comm, int argc, char **argv);
int mp_case_split_kill(shoal_comm *comm, int argc, char **argv);
int mp_case_create_kill(shoal_comm *comm, int argc, char **argv);
int mp_case_tp_mem(shoal_comm *comm, int argc, char **argv);
int mp_case_mem_reg(shoal_comm *comm, int argc, char **argv);
int mp_case_window_ring(shoal_comm *comm, int argc, char **argv);
int mp_case_tuning(shoal_comm *comm, int argc, char **argv);
int mp_case_tuned(shoal_comm *comm, int argc, char **argv);
int mp_case_forced_algo(shoal_comm *comm, int argc, char **argv);
int mp_case_direct_paused(shoal_comm *comm, int argc, char **argv);
int mp_case_window_map(shoal_comm *comm, int argc, char **argv);
int mp_case_window_errors(shoal_comm *comm, int argc, char **argv);
int mp_case_window_kill(shoal_comm *comm, int argc, char **argv);
int mp_case_window_timeout(shoal_comm *comm, int argc, char **argv);
int mp_case_call_opts(shoal_comm *comm, int argc, char **argv);
int mp_case_caller_waits(shoal_comm *comm, int argc, char **argv);
int mp_case_recreate_kill(shoal_comm *comm, int argc, char **argv);
int mp_case_split_keys(shoal_comm *comm, int argc, char **argv);
int mp_case_create_history(shoal_comm *comm, int argc, char **argv);
int mp_case_split_waits(shoal_comm *comm, int argc, char **argv);
int mp_case_split_left(shoal_comm *comm, int argc, char **argv);
int mp_case_freeze(shoal_comm *comm, int argc, char **argv);
int mp_case_fault(shoal_comm *comm, int argc, char **argv);
int mp_case_recover(shoal_comm *comm, int argc, char **argv);
int mp_case_revoke(shoal_comm *comm, int argc, char **argv);
int mp_case_stopped(shoal_comm *comm, int argc, char **argv);
int mp_case_stragglers(shoal_comm *comm, int argc, char **argv);
// The fault matrix's helpers (cases_fault.c): one call of a phase's
// operation (MP_FAULT_COUNT floats per rank in a and b; MP_FAULT_BIG for
// mid_transfer), and the process's open descriptors (counted, listed).
#define MP_FAULT_COUNT 4096
#define MP_FAULT_BIG   ((size_t) 4 << 20)
int  mp_fault_op(shoal_comm *comm, const char *phase, float *a, float *b);
int  mp_open_fds(void);
void mp_list_fds(void);
int  mp_case_fault_loop(shoal_comm *comm, int argc, char **argv);
int  mp_case_store_owner_kill(shoal_comm *comm, int argc, char **argv);
int  mp_case_numa_heap(shoal_comm *comm, int argc, char **argv);
int  mp_case_pinned_policy(shoal_comm *comm, int argc, char **argv);
int  mp_case_timeout(shoal_comm *comm, int argc, char **argv);
int  mp_case_mismatch(shoal_comm *comm, int argc, char **argv);
int  mp_case_p2p_mismatch(shoal_comm *comm, int argc, char **argv);
int  mp_case_idle(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_all_reduce(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_reduce(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_all_gather(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_all_gather_v(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_reduce_scatter(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_reduce_scatter_v(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_all_to_all(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_all_to_all_v(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_gather(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_scatter(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_nan(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_inflight(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_bad_args(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_mismatch(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_ref(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_half(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_reuse(shoal_comm *comm, int argc, char **argv);
int  mp_case_inline_rooted(shoal_comm *comm, int argc, char **argv);
int  mp_case_coll_destroy(shoal_comm *comm, int argc, char **argv);
int  mp_case_net_loop(shoal_comm *comm, int argc, char **argv);
int  mp_case_plan_examples(shoal_comm *comm, int argc, char **argv);
int  mp_case_plan_random(shoal_comm *comm, int argc, char **argv);
int  mp_case_plan_alias(shoal_comm *comm, int argc, char **argv);
int  mp_case_plan_large(shoal_comm *comm, int argc, char **argv);
int  mp_case_plan_errors(shoal_comm *comm, int argc, char **argv);
int  mp_case_plan_tensors(shoal_comm *comm, int argc, char **argv);

#endif
