// Correctness matrix of the collectives with reductions and data movement:
// per collective, every dtype x every valid op x counts {0, 1, 7, 1023}
// x in-place/out-of-place (where the API has an in-place form) x roots,
// with blocking, wait and test completions and malloc/shoal_alloc buffers
// rotating from call to call, then calls of 1M+3 elements, then several
// non-blocking calls in flight at once. Every output element is checked
// against the reference (ref.h).
//
// Argument: "sample" (the default): every dtype/op pair at every small
// count, in place and out of place on alternate counts (so each pair sees
// both), every root at count 7, three pairs at 1M+3 rotating with the world
// size and seed. "full": every pair x every small count x both in-place
// forms x every root, and every pair both ways at 1M+3. "seed=N" changes
// the inputs and the rotation. Without an argument, SHOAL_COLL_FULL=1 in
// the environment selects full.
#include <string.h>

#include "mptest.h"
#include "ref.h"

#define CC_BIG ((size_t) (1u << 20) + 3)

static const size_t cc_small[] = { 0, 1, 7, 1023 };
#define CC_NSMALL (sizeof(cc_small) / sizeof(cc_small[0]))

// PREMUL_SUM scalars: two dyadic (exact in every type), one not.
static const double cc_scalars[] = { 0.375, -1.5, 1.0 / 3.0 };

typedef struct cc_opts {
    int      full;
    uint64_t seed;
} cc_opts;

typedef struct cc_tally {
    long   calls, wrong, big;
    double t0;
} cc_tally;

// Parses the arguments; also gives every operation a 120 s deadline, so
// that a hang fails with a message naming the operation well before the
// runner's time limit kills the job.
static int
cc_parse(shoal_comm *comm, int argc, char **argv, cc_opts *o)
{
    const char *env = getenv("SHOAL_COLL_FULL");

    if (shoal_comm_set_timeout(comm, 120000) != SHOAL_OK) {
        return -1;
    }

    o->full = env != NULL && strcmp(env, "1") == 0;
    o->seed = 1;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "full") == 0) {
            o->full = 1;
        } else if (strcmp(argv[i], "sample") == 0) {
            o->full = 0;
        } else if (strncmp(argv[i], "seed=", 5) == 0) {
            o->seed = strtoull(argv[i] + 5, NULL, 10);
        } else {
            fprintf(
                stderr, "unknown argument %s (sample|full|seed=N)\n", argv[i]);
            return -1;
        }
    }
    return 0;
}

// Runs one call; returns -1 if the ranks may be out of step (stop).
static int
cc_tally_run(shoal_comm *comm, cc_tally *t, const cc_spec *s)
{
    int rc = cc_run(comm, s);

    t->calls++;
    t->wrong += rc == CC_WRONG;
    return rc == CC_ERROR ? -1 : 0;
}

// The (dtype, op) pairs a collective runs with: every valid pair for
// reductions, every dtype (op -1) for data movement.
static int
cc_pairs(cc_coll coll, int *dts, int *ops)
{
    int n = 0;

    for (int dt = 0; dt < SHOAL_DTYPE_COUNT; dt++) {
        if (!cc_is_reduction(coll)) {
            dts[n]   = dt;
            ops[n++] = -1;
            continue;
        }
        for (int k = 0; k < SHOAL_OP_COUNT; k++) {
            if (ref_pair_valid((shoal_dtype) dt, (shoal_op_kind) k)) {
                dts[n]   = dt;
                ops[n++] = k;
            }
        }
    }
    return n;
}

// Fills the rotating fields of call number `iter`.
static void
cc_rotate(cc_spec *s, uint64_t iter)
{
    s->mode = iter % 4 == 1 ? CC_WAIT : iter % 4 == 3 ? CC_TEST : CC_BLOCKING;
    s->bufs = (int) ((iter / 2) % 3);
    s->null_empty = (int) ((iter / 3) % 2);
    s->misalign   = (int) ((iter / 5) % 3 == 2 ? 3 : (iter / 5) % 3);
    if (s->op.kind == SHOAL_PREMUL_SUM) {
        s->op.scalar = cc_scalars[iter % 3];
    }
}

