// The two tables of the point-to-point benchmarks (sendrecv, put): the
// ring exchange, every rank sending to its right neighbour at once (busbw
// = algbw, with the memcpy ratio), and the ranks 0 <-> 1 half round trip
// (median, min, p90 of the per-sample time).
#include <stdio.h>

#include "perf.h"

int
perf_exchange_table(perf_ctx *c, const char *op, const char *notes,
    const perf_measure_ops *m, void *arg)
{
    double bw_sum = 0, wrong_sum = 0;
    int    bw_n = 0;

    if (c->rank == 0) {
        perf_print_table_header(op, notes);
    }
    for (int i = 0; i < c->sizes.n; i++) {
        perf_row row   = { .bytes = c->sizes.bytes[i],
              .count              = c->sizes.bytes[i] / c->esize,
              .type               = shoal_dtype_name(c->o->dtype),
              .redop              = "none",
              .root               = -1,
              .vs_memcpy          = -1 };
        double   wrong = 0;
        int      rc    = perf_measure(c, m, arg, i, &row.oop.t, &wrong);
        if (rc != SHOAL_OK) {
            return rc;
        }
        if (c->rank != 0) {
            continue;
        }
        row.oop.valid = 1;
        row.oop.wrong = c->o->check ? wrong : -1;
        perf_half_bandwidth(&row.oop, row.bytes, 1.0);
        if (c->memcpy_gbps[i] > 0 && row.bytes > 0) {
            row.vs_memcpy = row.oop.busbw / c->memcpy_gbps[i];
        }
        perf_print_row(&row);
        wrong_sum += wrong;
        bw_sum += row.oop.busbw;
        bw_n++;
    }
    if (c->rank == 0) {
        perf_print_table_footer(op, wrong_sum, bw_sum, bw_n);
        c->wrong_total += wrong_sum;
    }
    return SHOAL_OK;
}

int
perf_round_trip_table(
    perf_ctx *c, const perf_measure_ops *m, void *arg, size_t max_bytes)
{
    if (c->rank == 0) {
        printf("#       size         count      type     time      min      "
               "p90  #wrong\n"
               "#        (B)    (elements)               (us)     (us)     "
               "(us)\n");
    }
    for (int i = 0; i < c->sizes.n && c->sizes.bytes[i] <= max_bytes; i++) {
        perf_stats st;
        double     wrong = 0;
        int        rc    = perf_measure(c, m, arg, i, &st, &wrong);
        if (rc != SHOAL_OK) {
            return rc;
        }
        if (c->rank != 0) {
            continue;
        }
        char t[32], lo[32], hi[32], w[32];
        perf_format_us(t, sizeof(t), st.median);
        perf_format_us(lo, sizeof(lo), st.min);
        perf_format_us(hi, sizeof(hi), st.p90);
        if (c->o->check) {
            snprintf(w, sizeof(w), "%.0f", wrong);
        } else {
            snprintf(w, sizeof(w), "N/A");
        }
        printf("%12zu  %12zu  %8s  %7s  %7s  %7s  %6s\n", c->sizes.bytes[i],
            c->sizes.bytes[i] / c->esize, shoal_dtype_name(c->o->dtype), t, lo,
            hi, w);
        c->wrong_total += wrong;
    }
    if (c->rank == 0) {
        printf("#\n");
        fflush(stdout);
    }
    return SHOAL_OK;
}
