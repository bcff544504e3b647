// Bad input to the collectives with reductions and data movement.
//
// coll_bad_args: arguments that are wrong on every rank fail there with
// SHOAL_EINVAL before anything is sent (non-blocking forms leave *req
// NULL), with a message, and the communicator keeps working: a checked
// all_reduce and all_to_all follow. Every check runs even after one
// fails, so one run lists every miss.
//
// coll_mismatch WHAT: rank 0 calls something other ranks do not (count,
// dtype, op, root, counts of a v-collective, or another collective), then
// every rank calls a barrier: every rank must get SHOAL_EMISMATCH from the
// one or the other (and SHOAL_EABORTED from the barrier if the collective
// itself failed). One job per WHAT, as the communicator is aborted after.
#include <string.h>

#include "mptest.h"
#include "ref.h"

typedef struct ce_state {
    shoal_comm *comm;
    int         rank;
    int         checks, misses;
} ce_state;

// Counts a check of `st` against SHOAL_EINVAL; prints misses (any rank)
// and the message (rank 0).
static void
ce_expect(ce_state *e, int st, const char *what, int line)
{
    const char *msg = shoal_last_error();

    e->checks++;
    if (st != SHOAL_EINVAL) {
        e->misses++;
        fprintf(stderr,
            "rank %d: FAIL line %d: %s returned %s, wanted SHOAL_EINVAL: "
            "%s\n",
            e->rank, line, what, shoal_status_name(st), msg);
    } else if (msg == NULL || msg[0] == '\0') {
        e->misses++;
        fprintf(stderr,
            "rank %d: FAIL line %d: %s: EINVAL without a message\n", e->rank,
            line, what);
    } else if (e->rank == 0) {
        printf("ok EINVAL: %s: %s\n", what, msg);
    }
}

#define CE(expr) ce_expect(&e, (expr), #expr, __LINE__)

