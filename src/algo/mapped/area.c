// The mapped-memory family's area: its sizes and its layout (see area.h).
#include "algo/mapped/area.h"

#include <string.h>

#include "base/align.h"
#include "base/env.h"
#include "base/error.h"

#define AREA_MAGIC 0x73686f616c617265ull // "shoalare"

// Offsets of every part from the geometry fields; returns the area's size.
static uint64_t
area_layout(struct shi_area *a)
{
    size_t n = (size_t) a->nranks;

    a->box_slot_stride = shi_round_up(SHI_LINE + a->box_slot_bytes, SHI_LINE);
    // Each root's outbox, like each rank's slabs, fills whole pages: the
    // pages a rank writes can then live on its own NUMA node (area_place.c).
    a->box_bytes = shi_round_up(
        n * SHI_LINE + a->box_slots * a->box_slot_stride, SHI_PAGE);
    a->ctl_off = SHI_LINE;
    a->box_off = shi_round_up(
        a->ctl_off + n * sizeof(struct shi_mapped_ctl), SHI_PAGE);
    a->counts_off = a->box_off + n * a->box_bytes;
    // Slabs start on a page (the area does): a copy into a slab then keeps
    // the page offset of a page-aligned source, as memcpy likes best.
    a->slab_off
        = shi_round_up(a->counts_off + n * n * sizeof(uint64_t), SHI_PAGE);
    return a->slab_off + n * 2 * a->slab_bytes;
}

int
shi_area_plan(int nranks, struct shi_tp_area *out)
{
    struct shi_area_geometry g       = { .magic = AREA_MAGIC };
    struct shi_area          a       = { .nranks = nranks };
    long long                staging = 0, box_bytes = 0;
    int                      st;

    _Static_assert(sizeof(g) <= sizeof(out->head), "geometry fits the head");
    _Static_assert(sizeof(struct shi_box_slot) <= SHI_LINE, "one line");
    // The outbox has larger slots than the p2p rings because broadcast
    // streams whole tensors.
    if ((st = shi_env_size("SHOAL_SHM_BCAST_SLOT_BYTES", 256 << 10, 256,
             64 << 20, &box_bytes))
            != SHOAL_OK
        || (st = shi_env_size(
                "SHOAL_SHM_BYTES", 4 << 20, 64 << 10, 1LL << 32, &staging))
            != SHOAL_OK) {
        return st;
    }
    g.nranks         = (uint32_t) nranks;
    g.box_slots      = 8;
    g.box_slot_bytes = (uint32_t) shi_round_up((size_t) box_bytes, SHI_LINE);
    // SHOAL_SHM_BYTES is each rank's staging for collectives: two slabs.
    g.slab_bytes     = (uint64_t) (staging / 2) / 4096 * 4096;
    a.box_slots      = g.box_slots;
    a.box_slot_bytes = g.box_slot_bytes;
    a.slab_bytes     = g.slab_bytes;
    memset(out, 0, sizeof(*out));
    out->bytes = area_layout(&a);
    memcpy(out->head, &g, sizeof(g));
    return SHOAL_OK;
}

int
shi_area_bind(
    struct shi_area *a, unsigned char *base, uint64_t bytes, int nranks)
{
    struct shi_area_geometry g;

    memset(a, 0, sizeof(*a));
    if (base == NULL || bytes < sizeof(g)) {
        return shi_error(SHOAL_EPROTO,
            "the shared-memory transport gave the collectives no area");
    }
    memcpy(&g, base, sizeof(g));
    a->base           = base;
    a->bytes          = bytes;
    a->nranks         = nranks;
    a->box_slots      = g.box_slots;
    a->box_slot_bytes = g.box_slot_bytes;
    a->slab_bytes     = g.slab_bytes;
    // Written by rank 0's process, so checked like anything from a peer.
    if (g.magic != AREA_MAGIC || g.nranks != (uint32_t) nranks
        || g.box_slots == 0 || g.box_slot_bytes == 0
        || g.box_slot_bytes > (64u << 20) || g.slab_bytes > (1ull << 32)
        || area_layout(a) > bytes) {
        return shi_error(SHOAL_EPROTO,
            "the collectives' shared memory from rank 0 has an inconsistent "
            "layout (another shoal version?)");
    }
    return SHOAL_OK;
}

struct shi_box_tail *
shi_area_box_tail(const struct shi_area *a, int root, int rank)
{
    unsigned char *box = a->base + a->box_off + (size_t) root * a->box_bytes;

    return (struct shi_box_tail *) box + rank;
}

struct shi_box_slot *
shi_area_box_slot(const struct shi_area *a, int root, uint64_t i)
{
    unsigned char *box = a->base + a->box_off + (size_t) root * a->box_bytes;
    uint64_t       k   = i % a->box_slots;

    return (struct shi_box_slot *) (box + (size_t) a->nranks * SHI_LINE
        + k * a->box_slot_stride);
}

uint64_t *
shi_area_counts(const struct shi_area *a, int rank)
{
    return (uint64_t *) (a->base + a->counts_off)
        + (size_t) rank * (size_t) a->nranks;
}

unsigned char *
shi_area_slab(const struct shi_area *a, int rank, int which)
{
    return a->base + a->slab_off
        + ((size_t) rank * 2 + (size_t) which) * a->slab_bytes;
}
