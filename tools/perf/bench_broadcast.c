// broadcast: shoal_broadcast from root o->root, busbw = algbw.
//
// shoal's broadcast is in-place by nature (one buffer, the root's data
// ends up in every rank's). The two halves of a row:
//   in-place      every rank calls shoal_broadcast(rbuf); the root's rbuf
//                 holds the data. This is shoal's native form.
//   out-of-place  what NCCL's out-of-place semantics (the root's sendbuff
//                 lands in every rank's separate recvbuff) cost with
//                 shoal's API: the root memcpy()s sbuf into rbuf, then every
//                 rank calls shoal_broadcast(rbuf). The root's copy is
//                 inside the timed region.
// The data depends on (root, size, iteration), so a rank left holding an
// earlier iteration's data counts it as wrong; every rank, the root
// included, checks its rbuf.
#include <string.h>

#include "perf.h"

#define WHAT_BROADCAST 3

typedef struct bcast_arg {
    perf_pattern pat;
    int          in_place;
} bcast_arg;

static size_t
count_of(const perf_ctx *c, int index)
{
    return c->sizes.bytes[index] / c->esize;
}

static void
make_pattern(perf_ctx *c, bcast_arg *a, int index, int it)
{
    perf_pattern_make(&a->pat, c->o->dtype,
        perf_seed(WHAT_BROADCAST + 16u * (uint32_t) a->in_place,
            (uint32_t) c->o->root, (uint32_t) index, (uint32_t) it));
}

static void
bcast_prepare(perf_ctx *c, void *arg, int index, int it)
{
    bcast_arg *a = arg;

    if (c->rank != c->o->root) {
        return;
    }
    make_pattern(c, a, index, it);
    perf_pattern_fill(
        &a->pat, a->in_place ? c->rbuf : c->sbuf, count_of(c, index));
}

static int
bcast_run(perf_ctx *c, void *arg, int index)
{
    bcast_arg *a     = arg;
    size_t     count = count_of(c, index);
    int        rc;

    if (!a->in_place && c->rank == c->o->root) {
        memcpy(c->rbuf, c->sbuf, c->sizes.bytes[index]);
    }
    rc = shoal_broadcast(c->comm, c->rbuf, count, c->o->dtype, c->o->root);
    return rc == SHOAL_OK ? rc : perf_fail(c, "shoal_broadcast", rc);
}

static size_t
bcast_verify(perf_ctx *c, void *arg, int index, int it)
{
    bcast_arg *a = arg;

    make_pattern(c, a, index, it);
    return perf_pattern_check(&a->pat, c->rbuf, count_of(c, index));
}

static const perf_measure_ops bcast_ops = {
    .prepare = bcast_prepare,
    .run     = bcast_run,
    .verify  = bcast_verify,
    .divisor = 1.0,
};

static int
measure_half(perf_ctx *c, bcast_arg *a, int index, perf_half *h)
{
    double wrong = 0;
    int    rc    = perf_measure(c, &bcast_ops, a, index, &h->t, &wrong);

    if (rc == SHOAL_OK && c->rank == 0) {
        h->valid = 1;
        h->wrong = c->o->check ? wrong : -1;
        perf_half_bandwidth(h, c->sizes.bytes[index], 1.0);
        c->wrong_total += wrong;
    }
    return rc;
}

int
perf_bench_broadcast(perf_ctx *c)
{
    bcast_arg a;
    double    bw_sum = 0, wrong_before = c->wrong_total;
    int       bw_n = 0;

    if (c->rank == 0) {
        perf_print_table_header("broadcast",
            "# in-place: shoal_broadcast(buf) on every rank (shoal's form). "
            "out-of-place:\n"
            "# the root memcpy()s its send buffer into a separate receive "
            "buffer, then\n"
            "# shoal_broadcast(recv) (NCCL's semantics; the root's copy is "
            "timed).\n"
            "# vs_memcpy = in-place busbw / memcpy GB/s at that size.\n");
    }
    for (int i = 0; i < c->sizes.n; i++) {
        perf_row row = { .bytes = c->sizes.bytes[i],
            .count              = count_of(c, i),
            .type               = shoal_dtype_name(c->o->dtype),
            .redop              = "none",
            .root               = c->o->root,
            .vs_memcpy          = -1 };
        int      rc;
        a.in_place = 0;
        rc         = measure_half(c, &a, i, &row.oop);
        if (rc == SHOAL_OK) {
            a.in_place = 1;
            rc         = measure_half(c, &a, i, &row.ip);
        }
        if (rc != SHOAL_OK) {
            return rc;
        }
        if (c->rank != 0) {
            continue;
        }
        if (c->memcpy_gbps[i] > 0 && row.bytes > 0) {
            row.vs_memcpy = row.ip.busbw / c->memcpy_gbps[i];
        }
        perf_print_row(&row);
        bw_sum += row.oop.busbw + row.ip.busbw;
        bw_n += 2;
    }
    if (c->rank == 0) {
        perf_print_table_footer(
            "broadcast", c->wrong_total - wrong_before, bw_sum, bw_n);
    }
    return SHOAL_OK;
}
