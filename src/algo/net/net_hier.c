// Host-aware all-reduce and broadcast: shared memory within each host, TCP
// between them.
//
// When ranks span several hosts and some host runs more than one of them,
// the communicator keeps two internal ones, split off at creation:
// `local` (the ranks of this host, over shared memory) and `leaders` (the
// first rank of each host, over TCP). An all-reduce then runs in three
// stages, each a non-blocking operation on one of them:
//   1. reduce within the host into the leader's receive buffer (shared
//      memory, single copy where it can);
//   2. all-reduce among the leaders, in place (the TCP ring or recursive
//      doubling, by size);
//   3. broadcast within the host from the leader.
// Preconditions: a communicator with `local` set (see shi_hier_setup).
// Cost, k ranks per host, h hosts, S bytes: the shared-memory stages move
// about 2 S per rank at memory speed; only the leaders touch the network,
// with the TCP all-reduce's 2 (h - 1) / h x S per leader, instead of every
// rank sending 2 (n - 1) / n x S through TCP, loopback included.
// A broadcast from root R runs: within R's host from R (shared memory),
// among the leaders from R's host's leader (TCP), within every other host
// from its leader; only the leaders' copy crosses the network.
// AVG sums in both stages and the leader divides by the world size;
// PREMUL_SUM scales in stage 1 and sums in stage 2. Every rank ends with
// the leader's bits.
#include <stdio.h>
#include <stdlib.h>

#include "algo/common/algos.h"
#include "algo/net/net_gen.h"
#include "algo/net/net_driver.h"
#include "algo/registry.h"
#include "algo/select.h"
#include "algo/reduce/reduce.h"
#include "core/comm.h"
#include "core/engine.h"
#include "core/log.h"

enum { HIER_LOCAL_REDUCE = 0, HIER_LEADERS, HIER_BCAST, HIER_DONE };

static shoal_reduce_op
stage_op(shoal_reduce_op op, int stage)
{
    if (op.kind == SHOAL_AVG
        || (op.kind == SHOAL_PREMUL_SUM && stage == HIER_LEADERS)) {
        op.kind = SHOAL_SUM;
    }
    return op;
}

// Index of host `first`'s leader among the leaders (ranked by global
// rank: the hosts' first ranks before it).
static int
leader_index(const shoal_comm *comm, int first)
{
    int i = 0;

    for (int r = 0; r < first; r++) {
        i += comm->host_first[r] == r;
    }
    return i;
}

// Broadcast's stages (see the top of the file).
static int
hier_bcast_start(shoal_comm *comm, shoal_request *req, shoal_request **sub)
{
    int root = req->peer, home = comm->host_first[root];
    int mine = comm->host_index == home;

    switch (req->state) {
        case HIER_LOCAL_REDUCE:
            return !mine ? SHOAL_OK
                         : shoal_ibroadcast(comm->local, req->buf, req->count,
                             req->dtype, comm->local_rank_of[root], sub);
        case HIER_LEADERS:
            return comm->leaders == NULL
                ? SHOAL_OK
                : shoal_ibroadcast(comm->leaders, req->buf, req->count,
                    req->dtype, leader_index(comm, home), sub);
        case HIER_BCAST:
            return mine ? SHOAL_OK
                        : shoal_ibroadcast(comm->local, req->buf, req->count,
                            req->dtype, 0, sub);
    }
    return SHOAL_OK;
}

// Starts the operation of stage `state`; *sub stays NULL where this rank
// has nothing to do in it.
static int
hier_start(shoal_comm *comm, shoal_request *req, shoal_request **sub)
{
    int dt = req->dtype;

    *sub = NULL;
    if (req->kind == SHI_OP_BCAST) {
        return hier_bcast_start(comm, req, sub);
    }
    switch (req->state) {
        case HIER_LOCAL_REDUCE:
            return shoal_ireduce(comm->local, req->sendbuf, req->buf,
                req->count, dt, stage_op(req->op, HIER_LOCAL_REDUCE), 0, sub);
        case HIER_LEADERS:
            if (comm->leaders == NULL) {
                return SHOAL_OK;
            }
            return shoal_iall_reduce(comm->leaders, req->buf, req->buf,
                req->count, dt, stage_op(req->op, HIER_LEADERS), sub);
        case HIER_BCAST:
            if (comm->leaders != NULL && req->op.kind == SHOAL_AVG) {
                shi_reduce_divide(dt, req->buf, req->count, comm->size);
            }
            return shoal_ibroadcast(
                comm->local, req->buf, req->count, dt, 0, sub);
    }
    return SHOAL_OK;
}