// Several non-blocking calls of `coll` in flight, completed in reverse
// order, then in issue order.
static int
cc_burst(shoal_comm *comm, cc_coll coll, const cc_opts *o, cc_tally *t)
{
    enum { K = 6 };
    static const size_t counts[K] = { 1, 7, 1023, 0, 300, 64 };
    int                 size      = shoal_comm_size(comm);
    int                 dts[128], ops[128];
    int                 np = cc_pairs(coll, dts, ops);
    cc_call             calls[K];
    cc_spec             s;

    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < K; i++) {
            int p
                = (int) ((o->seed + 13u * (unsigned) i + 5u * (unsigned) round)
                    % (unsigned) np);
            uint64_t iter
                = o->seed * 7919u + 100000u + (uint64_t) (round * K + i);
            cc_spec_init(
                &s, coll, (shoal_dtype) dts[p], ops[p], counts[i], iter);
            cc_rotate(&s, iter);
            s.mode    = i % 2 ? CC_TEST : CC_WAIT;
            s.root    = (i + round) % size;
            s.inplace = cc_has_inplace(coll) && i % 3 == 1;
            if (cc_start(comm, &calls[i], &s) != CC_PASS) {
                return -1;
            }
        }
        for (int j = 0; j < K; j++) {
            int i  = round == 0 ? K - 1 - j : j;
            int rc = cc_finish(comm, &calls[i]);
            t->calls++;
            t->wrong += rc == CC_WRONG;
            if (rc == CC_ERROR) {
                return -1;
            }
        }
    }
    return 0;
}

static int
cc_matrix(shoal_comm *comm, cc_coll coll, int argc, char **argv)
{
    int      rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int      dts[128], ops[128];
    int      np  = cc_pairs(coll, dts, ops);
    int      nip = cc_has_inplace(coll) ? 2 : 1;
    cc_opts  o;
    cc_tally t = { 0, 0, 0, mp_now() };
    cc_spec  s;
    uint64_t iter = 0;

    if (cc_parse(comm, argc, argv, &o) != 0) {
        return 1;
    }
    for (int p = 0; p < np; p++) {
        for (size_t ci = 0; ci < CC_NSMALL; ci++) {
            for (int ip = 0; ip < nip; ip++) {
                if (!o.full && nip > 1 && ip != (int) ((size_t) p + ci) % 2) {
                    continue;
                }
                int all_roots
                    = cc_is_rooted(coll) && (o.full || cc_small[ci] == 7);
                for (int r = 0; r < (all_roots ? size : 1); r++) {
                    cc_spec_init(&s, coll, (shoal_dtype) dts[p], ops[p],
                        cc_small[ci], o.seed * 1000003u + iter);
                    cc_rotate(&s, iter);
                    s.root    = all_roots ? r : (int) (iter % (unsigned) size);
                    s.inplace = ip;
                    iter++;
                    if (cc_tally_run(comm, &t, &s) != 0) {
                        return 1;
                    }
                }
            }
        }
    }
    double t_small = mp_now() - t.t0;
    // 1M+3 elements: every pair both ways (full), or three pairs rotating
    // with the world size and seed (sample).
    int nbig = o.full ? np * nip : 3;
    for (int j = 0; j < nbig; j++) {
        int p = o.full ? j / nip
                       : (int) ((o.seed * 31u + (unsigned) size * 7u
                                    + (unsigned) j * (unsigned) (np / 3 + 1))
                           % (unsigned) np);
        cc_spec_init(&s, coll, (shoal_dtype) dts[p], ops[p], CC_BIG,
            o.seed * 1000003u + iter);
        cc_rotate(&s, iter);
        s.inplace = o.full ? j % nip : (j + size) % nip;
        s.bufs    = j % 3; // the zero-copy path matters most when large
        s.root    = (int) ((o.seed + (unsigned) j) % (unsigned) size);
        iter++;
        t.big++;
        if (cc_tally_run(comm, &t, &s) != 0) {
            return 1;
        }
    }
    double t_big = mp_now() - t.t0 - t_small;
    if (cc_burst(comm, coll, &o, &t) != 0) {
        return 1;
    }
    if (rank == 0) {
        printf("%s: small counts %.1f s, large %.1f s, in flight %.1f s\n",
            cc_coll_name(coll), t_small, t_big,
            mp_now() - t.t0 - t_small - t_big);
        printf("%s [%s, seed %llu, %d ranks]: %ld calls checked (%d %s x "
               "counts 0,1,7,1023%s%s; %ld at %zu elements; %d in flight "
               "x2), %ld wrong, shm fallbacks %ld, %.1f s\n",
            cc_coll_name(coll), o.full ? "full" : "sample",
            (unsigned long long) o.seed, size, t.calls, np,
            cc_is_reduction(coll) ? "dtype/op pairs" : "dtypes",
            nip == 1     ? ""
                : o.full ? " x in/out-of-place"
                         : ", in/out-of-place alternating",
            cc_is_rooted(coll)
                ? (o.full ? " x every root" : " x every root at count 7")
                : "",
            t.big, CC_BIG, 6, t.wrong, cc_shm_fallbacks, mp_now() - t.t0);
    }
    return t.wrong ? 1 : 0;
}

