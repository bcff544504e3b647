// Public entry points of the collectives: argument and overlap checks, the
// choice of algorithm (once, here), then a request for the engine.
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/kernels/reduce.h"
#include "algo/registry.h"
#include "coll/select.h"
#include "coll/tuning.h"
#include "base/clock.h"
#include "base/log.h"
#include "core/engine.h"
#include "core/op_props.h"
#include "core/ops.h"

// What one call looks like before checks.
struct coll_call {
    int             kind;
    const void     *send;
    void           *recv;
    size_t          count; // per-rank count (v-collectives: total)
    const size_t   *counts, *rcounts;
    shoal_dtype     dtype;
    shoal_reduce_op op;
    int             root; // -1: none
};

// The collective's name in messages ("all_reduce").
static inline const char *
call_name(const struct coll_call *c)
{
    return shi_op_props_of(c->kind)->name;
}

static shi_op_shape
shape_of(shoal_comm *comm, const struct coll_call *c)
{
    return (shi_op_shape) { .kind = c->kind,
        .rank                     = comm->rank,
        .nranks                   = comm->size,
        .root                     = c->root,
        .count                    = c->count,
        .counts                   = c->counts,
        .rcounts                  = c->rcounts };
}

static int
check_counts(shoal_comm *comm, const struct coll_call *c)
{
    const shi_op_props *p = shi_op_props_of(c->kind);

    if (p->counts && c->counts == NULL) {
        return shi_comm_invalid(
            comm, "%s: the counts array is NULL", call_name(c));
    }
    if (p->rcounts && c->rcounts == NULL) {
        return shi_comm_invalid(comm, "%s: recvcounts is NULL", call_name(c));
    }
    return SHOAL_OK;
}

static int
check_buffers(shoal_comm *comm, const struct coll_call *c, size_t es)
{
    shi_op_shape shape = shape_of(comm, c);
    size_t       send, recv;

    shi_op_buffer_elems(&shape, &send, &recv);
    if ((send > 0 && c->send == NULL) || (recv > 0 && c->recv == NULL)) {
        const char *which = send > 0 && c->send == NULL ? "sendbuf"
            : c->kind == SHI_OP_BCAST                   ? "buf"
                                                        : "recvbuf";
        return shi_comm_invalid(comm, "%s: %s is NULL but holds %zu elements",
            call_name(c), which, send > 0 && c->send == NULL ? send : recv);
    }
    if (send > SIZE_MAX / es / 2 || recv > SIZE_MAX / es / 2) {
        return shi_comm_invalid(
            comm, "%s: counts overflow the buffer size", call_name(c));
    }
    const unsigned char *s = c->send, *r = c->recv;
    int                  overlap
        = send > 0 && recv > 0 && s < r + recv * es && r < s + send * es;
    if (overlap && !shi_op_in_place(&shape, es, s, r)) {
        return shi_comm_invalid(comm,
            "%s: sendbuf and recvbuf overlap, which is "
            "not this collective's in-place form (see "
            "shoal.h)",
            call_name(c));
    }
    return SHOAL_OK;
}

// Checks a call; its element size (0 for an unknown dtype) is `es`.
static int
check_call(shoal_comm *comm, const struct coll_call *c, size_t es)
{
    int st;

    if (comm == NULL) {
        return shi_error(
            SHOAL_EINVAL, "%s: the communicator is NULL", call_name(c));
    }
    if (es == 0) {
        return shi_comm_invalid(comm, "%s: unknown dtype %d (see shoal_dtype)",
            call_name(c), (int) c->dtype);
    }
    const shi_op_props *p = shi_op_props_of(c->kind);

    if (p->rooted && (c->root < 0 || c->root >= comm->size)) {
        return shi_comm_invalid(comm, "%s: root %d is outside 0..%d",
            call_name(c), c->root, comm->size - 1);
    }
    if (p->reduces && shi_reduce_check(c->dtype, c->op) != SHOAL_OK) {
        return shi_comm_error(
            comm, shi_error_wrap(SHOAL_EINVAL, "%s", call_name(c)));
    }
    if ((st = check_counts(comm, c)) != SHOAL_OK) {
        return st;
    }
    return check_buffers(comm, c, es);
}

