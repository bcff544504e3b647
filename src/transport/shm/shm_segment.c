// Shared-memory segment creation, mapping and layout (see shm_segment.h).
#include "shm_segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/align.h"
#include "base/env.h"
#include "base/error.h"
#include "platform/mem_avail.h"
#include "shoal.h"

// Offsets of every part, from the geometry fields.
static void
segment_layout(shm_segment *seg)
{
    size_t n = (size_t) seg->nranks;

    seg->p2p_slot_stride
        = shi_round_up(SHM_LINE + seg->p2p_slot_bytes, SHM_LINE);
    seg->p2p_chan_bytes = SHM_LINE + seg->p2p_slots * seg->p2p_slot_stride;
    seg->rank_off       = sizeof(struct shm_header) + sizeof(struct shm_abort);
    seg->p2p_off        = seg->rank_off + n * sizeof(struct shm_rank);
    // The area starts on a page: its staging slabs are copied through.
    seg->area_off
        = shi_round_up(seg->p2p_off + n * n * seg->p2p_chan_bytes, 4096);
    seg->staging_end = seg->area_off + seg->area_bytes;
    // Heaps start on a 2 MiB boundary, so that huge pages could back them.
    seg->heap_off = shi_round_up(seg->staging_end, 2u << 20);
    seg->bytes    = seg->heap_off + n * seg->heap_bytes;
}

int
shm_segment_plan(shm_segment *seg, int nranks, uint64_t area_bytes)
{
    long long p2p_bytes = 0, p2p_slots = 0, heap = 0;
    int       st;

    // 8 slots of 32 KiB per direction keep a pipelined copy in cache.
    if ((st = shi_env_size(
             "SHOAL_SHM_SLOT_BYTES", 32 << 10, 256, 64 << 20, &p2p_bytes))
            != SHOAL_OK
        || (st = shi_env_size("SHOAL_SHM_SLOTS", 8, 2, 1024, &p2p_slots))
            != SHOAL_OK
        || (st = shi_env_size(
                "SHOAL_SHM_HEAP_BYTES", 4LL << 30, 0, 1LL << 40, &heap))
            != SHOAL_OK) {
        return st;
    }
    memset(seg, 0, sizeof(*seg));
    seg->nranks    = nranks;
    seg->p2p_slots = (uint32_t) p2p_slots;
    seg->p2p_slot_bytes
        = (uint32_t) shi_round_up((size_t) p2p_bytes, SHM_LINE);
    seg->area_bytes = shi_round_up(area_bytes, SHM_LINE);
    seg->heap_bytes = (uint64_t) heap / 4096 * 4096;
    segment_layout(seg);
    return SHOAL_OK;
}

static void
segment_bind(shm_segment *seg, unsigned char *base)
{
    seg->base = base;
    seg->hdr  = (struct shm_header *) base;
}

