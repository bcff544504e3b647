// The mapped-memory collectives' driver (see driver.h).
#include "algo/mapped/driver.h"

#include <stdio.h>
#include <stdlib.h>

#include "algo/registry.h"
#include "core/engine.h"
#include "core/op_props.h"

static void
describe_call(char *buf, size_t len, const struct shi_call_desc *d)
{
    char root[32] = "", op[48] = "", algo[48] = "";

    if (d->kind == SHI_OP_BARRIER) {
        snprintf(buf, len, "barrier");
        return;
    }
    if (d->root >= 0) {
        snprintf(root, sizeof(root), "root %d, ", d->root);
    }
    if (shi_op_props_of((int) d->kind)->reduces) {
        snprintf(op, sizeof(op), ", %s", shoal_op_name((int) d->redop));
    }
    if (d->algo != SHI_ALGO_NONE) {
        snprintf(algo, sizeof(algo), ", %s%s", shi_algo_name((int) d->algo),
            d->may_hand_over ? " (may hand over)" : "");
    }
    snprintf(buf, len, "%s(%s%llu x %s%s%s%s)",
        shi_op_kind_name((int) d->kind), root, (unsigned long long) d->count,
        shoal_dtype_name((int) d->dtype), op,
        d->counts_hash != 0 && d->kind != SHI_OP_ALLTOALLV
            ? ", per-rank counts"
            : "",
        algo);
}

// Publishes what this rank calls as collective req->seq (seqlock: the
// slot's seq is cleared first so readers never accept a half-written one).
static void
publish_descriptor(shoal_comm *comm, shoal_request *req)
{
    struct shi_mapped_ctl *me = shi_my_ctl(comm);
    struct shi_call_desc  *d  = &me->desc[req->seq % SHI_DESC_RING];

    atomic_store_explicit(&d->seq, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    __atomic_store_n(&d->kind, (uint32_t) req->kind, __ATOMIC_RELAXED);
    __atomic_store_n(&d->root, (int32_t) req->peer, __ATOMIC_RELAXED);
    __atomic_store_n(&d->dtype, (uint32_t) req->dtype, __ATOMIC_RELAXED);
    __atomic_store_n(&d->count, (uint64_t) req->count, __ATOMIC_RELAXED);
    __atomic_store_n(&d->redop, (uint32_t) req->op.kind, __ATOMIC_RELAXED);
    __atomic_store_n(&d->algo, (uint32_t) req->algo, __ATOMIC_RELAXED);
    __atomic_store_n(
        &d->may_hand_over, (uint32_t) req->may_hand_over, __ATOMIC_RELAXED);
    __atomic_store_n(&d->counts_hash, req->counts_hash, __ATOMIC_RELAXED);
    __atomic_store_n(&d->arrive_ns, req->start_ns, __ATOMIC_RELAXED);
    atomic_store_explicit(&d->seq, (uint32_t) req->seq, memory_order_release);
    uint64_t hash = shi_desc_hash(d);
    __atomic_store_n(&me->desc_hash[req->seq % 2], hash, __ATOMIC_RELAXED);
    __atomic_store_n(&me->coll_hash[req->seq % 2], hash, __ATOMIC_RELAXED);
    atomic_store_explicit(
        &me->coll_seq, (uint32_t) req->seq, memory_order_release);
}

int
shi_coll_peer_differs(shoal_comm *comm, int p, uint32_t seq)
{
    struct shi_mapped_ctl *ctl = shi_ctl_of(comm, p);

    if (atomic_load_explicit(&ctl->coll_seq, memory_order_acquire) != seq
        || __atomic_load_n(&ctl->desc_hash[seq % 2], __ATOMIC_RELAXED)
            == __atomic_load_n(
                &shi_my_ctl(comm)->desc_hash[seq % 2], __ATOMIC_RELAXED)) {
        return 0;
    }
    return shi_coll_verify(comm, seq);
}

int
shi_coll_agree(shoal_comm *comm, uint32_t seq)
{
    uint64_t mine = __atomic_load_n(
        &shi_my_ctl(comm)->desc_hash[seq % 2], __ATOMIC_RELAXED);

    for (int p = 0; p < comm->size; p++) {
        struct shi_mapped_ctl *ctl = shi_ctl_of(comm, p);
        if (p != comm->rank
            && __atomic_load_n(&ctl->desc_hash[seq % 2], __ATOMIC_RELAXED)
                != mine) {
            // A peer may be a collective ahead (its slot then holds a newer
            // hash): only the full comparison can tell.
            return !shi_coll_verify(comm, seq);
        }
    }
    return 1;
}

// Reads a consistent copy of peer's descriptor for collective t; returns 0
// if it was overwritten meanwhile.
static int
read_descriptor(
    const struct shi_call_desc *d, uint32_t t, struct shi_call_desc *out)
{
    if (atomic_load_explicit(&d->seq, memory_order_acquire) != t) {
        return 0;
    }
    out->kind          = __atomic_load_n(&d->kind, __ATOMIC_RELAXED);
    out->root          = __atomic_load_n(&d->root, __ATOMIC_RELAXED);
    out->dtype         = __atomic_load_n(&d->dtype, __ATOMIC_RELAXED);
    out->count         = __atomic_load_n(&d->count, __ATOMIC_RELAXED);
    out->redop         = __atomic_load_n(&d->redop, __ATOMIC_RELAXED);
    out->algo          = __atomic_load_n(&d->algo, __ATOMIC_RELAXED);
    out->may_hand_over = __atomic_load_n(&d->may_hand_over, __ATOMIC_RELAXED);
    out->counts_hash   = __atomic_load_n(&d->counts_hash, __ATOMIC_RELAXED);
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&d->seq, memory_order_relaxed) == t;
}

