// Where a rank's heap lives (SHOAL_SHM_NUMA). The heap holds the rank's
// zero-copy buffers (shoal_alloc: gradients, activations), which the rank
// itself writes most; its pages are backed lazily, by whichever process
// touches them first. On a machine of several NUMA nodes each rank
// therefore prefers, for its own heap, the node its CPUs belong to, so
// that the pages land there whoever backs them. A rank whose CPUs span
// nodes (unpinned on a multi-socket machine) leaves its heap to the
// kernel's first touch: no node is its own. One node: nothing to do.
//
//   SHOAL_SHM_NUMA=auto (default)  place where there are several nodes
//                  on              place on one node too (and fail the
//                                  creation if the kernel refuses)
//                  off             never place
#include "base/log.h"
#include "platform/numa.h"
#include "transport/shm/shm.h"

int
shm_place_heap(shoal_comm *comm)
{
    struct shi_tp_comm *tc  = shi_tp_comm(comm);
    shm_segment        *seg = shi_shm_seg(comm);
    shi_numa_plan       plan;
    int                 st;

    if ((st = shi_numa_plan_get(&plan)) != SHOAL_OK || seg->heap_bytes == 0) {
        return st;
    }
    if (plan.node < 0) {
        if (plan.strict || plan.nnodes > 1) {
            SHI_INFO("rank %d: heap left to first touch (%d NUMA node(s); "
                     "this rank's CPUs %s)",
                tc->rank, plan.nnodes,
                plan.nnodes > 0 ? "span nodes or are unknown" : "unknown");
        }
        return SHOAL_OK;
    }
    st = shi_numa_prefer(
        shm_heap_of(seg, tc->rank), (size_t) seg->heap_bytes, plan.node);
    return shi_numa_placed(&plan, st, tc->rank, "heap (its pages to come)");
}
