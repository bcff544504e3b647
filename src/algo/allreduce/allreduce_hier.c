// Host-aware all-reduce: shared memory within each host, TCP between them
// (the stages run by algo/common/hier.c):
//   1. reduce within the host into the leader's receive buffer (shared
//      memory, single copy where it can);
//   2. all-reduce among the leaders, in place (the TCP ring or recursive
//      doubling, by size);
//   3. broadcast within the host from the leader.
// Preconditions: the per-host and between-host communicators exist.
// Cost, k ranks per host, h hosts, S bytes: the shared-memory stages move
// about 2 S per rank at memory speed; only the leaders touch the network,
// with the TCP all-reduce's 2 (h - 1) / h x S per leader, instead of every
// rank sending 2 (n - 1) / n x S through TCP, loopback included.
// AVG sums in both stages and the leader divides by the world size;
// PREMUL_SUM scales in stage 1 and sums in stage 2. Every rank ends with
// the leader's bits.
// Refuses float16 and bfloat16: its stages would round each host's
// partial sum to the 16-bit type, where shoal.h promises one rounding of
// the float32 sum (and shared memory's bits); the ring's schedule reduces
// raw inputs for these types (net_reduce_parts.c).
#include "algo/common/algos.h"
#include "algo/common/hier.h"
#include "algo/kernels/reduce.h"
#include "algo/net/net_gen.h"
#include "algo/registry.h"
#include "algo/upcalls.h"

int
shi_allreduce_hier_accepts(const shoal_request *req)
{
    return req->dtype != SHOAL_FLOAT16 && req->dtype != SHOAL_BFLOAT16;
}

static shoal_reduce_op
stage_op(shoal_reduce_op op, int stage)
{
    if (op.kind == SHOAL_AVG
        || (op.kind == SHOAL_PREMUL_SUM && stage == HIER_LEADERS)) {
        op.kind = SHOAL_SUM;
    }
    return op;
}

// Starts the current stage (see the top of the file).
static int
allreduce_stage(shoal_comm *comm, shoal_request *req, shoal_request **sub)
{
    int dt = req->dtype;

    *sub = NULL;
    switch (*shi_hier_stage(req)) {
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

int
shi_allreduce_hier_step(shoal_comm *comm, shoal_request *req)
{
    return shi_hier_run(comm, req, allreduce_stage);
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
