// The algorithm registry (see registry.h): the table, and what derives
// from it.
#include "algo/net/net_driver.h"
#include "algo/registry.h"

#include <strings.h>

#include "algo/common/algos.h"
#include "algo/mapped/driver.h"
#include "algo/mapped/mapped.h"
#include "algo/net/net_gen.h"

#define MAPPED   SHI_TP_MAPPED
#define MESSAGES SHI_TP_MESSAGES
#define CMA      SHI_NEEDS_SINGLE_COPY
#define HOSTS    SHI_NEEDS_HOSTS

// A mapped-memory algorithm: runs the request itself.
#define RUN(c, a, name, needs, cost, step)                                    \
    {                                                                         \
        SHI_COLL_##c, SHI_ALGO_##a, name, MAPPED, needs, cost, step, NULL,    \
            NULL, SHI_ALGO_NONE                                               \
    }
// ... that hands the call to algorithm `h` for private memory (hand_over).
#define RUN_OR(c, a, name, needs, cost, step, h)                              \
    {                                                                         \
        SHI_COLL_##c, SHI_ALGO_##a, name, MAPPED, needs, cost, step, NULL,    \
            NULL, SHI_ALGO_##h                                                \
    }
// A message schedule: built per call, run by algo/net/net_exec.c.
#define SCHED(c, a, name, cost, build)                                        \
    {                                                                         \
        SHI_COLL_##c, SHI_ALGO_##a, name, MESSAGES, 0, cost, NULL, build,     \
            NULL, SHI_ALGO_NONE                                               \
    }

static const shi_algo_desc algo_rows[] = {
    // Shared memory (mapped): every peer's segment is mapped here.
    RUN(ALLREDUCE, ONESHOT, "oneshot", 0, shi_oneshot_cost, shi_oneshot_run),
    RUN(ALLREDUCE, TWOSHOT, "twoshot", 0, shi_twoshot_cost, shi_twoshot_step),
    RUN_OR(ALLREDUCE, DIRECT, "direct", CMA, shi_allreduce_direct_cost,
        shi_allreduce_direct_step, TWOSHOT),
    RUN(REDUCE, ONESHOT, "oneshot", 0, shi_oneshot_cost, shi_oneshot_run),
    RUN_OR(REDUCE, DIRECT, "direct", CMA, shi_reduce_direct_cost,
        shi_reduce_direct_step, ONESHOT),
    RUN(ALLGATHER, STAGED, "staged", 0, shi_staged_cost, shi_staged_run),
    RUN_OR(ALLGATHER, DIRECT, "direct", CMA, shi_move_direct_cost,
        shi_move_direct_step, STAGED),
    RUN(REDUCE_SCATTER, STAGED, "staged", 0, shi_staged_cost, shi_staged_run),
    RUN_OR(REDUCE_SCATTER, DIRECT, "direct", CMA,
        shi_reduce_scatter_direct_cost, shi_reduce_scatter_direct_step,
        STAGED),
    RUN(ALLTOALL, STAGED, "staged", 0, shi_staged_cost, shi_staged_run),
    RUN_OR(ALLTOALL, DIRECT, "direct", CMA, shi_move_direct_cost,
        shi_move_direct_step, STAGED),
    RUN(GATHER, STAGED, "staged", 0, shi_staged_cost, shi_staged_run),
    RUN_OR(GATHER, DIRECT, "direct", CMA, shi_move_direct_cost,
        shi_move_direct_step, STAGED),
    RUN(SCATTER, STAGED, "staged", 0, shi_staged_cost, shi_staged_run),
    RUN_OR(SCATTER, DIRECT, "direct", CMA, shi_move_direct_cost,
        shi_move_direct_step, STAGED),
    RUN(BROADCAST, OUTBOX, "outbox", 0, shi_bcast_outbox_cost,
        shi_bcast_outbox_step),
    RUN(BROADCAST, DIRECT, "direct", CMA, shi_move_direct_cost,
        shi_move_direct_step),
    RUN(BARRIER, FLAGS, "flags", 0, shi_barrier_flags_cost,
        shi_barrier_flags_step),

    // Across hosts (messages): schedules of sends, receives and local
    // reductions.
    SCHED(
        ALLREDUCE, RING, "ring", net_allreduce_ring_cost, net_allreduce_ring),
    SCHED(ALLREDUCE, RHD, "rhd", net_allreduce_rhd_cost, net_allreduce_rhd),
    SCHED(REDUCE, FLAT, "flat", net_reduce_flat_cost, net_reduce_flat),
    SCHED(REDUCE, RING, "ring", net_reduce_ring_cost, net_reduce_ring),
    SCHED(REDUCE_SCATTER, FLAT, "flat", net_reduce_scatter_flat_cost,
        net_reduce_scatter_flat),
    SCHED(REDUCE_SCATTER, RING, "ring", net_reduce_scatter_ring_cost,
        net_reduce_scatter_ring),
    SCHED(ALLGATHER, FLAT, "flat", net_flat_blocks_cost, net_all_gather_flat),
    SCHED(ALLGATHER, BRUCK, "bruck", net_all_gather_bruck_cost,
        net_all_gather_bruck),
    SCHED(ALLGATHER, RING, "ring", net_all_gather_ring_cost,
        net_all_gather_ring),
    SCHED(ALLTOALL, FLAT, "flat", net_flat_blocks_cost, net_all_to_all_flat),
    SCHED(GATHER, FLAT, "flat", net_flat_blocks_cost, net_gather_flat),
    SCHED(SCATTER, FLAT, "flat", net_flat_blocks_cost, net_scatter_flat),
    SCHED(BROADCAST, FLAT, "flat", net_bcast_flat_cost, net_bcast_flat),
    SCHED(BROADCAST, RING, "ring", net_bcast_ring_cost, net_bcast_ring),
    SCHED(BARRIER, RHD, "rhd", net_barrier_rhd_cost, net_barrier_rhd),

    // Across hosts with several ranks on a host: shared memory within
    // each host, messages between them (algo/common/hier.c).
    { SHI_COLL_ALLREDUCE, SHI_ALGO_HIER, "hier", MESSAGES, HOSTS,
        net_hier_cost, shi_allreduce_hier_step, NULL,
        shi_allreduce_hier_accepts, SHI_ALGO_NONE },
    { SHI_COLL_BROADCAST, SHI_ALGO_HIER, "hier", MESSAGES, HOSTS,
        net_hier_cost, shi_bcast_hier_step, NULL, NULL, SHI_ALGO_NONE },
};

