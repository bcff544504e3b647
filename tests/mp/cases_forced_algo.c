// forced_algo: shoal_call_opts.algo runs the named algorithm. For every
// algorithm the communicator lists for all_reduce and all_gather, a small
// and a large call forced to it give the right result; the table's own
// choice is one of the listed; an algorithm that cannot run the call fails
// it with SHOAL_ENOTSUP before anything is sent (the communicator stays
// usable); ranks forcing different algorithms fail with SHOAL_EMISMATCH
// (on a communicator split for it, which the mismatch aborts).
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

int
mp_case_forced_algo(shoal_comm *comm, int argc, char **argv)
{
    float       x = 1;
    shoal_comm *sub;

    (void) argc;
    (void) argv;
    if (each_algorithm(comm, "all_reduce", all_reduce_with)
        || each_algorithm(comm, "allgather", all_gather_with)) {
        return 1;
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
    return 0;
}
