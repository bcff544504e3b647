// Building blocks of the collectives (see xfer.h).
#include "algo/mapped/xfer.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "algo/mapped/driver.h"
#include "core/engine.h"

static int
all_peers_reached(shoal_comm *comm, shoal_request *req, uint64_t target)
{
    for (int p = 0; p < comm->size; p++) {
        if (p == comm->rank) {
            continue;
        }
        struct shi_mapped_ctl *ctl = shi_ctl_of(comm, p);
        if (atomic_load_explicit(&ctl->sync, memory_order_acquire) < target) {
            req->blocked_on = p;
            shi_coll_peer_differs(comm, p, (uint32_t) req->seq);
            return 0;
        }
    }
    req->blocked_on = -1;
    return 1;
}

static void
publish_sync(shoal_comm *comm, uint64_t value)
{
    if (atomic_load_explicit(&shi_my_ctl(comm)->sync, memory_order_relaxed)
        >= value) {
        return;
    }
    atomic_store_explicit(
        &shi_my_ctl(comm)->sync, value, memory_order_release);
    shi_ring_peers(comm);
}

int
shi_sync_all(shoal_comm *comm, shoal_request *req, int k)
{
    uint64_t target = req->sync_base + (uint64_t) k;

    publish_sync(comm, target);
    if (!all_peers_reached(comm, req, target)) {
        return 0;
    }
    return k != 1 || shi_coll_agree(comm, (uint32_t) req->seq);
}

int
shi_sync_peer(shoal_comm *comm, shoal_request *req, int p, int k)
{
    uint64_t               target = req->sync_base + (uint64_t) k;
    struct shi_mapped_ctl *ctl    = shi_ctl_of(comm, p);

    publish_sync(comm, target);
    if (atomic_load_explicit(&ctl->sync, memory_order_acquire) < target) {
        req->blocked_on = p;
        return 0;
    }
    return 1;
}

void
shi_sync_finish(shoal_comm *comm, shoal_request *req, int k)
{
    shi_mapped_of(comm)->sync_count = req->sync_base + (uint64_t) k;
}

void
shi_expose(shoal_comm *comm, const void *send, const void *recv)
{
    struct shi_expose   *e = &shi_my_ctl(comm)->expose;
    struct shi_tp_region r;

    // The buffers' sizes are the call's, which every rank agreed on; the
    // heap offsets are what a peer's view is checked against.
    comm->tp->mem_expose(comm, send, 0, &r);
    e->send_addr = r.addr;
    e->send_heap = r.heap_off;
    comm->tp->mem_expose(comm, recv, 0, &r);
    e->recv_addr = r.addr;
    e->recv_heap = r.heap_off;
}

// Peer p's exposed `side` buffer as a region reaching `end` bytes (offsets
// and lengths come from the call, agreed by every rank).
static struct shi_tp_region
exposed(shoal_comm *comm, int p, int side, size_t end)
{
    const struct shi_expose *e = &shi_ctl_of(comm, p)->expose;

    return (struct shi_tp_region) {
        .addr     = side == SHI_SEND ? e->send_addr : e->recv_addr,
        .bytes    = end,
        .heap_off = side == SHI_SEND ? e->send_heap : e->recv_heap,
        .owner    = p,
    };
}

const unsigned char *
shi_peer_view(shoal_comm *comm, int p, int side, size_t off, size_t len)
{
    struct shi_tp_region r = exposed(comm, p, side, off + len);

    return comm->tp->mem_view(comm, &r, off, len);
}

// A failed copy aborts the communicator with the transport's message: a
// peer whose process is gone is that peer dying (SHOAL_EPEER, as the
// watcher would report it a moment later), anything else a system fault.
// But a peer that found a fault first (ranks calling different
// collectives) published its abort before it could exit: that abort, not
// the absence it led to, is the cause, so it is looked for first.
static int
peer_copy_failed(shoal_comm *comm, int p, int st)
{
    if (comm->tp->poll_abort != NULL && comm->tp->poll_abort(comm)) {
        return atomic_load(&comm->failed);
    }
    shi_comm_abort(comm, st, "rank %d could not copy rank %d's buffer: %s",
        comm->rank, p, shi_error_text());
    return st;
}

