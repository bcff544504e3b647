// shoal_alloc / shoal_free: memory from the range the transport gives
// (heap_region in transport.h): over shared memory, this rank's part of
// the segment every peer maps, so that collectives read it in place (the
// zero-copy path); over a message transport, private memory.
//
// The range is reserved, not backed: pages exist only once allocated.
// Bookkeeping stays in private memory: a list of blocks sorted by offset,
// first fit, 64-byte granules. Freed blocks give their pages back to the
// kernel.
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/comm.h"
#include "platform/mem_avail.h"

#define HEAP_ALIGN 64
#define HEAP_PAGE  4096

struct heap_block {
    struct heap_block *next;
    size_t             off, len;
    int                used;
};

struct shi_heap {
    pthread_mutex_t    lock;
    struct heap_block *blocks;
    unsigned char     *base; // the transport's range (heap_region)
    size_t             bytes;
    int                release; // madvise advice giving pages back
};

int
shi_heap_init(shoal_comm *comm)
{
    struct shi_heap   *h = calloc(1, sizeof(*h));
    struct heap_block *b = calloc(1, sizeof(*b));

    if (h == NULL || b == NULL) {
        free(h);
        free(b);
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&h->lock, NULL);
    int shared;
    comm->tp->heap_region(comm, &h->base, &h->bytes, &shared);
    // Shared memory gives its pages back with MADV_REMOVE; the private
    // range of a message transport with MADV_DONTNEED.
    h->release = shared ? MADV_REMOVE : MADV_DONTNEED;
    b->len     = h->bytes;
    h->blocks  = b;
    comm->heap = h;
    return SHOAL_OK;
}

