// Where the parts of the area a rank writes live (see area.h): on its own
// NUMA node, where the machine has several. Rank r writes its slabs (the
// staged collectives copy its input there for its peers to read) and its
// outbox (broadcasts from r); the readers' loads then cross the
// interconnect once, instead of r's stores and the readers' loads both
// going to the creating rank's node. The creating rank backed the whole
// area at creation (so that a machine short of memory fails there), so
// the pages are moved, not merely given a policy.
#include "algo/mapped/area.h"

#include "platform/numa.h"

int
shi_area_place(const struct shi_area *a, int rank)
{
    shi_numa_plan plan;
    int           st;

    if ((st = shi_numa_plan_get(&plan)) != SHOAL_OK || plan.node < 0) {
        return st;
    }
    // A rank's two slabs lie side by side; its outbox begins with its
    // readers' tail lines.
    st = shi_numa_move(
        shi_area_slab(a, rank, 0), 2 * a->slab_bytes, plan.node);
    if (st == SHOAL_OK) {
        st = shi_numa_move(
            shi_area_box_tail(a, rank, 0), a->box_bytes, plan.node);
    }
    return shi_numa_placed(&plan, st, rank, "slabs and outbox");
}