int
shi_peer_read(
    shoal_comm *comm, int p, int side, size_t off, void *dst, size_t len)
{
    struct shi_tp_region r = exposed(comm, p, side, off + len);
    int                  st;

    if (len == 0) {
        return SHOAL_OK;
    }
    st = comm->tp->mem_read(comm, &r, off, dst, len);
    return st == SHOAL_OK ? st : peer_copy_failed(comm, p, st);
}

int
shi_peer_write(
    shoal_comm *comm, int p, int side, size_t off, const void *src, size_t len)
{
    struct shi_tp_region r = exposed(comm, p, side, off + len);
    int                  st;

    if (len == 0) {
        return SHOAL_OK;
    }
    st = comm->tp->mem_write(comm, &r, off, src, len);
    return st == SHOAL_OK ? st : peer_copy_failed(comm, p, st);
}

const unsigned char *
shi_peer_bytes(shoal_comm *comm, int p, int side, size_t off, size_t len,
    unsigned char *scratch)
{
    const unsigned char *view;

    if (p == comm->rank) {
        const struct shi_expose *e = &shi_my_ctl(comm)->expose;
        return (const unsigned char *) (uintptr_t) (side == SHI_SEND
                       ? e->send_addr
                       : e->recv_addr)
            + off;
    }
    if ((view = shi_peer_view(comm, p, side, off, len)) != NULL) {
        return view;
    }
    return shi_peer_read(comm, p, side, off, scratch, len) == SHOAL_OK
        ? scratch
        : NULL;
}

uint64_t
shi_slab_next(shoal_comm *comm)
{
    return ++shi_mapped_of(comm)->slab_use;
}

int
shi_slab_free(shoal_comm *comm, shoal_request *req, uint64_t use)
{
    if (use <= 2) {
        return 1;
    }
    for (int p = 0; p < comm->size; p++) {
        if (p == comm->rank) {
            continue;
        }
        struct shi_mapped_ctl *ctl = shi_ctl_of(comm, p);
        if (atomic_load_explicit(&ctl->slab_done, memory_order_acquire)
            < use - 2) {
            req->blocked_on = p;
            return 0;
        }
    }
    return 1;
}

unsigned char *
shi_slab_of(shoal_comm *comm, int rank, uint64_t use)
{
    return shi_area_slab(shi_area_of(comm), rank, (int) (use % 2));
}

void
shi_slab_done(shoal_comm *comm, uint64_t use)
{
    atomic_store_explicit(
        &shi_my_ctl(comm)->slab_done, use, memory_order_release);
    shi_ring_peers(comm);
}

void
shi_segment(size_t count, size_t esize, int n, int i, size_t *lo, size_t *hi)
{
    // Cut at multiples of `unit` elements (64 bytes) so that SIMD kernels
    // and cache lines are not split, except for what is left at the end.
    size_t unit  = esize >= 64 ? 1 : 64 / esize;
    size_t units = (count + unit - 1) / unit;
    size_t per = units / (size_t) n, extra = units % (size_t) n;
    size_t a = (size_t) i * per + ((size_t) i < extra ? (size_t) i : extra);
    size_t b = a + per + ((size_t) i < extra ? 1 : 0);

    *lo = a * unit < count ? a * unit : count;
    *hi = b * unit < count ? b * unit : count;
}

unsigned char *
shi_scratch(shoal_comm *comm, size_t bytes)
{
    if (bytes <= comm->scratch_bytes) {
        return comm->scratch;
    }
    unsigned char *p = NULL;
    if (posix_memalign((void **) &p, 64, bytes) != 0) {
        shi_comm_abort(comm, SHOAL_ENOMEM,
            "out of memory for %zu bytes of scratch", bytes);
        return NULL;
    }
    free(comm->scratch);
    comm->scratch       = p;
    comm->scratch_bytes = bytes;
    return p;
}
