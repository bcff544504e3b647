// Block sizes and displacements of the collectives' buffers.
#include "algo/common/algos.h"
#include "core/op_props.h"

// Elements of rank `rank`'s block: per-rank counts for v-collectives, the
// common count otherwise.
size_t
shi_block_count(const shoal_request *req, int rank)
{
    return req->counts != NULL ? req->counts[rank] : req->count;
}

size_t
shi_block_displ(const shoal_request *req, int rank)
{
    return req->counts == NULL ? req->count * (size_t) rank
                               : shi_counts_sum(req->counts, rank);
}
