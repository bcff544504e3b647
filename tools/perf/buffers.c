// Benchmark buffers: page-aligned and written once before any timing, so
// that page faults and zero-page sharing never land in a timed region.
// With -a shoal the two benchmark buffers come from shoal_alloc instead
// (the communicator's shared heap, which collectives read in place) and
// are touched the same way.
#include <stdio.h>
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

// A pre-touched buffer from shoal_alloc, or NULL after reporting why.
static void *
shoal_buffer(perf_ctx *c, const char *which)
{
    void *p  = NULL;
    int   rc = shoal_alloc(c->comm, c->cap > 0 ? c->cap : 1, &p);

    if (rc != SHOAL_OK) {
        fprintf(stderr,
            "shoal-perf: rank %d: shoal_alloc(%zu) for the %s buffer "
            "failed: %s: %s\n",
            c->rank, c->cap, which, shoal_status_name(rc), shoal_last_error());
        if (rc == SHOAL_ENOSPACE) {
            fprintf(stderr,
                "shoal-perf: -a shoal needs 2 x %zu bytes of shared heap "
                "per rank: raise SHOAL_SHM_HEAP_BYTES or lower -e\n",
                c->cap);
        }
        return NULL;
    }
    memset(p, 0xa5, c->cap);
    return p;
}

int
perf_buffers_setup(perf_ctx *c)
{
    if (c->o->alloc != PERF_ALLOC_SHOAL) {
        c->sbuf = perf_buffer_alloc(c->cap);
        c->rbuf = perf_buffer_alloc(c->cap);
        if (c->sbuf == NULL || c->rbuf == NULL) {
            fprintf(stderr,
                "shoal-perf: rank %d: cannot allocate 2 x %zu bytes of "
                "buffers\n",
                c->rank, c->cap);
            return SHOAL_ENOMEM;
        }
        return SHOAL_OK;
    }
    c->shoal_buffers = 1;
    c->sbuf          = shoal_buffer(c, "send");
    c->rbuf          = c->sbuf != NULL ? shoal_buffer(c, "receive") : NULL;
    return c->rbuf != NULL ? SHOAL_OK : SHOAL_ENOMEM;
}

void
perf_buffers_teardown(perf_ctx *c)
{
    if (c->shoal_buffers) {
        // Errors here change nothing for the results; report them anyway.
        for (int i = 0; i < 2; i++) {
            void *p  = i == 0 ? c->sbuf : c->rbuf;
            int   rc = p != NULL ? shoal_free(c->comm, p) : SHOAL_OK;
            if (rc != SHOAL_OK) {
                perf_fail(c, "shoal_free", rc);
            }
        }
    } else {
        perf_buffer_free(c->sbuf, c->cap);
        perf_buffer_free(c->rbuf, c->cap);
    }
    c->sbuf = c->rbuf = NULL;
}
