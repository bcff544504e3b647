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
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "platform/numa.h"
#include "transport/shm/shm.h"

enum numa_mode { NUMA_OFF, NUMA_AUTO, NUMA_ON };

static int
numa_mode(enum numa_mode *out)
{
    const char *v = getenv("SHOAL_SHM_NUMA");

    *out = NUMA_AUTO;
    if (v == NULL || v[0] == '\0' || strcmp(v, "auto") == 0) {
        return SHOAL_OK;
    }
    if (strcmp(v, "on") == 0) {
        *out = NUMA_ON;
        return SHOAL_OK;
    }
    if (strcmp(v, "off") == 0) {
        *out = NUMA_OFF;
        return SHOAL_OK;
    }
    return shi_error(
        SHOAL_EENV, "SHOAL_SHM_NUMA=\"%s\": use auto, on or off", v);
}

int
shm_place_heap(shoal_comm *comm)
{
    struct shi_tp_comm *tc  = shi_tp_comm(comm);
    shm_segment        *seg = shi_shm_seg(comm);
    enum numa_mode      mode;
    int                 st, node, nnodes;

    if ((st = numa_mode(&mode)) != SHOAL_OK || mode == NUMA_OFF
        || seg->heap_bytes == 0) {
        return st;
    }
    node = shi_numa_my_home(&nnodes);
    if (nnodes < (mode == NUMA_ON ? 1 : 2) || node < 0) {
        if (mode == NUMA_ON || nnodes > 1) {
            SHI_INFO("rank %d: heap left to first touch (%d NUMA node(s); "
                     "this rank's CPUs %s)",
                tc->rank, nnodes,
                node < 0 ? "span nodes or are unknown" : "on one node");
        }
        return SHOAL_OK;
    }
    st = shi_numa_prefer(
        shm_heap_of(seg, tc->rank), (size_t) seg->heap_bytes, node);
    if (st != SHOAL_OK && mode == NUMA_AUTO) {
        SHI_WARN("rank %d: heap left to first touch: %s", tc->rank,
            shi_error_text());
        return SHOAL_OK;
    }
    if (st == SHOAL_OK) {
        SHI_INFO("rank %d: heap prefers NUMA node %d", tc->rank, node);
    }
    return st;
}
