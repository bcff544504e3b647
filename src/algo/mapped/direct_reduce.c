// Direct reduction of a range over all ranks (see direct_reduce.h).
#include "algo/mapped/direct_reduce.h"

#include "algo/common/algos.h"
#include "algo/kernels/reduce.h"
#include "algo/mapped/direct.h"
#include "algo/mapped/mapped.h"
#include "algo/mapped/xfer.h"
#include "core/engine.h"

// Bytes read from each peer per piece: small enough that the n inputs and
// the output stay in L2 while they are combined.
#define PIECE_BYTES (256u << 10)

// Copies out[0, bytes) to byte `off` of the receive buffers of the peers
// `push` names.
static int
push_to_peers(shoal_comm *comm, int push, size_t off, const unsigned char *out,
    size_t bytes)
{
    for (int q = 0; q < comm->size; q++) {
        int wanted = push == SHI_PUSH_ALL || push == q;
        int st     = q == comm->rank || !wanted
                ? SHOAL_OK
                : shi_peer_write(comm, q, SHI_RECV, off, out, bytes);
        if (st != SHOAL_OK) {
            return st;
        }
    }
    return SHOAL_OK;
}

int
shi_direct_reduce_range(shoal_comm *comm, shoal_request *req, size_t first,
    size_t elems, unsigned char *recv, int push)
{
    size_t         es     = shi_req_esize(req);
    size_t         per    = PIECE_BYTES / es;
    size_t         inputs = (size_t) comm->size * PIECE_BYTES;
    unsigned char *scratch
        = shi_scratch(comm, inputs + (recv == NULL ? PIECE_BYTES : 0));

    if (scratch == NULL) {
        return SHOAL_ENOMEM;
    }
    for (size_t *done = shi_direct_done(req); *done < elems; *done += per) {
        if (shi_engine_pause_long_work(comm)) {
            return SHOAL_INPROGRESS;
        }
        size_t n = elems - *done < per ? elems - *done : per;
        for (int q = 0; q < comm->size; q++) {
            const unsigned char *p
                = shi_peer_bytes(comm, q, SHI_SEND, (first + *done) * es,
                    n * es, scratch + (size_t) q * PIECE_BYTES);
            if (p == NULL) {
                return SHOAL_ESYS;
            }
            comm->inputs[q] = p;
        }
        unsigned char *out
            = recv != NULL ? recv + *done * es : scratch + inputs;
        shi_reduce(req->dtype, req->op, out, comm->inputs, comm->size, n);
        if (push != SHI_PUSH_NONE
            && push_to_peers(comm, push, (first + *done) * es, out, n * es)
                != SHOAL_OK) {
            return SHOAL_ESYS;
        }
    }
    return SHOAL_OK;
}