int
shm_segment_create(
    shm_segment *seg, int nranks, const struct shi_tp_area *area, int *fd)
{
    int st = shm_segment_plan(seg, nranks, area->bytes);

    *fd = -1;
    if (st != SHOAL_OK) {
        return st;
    }
    int mfd = memfd_create("shoal-comm", MFD_CLOEXEC);
    if (mfd < 0) {
        return shi_error(SHOAL_ESYS, "memfd_create: %s", strerror(errno));
    }
    fchmod(mfd, S_IRUSR | S_IWUSR);
    if (ftruncate(mfd, (off_t) seg->bytes) != 0) {
        int err = errno;
        close(mfd);
        return shi_error(SHOAL_ENOSPACE,
            "cannot size shared memory to %zu bytes: %s", seg->bytes,
            strerror(err));
    }
    // Back the rings, outboxes and slabs now: a machine without that much
    // memory fails here with a message, not later with SIGBUS or the OOM
    // killer in the middle of a collective. (The heaps stay lazy: each
    // shoal_alloc backs its own pages.)
    uint64_t room;
    if (shi_memory_available(&room) == 0 && seg->staging_end > room) {
        close(mfd);
        return shi_error(SHOAL_ENOSPACE,
            "%d ranks need %zu MiB of shared memory, but this process may "
            "get only %llu MiB more (free memory or its cgroup's limit): "
            "lower SHOAL_SHM_BYTES, SHOAL_SHM_SLOT_BYTES or "
            "SHOAL_SHM_BCAST_SLOT_BYTES, or give the job more memory",
            nranks, seg->staging_end >> 20, (unsigned long long) (room >> 20));
    }
    if ((st = fallocate(mfd, 0, 0, (off_t) seg->staging_end)) != 0
        && errno != EOPNOTSUPP) {
        int err = errno;
        close(mfd);
        return shi_error(SHOAL_ENOSPACE,
            "cannot back %zu bytes of shared memory for %d ranks: %s (lower "
            "SHOAL_SHM_BYTES, SHOAL_SHM_SLOT_BYTES or "
            "SHOAL_SHM_BCAST_SLOT_BYTES, or give the job more memory)",
            seg->staging_end, nranks, strerror(err));
    }
    void *base
        = mmap(NULL, seg->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (base == MAP_FAILED) {
        int err = errno;
        close(mfd);
        return shi_error(SHOAL_ENOSPACE,
            "cannot map %zu bytes of shared "
            "memory: %s",
            seg->bytes, strerror(err));
    }
    segment_bind(seg, base);
    seg->hdr->total_bytes    = seg->bytes;
    seg->hdr->nranks         = (uint32_t) nranks;
    seg->hdr->p2p_slots      = seg->p2p_slots;
    seg->hdr->p2p_slot_bytes = seg->p2p_slot_bytes;
    seg->hdr->area_bytes     = seg->area_bytes;
    seg->hdr->heap_bytes     = seg->heap_bytes;
    if (seg->area_bytes > 0) {
        memcpy(shm_area_of(seg), area->head,
            seg->area_bytes < sizeof(area->head) ? seg->area_bytes
                                                 : sizeof(area->head));
    }
    seg->hdr->magic = SHM_MAGIC;
    *fd             = mfd;
    return SHOAL_OK;
}

int
shm_segment_attach(shm_segment *seg, int fd, int nranks)
{
    struct stat sb;

    memset(seg, 0, sizeof(*seg));
    if (fstat(fd, &sb) != 0
        || sb.st_size < (off_t) sizeof(struct shm_header)) {
        return shi_error(SHOAL_EPROTO, "shared memory from rank 0 is empty");
    }
    void *base = mmap(
        NULL, (size_t) sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        return shi_error(SHOAL_ENOSPACE,
            "cannot map %lld bytes of shared "
            "memory: %s",
            (long long) sb.st_size, strerror(errno));
    }
    struct shm_header *h = base;
    if (h->magic != SHM_MAGIC || h->nranks != (uint32_t) nranks
        || h->total_bytes != (uint64_t) sb.st_size) {
        munmap(base, (size_t) sb.st_size);
        return shi_error(SHOAL_EPROTO,
            "shared memory from rank 0 has a "
            "bad header (another shoal version?)");
    }
    // The creator's geometry wins over this rank's environment.
    seg->nranks         = nranks;
    seg->p2p_slots      = h->p2p_slots;
    seg->p2p_slot_bytes = h->p2p_slot_bytes;
    seg->area_bytes     = h->area_bytes;
    seg->heap_bytes     = h->heap_bytes;
    segment_layout(seg);
    if (seg->p2p_slots < 2 || seg->p2p_slot_bytes < 256
        || seg->area_bytes > (uint64_t) sb.st_size
        || seg->heap_bytes > (uint64_t) sb.st_size
        || seg->bytes != (size_t) sb.st_size) {
        munmap(base, (size_t) sb.st_size);
        return shi_error(SHOAL_EPROTO,
            "shared memory from rank 0 has an "
            "inconsistent layout");
    }
    segment_bind(seg, base);
    return SHOAL_OK;
}

void
shm_segment_unmap(shm_segment *seg)
{
    if (seg->base != NULL) {
        munmap(seg->base, seg->bytes);
        seg->base = NULL;
        seg->hdr  = NULL;
    }
}

unsigned char *
shm_area_of(const shm_segment *seg)
{
    return seg->base + seg->area_off;
}

unsigned char *
shm_heap_of(const shm_segment *seg, int rank)
{
    return seg->base + seg->heap_off + (size_t) rank * seg->heap_bytes;
}

struct shm_abort *
shm_abort_of(const shm_segment *seg)
{
    return (struct shm_abort *) (seg->base + sizeof(struct shm_header));
}
