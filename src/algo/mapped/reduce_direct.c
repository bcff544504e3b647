// Single-copy reduce to a root: every rank reduces one segment and writes
// it straight into the root's receive buffer.
//
// Steps: (1) every rank exposes its send and receive buffers; sync point
// (descriptors checked); (2) rank r reduces segment r of all n send
// buffers piece by piece, reading peers in place (shared heap) or through
// process_vm_readv; the root reduces into its recvbuf, the others into
// scratch and push each piece, still in the cache, into the root's recvbuf
// (in place, or process_vm_writev); (3) sync point: the root has every
// segment, and nobody reuses a buffer a peer may still read.
// In place (the root's sendbuf is its recvbuf) is safe: segment r of any
// buffer is read only by rank r, which writes a piece after reading it.
// Preconditions: as for the direct all-reduce; one-shot runs a call the
// built-in table chose (up to 1 MiB: coll/select.c) when any rank's
// buffer lies outside the heap (see direct.h).
// Cost: 2 alpha + gamma S (each rank reduces S/n from n inputs) + beta S/n
// per rank into the root; the work is spread over all ranks instead of
// the root reducing n S alone.
#include "algo/common/algos.h"
#include "algo/mapped/direct.h"
#include "algo/mapped/direct_reduce.h"
#include "algo/mapped/mapped.h"
#include "algo/mapped/xfer.h"
#include "algo/registry.h"

// Rank r reduces segment r of every input and writes it into the root's
// recvbuf.
static int
reduce_my_segment(shoal_comm *comm, shoal_request *req)
{
    size_t         es   = shi_req_esize(req), lo, hi;
    int            root = req->peer;
    unsigned char *mine;

    shi_segment(req->count, es, comm->size, comm->rank, &lo, &hi);
    mine = comm->rank == root ? req->buf + lo * es : NULL;
    return shi_direct_reduce_range(comm, req, lo, hi - lo, mine, root);
}

// Why the registry row hands a call the table chose to one-shot where a
// buffer lies outside the shared heap: through the slabs it beats reading
// and writing through the kernel: 2 ranks, float32 from
// malloc, 64 KiB / 256 KiB / 1 MiB / 16 MiB took 7.8-9.8 / 17-18 / 58-74
// / 2,774-2,978 us staged against 12.3-15.8 / 33-38 / 117-127 /
// 3,180-4,410 direct (where cache lines move slowly between CPUs the
// kernel's copy won: 64 KiB 25-33 against 35-42). From the heap, single
// copy wins: 5.7 / 16.5-18.4 / 34-35 / 1,692-1,854 us.
static const shi_direct_ops reduce_direct = { .work = reduce_my_segment };

int
shi_reduce_direct_step(shoal_comm *comm, shoal_request *req)
{
    return shi_direct_run(comm, req, &reduce_direct);
}

void
shi_reduce_direct_cost(const shi_cost_call *c, shi_cost *out)
{
    *out = (shi_cost) { .alpha = 2,
        .beta  = (double) c->bytes / (c->nranks > 0 ? c->nranks : 1),
        .gamma = (double) c->bytes };
}