// Bytes that enter the choice of algorithm: equal on every rank.
static size_t
selection_bytes(shoal_comm *comm, const struct coll_call *c, size_t es)
{
    switch (c->kind) {
        case SHI_OP_ALLREDUCE:
        case SHI_OP_REDUCE:
            return c->count * es;
        case SHI_OP_ALLGATHERV:
        case SHI_OP_REDUCE_SCATTERV:
            return shi_counts_sum(c->counts, comm->size) * es;
        case SHI_OP_ALLTOALLV:
            return 0; // per-rank sizes differ
        case SHI_OP_BCAST:
            return c->count * es;
        case SHI_OP_BARRIER:
            return 0;
    }
    return c->count * es * (size_t) comm->size;
}

static uint64_t
hash_counts(const size_t *counts, int n)
{
    uint64_t h = 1469598103934665603ull; // FNV-1a

    if (counts == NULL) {
        return 0;
    }
    for (int i = 0; counts != NULL && i < n; i++) {
        h = (h ^ (uint64_t) counts[i]) * 1099511628211ull;
    }
    return h;
}

// Copies the caller's counts into memory the request owns.
static int
copy_counts(shoal_comm *comm, shoal_request *req, const struct coll_call *c)
{
    size_t n = (size_t) comm->size;

    if (c->counts == NULL) {
        return SHOAL_OK;
    }
    req->counts = malloc(n * sizeof(size_t) * (c->rcounts ? 2 : 1));
    if (req->counts == NULL) {
        return shi_comm_error(comm, shi_error(SHOAL_ENOMEM, "out of memory"));
    }
    memcpy(req->counts, c->counts, n * sizeof(size_t));
    if (c->rcounts != NULL) {
        req->rcounts = req->counts + n;
        memcpy(req->rcounts, c->rcounts, n * sizeof(size_t));
    }
    return SHOAL_OK;
}

// The algorithm a call's options name (shoal_call_opts.algo), if it can
// run this collective on this communicator.
static int
forced_algo(
    shoal_comm *comm, const struct coll_call *c, const char *name, int *out)
{
    shi_coll coll = shi_coll_of_op(c->kind);
    shi_algo a    = shi_algo_by_name(name, strlen(name));

    if (a == SHI_ALGO_NONE
        || !(shi_algos_for(coll) & comm->algos_available & SHI_ALGO_BIT(a))) {
        char have[256];
        shi_algo_mask_names(
            shi_algos_for(coll) & comm->algos_available, have, sizeof(have));
        return shi_comm_error(comm,
            shi_error(SHOAL_ENOTSUP,
                "%s: algorithm '%s' cannot run it on communicator '%s' (%s "
                "transport); available: %s",
                call_name(c), name, comm->name, comm->tp->name, have));
    }
    *out = (int) a;
    return SHOAL_OK;
}

_Static_assert(SHI_ALGO_COUNT *SHI_RULE_SOURCES <= 64,
    "algo_noted holds a bit per (algorithm, source)");

// Says (SHOAL_DEBUG=INFO, rank 0) which rules chose an algorithm, the
// first time a collective runs it by those rules on this communicator;
// SHOAL_DEBUG=TRACE says it for every call.
static void
note_choice(shoal_comm *comm, const struct coll_call *c, int algo,
    shi_rule_source source, size_t bytes)
{
    shi_coll coll = shi_coll_of_op(c->kind);
    uint64_t bit  = UINT64_C(1) << (algo * SHI_RULE_SOURCES + (int) source);

    if (comm->rank != 0 || coll >= SHI_COLL_COUNT
        || !shi_log_enabled(SHI_LOG_INFO)) {
        return;
    }
    int first = !(atomic_fetch_or(&comm->algo_noted[coll], bit) & bit);
    if (first || shi_log_enabled(SHI_LOG_TRACE)) {
        shi_log(first ? SHI_LOG_INFO : SHI_LOG_TRACE,
            "communicator '%s': %s of %zu bytes on %d ranks runs %s, chosen "
            "by %s%s",
            comm->name, call_name(c), bytes, comm->size, shi_algo_name(algo),
            shi_rule_source_name(source),
            first ? " (said once per algorithm and source; "
                    "SHOAL_DEBUG=TRACE says it for every call)"
                  : "");
    }
}

