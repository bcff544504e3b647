// Memory operations of the shared-memory transport (transport.h): a
// region in a rank's shared heap is mapped by every peer and viewed in
// place; any other region is reached by single copies through the kernel
// (process_vm_readv/writev), where the ranks may (see coll/setup.c).
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/uio.h>

#include "base/copy_shared.h"
#include "transport/shm/shm.h"

// The offset + 1 of [p, p + bytes) in this rank's heap, or 0.
static uint64_t
heap_offset(shoal_comm *comm, const void *ptr, size_t bytes)
{
    const unsigned char *base
        = shm_heap_of(shi_shm_seg(comm), shi_tp_comm(comm)->rank);
    const unsigned char *p = ptr;

    if (p == NULL || p < base
        || (size_t) (p - base) > shi_shm_seg(comm)->heap_bytes
        || bytes > shi_shm_seg(comm)->heap_bytes - (size_t) (p - base)) {
        return 0;
    }
    return (uint64_t) (p - base) + 1;
}

void
shi_shm_mem_expose(shoal_comm *comm, const void *base, size_t bytes,
    struct shi_tp_region *out)
{
    *out = (struct shi_tp_region) {
        .addr     = (uint64_t) (uintptr_t) base,
        .bytes    = bytes,
        .heap_off = heap_offset(comm, base, bytes),
        .owner    = shi_tp_comm(comm)->rank,
    };
}

// [off, off + bytes) lies inside the region.
static int
inside(const struct shi_tp_region *r, size_t off, size_t bytes)
{
    return off <= r->bytes && bytes <= r->bytes - off;
}

// [off, off + bytes) of a region whose owner is a rank of comm.
static int
reachable(
    shoal_comm *comm, const struct shi_tp_region *r, size_t off, size_t bytes)
{
    return r->owner >= 0 && r->owner < shi_tp_comm(comm)->size
        && inside(r, off, bytes);
}

// Byte `off` of a reachable region in place, if the whole region lies in
// its owner's heap.
static unsigned char *
heap_view(shoal_comm *comm, const struct shi_tp_region *r, size_t off)
{
    uint64_t heap = shi_shm_seg(comm)->heap_bytes;

    if (r->heap_off == 0 || r->heap_off - 1 > heap
        || r->bytes > heap - (r->heap_off - 1)) {
        return NULL;
    }
    return shm_heap_of(shi_shm_seg(comm), r->owner) + (r->heap_off - 1) + off;
}

void *
shi_shm_mem_view(
    shoal_comm *comm, const struct shi_tp_region *r, size_t off, size_t bytes)
{
    return reachable(comm, r, off, bytes) ? heap_view(comm, r, off) : NULL;
}

// One process_vm_readv/writev loop; errno set on failure.
static int
cma_copy(pid_t pid, uint64_t addr, unsigned char *local, size_t len, int write)
{
    while (len > 0) {
        struct iovec l = { .iov_base = local, .iov_len = len };
        struct iovec r
            = { .iov_base = (void *) (uintptr_t) addr, .iov_len = len };
        ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                          : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n <= 0) {
            if (n == 0) {
                errno = EFAULT;
            }
            return -1;
        }
        local += n;
        addr += (uint64_t) n;
        len -= (size_t) n;
    }
    return 0;
}

// A copy through the kernel (process_vm_readv/writev) failed with `err`:
// the owner's process gone is that peer dying (SHOAL_EPEER); anything
// else a system fault.
static int
cma_failed(
    int err, int write, uint64_t bytes, int owner, const struct shi_peer *peer)
{
    return shi_error(err == ESRCH ? SHOAL_EPEER : SHOAL_ESYS,
        "cannot %s %llu bytes of rank %d's memory (pid %d on host %s): %s%s",
        write ? "write" : "read", (unsigned long long) bytes, owner, peer->pid,
        peer->host, strerror(err),
        err == ESRCH ? " (the rank's process is gone)" : "");
}

static int
mem_copy(shoal_comm *comm, const struct shi_tp_region *r, size_t off,
    unsigned char *local, size_t bytes, int write)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    unsigned char      *view;

    if (bytes == 0) {
        return SHOAL_OK;
    }
    if (!reachable(comm, r, off, bytes)) {
        return shi_error(SHOAL_EINVAL,
            "%zu bytes at offset %zu are outside rank %d's region of %llu "
            "bytes",
            bytes, off, (int) r->owner, (unsigned long long) r->bytes);
    }
    if ((view = heap_view(comm, r, off)) != NULL) {
        if (write) {
            shi_copy_shared(view, local, bytes);
        } else {
            memcpy(local, view, bytes);
        }
        return SHOAL_OK;
    }
    if (r->owner == tc->rank) {
        unsigned char *mine = (unsigned char *) (uintptr_t) r->addr + off;
        memmove(write ? mine : local, write ? local : mine, bytes);
        return SHOAL_OK;
    }
    if (cma_copy((pid_t) tc->peers[r->owner].pid, r->addr + off, local, bytes,
            write)
        != 0) {
        return cma_failed(errno, write, bytes, r->owner, &tc->peers[r->owner]);
    }
    return SHOAL_OK;
}

