// Benchmark buffers: page-aligned and written once before any timing, so
// that page faults and zero-page sharing never land in a timed region.
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "perf.h"

static size_t
round_pages(size_t bytes)
{
    size_t page = (size_t) sysconf(_SC_PAGESIZE);

    if (bytes == 0) {
        bytes = 1;
    }
    return (bytes + page - 1) / page * page;
}

void *
perf_buffer_alloc(size_t bytes)
{
    size_t len = round_pages(bytes);
    void  *p   = mmap(
           NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        return NULL;
    }
    // A non-zero byte: memset(0) could leave pages mapped to the zero page.
    memset(p, 0xa5, len);
    return p;
}

void
perf_buffer_free(void *buf, size_t bytes)
{
    if (buf != NULL) {
        munmap(buf, round_pages(bytes));
    }
}
