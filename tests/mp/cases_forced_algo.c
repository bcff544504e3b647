// forced_algo: shoal_call_opts.algo runs the named algorithm. For every
// algorithm the communicator lists for all_reduce, all_gather, broadcast
// and barrier, a small and a large call forced to it give the right
// result; an algorithm that refuses a call (the host-aware all_reduce of
// float16) fails it with SHOAL_ENOTSUP; the table's own
// choice is one of the listed; an algorithm that cannot run the call fails
// it with SHOAL_ENOTSUP before anything is sent (the communicator stays
// usable); ranks forcing different algorithms fail with SHOAL_EMISMATCH
// (on a communicator split for it, which the mismatch aborts), and so do
// ranks of which one names the table's choice where that choice may hand
// the call over to another algorithm.
#include <string.h>

#include "mptest.h"

static int
forced(const char *algo)
{
    shoal_call_opts opts = { .algo = algo };

    return shoal_next_call_opts(&opts);
}

static int
all_reduce_with(shoal_comm *comm, const char *algo, size_t n)
{
    int    size = shoal_comm_size(comm), rank = shoal_comm_rank(comm);
    float *x = malloc(n * sizeof(float));

    MP_CHECK(x != NULL);
    for (size_t i = 0; i < n; i++) {
        x[i] = (float) (rank + 1) + (float) (i % 7);
    }
    MP_OK(forced(algo));
    MP_OK(shoal_all_reduce(
        comm, x, x, n, SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_SUM)));
    for (size_t i = 0; i < n; i++) {
        float want = (float) (size * (size + 1) / 2) + (float) size * (i % 7);
        MP_CHECK(x[i] == want);
    }
    free(x);
    return 0;
}

static int
all_gather_with(shoal_comm *comm, const char *algo, size_t n)
{
    int      size = shoal_comm_size(comm), rank = shoal_comm_rank(comm);
    int32_t *mine = malloc(n * sizeof(int32_t));
    int32_t *all  = malloc(n * (size_t) size * sizeof(int32_t));

    MP_CHECK(mine != NULL && all != NULL);
    for (size_t i = 0; i < n; i++) {
        mine[i] = rank * 100000 + (int32_t) i;
    }
    MP_OK(forced(algo));
    MP_OK(shoal_all_gather(comm, mine, all, n, SHOAL_INT32));
    for (int r = 0; r < size; r++) {
        for (size_t i = 0; i < n; i++) {
            MP_CHECK(all[(size_t) r * n + i] == r * 100000 + (int32_t) i);
        }
    }
    free(mine);
    free(all);
    return 0;
}

static int
broadcast_with(shoal_comm *comm, const char *algo, size_t n)
{
    int      size = shoal_comm_size(comm), rank = shoal_comm_rank(comm);
    int      root = size - 1;
    int32_t *x    = malloc(n * sizeof(int32_t));

    MP_CHECK(x != NULL);
    for (size_t i = 0; i < n; i++) {
        x[i] = rank == root ? (int32_t) (i * 3 + 1) : -1;
    }
    MP_OK(forced(algo));
    MP_OK(shoal_broadcast(comm, x, n, SHOAL_INT32, root));
    for (size_t i = 0; i < n; i++) {
        MP_CHECK(x[i] == (int32_t) (i * 3 + 1));
    }
    free(x);
    return 0;
}

static int
barrier_with(shoal_comm *comm, const char *algo, size_t n)
{
    (void) n;
    MP_OK(forced(algo));
    MP_OK(shoal_barrier(comm));
    return 0;
}

static int
each_algorithm(shoal_comm *comm, const char *coll,
    int (*run)(shoal_comm *, const char *, size_t))
{
    const char *names[16], *chosen = NULL;
    int         n = shoal_comm_algorithms(comm, coll, names, 16), in = 0;

    MP_CHECK(n > 0 && n <= 16);
    MP_OK(shoal_comm_algorithm_for(comm, coll, 1 << 20, &chosen));
    for (int i = 0; i < n; i++) {
        in |= strcmp(names[i], chosen) == 0;
        if (run(comm, names[i], 5) || run(comm, names[i], 300000)) {
            fprintf(stderr, "%s forced to %s\n", coll, names[i]);
            return 1;
        }
    }
    MP_CHECK(in || shoal_comm_size(comm) == 1);
    return 0;
}

