// Cases for ranks on separate hosts (tests/net): all-reduces in a loop
// while the test cuts a host's link or kills its ranks.
#include <string.h>

#include "mptest.h"

// Runs 256 KiB all-reduces until one fails (the test cuts a link or kills
// a host meanwhile) and checks the failure: it must come within the
// communicator's deadline (argv[0], seconds; set through
// SHOAL_TIMEOUT_SECONDS) plus a margin, and name a rank and where it runs.
// Prints "rank R: looping" once the loop runs, so the test knows when to
// strike. Fails if nothing fails within 60 s.
int
mp_case_net_loop(shoal_comm *comm, int argc, char **argv)
{
    int    rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    double deadline_s = argc > 0 ? atof(argv[0]) : 3.0;
    size_t n          = 64 * 1024;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    double start = mp_now();

    MP_CHECK(in != NULL && out != NULL);
    for (size_t i = 0; i < n; i++) {
        in[i] = (float) (rank + 1);
    }
    for (int i = 0;; i++) {
        double t0 = mp_now();
        int    st = shoal_all_reduce(comm, in, out, n, SHOAL_FLOAT32,
               (shoal_reduce_op) { .kind = SHOAL_SUM });
        if (st == SHOAL_OK) {
            MP_CHECK(out[n - 1] == (float) (size * (size + 1) / 2));
            if (i == 0) {
                printf("rank %d: looping\n", rank);
            }
            MP_CHECK(mp_now() - start < 60);
            continue;
        }
        double      waited = mp_now() - t0;
        const char *err    = shoal_last_error();
        printf("rank %d: all_reduce %d failed after %.2f s: %s: %s\n", rank, i,
            waited, shoal_status_name(st), err);
        MP_CHECK(st == SHOAL_ETIMEDOUT || st == SHOAL_EPEER
            || st == SHOAL_EABORTED);
        MP_CHECK(strstr(err, "rank ") != NULL);
        MP_CHECK(strstr(err, "host") != NULL);
        MP_CHECK(waited < deadline_s + 3.0);
        break;
    }
    free(in);
    free(out);
    return 0;
}