static void
hier_fail(shoal_comm *comm, shoal_request *req, int st, const char *what)
{
    char desc[256];

    shi_req_describe(req, desc, sizeof(desc));
    shi_comm_abort(comm, st, "%s: %s within %s: %s", desc,
        req->state == HIER_LEADERS ? "the exchange between hosts"
                                   : "the shared-memory stage",
        what, shoal_last_error());
}

int
shi_hier_step(shoal_comm *comm, shoal_request *req)
{
    int n = 0;

    while (req->state < HIER_DONE) {
        if (comm->hier_sub == NULL && !comm->hier_started) {
            int st = hier_start(comm, req, &comm->hier_sub);
            if (st != SHOAL_OK) {
                hier_fail(comm, req, st, "starting");
                return n + 1;
            }
            comm->hier_started = 1;
            n++;
        }
        if (comm->hier_sub != NULL) {
            int st = shoal_test(comm->hier_sub);
            if (st == SHOAL_INPROGRESS) {
                return n;
            }
            shoal_request_free(comm->hier_sub);
            comm->hier_sub = NULL;
            if (st != SHOAL_OK) {
                hier_fail(comm, req, st, "failed");
                return n + 1;
            }
        }
        comm->hier_started = 0;
        req->state++;
        n++;
    }
    shi_engine_complete(comm, req, SHOAL_OK);
    return n + 1;
}

// After an abort: the stage in flight fails too (its communicators are
// aborted), so that nothing writes the caller's buffers any more.
void
shi_hier_abandon(shoal_comm *comm)
{
    if (comm->local == NULL && comm->leaders == NULL) {
        return;
    }
    char text[SHI_ERROR_TEXT_MAX];
    pthread_mutex_lock(&comm->err_lock);
    snprintf(text, sizeof(text), "%s", comm->fail_text);
    pthread_mutex_unlock(&comm->err_lock);
    int st = atomic_load(&comm->failed);
    if (comm->local != NULL) {
        shi_comm_abort(
            comm->local, st, "communicator '%s' failed: %s", comm->name, text);
    }
    if (comm->leaders != NULL) {
        shi_comm_abort(comm->leaders, st, "communicator '%s' failed: %s",
            comm->name, text);
    }
    if (comm->hier_sub != NULL) {
        shoal_wait(comm->hier_sub, -1);
        shoal_request_free(comm->hier_sub);
        comm->hier_sub = NULL;
    }
    comm->hier_started = 0;
}

int
shi_hier_setup(shoal_comm *comm, int host_index, int local_rank)
{
    int st = shoal_comm_split(comm, host_index, comm->rank, &comm->local);

    if (st == SHOAL_OK) {
        st = shoal_comm_split(comm, local_rank == 0 ? 0 : SHOAL_SPLIT_NONE,
            comm->rank, &comm->leaders);
    }
    if (st != SHOAL_OK) {
        return shi_error_wrap(st,
            "creating the per-host and between-host communicators of '%s'",
            comm->name);
    }
    comm->algos_available = shi_algos_offered(comm->tp->klass,
        SHI_NEEDS_HOSTS | (comm->cma_ok ? SHI_NEEDS_SINGLE_COPY : 0));
    SHI_INFO("communicator '%s': rank %d is rank %d of %d on its host%s",
        comm->name, comm->rank, shoal_comm_rank(comm->local),
        shoal_comm_size(comm->local),
        comm->leaders != NULL ? ", its leader" : "");
    return SHOAL_OK;
}

// Two shared-memory stages (about 2 S per rank at memory speed, counted
// as beta) around the leaders' ring; the number of hosts is not known
// here, so the ring is priced for every rank a host (the worst case).
void
net_hier_cost(const shi_cost_call *c, shi_cost *out)
{
    shi_cost ring;

    net_allreduce_ring_cost(c, &ring);
    *out = (shi_cost) { .alpha = 2 + ring.alpha,
        .beta                  = 2 * (double) c->bytes + ring.beta,
        .gamma                 = (double) c->bytes + ring.gamma };
}