// Non-blocking form: also *req must be NULL afterwards.
#define CE_REQ(expr)                                                          \
    do {                                                                      \
        req = (shoal_request *) &e;                                           \
        ce_expect(&e, (expr), #expr, __LINE__);                               \
        if (req != NULL) {                                                    \
            e.misses++;                                                       \
            fprintf(stderr,                                                   \
                "rank %d: FAIL line %d: *req not NULL after %s\n", e.rank,    \
                __LINE__, #expr);                                             \
        }                                                                     \
    } while (0)

int
mp_case_coll_bad_args(shoal_comm *comm, int argc, char **argv)
{
    int               me = shoal_comm_rank(comm), n = shoal_comm_size(comm);
    ce_state          e = { comm, me, 0, 0 };
    shoal_request    *req;
    static float      f[1024], g[1024];
    static int32_t    a[1024], b[1024];
    static uint8_t    bo[1024];
    size_t            counts[CC_MAX_RANKS], displ = 4 * (size_t) me;
    shoal_reduce_op   sum    = SHOAL_REDUCE_OP(SHOAL_SUM);
    shoal_reduce_op   band   = SHOAL_REDUCE_OP(SHOAL_BAND);
    shoal_reduce_op   avg    = SHOAL_REDUCE_OP(SHOAL_AVG);
    shoal_reduce_op   bxor   = SHOAL_REDUCE_OP(SHOAL_BXOR);
    shoal_reduce_op   pre    = SHOAL_PREMUL_SUM_OP(2.0);
    shoal_reduce_op   nokind = SHOAL_REDUCE_OP((shoal_op_kind) 42);
    const shoal_dtype F32 = SHOAL_FLOAT32, I32 = SHOAL_INT32;
    (void) argc;
    (void) argv;

    MP_CHECK(n <= CC_MAX_RANKS && 4 * n + 8 <= 1024);
    MP_OK(shoal_comm_set_timeout(comm, 30000)); // a hang fails, named
    for (int r = 0; r < n; r++) {
        counts[r] = 4;
    }

    // all_reduce
    CE(shoal_all_reduce(comm, NULL, g, 4, F32, sum));
    CE(shoal_all_reduce(comm, f, NULL, 4, F32, sum));
    CE(shoal_all_reduce(comm, NULL, NULL, 4, F32, sum));
    CE(shoal_all_reduce(comm, f, g, 4, F32, band)); // band on float32
    CE(shoal_all_reduce(comm, a, b, 4, I32, pre)); // premul_sum on int32
    CE(shoal_all_reduce(comm, bo, bo + 64, 4, SHOAL_BOOL, avg)); // avg/bool
    CE(shoal_all_reduce(comm, f, g, 4, (shoal_dtype) 42, sum));
    CE(shoal_all_reduce(comm, f, g, 4, (shoal_dtype) -1, sum));
    CE(shoal_all_reduce(comm, f, g, 4, F32, nokind));
    CE(shoal_all_reduce(comm, f, f + 1, 4, F32, sum)); // partial overlap
    CE(shoal_all_reduce(comm, f + 3, f, 4, F32, sum)); // partial overlap
    CE(shoal_all_reduce(NULL, f, g, 4, F32, sum));
    CE_REQ(shoal_iall_reduce(comm, f, g, 4, F32, band, &req));
    CE_REQ(shoal_iall_reduce(comm, NULL, g, 4, F32, sum, &req));
    // Every invalid dtype/op pair.
    for (int dt = 0; dt < SHOAL_DTYPE_COUNT; dt++) {
        for (int k = 0; k < SHOAL_OP_COUNT; k++) {
            char what[96];
            if (ref_pair_valid((shoal_dtype) dt, (shoal_op_kind) k)) {
                continue;
            }
            snprintf(what, sizeof(what), "all_reduce(%s, %s)",
                shoal_dtype_name(dt), shoal_op_name(k));
            shoal_reduce_op op = SHOAL_REDUCE_OP((shoal_op_kind) k);
            op.scalar          = 1.0;
            ce_expect(&e,
                shoal_all_reduce(comm, a, b, 4, (shoal_dtype) dt, op), what,
                __LINE__);
        }
    }

    // reduce
    CE(shoal_reduce(comm, f, g, 4, F32, sum, n)); // root out of range
    CE(shoal_reduce(comm, f, g, 4, F32, sum, -1));
    CE(shoal_reduce(comm, NULL, g, 4, F32, sum, 0));
    CE(shoal_reduce(comm, a, b, 4, I32, pre, 0));
    CE(shoal_reduce(comm, f, g, 4, F32, bxor, 0));
    CE_REQ(shoal_ireduce(comm, f, g, 4, F32, sum, n, &req));

    // all_gather
    CE(shoal_all_gather(comm, NULL, g, 4, F32));
    CE(shoal_all_gather(comm, f, NULL, 4, F32));
    CE(shoal_all_gather(comm, f, g, 4, (shoal_dtype) 42));
    CE(shoal_all_gather(comm, g + displ + 1, g, 4, F32)); // partial overlap
    if (n > 1) { // another rank's block: overlap, but not the in-place form
        CE(shoal_all_gather(comm, g + 4 * (size_t) ((me + 1) % n), g, 4, F32));
    }
    CE_REQ(shoal_iall_gather(comm, NULL, g, 4, F32, &req));

    // all_gather_v
    CE(shoal_all_gather_v(comm, f, g, NULL, F32));
    CE(shoal_all_gather_v(comm, NULL, g, counts, F32));
    CE(shoal_all_gather_v(comm, f, NULL, counts, F32));
    CE(shoal_all_gather_v(comm, g + displ + 1, g, counts, F32));
    CE_REQ(shoal_iall_gather_v(comm, f, g, counts, (shoal_dtype) 42, &req));

    // reduce_scatter
    CE(shoal_reduce_scatter(comm, NULL, g, 4, F32, sum));
    CE(shoal_reduce_scatter(comm, f, NULL, 4, F32, sum));
    CE(shoal_reduce_scatter(comm, f, g, 4, F32, bxor));
    CE(shoal_reduce_scatter(comm, bo, bo + 512, 4, SHOAL_BOOL, avg));
    CE(shoal_reduce_scatter(comm, f, f + displ + 1, 4, F32, sum)); // overlap
    CE_REQ(shoal_ireduce_scatter(comm, a, b, 4, I32, pre, &req));

    // reduce_scatter_v
    CE(shoal_reduce_scatter_v(comm, f, g, NULL, F32, sum));
    CE(shoal_reduce_scatter_v(comm, NULL, g, counts, F32, sum));
    CE(shoal_reduce_scatter_v(comm, bo, bo + 512, counts, SHOAL_BOOL, avg));
    CE(shoal_reduce_scatter_v(comm, f, f + displ + 1, counts, F32, sum));
    CE_REQ(shoal_ireduce_scatter_v(comm, f, g, counts, F32, nokind, &req));

    // all_to_all: never in place
    CE(shoal_all_to_all(comm, f, f, 4, F32)); // sendbuf == recvbuf
    CE(shoal_all_to_all(comm, f, f + 1, 4, F32)); // partial overlap
    CE(shoal_all_to_all(comm, NULL, g, 4, F32));
    CE(shoal_all_to_all(comm, f, NULL, 4, F32));
    CE(shoal_all_to_all(comm, f, g, 4, (shoal_dtype) 42));
    CE_REQ(shoal_iall_to_all(comm, f, f, 4, F32, &req));

    // all_to_all_v
    CE(shoal_all_to_all_v(comm, f, counts, f, counts, F32)); // same buffer
    CE(shoal_all_to_all_v(comm, f, counts, f + 2, counts, F32)); // overlap
    CE(shoal_all_to_all_v(comm, f, NULL, g, counts, F32));
    CE(shoal_all_to_all_v(comm, f, counts, g, NULL, F32));
    CE(shoal_all_to_all_v(comm, NULL, counts, g, counts, F32));
    CE_REQ(shoal_iall_to_all_v(comm, f, counts, f, counts, F32, &req));

    // gather
    CE(shoal_gather(comm, f, g, 4, F32, n));
    CE(shoal_gather(comm, f, g, 4, F32, -1));
    CE(shoal_gather(comm, NULL, g, 4, F32, 0));
    CE(shoal_gather(comm, f, g, 4, (shoal_dtype) 42, 0));
    CE_REQ(shoal_igather(comm, f, g, 4, F32, n + 3, &req));

    // scatter: recvbuf is needed on every rank
    CE(shoal_scatter(comm, f, g, 4, F32, n));
    CE(shoal_scatter(comm, f, g, 4, F32, -1));
    CE(shoal_scatter(comm, f, NULL, 4, F32, 0));
    CE(shoal_scatter(comm, f, g, 4, (shoal_dtype) 42, 0));
    CE_REQ(shoal_iscatter(comm, f, g, 4, F32, -2, &req));

    // shoal_alloc / shoal_free
    void *p = NULL;
    CE(shoal_alloc(comm, 64, NULL));
    CE(shoal_alloc(NULL, 64, &p));
    CE(shoal_free(comm, f)); // not from shoal_alloc
    MP_OK(shoal_alloc(comm, 4096, &p));
    MP_CHECK(p != NULL && ((uintptr_t) p & 63) == 0);
    CE(shoal_free(comm, (char *) p + 64)); // inside, not the start
    MP_OK(shoal_free(comm, p));
    CE(shoal_free(comm, p)); // twice
    MP_OK(shoal_free(comm, NULL));

    // The communicator still works, and so do the same calls done right.
    cc_spec s;
    cc_spec_init(&s, CC_ALL_REDUCE, SHOAL_INT32, SHOAL_SUM, 7, 99);
    int rc = cc_run(comm, &s);
    cc_spec_init(&s, CC_ALL_TO_ALL, SHOAL_FLOAT32, -1, 4, 100);
    if (rc == CC_PASS) {
        rc = cc_run(comm, &s);
    }
    cc_spec_init(&s, CC_ALL_GATHER, SHOAL_FLOAT32, -1, 4, 101);
    s.inplace = 1;
    if (rc == CC_PASS) {
        rc = cc_run(comm, &s);
    }
    if (rc != CC_PASS) {
        fprintf(
            stderr, "rank %d: FAIL: collectives after the bad calls\n", me);
        e.misses++;
    }
    if (me == 0) {
        printf("bad args [%d ranks]: %d checks, %d missed\n", n, e.checks,
            e.misses);
    }
    return e.misses ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Mismatched calls
// ---------------------------------------------------------------------------

#define CE_BIG (1u << 22) // floats: 16 MiB, the single-copy paths

int
mp_case_coll_mismatch(shoal_comm *comm, int argc, char **argv)
{
    int               me = shoal_comm_rank(comm), n = shoal_comm_size(comm);
    const char       *what = argc > 0 ? argv[0] : "all_reduce_count";
    int               odd  = me == 0;
    static float      f[4096], g[4096], big[CE_BIG];
    size_t            c1[CC_MAX_RANKS], c2[CC_MAX_RANKS];
    shoal_reduce_op   sum = SHOAL_REDUCE_OP(SHOAL_SUM);
    const shoal_dtype F32 = SHOAL_FLOAT32;
    size_t            cnt = odd ? 8 : 4;
    int               st1;

    MP_CHECK(n > 1 && n <= CC_MAX_RANKS);
    // An undetected mismatch must not hang the job: it times out instead
    // (and fails the checks below).
    MP_OK(shoal_comm_set_timeout(comm, 15000));
    if (strcmp(what, "gather_scatter") == 0) {
        // Over TCP nothing on the wire shows this one (both calls only
        // receive there): it is found, as a mismatch, at the deadline.
        MP_OK(shoal_comm_set_timeout(comm, 1000));
    }
    for (int r = 0; r < n; r++) {
        c1[r] = 4;
        c2[r] = 4;
    }
    if (strcmp(what, "all_reduce_count") == 0) {
        st1 = shoal_all_reduce(comm, f, g, cnt, F32, sum);
    } else if (strcmp(what, "all_reduce_dtype") == 0) {
        st1 = shoal_all_reduce(comm, f, g, 4, odd ? SHOAL_INT32 : F32, sum);
    } else if (strcmp(what, "all_reduce_op") == 0) {
        st1 = shoal_all_reduce(
            comm, f, g, 4, F32, SHOAL_REDUCE_OP(odd ? SHOAL_MAX : SHOAL_SUM));
    } else if (strcmp(what, "reduce_op") == 0) {
        st1 = shoal_reduce(comm, f, g, 4, F32,
            SHOAL_REDUCE_OP(odd ? SHOAL_MIN : SHOAL_SUM), 0);
    } else if (strcmp(what, "reduce_scatter_op") == 0) {
        st1 = shoal_reduce_scatter(
            comm, f, g, 4, F32, SHOAL_REDUCE_OP(odd ? SHOAL_PROD : SHOAL_SUM));
    } else if (strcmp(what, "reduce_root") == 0) {
        st1 = shoal_reduce(comm, f, g, 4, F32, sum, odd ? 0 : 1);
    } else if (strcmp(what, "reduce_count") == 0) {
        st1 = shoal_reduce(comm, f, g, cnt, F32, sum, 1);
    } else if (strcmp(what, "all_gather_count") == 0) {
        st1 = shoal_all_gather(comm, f, g, cnt, F32);
    } else if (strcmp(what, "all_gather_v_counts") == 0) {
        c1[1] = odd ? 5 : 4;
        st1   = shoal_all_gather_v(comm, f, g, c1, F32);
    } else if (strcmp(what, "all_gather_v_split") == 0) {
        // Same total, split differently.
        c1[0] = odd ? 5 : 4;
        c1[1] = odd ? 3 : 4;
        st1   = shoal_all_gather_v(comm, f, g, c1, F32);
    } else if (strcmp(what, "reduce_scatter_v_split") == 0) {
        c1[0] = odd ? 2 : 4;
        c1[1] = odd ? 6 : 4;
        st1   = shoal_reduce_scatter_v(comm, f, g, c1, F32, sum);
    } else if (strcmp(what, "reduce_scatter_count") == 0) {
        st1 = shoal_reduce_scatter(comm, f, g, cnt, F32, sum);
    } else if (strcmp(what, "reduce_scatter_v_counts") == 0) {
        c1[n - 1] = odd ? 6 : 4;
        st1       = shoal_reduce_scatter_v(comm, f, g, c1, F32, sum);
    } else if (strcmp(what, "all_to_all_count") == 0) {
        st1 = shoal_all_to_all(comm, f, g, cnt, F32);
    } else if (strcmp(what, "all_to_all_v_counts") == 0) {
        // Rank 0 sends 5 to rank 1, which expects 4 from it.
        if (odd) {
            c1[1] = 5;
        }
        st1 = shoal_all_to_all_v(comm, f, c1, g, c2, F32);
    } else if (strcmp(what, "gather_root") == 0) {
        st1 = shoal_gather(comm, f, g, 4, F32, odd ? 0 : n - 1);
    } else if (strcmp(what, "scatter_count") == 0) {
        st1 = shoal_scatter(comm, f, g, cnt, F32, 0);
    } else if (strcmp(what, "broadcast_root_large") == 0) {
        st1 = shoal_broadcast(comm, big, CE_BIG, F32, odd ? 0 : 1);
    } else if (strcmp(what, "gather_scatter") == 0) {
        st1 = odd ? shoal_gather(comm, f, g, 4, F32, 0)
                  : shoal_scatter(comm, f, g, 4, F32, 0);
    } else if (strcmp(what, "send_collective") == 0) {
        st1 = odd ? shoal_send(comm, f, 4, F32, 1, 0)
                  : shoal_all_reduce(comm, f, g, 4, F32, sum);
    } else if (strcmp(what, "kind") == 0) {
        st1 = odd ? shoal_all_gather(comm, f, g, 4, F32)
                  : shoal_all_reduce(comm, f, g, 4, F32, sum);
    } else {
        fprintf(stderr, "unknown mismatch %s\n", what);
        return 1;
    }
    char first[1024];
    snprintf(first, sizeof(first), "%s", shoal_last_error());
    int st2 = shoal_barrier(comm);
    printf("rank %d: %s mismatch: first %s (%s), then %s: %s\n", me, what,
        shoal_status_name(st1), first, shoal_status_name(st2),
        shoal_last_error());
    MP_CHECK(st1 == SHOAL_EMISMATCH || st1 == SHOAL_OK);
    MP_CHECK(st2 == (st1 == SHOAL_OK ? SHOAL_EMISMATCH : SHOAL_EABORTED));
    MP_CHECK(shoal_last_error()[0] != '\0');
    // Later calls fail at once.
    MP_EXPECT(shoal_all_reduce(comm, f, g, 4, F32, sum), SHOAL_EABORTED);
    return 0;
}