#define NROWS ((int) (sizeof(algo_rows) / sizeof(algo_rows[0])))

// (coll, algo) -> row, and per collective the mask of its algorithms
// (asked at every call's selection), built once.
// Built when the library loads (a constructor), so lookups on the
// selection path need no once-check.
static const shi_algo_desc *row_index[SHI_COLL_COUNT][SHI_ALGO_COUNT];
static unsigned             coll_masks[SHI_COLL_COUNT];

__attribute__((constructor)) static void
build_index(void)
{
    for (int i = 0; i < NROWS; i++) {
        row_index[algo_rows[i].coll][algo_rows[i].algo] = &algo_rows[i];
        coll_masks[algo_rows[i].coll] |= SHI_ALGO_BIT(algo_rows[i].algo);
    }
}

const shi_algo_desc *
shi_algo_find(shi_coll coll, shi_algo algo)
{
    if ((int) coll < 0 || coll >= SHI_COLL_COUNT || (int) algo < 0
        || algo >= SHI_ALGO_COUNT) {
        return NULL;
    }
    return row_index[coll][algo];
}

const shi_algo_desc *
shi_algo_rows(int *n)
{
    *n = NROWS;
    return algo_rows;
}

unsigned
shi_algos_offered(enum shi_tp_class klass, unsigned have)
{
    unsigned mask = 0;

    for (int i = 0; i < NROWS; i++) {
        if (algo_rows[i].klass == klass && (algo_rows[i].needs & ~have) == 0) {
            mask |= SHI_ALGO_BIT(algo_rows[i].algo);
        }
    }
    return mask;
}

unsigned
shi_algos_for(shi_coll coll)
{
    if ((int) coll < 0 || coll >= SHI_COLL_COUNT) {
        return 0;
    }
    return coll_masks[coll];
}

const char *
shi_algo_name(int algo)
{
    if (algo == SHI_ALGO_NONE) {
        return "none";
    }
    for (int i = 0; i < NROWS; i++) {
        if ((int) algo_rows[i].algo == algo) {
            return algo_rows[i].name;
        }
    }
    return NULL;
}

shi_algo
shi_algo_by_name(const char *name, size_t n)
{
    for (int i = 0; i < NROWS; i++) {
        const char *known = algo_rows[i].name;
        if (strncasecmp(known, name, n) == 0 && known[n] == '\0') {
            return algo_rows[i].algo;
        }
    }
    return SHI_ALGO_NONE;
}

int
shi_algo_cost_on(const shoal_comm *comm, shi_coll coll, shi_algo algo,
    size_t bytes, shi_cost *out)
{
    const shi_algo_desc *row = NULL;

    if (algo > SHI_ALGO_NONE && algo < SHI_ALGO_COUNT
        && (comm->algos_available & SHI_ALGO_BIT(algo))) {
        row = shi_algo_find(coll, algo);
    }
    if (row == NULL || row->cost == NULL) {
        return -1;
    }
    shi_cost_call call = { .bytes = bytes,
        .nranks                   = comm->size,
        .slab_bytes               = comm->mapped_state != NULL
                          ? comm->mapped_state->area.slab_bytes
                          : 0 };
    out->alpha = out->beta = out->gamma = 0;
    row->cost(&call, out);
    return 0;
}