// The table's choice among the `offered` algorithms (see choose_algo).
static int
table_choice(shoal_comm *comm, shi_coll coll, size_t bytes, unsigned offered,
    shi_rule_source *source)
{
    unsigned usable = offered & shi_algos_for(coll);

    // One algorithm can run it here (the barrier over shared memory; a
    // broadcast without single copy): every rule of the table would pick
    // it. Only rank 0's INFO line, which names the rule, needs the table
    // read.
    if (usable != 0 && (usable & (usable - 1)) == 0
        && (comm->rank != 0 || !shi_log_enabled(SHI_LOG_INFO))) {
        *source = SHI_RULE_BUILTIN;
        return __builtin_ctz(usable);
    }
    return shi_select_why(
        comm->select, coll, bytes, comm->size, offered, source);
}

// The table's choice depends on the collective, the bytes and the
// algorithms offered only: a call like the collective's one before (a
// training loop's) takes the choice that one got, remembered in one word
// (threads may issue at once): its bytes, the algorithms offered, the
// algorithm and the rule's source. Read in ~20 instructions where the table
// takes ~120, on every small call's way. A row that may refuse a call
// (shi_algo_accepts) is not remembered; neither are calls of 4 GiB or more.
#define MEMO_VALID (UINT64_C(1) << 63)

_Static_assert(SHI_ALGO_COUNT <= 16 && SHI_RULE_SOURCES <= 16,
    "a remembered choice packs the offered mask in 16 bits and the "
    "algorithm and source in 8 and 4");

#define MEMO_KEY_BITS     (MEMO_VALID | 0xffffffffffffu) // valid, offered, bytes
#define MEMO_ALGO_SHIFT   48
#define MEMO_SOURCE_SHIFT 56

// Whether a call's choice may be remembered for this collective.
static int
memo_fits(shi_coll coll, size_t bytes)
{
    return coll < SHI_COLL_COUNT && bytes <= UINT32_MAX;
}

static uint64_t
memo_key(size_t bytes, unsigned offered)
{
    return MEMO_VALID | (uint64_t) bytes
        | (uint64_t) (offered & 0xffffu) << 32;
}

static int
memo_lookup(shoal_comm *comm, shi_coll coll, size_t bytes, unsigned offered,
    shi_rule_source *source)
{
    if (!memo_fits(coll, bytes)) {
        return SHI_ALGO_NONE;
    }
    uint64_t m
        = atomic_load_explicit(&comm->choice_memo[coll], memory_order_relaxed);
    if ((m & MEMO_KEY_BITS) != memo_key(bytes, offered)) {
        return SHI_ALGO_NONE;
    }
    *source = (shi_rule_source) ((m >> MEMO_SOURCE_SHIFT) & 0xfu);
    return (int) ((m >> MEMO_ALGO_SHIFT) & 0xffu);
}

static void
memo_store(shoal_comm *comm, shi_coll coll, size_t bytes, unsigned offered,
    int algo, shi_rule_source source)
{
    if (memo_fits(coll, bytes)) {
        atomic_store_explicit(&comm->choice_memo[coll],
            memo_key(bytes, offered) | (uint64_t) algo << MEMO_ALGO_SHIFT
                | (uint64_t) source << MEMO_SOURCE_SHIFT,
            memory_order_relaxed);
    }
}

