// Single-copy reduce-scatter: rank r reads block r of every rank's send
// buffer directly and reduces it into its recvbuf.
//
// Steps: (1) expose the send buffer; sync point (descriptors checked);
// (2) reduce block r over all ranks, piece by piece, reading peers in
// place (shared heap) or through process_vm_readv; (3) sync point, so that
// no rank reuses its send buffer while a peer reads it.
// Preconditions: as for the direct all-reduce. Blocks may differ in size
// (reduce_scatter_v).
// Cost: 2 alpha + gamma S/n per rank reading n inputs; traffic about
// (n + 1) S/n per rank.
#include "algo/common/algos.h"
#include "algo/mapped/direct.h"
#include "algo/mapped/direct_reduce.h"
#include "algo/mapped/mapped.h"
#include "algo/mapped/xfer.h"
#include "algo/registry.h"

// Rank r reduces block r over every rank's send buffer into its recvbuf.
static int
reduce_my_block(shoal_comm *comm, shoal_request *req)
{
    return shi_direct_reduce_range(comm, req, shi_block_displ(req, comm->rank),
        shi_block_count(req, comm->rank), req->buf, SHI_PUSH_NONE);
}

static const shi_direct_ops reduce_scatter_direct
    = { .work = reduce_my_block };

int
shi_reduce_scatter_direct_step(shoal_comm *comm, shoal_request *req)
{
    return shi_direct_run(comm, req, &reduce_scatter_direct);
}

void
shi_reduce_scatter_direct_cost(const shi_cost_call *c, shi_cost *out)
{
    double n = c->nranks > 0 ? c->nranks : 1;

    *out = (shi_cost) { .alpha = 2,
        .beta                  = (double) c->bytes * (n - 1) / n,
        .gamma                 = (double) c->bytes };
}