int
mp_case_coll_all_reduce(shoal_comm *comm, int argc, char **argv)
{
    return cc_matrix(comm, CC_ALL_REDUCE, argc, argv);
}

int
mp_case_coll_reduce(shoal_comm *comm, int argc, char **argv)
{
    return cc_matrix(comm, CC_REDUCE, argc, argv);
}

int
mp_case_coll_all_gather(shoal_comm *comm, int argc, char **argv)
{
    return cc_matrix(comm, CC_ALL_GATHER, argc, argv);
}

int
mp_case_coll_all_gather_v(shoal_comm *comm, int argc, char **argv)
{
    return cc_matrix(comm, CC_ALL_GATHER_V, argc, argv);
}

int
mp_case_coll_reduce_scatter(shoal_comm *comm, int argc, char **argv)
{
    return cc_matrix(comm, CC_REDUCE_SCATTER, argc, argv);
}

int
mp_case_coll_reduce_scatter_v(shoal_comm *comm, int argc, char **argv)
{
    return cc_matrix(comm, CC_REDUCE_SCATTER_V, argc, argv);
}

int
mp_case_coll_all_to_all(shoal_comm *comm, int argc, char **argv)
{
    return cc_matrix(comm, CC_ALL_TO_ALL, argc, argv);
}

int
mp_case_coll_all_to_all_v(shoal_comm *comm, int argc, char **argv)
{
    return cc_matrix(comm, CC_ALL_TO_ALL_V, argc, argv);
}

int
mp_case_coll_gather(shoal_comm *comm, int argc, char **argv)
{
    return cc_matrix(comm, CC_GATHER, argc, argv);
}

int
mp_case_coll_scatter(shoal_comm *comm, int argc, char **argv)
{
    return cc_matrix(comm, CC_SCATTER, argc, argv);
}