// The table's choice for a call, passing over the algorithms whose rows
// refuse it; SHI_ALGO_NONE if none is left.
static int
table_choice_for(shoal_comm *comm, shi_coll coll, size_t bytes,
    shoal_request *req, const shi_algo_desc **row, shi_rule_source *source)
{
    unsigned offered = comm->algos_available;
    int      algo    = memo_lookup(comm, coll, bytes, offered, source);

    if (algo != SHI_ALGO_NONE) {
        *row = shi_algo_find(coll, (shi_algo) algo);
        return algo;
    }
    algo = table_choice(comm, coll, bytes, offered, source);
    *row = shi_algo_find(coll, (shi_algo) algo);
    while (algo != SHI_ALGO_NONE && !shi_algo_accepts(*row, req)) {
        offered &= ~SHI_ALGO_BIT(algo); // refused: the next rule decides
        algo = table_choice(comm, coll, bytes, offered, source);
        *row = shi_algo_find(coll, (shi_algo) algo);
    }
    if (algo != SHI_ALGO_NONE && offered == comm->algos_available
        && (*row)->accepts == NULL) {
        memo_store(comm, coll, bytes, offered, algo, *source);
    }
    return algo;
}

// The algorithm of a call and its registry row (req->algo, req->impl, which
// the drivers run): the call's own (opts.algo), else the table's. An
// algorithm whose row refuses the call (shi_algo_accepts) is passed over
// by the table, so the next rule decides, and refused when the call names
// it.
static int
choose_algo(shoal_comm *comm, const struct coll_call *c, const char *forced,
    size_t es, shoal_request *req)
{
    shi_rule_source      source = SHI_RULE_CALL;
    shi_coll             coll   = shi_coll_of_op(c->kind);
    size_t               bytes  = selection_bytes(comm, c, es);
    const shi_algo_desc *row;
    int                  algo = SHI_ALGO_NONE, st;

    if (forced != NULL) {
        if ((st = forced_algo(comm, c, forced, &algo)) != SHOAL_OK) {
            return st;
        }
        row = shi_algo_find(coll, (shi_algo) algo);
        if (!shi_algo_accepts(row, req)) {
            return shi_comm_error(comm,
                shi_error(SHOAL_ENOTSUP,
                    "%s: algorithm '%s' cannot run a %s call (its file says "
                    "why); name another or pass NULL",
                    call_name(c), forced, shoal_dtype_name(c->dtype)));
        }
    } else {
        algo = table_choice_for(comm, coll, bytes, req, &row, &source);
        if (algo == SHI_ALGO_NONE) {
            return shi_comm_error(comm,
                shi_error(SHOAL_ENOTSUP,
                    "%s: no algorithm of communicator '%s' (%s transport) "
                    "can run this call",
                    call_name(c), comm->name, comm->tp->name));
        }
    }
    note_choice(comm, c, algo, source, bytes);
    req->algo          = algo;
    req->impl          = row;
    req->may_hand_over = source == SHI_RULE_BUILTIN
        && row->hand_over != SHI_ALGO_NONE
        && shi_select_hands_over(
            comm->select, coll, bytes, comm->size, (shi_algo) algo);
    return SHOAL_OK;
}

static int
coll_run(shoal_comm *comm, const struct coll_call *c, shoal_request **out)
{
    shoal_call_opts opts = shi_call_opts_take();
    shoal_request   req;
    size_t          es = shoal_dtype_size(c->dtype);
    int             st;

    if (out != NULL) {
        *out = NULL;
    }
    if ((st = check_call(comm, c, es)) != SHOAL_OK) {
        return st;
    }
    // v-collectives describe themselves by their total count.
    size_t count = c->counts != NULL && c->kind != SHI_OP_ALLTOALLV
        ? shi_counts_sum(c->counts, comm->size)
        : c->count;
    shi_req_fill(&req, c->kind, c->recv, count, c->dtype, c->root);
    req.sendbuf      = c->send;
    req.op           = c->op;
    req.timeout_ms   = opts.timeout_ms;
    req.caller_waits = opts.caller_waits;
    if ((st = choose_algo(comm, c, opts.algo, es, &req)) != SHOAL_OK) {
        return st;
    }
    req.counts_hash
        = c->kind == SHI_OP_ALLTOALLV ? 0 : hash_counts(c->counts, comm->size);
    if ((st = copy_counts(comm, &req, c)) != SHOAL_OK) {
        return st;
    }
    if (out != NULL) {
        return shi_start_async(comm, &req, out);
    }
    st = shi_run_blocking(comm, &req);
    free(req.counts);
    return st;
}

