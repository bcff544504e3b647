// The table loop of the collectives described by a perf_coll (allreduce,
// reduce, reducescatter, allgather, alltoall, gather, scatter): per size,
// the out-of-place half, then the in-place half where the API has one,
// printed as one nccl-tests row.

#include "perf.h"

size_t
perf_coll_bytes(
    const perf_ctx *c, const perf_coll *k, size_t size, size_t *count)
{
    size_t blocks = k->size_is_total ? (size_t) c->nranks : 1;

    *count = size / c->esize / blocks;
    return *count * blocks * c->esize;
}

static int
measure_half(
    perf_ctx *c, perf_coll_arg *a, int index, size_t bytes, perf_half *h)
{
    double wrong = 0;
    int    rc    = perf_measure(c, &a->k->ops, a, index, &h->t, &wrong);

    if (rc == SHOAL_OK && c->rank == 0) {
        h->valid = 1;
        h->wrong = c->o->check ? wrong : -1;
        perf_half_bandwidth(h, bytes, a->k->bus_factor(c->nranks));
    }
    return rc;
}

int
perf_bench_coll(perf_ctx *c, const perf_coll *k)
{
    perf_coll_arg a;
    double        bw_sum = 0, wrong_sum = 0;
    int           bw_n = 0;

    if (c->rank == 0) {
        perf_print_table_header(k->name, k->notes);
    }
    a.k = k;
    for (int i = 0; i < c->sizes.n; i++) {
        size_t   bytes = perf_coll_bytes(c, k, c->sizes.bytes[i], &a.count);
        perf_row row   = { .bytes = bytes,
              .count              = bytes / c->esize,
              .type               = shoal_dtype_name(c->o->dtype),
              .redop     = k->has_redop ? perf_redop_name(c->o->redop) : "none",
              .root      = k->has_root ? c->o->root : -1,
              .vs_memcpy = -1 };
        a.in_place     = 0;
        int rc         = measure_half(c, &a, i, bytes, &row.oop);
        if (rc == SHOAL_OK && k->has_in_place) {
            a.in_place = 1;
            rc         = measure_half(c, &a, i, bytes, &row.ip);
        }
        if (rc != SHOAL_OK) {
            return rc;
        }
        if (c->rank != 0) {
            continue;
        }
        if (c->memcpy_gbps[i] > 0 && bytes > 0) {
            row.vs_memcpy = row.oop.busbw / c->memcpy_gbps[i];
        }
        perf_print_row(&row);
        wrong_sum += (row.oop.wrong > 0 ? row.oop.wrong : 0)
            + (row.ip.valid && row.ip.wrong > 0 ? row.ip.wrong : 0);
        bw_sum += row.oop.busbw + (row.ip.valid ? row.ip.busbw : 0);
        bw_n += 1 + row.ip.valid;
    }
    if (c->rank == 0) {
        perf_print_table_footer(k->name, wrong_sum, bw_sum, bw_n);
        c->wrong_total += wrong_sum;
    }
    return SHOAL_OK;
}
