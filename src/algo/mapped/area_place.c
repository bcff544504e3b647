// Where the parts of the area a rank writes live (see area.h): on its own
// NUMA node, where the machine has several. Rank r writes its slabs (the
// staged collectives copy its input there for its peers to read) and its
// outbox (broadcasts from r); the readers' loads then cross the
// interconnect once, instead of r's stores and the readers' loads both
// going to the creating rank's node. The creating rank backed the whole
// area at creation (so that a machine short of memory fails there), so
// the pages are moved, not merely given a policy.
#include "algo/mapped/area.h"

#include "base/error.h"
#include "base/log.h"
#include "platform/numa.h"

int
shi_area_place(const struct shi_area *a, int rank)
{
    shi_numa_plan plan;
    int           st;

    if ((st = shi_numa_plan_get(&plan)) != SHOAL_OK || plan.node < 0) {
        return st;
    }
    unsigned char *slabs
        = a->base + a->slab_off + (size_t) rank * 2 * a->slab_bytes;
    unsigned char *box = a->base + a->box_off + (size_t) rank * a->box_bytes;
    st                 = shi_numa_move(slabs, 2 * a->slab_bytes, plan.node);
    if (st == SHOAL_OK) {
        st = shi_numa_move(box, a->box_bytes, plan.node);
    }
    if (st != SHOAL_OK && !plan.strict) {
        SHI_WARN("rank %d: staging memory left where it is: %s", rank,
            shi_error_text());
        return SHOAL_OK;
    }
    if (st == SHOAL_OK) {
        SHI_INFO("rank %d: slabs and outbox moved to NUMA node %d", rank,
            plan.node);
    }
    return st;
}