// A call the built-in table gave to "direct" may hand over to a staged
// algorithm for private memory, one that names "direct" may not: a rank
// that names it beside one that does not would run another algorithm, so
// both fail with a mismatch, as for different names.
static int
named_against_table(shoal_comm *comm)
{
    const char *chosen = NULL;
    size_t      n      = (512 << 10) / sizeof(float);
    shoal_comm *sub;
    float      *big;

    MP_OK(shoal_comm_algorithm_for(comm, "all_reduce", 512 << 10, &chosen));
    if (strcmp(chosen, "direct") != 0) {
        return 0;
    }
    MP_CHECK((big = calloc(n, sizeof(float))) != NULL);
    MP_OK(shoal_comm_split(comm, 0, shoal_comm_rank(comm), &sub));
    if (shoal_comm_rank(comm) == 0) {
        MP_OK(forced("direct"));
    }
    MP_EXPECT(shoal_all_reduce(
                  sub, big, big, n, SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_SUM)),
        SHOAL_EMISMATCH);
    MP_CHECK(strstr(shoal_last_error(), "may hand over") != NULL);
    shoal_comm_destroy(sub);
    free(big);
    return 0;
}

int
mp_case_forced_algo(shoal_comm *comm, int argc, char **argv)
{
    float       x = 1;
    shoal_comm *sub;

    (void) argc;
    (void) argv;
    if (each_algorithm(comm, "all_reduce", all_reduce_with)
        || each_algorithm(comm, "allgather", all_gather_with)
        || each_algorithm(comm, "broadcast", broadcast_with)
        || each_algorithm(comm, "barrier", barrier_with)) {
        return 1;
    }
    // The host-aware all_reduce refuses 16-bit floats (it would round each
    // host's partial sum): named, the call fails; else the table passes
    // over it.
    const char *algos[16];
    int         nalgos = shoal_comm_algorithms(comm, "all_reduce", algos, 16);
    for (int i = 0; i < nalgos; i++) {
        uint16_t h[4] = { 0x3c00, 0x3c00, 0x3c00, 0x3c00 }; // 1.0
        if (strcmp(algos[i], "hier") != 0) {
            continue;
        }
        MP_OK(forced("hier"));
        MP_EXPECT(shoal_all_reduce(comm, h, h, 4, SHOAL_FLOAT16,
                      SHOAL_REDUCE_OP(SHOAL_SUM)),
            SHOAL_ENOTSUP);
        MP_CHECK(strstr(shoal_last_error(), "float16") != NULL);
        MP_OK(shoal_all_reduce(
            comm, h, h, 4, SHOAL_FLOAT16, SHOAL_REDUCE_OP(SHOAL_SUM)));
        int e = 0, size = shoal_comm_size(comm); // the half of `size`
        while ((2 << e) <= size) {
            e++;
        }
        uint16_t want
            = (uint16_t) (((15 + e) << 10) | (((size << 10) >> e) & 0x3ff));
        MP_CHECK(h[0] == want && h[3] == want);
    }
    MP_EXPECT(shoal_comm_algorithms(comm, "allsum", NULL, 0), SHOAL_EINVAL);
    // An algorithm that cannot run the call: refused, nothing sent.
    MP_OK(forced("outbox"));
    MP_EXPECT(shoal_all_reduce(
                  comm, &x, &x, 1, SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_SUM)),
        SHOAL_ENOTSUP);
    MP_CHECK(strstr(shoal_last_error(), "available:") != NULL);
    MP_OK(forced("nosuch"));
    MP_EXPECT(shoal_barrier(comm), SHOAL_ENOTSUP);
    MP_OK(shoal_barrier(comm)); // still usable
    if (shoal_comm_size(comm) < 2) {
        return 0;
    }
    // Different algorithms on different ranks: a mismatch, on every rank.
    const char *names[16];
    int         n = shoal_comm_algorithms(comm, "all_reduce", names, 16);
    if (n < 2) {
        return 0;
    }
    MP_OK(shoal_comm_split(comm, 0, shoal_comm_rank(comm), &sub));
    MP_OK(forced(shoal_comm_rank(comm) == 0 ? names[0] : names[1]));
    MP_EXPECT(shoal_all_reduce(
                  sub, &x, &x, 1, SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_SUM)),
        SHOAL_EMISMATCH);
    shoal_comm_destroy(sub);
    return named_against_table(comm);
}

// direct_paused: a direct reduction or data movement under way pauses
// between its pieces for a thread that issues, and goes on after. Ten
// rounds of two 4 MiB all_reduces, reduces, all_gathers (4 MiB from every
// rank) and all_to_alls forced to the direct algorithms, the second of
// each issued while the first runs (the caller works 200 us in between,
// so the progress thread has started the first): both results right every
// time.
static void
spin_us(double us)
{
    double t0 = mp_now();

    while ((mp_now() - t0) * 1e6 < us) { }
}