// The i-form of a collective: coll_run with a request to return.
static int
coll_start(shoal_comm *comm, const struct coll_call *c, shoal_request **req)
{
    if (req == NULL) {
        char what[40];
        snprintf(what, sizeof(what), "i%s", call_name(c));
        return shi_missing_req(what);
    }
    return coll_run(comm, c, req);
}

// Each collective's call, as both its entry points describe it.
#define CALL(...) ((struct coll_call) { __VA_ARGS__ })

#define ALL_REDUCE_CALL                                                       \
    CALL(.kind = SHI_OP_ALLREDUCE, .send = sendbuf, .recv = recvbuf,          \
        .count = count, .dtype = dtype, .op = op, .root = -1)

int
shoal_all_reduce(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t count, shoal_dtype dtype, shoal_reduce_op op)
{
    return coll_run(comm, &ALL_REDUCE_CALL, NULL);
}

int
shoal_iall_reduce(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t count, shoal_dtype dtype, shoal_reduce_op op, shoal_request **req)
{
    return coll_start(comm, &ALL_REDUCE_CALL, req);
}

#define REDUCE_CALL                                                           \
    CALL(.kind = SHI_OP_REDUCE, .send = sendbuf, .recv = recvbuf,             \
        .count = count, .dtype = dtype, .op = op, .root = root)

int
shoal_reduce(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t count, shoal_dtype dtype, shoal_reduce_op op, int root)
{
    return coll_run(comm, &REDUCE_CALL, NULL);
}

int
shoal_ireduce(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t count, shoal_dtype dtype, shoal_reduce_op op, int root,
    shoal_request **req)
{
    return coll_start(comm, &REDUCE_CALL, req);
}

#define ALL_GATHER_CALL                                                       \
    CALL(.kind = SHI_OP_ALLGATHER, .send = sendbuf, .recv = recvbuf,          \
        .count = count, .dtype = dtype, .root = -1)

int
shoal_all_gather(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t count, shoal_dtype dtype)
{
    return coll_run(comm, &ALL_GATHER_CALL, NULL);
}

int
shoal_iall_gather(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t count, shoal_dtype dtype, shoal_request **req)
{
    return coll_start(comm, &ALL_GATHER_CALL, req);
}

#define ALL_GATHER_V_CALL                                                     \
    CALL(.kind = SHI_OP_ALLGATHERV, .send = sendbuf, .recv = recvbuf,         \
        .counts = recvcounts, .dtype = dtype, .root = -1)

int
shoal_all_gather_v(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    const size_t *recvcounts, shoal_dtype dtype)
{
    return coll_run(comm, &ALL_GATHER_V_CALL, NULL);
}

int
shoal_iall_gather_v(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    const size_t *recvcounts, shoal_dtype dtype, shoal_request **req)
{
    return coll_start(comm, &ALL_GATHER_V_CALL, req);
}

#define REDUCE_SCATTER_CALL                                                   \
    CALL(.kind = SHI_OP_REDUCE_SCATTER, .send = sendbuf, .recv = recvbuf,     \
        .count = recvcount, .dtype = dtype, .op = op, .root = -1)

int
shoal_reduce_scatter(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t recvcount, shoal_dtype dtype, shoal_reduce_op op)
{
    return coll_run(comm, &REDUCE_SCATTER_CALL, NULL);
}

int
shoal_ireduce_scatter(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t recvcount, shoal_dtype dtype, shoal_reduce_op op,
    shoal_request **req)
{
    return coll_start(comm, &REDUCE_SCATTER_CALL, req);
}

