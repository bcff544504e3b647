// inline_rooted: small reduces, gathers and scatters (the inline path:
// data in the lines of its flag) back to back with small all-reduces, the
// roots moving and one rank late now and then. A rank that only writes its
// line (a reduce's or gather's non-root, a scatter's root) finishes
// without waiting for its readers, so without care it could rewrite its
// line two calls later while a slow reader still reads it: every result
// is checked.
#include <string.h>

#include "mptest.h"

// Element e of rank r's block in call i.
static int32_t
value(int i, int r, int e)
{
    return i * 1000 + r * 10 + e;
}

static int
check(const int32_t *got, int n, int i, int r0, const char *what)
{
    for (int k = 0; k < n; k++) {
        int32_t want = value(i, r0 + k / 2, k % 2);
        if (got[k] != want) {
            fprintf(stderr, "call %d %s: element %d is %d, want %d\n", i, what,
                k, (int) got[k], (int) want);
            return 1;
        }
    }
    return 0;
}

// Call i, of `kind` 0 (gather), 1 (scatter), 2 (all-reduce) or 3
// (reduce, in place at the root on odd calls), of 2 int32 per rank.
static int
one_call(shoal_comm *comm, int i, int kind, int root, int rank, int size)
{
    int32_t mine[2] = { value(i, rank, 0), value(i, rank, 1) };
    int32_t all[2 * 8], out[2], sum[2];

    for (int q = 0; q < size; q++) {
        all[2 * q]     = value(i, q, 0);
        all[2 * q + 1] = value(i, q, 1);
    }
    switch (kind) {
        case 0:
            memset(all, 0, sizeof(all));
            MP_OK(shoal_gather(comm, mine, all, 2, SHOAL_INT32, root));
            return rank == root && check(all, 2 * size, i, 0, "gather");
        case 1:
            MP_OK(shoal_scatter(
                comm, rank == root ? all : NULL, out, 2, SHOAL_INT32, root));
            return check(out, 2, i, rank, "scatter");
        case 2:
            MP_OK(shoal_all_reduce(
                comm, mine, sum, 2, SHOAL_INT32, SHOAL_REDUCE_OP(SHOAL_MAX)));
            return check(sum, 2, i, size - 1, "all_reduce");
        default:
            if (rank == root && i % 2 == 1) {
                MP_OK(shoal_reduce(comm, mine, mine, 2, SHOAL_INT32,
                    SHOAL_REDUCE_OP(SHOAL_MAX), root));
                return check(mine, 2, i, size - 1, "reduce in place");
            }
            MP_OK(shoal_reduce(comm, mine, sum, 2, SHOAL_INT32,
                SHOAL_REDUCE_OP(SHOAL_MAX), root));
            return rank == root && check(sum, 2, i, size - 1, "reduce");
    }
}

int
mp_case_inline_rooted(shoal_comm *comm, int argc, char **argv)
{
    int rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int iters = argc > 0 ? atoi(argv[0]) : 3000;

    MP_CHECK(size <= 8);
    for (int i = 0; i < iters; i++) {
        // Runs of 20 gathers, scatters, all-reduces or reduces, then mixed
        // calls; the root moves every 80 calls. A late rank lets the
        // others run ahead by up to a run.
        int kind = i % 160 < 80 ? (i / 20) % 4 : i % 4;
        int root = (i / 80) % size;
        if ((i * 7919 + rank * 104729) % 61 == 0) {
            mp_sleep_ms(1);
        }
        if (one_call(comm, i, kind, root, rank, size) != 0) {
            return 1;
        }
    }
    return 0;
}
