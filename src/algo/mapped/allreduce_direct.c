// Single-copy all-reduce: ranks read each other's send buffers and write
// each other's receive buffers directly.
//
// Steps: (1) every rank exposes its send and receive buffers; sync point
// (descriptors checked); (2) rank r reduces segment r of all n send
// buffers, piece by piece (PIECE_BYTES, see direct_reduce.c), reading
// peers' memory in place when it lies in the shared heap (shoal_alloc) and
// through process_vm_readv otherwise, into segment r of its own recvbuf,
// and pushes each reduced piece, still in its cache, into segment r of
// every peer's recvbuf (in place, or process_vm_writev); (3) sync point:
// every segment has arrived everywhere, and no rank returns (and reuses
// its buffers) while a peer still reads or writes them.
// In place is safe: segment r of any rank's buffer is read only by rank
// r, and rank r overwrites a piece only after it has read that piece from
// every rank.
// Preconditions: the kernel lets ranks read and write each other's memory
// (checked once at communicator creation, for every pair) or the buffers
// are in the shared heap. When any rank's buffer lies outside the heap
// and a built-in rule that lets it chose this algorithm (up to 1 MiB:
// coll/select.c), the call runs two-shot instead, after step (1) (see
// direct.h).
// Cost: 2 alpha + gamma S (each rank reduces S/n from n inputs) + beta S
// (the pushes); memory traffic about 2 S per rank for n = 2 (reading the
// peer's reduced segment back from memory is avoided), against 5 S for
// staged two-shot.
#include "algo/common/algos.h"
#include "algo/mapped/direct.h"
#include "algo/mapped/direct_reduce.h"
#include "algo/mapped/mapped.h"
#include "algo/mapped/xfer.h"
#include "algo/registry.h"

// Rank r reduces segment r of every input into its recvbuf and pushes it
// to every peer.
static int
reduce_my_segment(shoal_comm *comm, shoal_request *req)
{
    size_t es = shi_req_esize(req), lo, hi;

    shi_segment(req->count, es, comm->size, comm->rank, &lo, &hi);
    return shi_direct_reduce_range(
        comm, req, lo, hi - lo, req->buf + lo * es, SHI_PUSH_ALL);
}

// Why the registry row hands a call the table chose to two-shot where a
// buffer lies outside the shared heap: through the slabs it beats reading
// through the kernel: 2 ranks, float32 from malloc, 64 KiB
// / 256 KiB / 1 MiB / 16 MiB took 9.8 / 24.8-25.8 / 80-81 / 3,053-3,427
// us staged against 12.3-16.3 / 35.7-48 / 109-141 / 4,452-5,586 direct
// (on a host where cache lines move slowly between CPUs the kernel's
// copy won instead: 1 MiB 430 against 593). From the heap, single copy
// wins: 5.3 / 19 / 34-35 us.
static const shi_direct_ops allreduce_direct = { .work = reduce_my_segment };

int
shi_allreduce_direct_step(shoal_comm *comm, shoal_request *req)
{
    return shi_direct_run(comm, req, &allreduce_direct);
}

void
shi_allreduce_direct_cost(const shi_cost_call *c, shi_cost *out)
{
    *out = (shi_cost) {
        .alpha = 2, .beta = (double) c->bytes, .gamma = (double) c->bytes
    };
}