#define REDUCE_SCATTER_V_CALL                                                 \
    CALL(.kind = SHI_OP_REDUCE_SCATTERV, .send = sendbuf, .recv = recvbuf,    \
        .counts = recvcounts, .dtype = dtype, .op = op, .root = -1)

int
shoal_reduce_scatter_v(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    const size_t *recvcounts, shoal_dtype dtype, shoal_reduce_op op)
{
    return coll_run(comm, &REDUCE_SCATTER_V_CALL, NULL);
}

int
shoal_ireduce_scatter_v(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    const size_t *recvcounts, shoal_dtype dtype, shoal_reduce_op op,
    shoal_request **req)
{
    return coll_start(comm, &REDUCE_SCATTER_V_CALL, req);
}

#define ALL_TO_ALL_CALL                                                       \
    CALL(.kind = SHI_OP_ALLTOALL, .send = sendbuf, .recv = recvbuf,           \
        .count = count, .dtype = dtype, .root = -1)

int
shoal_all_to_all(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t count, shoal_dtype dtype)
{
    return coll_run(comm, &ALL_TO_ALL_CALL, NULL);
}

int
shoal_iall_to_all(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t count, shoal_dtype dtype, shoal_request **req)
{
    return coll_start(comm, &ALL_TO_ALL_CALL, req);
}

#define ALL_TO_ALL_V_CALL                                                     \
    CALL(.kind = SHI_OP_ALLTOALLV, .send = sendbuf, .recv = recvbuf,          \
        .counts = sendcounts, .rcounts = recvcounts, .dtype = dtype,          \
        .root = -1)

int
shoal_all_to_all_v(shoal_comm *comm, const void *sendbuf,
    const size_t *sendcounts, void *recvbuf, const size_t *recvcounts,
    shoal_dtype dtype)
{
    return coll_run(comm, &ALL_TO_ALL_V_CALL, NULL);
}

int
shoal_iall_to_all_v(shoal_comm *comm, const void *sendbuf,
    const size_t *sendcounts, void *recvbuf, const size_t *recvcounts,
    shoal_dtype dtype, shoal_request **req)
{
    return coll_start(comm, &ALL_TO_ALL_V_CALL, req);
}

#define GATHER_CALL                                                           \
    CALL(.kind = SHI_OP_GATHER, .send = sendbuf, .recv = recvbuf,             \
        .count = count, .dtype = dtype, .root = root)

int
shoal_gather(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t count, shoal_dtype dtype, int root)
{
    return coll_run(comm, &GATHER_CALL, NULL);
}

int
shoal_igather(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t count, shoal_dtype dtype, int root, shoal_request **req)
{
    return coll_start(comm, &GATHER_CALL, req);
}

#define SCATTER_CALL                                                          \
    CALL(.kind = SHI_OP_SCATTER, .send = sendbuf, .recv = recvbuf,            \
        .count = count, .dtype = dtype, .root = root)

int
shoal_scatter(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t count, shoal_dtype dtype, int root)
{
    return coll_run(comm, &SCATTER_CALL, NULL);
}

int
shoal_iscatter(shoal_comm *comm, const void *sendbuf, void *recvbuf,
    size_t count, shoal_dtype dtype, int root, shoal_request **req)
{
    return coll_start(comm, &SCATTER_CALL, req);
}

#define BROADCAST_CALL                                                        \
    CALL(.kind = SHI_OP_BCAST, .recv = buf, .count = count, .dtype = dtype,   \
        .root = root)

int
shoal_broadcast(
    shoal_comm *comm, void *buf, size_t count, shoal_dtype dtype, int root)
{
    return coll_run(comm, &BROADCAST_CALL, NULL);
}

int
shoal_ibroadcast(shoal_comm *comm, void *buf, size_t count, shoal_dtype dtype,
    int root, shoal_request **req)
{
    return coll_start(comm, &BROADCAST_CALL, req);
}