void
shi_heap_destroy(shoal_comm *comm)
{
    struct shi_heap *h = comm->heap;

    if (h == NULL) {
        return;
    }
    for (struct heap_block *b = h->blocks, *next; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    pthread_mutex_destroy(&h->lock);
    free(h);
    comm->heap = NULL;
}

// Splits a free block so that it is exactly `len` long.
static int
carve(struct heap_block *b, size_t len)
{
    if (b->len > len) {
        struct heap_block *rest = calloc(1, sizeof(*rest));
        if (rest == NULL) {
            return 0;
        }
        rest->off  = b->off + len;
        rest->len  = b->len - len;
        rest->next = b->next;
        b->next    = rest;
        b->len     = len;
    }
    b->used = 1;
    return 1;
}

// Backs the pages now, so that a full /dev/shm or memory limit is an
// error here rather than SIGBUS in a collective.
static int
populate(unsigned char *p, size_t len)
{
#ifdef MADV_POPULATE_WRITE
    // Whole pages (faulting them in keeps their contents).
    uintptr_t lo = (uintptr_t) p / HEAP_PAGE * HEAP_PAGE;
    uintptr_t hi
        = ((uintptr_t) p + len + HEAP_PAGE - 1) / HEAP_PAGE * HEAP_PAGE;
    if (madvise((void *) lo, hi - lo, MADV_POPULATE_WRITE) != 0
        && errno != EINVAL) {
        return shi_error(SHOAL_ENOSPACE,
            "cannot back %zu bytes of shared "
            "memory: %s",
            len, strerror(errno));
    }
#else
    (void) p;
    (void) len;
#endif
    return SHOAL_OK;
}

// Whether the process may still get `len` bytes: backing more than its
// memory cgroup (or the machine) has left would bring the OOM killer, not
// an error.
static int
check_room(size_t len)
{
    uint64_t room;

    if (shi_memory_available(&room) == 0 && len > room) {
        return shi_error(SHOAL_ENOSPACE,
            "alloc: %zu MiB asked, but this process may get only %llu MiB "
            "more (free memory or its cgroup's limit): allocate less or "
            "give the job more memory",
            len >> 20, (unsigned long long) (room >> 20));
    }
    return SHOAL_OK;
}

// Whose heap serves `comm`: its own, except over messages when its host
// runs several of its ranks: the host's shared-memory communicator then
// (comm->local), so that same-host peers map the memory (windows, and the
// host-aware stages' zero-copy path).
static shoal_comm *
heap_owner(shoal_comm *comm)
{
    if (comm->local != NULL && comm->tp != NULL
        && comm->tp->klass == SHI_TP_MESSAGES) {
        return comm->local;
    }
    return comm;
}

int
shoal_alloc(shoal_comm *comm, size_t bytes, void **out)
{
    struct heap_block *b;
    size_t             len;
    int                st;

    if (out == NULL || comm == NULL) {
        return shi_error(SHOAL_EINVAL,
            "alloc: need a communicator and an "
            "out pointer");
    }
    *out = NULL;
    comm = heap_owner(comm);
    if (comm->heap == NULL) {
        return shi_error(SHOAL_EINVAL,
            "alloc: communicator '%s' has no "
            "heap",
            comm->name);
    }
    len = bytes == 0 ? HEAP_ALIGN
                     : (bytes + HEAP_ALIGN - 1) / HEAP_ALIGN * HEAP_ALIGN;
    if (len < bytes) {
        return shi_error(SHOAL_EINVAL, "alloc: %zu bytes is too large", bytes);
    }
    pthread_mutex_lock(&comm->heap->lock);
    for (b = comm->heap->blocks; b != NULL; b = b->next) {
        if (!b->used && b->len >= len && carve(b, len)) {
            break;
        }
    }
    pthread_mutex_unlock(&comm->heap->lock);
    if (b == NULL) {
        return shi_error(SHOAL_ENOSPACE,
            "alloc: no room for %zu bytes in the heap of "
            "communicator '%s' (SHOAL_SHM_HEAP_BYTES = %llu per "
            "rank)",
            bytes, comm->name, (unsigned long long) comm->heap->bytes);
    }
    unsigned char *p = comm->heap->base + b->off;
    if ((st = check_room(len)) != SHOAL_OK
        || (st = populate(p, len)) != SHOAL_OK) {
        shoal_free(comm, p);
        return st;
    }
    *out = p;
    return SHOAL_OK;
}

// Merges free neighbours of the list (kept sorted by offset).
static void
coalesce(struct shi_heap *h)
{
    for (struct heap_block *b = h->blocks; b != NULL && b->next != NULL;) {
        struct heap_block *n = b->next;
        if (!b->used && !n->used) {
            b->len += n->len;
            b->next = n->next;
            free(n);
        } else {
            b = n;
        }
    }
}

// Gives back to the kernel the pages that lie wholly inside the free block
// around `off` (pages shared with live blocks keep their contents).
static void
release_pages(shoal_comm *comm, size_t off)
{
    for (struct heap_block *b = comm->heap->blocks; b != NULL; b = b->next) {
        if (b->used || off < b->off || off >= b->off + b->len) {
            continue;
        }
        size_t lo = (b->off + HEAP_PAGE - 1) / HEAP_PAGE * HEAP_PAGE;
        size_t hi = (b->off + b->len) / HEAP_PAGE * HEAP_PAGE;
        if (hi > lo) {
            madvise(comm->heap->base + lo, hi - lo, comm->heap->release);
        }
        return;
    }
}

int
shoal_free(shoal_comm *comm, void *ptr)
{
    struct heap_block *b;
    int                found = 0;

    if (ptr == NULL) {
        return SHOAL_OK;
    }
    if (comm != NULL) {
        comm = heap_owner(comm);
    }
    if (comm == NULL || comm->heap == NULL) {
        return shi_error(SHOAL_EINVAL,
            "free: %p was not allocated by "
            "shoal_alloc on this communicator",
            ptr);
    }
    size_t off = (size_t) ((unsigned char *) ptr - comm->heap->base);
    pthread_mutex_lock(&comm->heap->lock);
    for (b = comm->heap->blocks; b != NULL; b = b->next) {
        if (b->used && b->off == off) {
            b->used = 0;
            found   = 1;
            break;
        }
    }
    if (found) {
        coalesce(comm->heap);
        release_pages(comm, off);
    }
    pthread_mutex_unlock(&comm->heap->lock);
    if (!found) {
        return shi_error(SHOAL_EINVAL,
            "free: %p is not a live allocation "
            "of communicator '%s'",
            ptr, comm->name);
    }
    return SHOAL_OK;
}
