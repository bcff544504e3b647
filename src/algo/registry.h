// The algorithm registry: one row per (collective, algorithm), in
// registry.c. A row says which transport class the algorithm runs on, what
// it needs beyond that class, its cost formula, and how to run it; the
// names of the algorithms, which collectives each one runs, what a
// communicator offers, SHOAL_ALGO's parsing and the dispatch of a call to
// its algorithm all derive from the table. Adding an algorithm is one file
// (its steps, preconditions and cost at the top) and one row here, plus
// its name in enum shi_algo below when the name is new, and a default
// rule in coll/select.c if it should be chosen without SHOAL_ALGO.
#ifndef SHI_REGISTRY_H
#define SHI_REGISTRY_H

#include <stddef.h>

#include "core/comm.h"
#include "core/op_props.h"

struct net_gen;

// The algorithms' names as identifiers; what each one runs, on which
// transport class, at what cost, is in the registry (registry.c).
typedef enum shi_algo {
    SHI_ALGO_NONE = 0,
    SHI_ALGO_ONESHOT, // every rank stages its input; every reader reduces all
    SHI_ALGO_TWOSHOT, // staged reduce-scatter, then all-gather
    SHI_ALGO_DIRECT, // single copy: read peers' buffers (heap or CMA)
    SHI_ALGO_STAGED, // data movement through staging slabs, chunked
    SHI_ALGO_OUTBOX, // broadcast through the root's outbox
    SHI_ALGO_FLAGS, // barrier on counters
    // Across hosts (message schedules over TCP, src/algo/net):
    SHI_ALGO_RING, // ring: reduce-scatter/all-gather, pipelined chain
    SHI_ALGO_RHD, // recursive halving/doubling, dissemination barrier
    SHI_ALGO_FLAT, // every rank talks to every rank (or the root) directly
    SHI_ALGO_HIER, // shared memory within each host, TCP between hosts
    SHI_ALGO_BRUCK, // dissemination in ceil(log2 n) rounds (all-gather)
    SHI_ALGO_COUNT
} shi_algo;

// Bit of `algo` in an availability mask.
#define SHI_ALGO_BIT(a) (1u << (a))

// An algorithm's name ("oneshot"), its registry rows' (registry.c); NULL
// for out-of-range values. A collective's is in its op_props rows.
const char *shi_algo_name(int algo);

// Which algorithms can run `coll` at all (a mask of SHI_ALGO_BIT): those
// with a row for it in the registry.
unsigned shi_algos_for(shi_coll coll);

// What an algorithm needs beyond its transport class.
enum shi_algo_needs {
    SHI_NEEDS_SINGLE_COPY = 1u << 0, // ranks copy each other's memory
    SHI_NEEDS_HOSTS       = 1u << 1, // per-host and between-host comms
};

// The alpha-beta-gamma model of one call: alpha counts latency rounds (a
// sync point or a message in sequence), beta the bytes a rank moves (its
// copies, or what crosses its busiest link), gamma the input bytes a rank
// reduces. Time = alpha * a + beta * b + gamma * g for a machine's a, b, g.
typedef struct shi_cost {
    double alpha, beta, gamma;
} shi_cost;

// The call a cost is asked for: the selection's bytes (see shi_select),
// the ranks, and the staging slab of the transport (0: none).
typedef struct shi_cost_call {
    size_t bytes;
    int    nranks;
    size_t slab_bytes;
} shi_cost_call;

typedef void (*shi_cost_fn)(const shi_cost_call *c, shi_cost *out);

// Chunks of one staging slab a message of c->bytes takes (at least 1).
static inline double
shi_cost_chunks(const shi_cost_call *c)
{
    if (c->slab_bytes == 0 || c->bytes <= c->slab_bytes) {
        return 1;
    }
    return (double) ((c->bytes + c->slab_bytes - 1) / c->slab_bytes);
}

// The ranks of a cost call, at least 1.
static inline double
shi_cost_ranks(const shi_cost_call *c)
{
    return c->nranks > 1 ? c->nranks : 1;
}

// ceil(log2 n), 0 for n <= 1.
static inline double
shi_cost_log2(int n)
{
    int k = 0;

    while (n > 1 && (1 << k) < n) {
        k++;
    }
    return k;
}
// Drives the head collective `req` as far as it can without waiting;
// returns units of progress and completes the request when done.
typedef int (*shi_step_fn)(shoal_comm *comm, shoal_request *req);
// Builds one rank's message schedule (algo/net/net_gen.h).
typedef int (*shi_build_fn)(struct net_gen *g);
// Whether the algorithm can run this call (its dtype, op, sizes are set);
// NULL in a row: every call of its collective. Selection skips a rule
// whose algorithm refuses and a call that names one fails.
typedef int (*shi_accepts_fn)(const shoal_request *req);

typedef struct shi_algo_desc {
    shi_coll          coll;
    shi_algo          algo;
    const char       *name; // in SHOAL_ALGO and logs
    enum shi_tp_class klass;
    unsigned          needs; // shi_algo_needs
    shi_cost_fn       cost;
    shi_step_fn       step; // runs the request itself, or
    shi_build_fn      build; // a message schedule the executor runs
    shi_accepts_fn    accepts; // NULL: every call
    // Where a buffer of the call lies outside the shared heap, the
    // algorithm that runs it instead, if a built-in rule that lets it
    // (coll/select.c, shi_select_hands_over) chose this one (a named
    // algorithm runs as named; algo/mapped/direct.h says how);
    // SHI_ALGO_NONE: none.
    shi_algo hand_over;
} shi_algo_desc;

// Whether row `d` can run `req` (a NULL row: no, never).
static inline int
shi_algo_accepts(const shi_algo_desc *d, const shoal_request *req)
{
    return d != NULL && (d->accepts == NULL || d->accepts(req));
}

// The row for (coll, algo), or NULL if that algorithm cannot run it.
const shi_algo_desc *shi_algo_find(shi_coll coll, shi_algo algo);

// The cost of `algo` running `coll` on `bytes` bytes on `comm` (its ranks
// and staging slab) into *out. Returns 0, or -1 when `comm` cannot run it.
int shi_algo_cost_on(const shoal_comm *comm, shi_coll coll, shi_algo algo,
    size_t bytes, shi_cost *out);

// Every row, for enumeration (tuning, tests): *n rows.
const shi_algo_desc *shi_algo_rows(int *n);

// The mask (SHI_ALGO_BIT) of the algorithms a communicator offers: those
// of transport class `klass` whose needs are all in `have`.
unsigned shi_algos_offered(enum shi_tp_class klass, unsigned have);

// Algorithm id of a name (case-insensitive, `n` bytes), or SHI_ALGO_NONE.
shi_algo shi_algo_by_name(const char *name, size_t n);

#endif
