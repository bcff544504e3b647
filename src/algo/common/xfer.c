// Building blocks of the collectives (see xfer.h).
#include "algo/common/xfer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "algo/common/mapped_driver.h"
#include "core/engine.h"

static int
all_peers_reached(shoal_comm *comm, shoal_request *req, uint64_t target)
{
    for (int p = 0; p < comm->size; p++) {
        if (p == comm->rank) {
            continue;
        }
        struct shm_ctl *ctl = shm_ctl_of(comm->mapped, p);
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
    if (atomic_load_explicit(&comm->my_ctl->sync, memory_order_relaxed)
        >= value) {
        return;
    }
    atomic_store_explicit(&comm->my_ctl->sync, value, memory_order_release);
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
    uint64_t        target = req->sync_base + (uint64_t) k;
    struct shm_ctl *ctl    = shm_ctl_of(comm->mapped, p);

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
    comm->sync_count = req->sync_base + (uint64_t) k;
}

static uint64_t
heap_offset(shoal_comm *comm, const void *ptr)
{
    const unsigned char *base = shm_heap_of(comm->mapped, comm->rank);
    const unsigned char *p    = ptr;

    if (p == NULL || p < base || p >= base + comm->mapped->heap_bytes) {
        return 0;
    }
    return (uint64_t) (p - base) + 1;
}

void
shi_expose(shoal_comm *comm, const void *send, const void *recv)
{
    struct shm_expose *e = &comm->my_ctl->expose;

    e->send_addr = (uint64_t) (uintptr_t) send;
    e->recv_addr = (uint64_t) (uintptr_t) recv;
    e->send_heap = heap_offset(comm, send);
    e->recv_heap = heap_offset(comm, recv);
}

const unsigned char *
shi_peer_view(shoal_comm *comm, int p, int side, size_t off)
{
    const struct shm_expose *e = &shm_ctl_of(comm->mapped, p)->expose;
    uint64_t heap = side == SHI_SEND ? e->send_heap : e->recv_heap;

    if (heap == 0) {
        return NULL;
    }
    return shm_heap_of(comm->mapped, p) + (heap - 1) + off;
}

// Aborts the comm after a failed process_vm_readv/writev on peer p. ESRCH
// means the peer's process is gone: that is the peer dying (EPEER, as the
// watcher would report it a moment later), not a system fault.
static int
peer_copy_failed(
    shoal_comm *comm, int p, const char *what, const char *call, ssize_t n)
{
    int err = n < 0 ? errno : 0;

    if (err == ESRCH) {
        shi_comm_abort(comm, SHOAL_EPEER,
            "rank %d (pid %d) died while rank %d was copying its buffer", p,
            (int) comm->peers[p].pid, comm->rank);
        return SHOAL_EPEER;
    }
    shi_comm_abort(comm, SHOAL_ESYS,
        "rank %d could not %s rank %d's buffer (%s: %s)", comm->rank, what, p,
        call, err != 0 ? strerror(err) : "EOF");
    return SHOAL_ESYS;
}

int
shi_peer_read(
    shoal_comm *comm, int p, int side, size_t off, void *dst, size_t len)
{
    const struct shm_expose *e = &shm_ctl_of(comm->mapped, p)->expose;
    const unsigned char     *view;

    if (len == 0) {
        return SHOAL_OK;
    }
    if (p == comm->rank || (view = shi_peer_view(comm, p, side, off))) {
        if (p == comm->rank) {
            view = (const unsigned char *) (uintptr_t) (side == SHI_SEND
                           ? e->send_addr
                           : e->recv_addr)
                + off;
        }
        memcpy(dst, view, len);
        return SHOAL_OK;
    }
    uint64_t addr = (side == SHI_SEND ? e->send_addr : e->recv_addr) + off;
    while (len > 0) {
        struct iovec local = { .iov_base = dst, .iov_len = len };
        struct iovec remote
            = { .iov_base = (void *) (uintptr_t) addr, .iov_len = len };
        ssize_t n
            = process_vm_readv(comm->peers[p].pid, &local, 1, &remote, 1, 0);
        if (n <= 0) {
            return peer_copy_failed(comm, p, "read", "process_vm_readv", n);
        }
        dst = (unsigned char *) dst + n;
        addr += (uint64_t) n;
        len -= (size_t) n;
    }
    return SHOAL_OK;
}

int
shi_peer_write(
    shoal_comm *comm, int p, int side, size_t off, const void *src, size_t len)
{
    const struct shm_expose *e = &shm_ctl_of(comm->mapped, p)->expose;
    const unsigned char     *view;

    if (len == 0) {
        return SHOAL_OK;
    }
    if ((view = shi_peer_view(comm, p, side, off)) != NULL) {
        memcpy((void *) (uintptr_t) view, src, len);
        return SHOAL_OK;
    }
    uint64_t addr = (side == SHI_SEND ? e->send_addr : e->recv_addr) + off;
    while (len > 0) {
        struct iovec local
            = { .iov_base = (void *) (uintptr_t) src, .iov_len = len };
        struct iovec remote
            = { .iov_base = (void *) (uintptr_t) addr, .iov_len = len };
        ssize_t n
            = process_vm_writev(comm->peers[p].pid, &local, 1, &remote, 1, 0);
        if (n <= 0) {
            return peer_copy_failed(comm, p, "write", "process_vm_writev", n);
        }
        src = (const unsigned char *) src + n;
        addr += (uint64_t) n;
        len -= (size_t) n;
    }
    return SHOAL_OK;
}

const unsigned char *
shi_peer_bytes(shoal_comm *comm, int p, int side, size_t off, size_t len,
    unsigned char *scratch)
{
    const struct shm_expose *e = &shm_ctl_of(comm->mapped, p)->expose;
    const unsigned char     *view;

    if (p == comm->rank) {
        return (const unsigned char *) (uintptr_t) (side == SHI_SEND
                       ? e->send_addr
                       : e->recv_addr)
            + off;
    }
    if ((view = shi_peer_view(comm, p, side, off)) != NULL) {
        return view;
    }
    return shi_peer_read(comm, p, side, off, scratch, len) == SHOAL_OK
        ? scratch
        : NULL;
}

uint64_t
shi_slab_next(shoal_comm *comm)
{
    return ++comm->slab_use;
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
        struct shm_ctl *ctl = shm_ctl_of(comm->mapped, p);
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
    return shm_slab(comm->mapped, rank, (int) (use % 2));
}

void
shi_slab_done(shoal_comm *comm, uint64_t use)
{
    atomic_store_explicit(&comm->my_ctl->slab_done, use, memory_order_release);
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