int
shi_shm_mem_read(shoal_comm *comm, const struct shi_tp_region *r, size_t off,
    void *dst, size_t bytes)
{
    return mem_copy(comm, r, off, dst, bytes, 0);
}

int
shi_shm_mem_write(shoal_comm *comm, const struct shi_tp_region *r, size_t off,
    const void *src, size_t bytes)
{
    return mem_copy(comm, r, off, (unsigned char *) (uintptr_t) src, bytes, 1);
}

// ---- strided reads
// ------------------------------------------------------------

// Pieces per process_vm_readv: the kernel's limit on iovecs per side.
#define CMA_PIECES 1024

// Fills up to CMA_PIECES matching iovecs for the stream from byte `at`;
// returns how many, with their bytes in *len.
static int
cma_pieces(uint64_t remote, const shi_strided *src, unsigned char *to,
    const shi_strided *dst, uint64_t at, uint64_t bytes, struct iovec *l,
    struct iovec *r, uint64_t *len)
{
    shi_strided_pair w;
    int64_t          doff, soff;
    uint64_t         k;
    int              n = 0;

    shi_strided_pair_start(&w, dst, at, src, at, bytes - at);
    *len = 0;
    while (
        n < CMA_PIECES && (k = shi_strided_pair_next(&w, &doff, &soff)) > 0) {
        // Remote addresses are the peer's; they cross as integers.
        r[n]
            = (struct iovec) { (void *) (uintptr_t) (remote + (uint64_t) soff),
                  k };
        l[n] = (struct iovec) { to + doff, k };
        *len += k;
        n++;
    }
    return n;
}

static int
cma_read_strided(shoal_comm *comm, const struct shi_tp_region *r,
    uint64_t base_off, const shi_strided *src, uint64_t bytes,
    unsigned char *to, const shi_strided *dst)
{
    static _Thread_local struct iovec l[CMA_PIECES], rv[CMA_PIECES];
    pid_t    pid = (pid_t) shi_tp_comm(comm)->peers[r->owner].pid;
    uint64_t at  = 0;

    while (at < bytes) {
        uint64_t len;
        int      n = cma_pieces(
                 r->addr + base_off, src, to, dst, at, bytes, l, rv, &len);
        ssize_t got = process_vm_readv(
            pid, l, (unsigned long) n, rv, (unsigned long) n, 0);

        if (got <= 0) {
            return cma_failed(got == 0 ? EFAULT : errno, 0, bytes, r->owner,
                &shi_tp_comm(comm)->peers[r->owner]);
        }
        at += (uint64_t) got; // a short read goes on where it stopped
    }
    return SHOAL_OK;
}

int
shi_shm_mem_read_strided(shoal_comm *comm, const struct shi_tp_region *r,
    uint64_t base_off, const shi_strided *src, uint64_t bytes,
    unsigned char *to, const shi_strided *dst)
{
    int64_t        lo, hi, first, end;
    unsigned char *view;

    if (shi_strided_extent(src, bytes, &lo, &hi) != 0 || base_off > INT64_MAX
        || __builtin_add_overflow((int64_t) base_off, lo, &first)
        || __builtin_add_overflow((int64_t) base_off, hi, &end) || first < 0
        || !reachable(comm, r, 0, (size_t) r->bytes)
        || (uint64_t) end > r->bytes) {
        return shi_error(SHOAL_EPROTO,
            "a strided read of %llu bytes does not fit rank %d's region of "
            "%llu bytes",
            (unsigned long long) bytes, (int) r->owner,
            (unsigned long long) r->bytes);
    }
    if (bytes == 0) {
        return SHOAL_OK;
    }
    if ((view = heap_view(comm, r, 0)) != NULL) {
        shi_strided_copy(to, dst, 0, view + base_off, src, 0, bytes);
        return SHOAL_OK;
    }
    if (r->owner == shi_tp_comm(comm)->rank) {
        shi_strided_copy(to, dst, 0,
            (unsigned char *) (uintptr_t) r->addr + base_off, src, 0, bytes);
        return SHOAL_OK;
    }
    return cma_read_strided(comm, r, base_off, src, bytes, to, dst);
}