#define BARRIER_CALL                                                          \
    CALL(.kind = SHI_OP_BARRIER, .dtype = SHOAL_UINT8, .root = -1)

// The barrier implies a sync (the native communicator view's contract):
// when it returns, every operation this rank issued before it completed.
// The sync comes after the ranks met, so a send whose receive a peer posts
// after its own barrier does not hold the barrier up.
int
shoal_barrier(shoal_comm *comm)
{
    int st = coll_run(comm, &BARRIER_CALL, NULL);

    return st == SHOAL_OK ? shoal_comm_sync(comm) : st;
}

int
shoal_ibarrier(shoal_comm *comm, shoal_request **req)
{
    return coll_start(comm, &BARRIER_CALL, req);
}

static int
coll_named(shoal_comm *comm, const char *what, const char *collective)
{
    int coll = collective != NULL ? shi_coll_by_name(collective) : -1;

    if (comm == NULL) {
        return shi_error(SHOAL_EINVAL, "%s: the communicator is NULL", what);
    }
    if (coll < 0) {
        char known[256];
        shi_coll_list(known, sizeof(known), 1);
        return shi_comm_error(comm,
            shi_error(SHOAL_EINVAL, "%s: unknown collective '%s' (known: %s)",
                what, collective != NULL ? collective : "(null)", known));
    }
    return coll;
}

int
shoal_comm_algorithms(
    shoal_comm *comm, const char *collective, const char **names, int max)
{
    int coll = coll_named(comm, "comm_algorithms", collective), n = 0;

    if (coll < 0) {
        return coll;
    }
    if (max > 0 && names == NULL) {
        return shi_error(SHOAL_EINVAL, "comm_algorithms: names is NULL");
    }
    unsigned mask = shi_algos_for((shi_coll) coll) & comm->algos_available;
    for (int a = SHI_ALGO_NONE + 1; a < SHI_ALGO_COUNT; a++) {
        if (mask & SHI_ALGO_BIT(a)) {
            if (n < max) {
                names[n] = shi_algo_name(a);
            }
            n++;
        }
    }
    return n;
}

int
shoal_comm_algorithm_for(
    shoal_comm *comm, const char *collective, size_t bytes, const char **name)
{
    int coll = coll_named(comm, "comm_algorithm_for", collective);

    if (coll < 0) {
        return coll;
    }
    if (name == NULL) {
        return shi_error(SHOAL_EINVAL, "comm_algorithm_for: name is NULL");
    }
    *name = shi_algo_name(shi_select(comm->select, (shi_coll) coll, bytes,
        comm->size, comm->algos_available));
    return SHOAL_OK;
}

int
shoal_comm_algorithm_cost(shoal_comm *comm, const char *collective,
    const char *algorithm, size_t bytes, double coef[3])
{
    int      coll = coll_named(comm, "comm_algorithm_cost", collective);
    shi_cost cost;

    if (coll < 0) {
        return coll;
    }
    if (algorithm == NULL || coef == NULL) {
        return shi_error(
            SHOAL_EINVAL, "comm_algorithm_cost: algorithm or coef is NULL");
    }
    if (shi_algo_cost_on(comm, (shi_coll) coll,
            shi_algo_by_name(algorithm, strlen(algorithm)), bytes, &cost)
        != 0) {
        char have[256];
        shi_algo_mask_names(
            shi_algos_for((shi_coll) coll) & comm->algos_available, have,
            sizeof(have));
        return shi_error(SHOAL_ENOTSUP,
            "comm_algorithm_cost: algorithm '%s' cannot run %s on "
            "communicator '%s'; available: %s",
            algorithm, collective, comm->name, have);
    }
    coef[0] = cost.alpha;
    coef[1] = cost.beta;
    coef[2] = cost.gamma;
    return SHOAL_OK;
}

const char *
shoal_tuning_file_path(char *buf, size_t len)
{
    return buf != NULL ? shi_tuning_path(buf, len) : NULL;
}