static int
same_call(const struct shi_call_desc *a, const struct shi_call_desc *b)
{
    return a->kind == b->kind && a->root == b->root && a->dtype == b->dtype
        && a->count == b->count && a->redop == b->redop && a->algo == b->algo
        && a->may_hand_over == b->may_hand_over
        && a->counts_hash == b->counts_hash;
}

static int
verify_peer(shoal_comm *comm, int peer, uint32_t upto)
{
    struct shi_mapped_peer *p   = &shi_mapped_of(comm)->peers[peer];
    struct shi_mapped_ctl  *ctl = shi_ctl_of(comm, peer);
    uint32_t                peer_seq
        = atomic_load_explicit(&ctl->coll_seq, memory_order_acquire);
    uint32_t hi = shi_seq_diff(peer_seq, upto) < 0 ? peer_seq : upto;
    char     mine[128], theirs[128];

    for (uint32_t t = p->coll_checked + 1; shi_seq_diff(t, hi) <= 0; t++) {
        struct shi_call_desc a, b;
        if (shi_seq_diff(hi, t) >= SHI_DESC_RING / 2
            || !read_descriptor(
                &shi_my_ctl(comm)->desc[t % SHI_DESC_RING], t, &a)
            || !read_descriptor(&ctl->desc[t % SHI_DESC_RING], t, &b)) {
            continue;
        }
        if (!same_call(&a, &b)) {
            describe_call(mine, sizeof(mine), &a);
            describe_call(theirs, sizeof(theirs), &b);
            shi_comm_abort(comm, SHOAL_EMISMATCH,
                "collective #%u does not match across ranks: "
                "rank %d called %s, rank %d called %s",
                t, comm->rank, mine, peer, theirs);
            return 1;
        }
    }
    if (shi_seq_diff(hi, p->coll_checked) > 0) {
        p->coll_checked = hi;
    }
    return 0;
}

int
shi_coll_verify(shoal_comm *comm, uint32_t upto)
{
    for (int peer = 0; peer < comm->size; peer++) {
        if (peer != comm->rank && verify_peer(comm, peer, upto)) {
            return 1;
        }
    }
    return 0;
}

// One step of the head collective's algorithm: the registry row chosen
// at submission (coll/api.c).
static int
run_algorithm(shoal_comm *comm, shoal_request *req)
{
    const shi_algo_desc *d = req->impl;

    if (d == NULL || d->step == NULL) {
        shi_comm_abort(comm, SHOAL_ENOTSUP, "no algorithm can run %s",
            shi_op_kind_name(req->kind));
        return 1;
    }
    return d->step(comm, req);
}

int
shi_coll_step(shoal_comm *comm)
{
    int n = 0;

    for (;;) {
        shoal_request *req = shi_engine_head(comm);
        if (req == NULL || atomic_load(&comm->failed)) {
            return n;
        }
        if (!req->started) {
            req->started   = 1;
            req->sync_base = shi_mapped_of(comm)->sync_count;
            publish_descriptor(comm, req);
            // A barrier is announced by the counter alone; every other
            // algorithm publishes a flag (and rings) in its first step.
            if (req->kind == SHI_OP_BARRIER) {
                shi_ring_peers(comm);
            }
            n++;
        }
        n += run_algorithm(comm, req);
        // A completed request may already be freed by its owner: look at
        // the queue, not at the request.
        if (shi_engine_head(comm) == req) {
            // Still waiting (later collectives wait behind it): time to
            // account an earlier collective's arrivals.
            shi_lateness_account(comm, (uint32_t) req->seq);
            return n;
        }
    }
}

int
shi_mapped_state_new(shoal_comm *comm)
{
    struct shi_mapped_state *m     = calloc(1, sizeof(*m));
    uint64_t                 bytes = 0;
    unsigned char           *base;
    int                      st;

    if (m == NULL
        || (m->peers = calloc((size_t) comm->size, sizeof(*m->peers)))
            == NULL) {
        free(m);
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    comm->mapped_state = m;
    base               = comm->tp->coll_area(comm, &bytes);
    if ((st = shi_area_bind(&m->area, base, bytes, comm->size)) != SHOAL_OK
        || (st = shi_area_place(&m->area, comm->rank)) != SHOAL_OK) {
        return st;
    }
    m->my_ctl = shi_area_ctl(&m->area, comm->rank);
    return SHOAL_OK;
}

void
shi_mapped_state_free(shoal_comm *comm)
{
    if (comm->mapped_state != NULL) {
        free(comm->mapped_state->peers);
        free(comm->mapped_state);
        comm->mapped_state = NULL;
    }
}
