// barrier: one row of size 0, timed like every other operation (a barrier
// to line the ranks up, then the timed shoal_barrier). Nothing moves, so
// algbw and busbw are 0, #wrong and the in-place half are N/A.
#include "perf.h"

static int
barrier_run(perf_ctx *c, void *arg, int index)
{
    int rc = shoal_barrier(c->comm);

    (void) arg;
    (void) index;
    return rc == SHOAL_OK ? rc : perf_fail(c, "shoal_barrier", rc);
}

static const perf_measure_ops barrier_ops = {
    .prepare = NULL,
    .run     = barrier_run,
    .verify  = NULL,
    .divisor = 1.0,
};

int
perf_bench_barrier(perf_ctx *c)
{
    perf_row row   = { .bytes = 0,
          .count              = 0,
          .type               = "none",
          .redop              = "none",
          .root               = -1,
          .vs_memcpy          = -1 };
    double   wrong = 0;
    int      rc;

    if (c->rank == 0) {
        perf_print_table_header("barrier",
            "# One row: the timed operation is shoal_barrier itself.\n");
    }
    rc = perf_measure(c, &barrier_ops, NULL, 0, &row.oop.t, &wrong);
    if (rc != SHOAL_OK || c->rank != 0) {
        return rc;
    }
    row.oop.valid = 1;
    row.oop.wrong = -1;
    perf_print_row(&row);
    perf_print_table_footer("barrier", 0, 0, 0);
    return SHOAL_OK;
}
