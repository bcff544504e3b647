// shoal-perf: main. Creates the communicator from the launcher's
// environment, allocates the buffers once (for the largest size), measures
// the memcpy baseline, then runs the chosen operations in turn.
//
//   shoalrun -n 2 shoal-perf -o sendrecv -b 8 -e 64M -f 2
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

#define INFO_TAG 7002

// What rank 0 prints about every rank.
typedef struct rank_info {
    int32_t pid, cpus;
    char    host[56];
} rank_info;

int
perf_fail(const perf_ctx *c, const char *what, int st)
{
    fprintf(stderr, "shoal-perf: rank %d: %s failed: %s: %s\n",
        c != NULL ? c->rank : -1, what, shoal_status_name(st),
        shoal_last_error());
    return st < 0 ? st : SHOAL_EINVAL;
}

// Before the communicator exists, the launcher's variables say whether we
// are rank 0 (the only rank that prints usage). Unset: a lone process.
static int
env_says_rank0(void)
{
    static const char *names[] = { "SHOAL_RANK", "RANK",
        "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID" };

    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
        const char *v = getenv(names[i]);
        if (v != NULL && v[0] != '\0') {
            return strcmp(v, "0") == 0;
        }
    }
    return 1;
}

static void
local_info(rank_info *ri)
{
    cpu_set_t set;

    memset(ri, 0, sizeof(*ri));
    ri->pid  = (int32_t) getpid();
    ri->cpus = sched_getaffinity(0, sizeof(set), &set) == 0
        ? (int32_t) CPU_COUNT(&set)
        : -1;
    if (gethostname(ri->host, sizeof(ri->host) - 1) != 0) {
        snprintf(ri->host, sizeof(ri->host), "?");
    }
}

// Rank 0 prints one line per rank, as nccl-tests' "Using devices".
static int
print_ranks(perf_ctx *c)
{
    rank_info ri;
    int       rc;

    local_info(&ri);
    if (c->rank != 0) {
        rc = shoal_send(c->comm, &ri, sizeof(ri), SHOAL_UINT8, 0, INFO_TAG);
        return rc == SHOAL_OK ? rc : perf_fail(c, "shoal_send(info)", rc);
    }
    printf("#\n# Using ranks\n");
    for (int r = 0; r < c->nranks; r++) {
        if (r > 0) {
            rc = shoal_recv(
                c->comm, &ri, sizeof(ri), SHOAL_UINT8, r, INFO_TAG);
            if (rc != SHOAL_OK) {
                return perf_fail(c, "shoal_recv(info)", rc);
            }
        }
        ri.host[sizeof(ri.host) - 1] = '\0';
        printf("#  Rank %2d Pid %7d on %10s cpus %d\n", r, (int) ri.pid,
            ri.host, (int) ri.cpus);
    }
    return SHOAL_OK;
}

static int
setup(perf_ctx *c, const perf_opts *o)
{
    size_t cap = 0;

    c->o     = o;
    c->esize = shoal_dtype_size(o->dtype);
    if (perf_sizes_make(&c->sizes, o, c->esize) != 0) {
        return SHOAL_ENOMEM;
    }
    for (int i = 0; i < c->sizes.n; i++) {
        cap = c->sizes.bytes[i] > cap ? c->sizes.bytes[i] : cap;
    }
    c->cap         = cap;
    c->times       = calloc((size_t) o->iters, sizeof(double));
    c->memcpy_gbps = calloc((size_t) c->sizes.n + 1, sizeof(double));
    if (c->times == NULL || c->memcpy_gbps == NULL) {
        fprintf(stderr, "shoal-perf: rank %d: out of memory\n", c->rank);
        return SHOAL_ENOMEM;
    }
    return perf_buffers_setup(c);
}

static void
teardown(perf_ctx *c)
{
    perf_buffers_teardown(c);
    free(c->times);
    free(c->memcpy_gbps);
    perf_sizes_free(&c->sizes);
}

// The benchmarks in table order (the order of the PERF_OP_* bits).
static int (*const main_benches[])(perf_ctx *)
    = { perf_bench_allreduce, perf_bench_reduce, perf_bench_allgather,
          perf_bench_reducescatter, perf_bench_alltoall, perf_bench_gather,
          perf_bench_scatter, perf_bench_broadcast, perf_bench_sendrecv,
          perf_bench_barrier, perf_bench_put, perf_bench_queue };

// Runs the chosen benchmarks in turn. One that failed with SHOAL_EINVAL or
// SHOAL_ENOTSUP (found before anything moved, the communicator stays
// usable) fails the run but the next one still runs; any other error ends
// the run.
static int
run_all(perf_ctx *c)
{
    const perf_opts *o      = c->o;
    int              failed = 0;
    int              rc     = print_ranks(c);

    // A barrier moves no bytes: it has no baseline to compare with (and
    // its many iterations would copy the default sizes as many times).
    if (rc == SHOAL_OK && (o->ops & ~PERF_OP_BARRIER) != 0) {
        rc = perf_memcpy_baseline(c);
    }
    if (rc != SHOAL_OK) {
        return rc;
    }
    for (size_t i = 0; i < sizeof(main_benches) / sizeof(*main_benches); i++) {
        if (!(o->ops & (1 << i))) {
            continue;
        }
        if (o->cold && (1 << i & (PERF_OP_PUT | PERF_OP_QUEUE))) {
            if (c->rank == 0) {
                printf("# %s: not measured cache-cold (its memory is "
                       "registered once)\n",
                    1 << i == PERF_OP_PUT ? "put" : "queue");
            }
            continue;
        }
        rc = main_benches[i](c);
        if (rc == SHOAL_EINVAL || rc == SHOAL_ENOTSUP) {
            failed = 1;
        } else if (rc != SHOAL_OK) {
            return rc;
        }
    }
    return failed ? SHOAL_ENOTSUP : SHOAL_OK;
}

int
main(int argc, char **argv)
{
    perf_opts opts;
    perf_ctx  ctx = { 0 };
    char      err[256];
    int       rc;

    rc = perf_parse_options(&opts, argc, argv, err, sizeof(err));
    if (rc != PERF_PARSE_OK) {
        if (env_says_rank0()) {
            perf_usage("shoal-perf", rc == PERF_PARSE_ERROR ? err : NULL);
        }
        return rc == PERF_PARSE_HELP ? 0 : 2;
    }
    rc = shoal_comm_create(&ctx.comm, NULL);
    if (rc != SHOAL_OK) {
        fprintf(stderr, "shoal-perf: shoal_comm_create failed: %s: %s\n",
            shoal_status_name(rc), shoal_last_error());
        return 1;
    }
    ctx.rank   = shoal_comm_rank(ctx.comm);
    ctx.nranks = shoal_comm_size(ctx.comm);
    if (opts.root >= ctx.nranks) {
        if (ctx.rank == 0) {
            snprintf(err, sizeof(err), "root %d is not a rank (0..%d)",
                opts.root, ctx.nranks - 1);
            perf_usage("shoal-perf", err);
        }
        shoal_comm_destroy(ctx.comm);
        return 2;
    }
    rc = setup(&ctx, &opts);
    if (rc == SHOAL_OK) {
        if (ctx.rank == 0) {
            perf_print_run_header(&ctx);
        }
        rc = run_all(&ctx);
    }
    teardown(&ctx);
    if (rc == SHOAL_OK) {
        // Nobody leaves while another rank may still need it.
        rc = shoal_barrier(ctx.comm);
    }
    shoal_comm_destroy(ctx.comm);
    if (rc != SHOAL_OK) {
        return 1;
    }
    return ctx.wrong_total != 0 ? 1 : 0;
}