static int
paused_pair(shoal_comm *comm, int round, int rooted)
{
    int    size = shoal_comm_size(comm), rank = shoal_comm_rank(comm);
    size_t n = 1u << 20;
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    float *ra = malloc(n * sizeof(float)), *rb = malloc(n * sizeof(float));
    shoal_request  *q1, *q2;
    shoal_reduce_op sum = SHOAL_REDUCE_OP(SHOAL_SUM);

    MP_CHECK(a != NULL && b != NULL && ra != NULL && rb != NULL);
    for (size_t i = 0; i < n; i++) {
        a[i] = (float) (rank + 1 + round) + (float) (i % 7);
        b[i] = (float) (2 * (rank + 1)) + (float) (i % 5);
    }
    MP_OK(forced("direct"));
    MP_OK(rooted ? shoal_ireduce(comm, a, ra, n, SHOAL_FLOAT32, sum, 0, &q1)
                 : shoal_iall_reduce(comm, a, ra, n, SHOAL_FLOAT32, sum, &q1));
    spin_us(200);
    MP_OK(forced("direct"));
    MP_OK(rooted ? shoal_ireduce(comm, b, rb, n, SHOAL_FLOAT32, sum, 0, &q2)
                 : shoal_iall_reduce(comm, b, rb, n, SHOAL_FLOAT32, sum, &q2));
    MP_OK(shoal_wait(q1, -1));
    MP_OK(shoal_wait(q2, -1));
    shoal_request_free(q1);
    shoal_request_free(q2);
    for (size_t i = 0; i < n && (!rooted || rank == 0); i++) {
        float base = (float) (size * (size + 1) / 2);
        MP_CHECK(
            ra[i] == base + (float) (size * round) + (float) size * (i % 7));
        MP_CHECK(rb[i] == 2 * base + (float) size * (i % 5));
    }
    free(a);
    free(b);
    free(ra);
    free(rb);
    return 0;
}

// What rank `from` sends as element i in round `round`.
static float
moved(int from, int round, size_t i)
{
    return (float) (from * 8 + round) + (float) (i % 11);
}

static int
issue_move(shoal_comm *comm, int gather, const float *send, float *recv,
    size_t per, shoal_request **req)
{
    MP_OK(forced("direct"));
    return gather
        ? shoal_iall_gather(comm, send, recv, per, SHOAL_FLOAT32, req)
        : shoal_iall_to_all(comm, send, recv, per, SHOAL_FLOAT32, req);
}

// Whether recv holds block `per` elements from every rank as round
// `round` sent them (all_to_all: the rank's own block of each send).
static int
moved_right(
    shoal_comm *comm, int gather, const float *recv, size_t per, int round)
{
    int    size  = shoal_comm_size(comm);
    size_t first = gather ? 0 : (size_t) shoal_comm_rank(comm) * per;

    for (int p = 0; p < size; p++) {
        for (size_t j = 0; j < per; j++) {
            MP_CHECK(recv[(size_t) p * per + j] == moved(p, round, first + j));
        }
    }
    return 0;
}

static int
paused_moves(shoal_comm *comm, int round, int gather)
{
    int    size = shoal_comm_size(comm), rank = shoal_comm_rank(comm);
    size_t n = 1u << 20, per = gather ? n : n / (size_t) size;
    size_t got = per * (size_t) size;
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    float *ra = malloc(got * sizeof(float)), *rb = malloc(got * sizeof(float));
    shoal_request *q1, *q2;

    MP_CHECK(a != NULL && b != NULL && ra != NULL && rb != NULL);
    for (size_t i = 0; i < n; i++) {
        a[i] = moved(rank, round, i);
        b[i] = moved(rank, round + 1, i);
    }
    MP_OK(issue_move(comm, gather, a, ra, per, &q1));
    spin_us(200);
    MP_OK(issue_move(comm, gather, b, rb, per, &q2));
    MP_OK(shoal_wait(q1, -1));
    MP_OK(shoal_wait(q2, -1));
    shoal_request_free(q1);
    shoal_request_free(q2);
    MP_CHECK(moved_right(comm, gather, ra, per, round) == 0);
    MP_CHECK(moved_right(comm, gather, rb, per, round + 1) == 0);
    free(a);
    free(b);
    free(ra);
    free(rb);
    return 0;
}

int
mp_case_direct_paused(shoal_comm *comm, int argc, char **argv)
{
    (void) argc;
    (void) argv;
    for (int round = 0; round < 10; round++) {
        MP_CHECK(paused_pair(comm, round, 0) == 0);
        MP_CHECK(paused_pair(comm, round, 1) == 0);
        MP_CHECK(paused_moves(comm, round, 1) == 0);
        MP_CHECK(paused_moves(comm, round, 0) == 0);
    }
    MP_OK(shoal_comm_sync(comm));
    return 0;
}