// NaN and +-inf among the inputs of MIN, MAX, SUM and AVG on the floating
// types, through every reducing collective: MIN/MAX propagate NaN.
int
mp_case_coll_nan(shoal_comm *comm, int argc, char **argv)
{
    static const cc_coll colls[]
        = { CC_ALL_REDUCE, CC_REDUCE, CC_REDUCE_SCATTER, CC_REDUCE_SCATTER_V };
    static const int kinds[] = { SHOAL_MIN, SHOAL_MAX, SHOAL_SUM, SHOAL_AVG };
    static const shoal_dtype dts[]
        = { SHOAL_FLOAT16, SHOAL_BFLOAT16, SHOAL_FLOAT32, SHOAL_FLOAT64 };
    static const size_t counts[] = { 7, 1023 };
    int                 size     = shoal_comm_size(comm);
    cc_opts             o;
    cc_tally            t = { 0, 0, 0, mp_now() };
    cc_spec             s;
    uint64_t            iter = 0;

    if (cc_parse(comm, argc, argv, &o) != 0) {
        return 1;
    }
    for (size_t c = 0; c < 4; c++) {
        for (size_t d = 0; d < 4; d++) {
            for (size_t k = 0; k < 4; k++) {
                for (size_t n = 0; n < 2; n++) {
                    for (int ip = 0; ip < 2; ip++) {
                        cc_spec_init(&s, colls[c], dts[d], kinds[k], counts[n],
                            o.seed * 77777u + iter);
                        cc_rotate(&s, iter);
                        s.cls     = REF_SPECIAL;
                        s.inplace = ip;
                        s.root    = (int) (iter % (unsigned) size);
                        iter++;
                        if (cc_tally_run(comm, &t, &s) != 0) {
                            return 1;
                        }
                    }
                }
            }
        }
    }
    if (shoal_comm_rank(comm) == 0) {
        printf("nan/inf [%d ranks]: %ld calls checked (all_reduce, reduce, "
               "reduce_scatter(_v) x 4 float dtypes x min,max,sum,avg x "
               "counts 7,1023 x in/out-of-place), %ld wrong, %.1f s\n",
            size, t.calls, t.wrong, mp_now() - t.t0);
    }
    return t.wrong ? 1 : 0;
}

// Every collective in flight at once (non-blocking), completed in a
// shuffled order, over several rounds; then the same with blocking calls
// issued while non-blocking ones are pending.
int
mp_case_coll_inflight(shoal_comm *comm, int argc, char **argv)
{
    static const size_t counts[] = { 5, 1023, 0, 64, 4099 };
    int                 size     = shoal_comm_size(comm);
    cc_opts             o;
    cc_tally            t = { 0, 0, 0, mp_now() };
    cc_call             calls[CC_COLL_COUNT];
    cc_spec             s;
    int                 dts[128], ops[128];

    if (cc_parse(comm, argc, argv, &o) != 0) {
        return 1;
    }
    int rounds = o.full ? 20 : 5;
    for (int round = 0; round < rounds; round++) {
        for (int c = 0; c < CC_COLL_COUNT; c++) {
            int      np = cc_pairs((cc_coll) c, dts, ops);
            int      p  = (int) ((o.seed + (unsigned) (round * 11 + c * 3))
                % (unsigned) np);
            uint64_t iter
                = o.seed * 4241u + (uint64_t) (round * CC_COLL_COUNT + c);
            cc_spec_init(&s, (cc_coll) c, (shoal_dtype) dts[p], ops[p],
                counts[(round + c) % 5], iter);
            cc_rotate(&s, iter);
            s.mode    = (round + c) % 2 ? CC_TEST : CC_WAIT;
            s.root    = (round + c) % size;
            s.inplace = cc_has_inplace((cc_coll) c) && (round + c) % 3 == 0;
            if (cc_start(comm, &calls[c], &s) != CC_PASS) {
                return 1;
            }
        }
        // Interleave a blocking all_reduce while everything is pending.
        cc_spec_init(&s, CC_ALL_REDUCE, SHOAL_INT32, SHOAL_SUM, 33,
            o.seed * 31u + (uint64_t) round);
        if (cc_tally_run(comm, &t, &s) != 0) {
            return 1;
        }
        for (int j = 0; j < CC_COLL_COUNT; j++) {
            int c  = (int) ((unsigned) (j * 7 + round * 3) % CC_COLL_COUNT);
            int rc = cc_finish(comm, &calls[c]);
            t.calls++;
            t.wrong += rc == CC_WRONG;
            if (rc == CC_ERROR) {
                return 1;
            }
        }
    }
    if (shoal_comm_rank(comm) == 0) {
        printf("in flight [%d ranks]: %d rounds of all 10 collectives "
               "non-blocking at once plus a blocking all_reduce: %ld calls "
               "checked, %ld wrong, %.1f s\n",
            size, rounds, t.calls, t.wrong, mp_now() - t.t0);
    }
    return t.wrong ? 1 : 0;
}
