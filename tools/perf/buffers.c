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

size_t
perf_llc_bytes(const perf_opts *o)
{
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);

    if (o->cache_bytes > 0) {
        return o->cache_bytes;
    }
    if (l3 > 0) {
        return (size_t) l3;
    }
    return l2 > 0 ? (size_t) l2 : (size_t) 32 << 20;
}

// Bytes of each buffer: the largest message, or in cold mode the region
// its slots rotate through (perf.h).
static size_t
buffer_bytes(const perf_ctx *c)
{
    return c->o->cold ? round_pages(c->cap + 2 * perf_llc_bytes(c->o))
                      : c->cap;
}

// A pre-touched buffer from shoal_alloc, or NULL after reporting why.
static void *
shoal_buffer(perf_ctx *c, const char *which)
{
    size_t bytes = buffer_bytes(c);
    void  *p     = NULL;
    int    rc    = shoal_alloc(c->comm, bytes > 0 ? bytes : 1, &p);

    if (rc != SHOAL_OK) {
        fprintf(stderr,
            "shoal-perf: rank %d: shoal_alloc(%zu) for the %s buffer "
            "failed: %s: %s\n",
            c->rank, c->cap, which, shoal_status_name(rc), shoal_last_error());
        if (rc == SHOAL_ENOSPACE) {
            fprintf(stderr,
                "shoal-perf: -a shoal needs 2 x %zu bytes of shared heap "
                "per rank: raise SHOAL_SHM_HEAP_BYTES or lower -e%s\n",
                bytes, c->o->cold ? " (or drop --cold)" : "");
        }
        return NULL;
    }
    memset(p, 0xa5, bytes);
    return p;
}

static int
allocate(perf_ctx *c)
{
    if (c->o->alloc != PERF_ALLOC_SHOAL) {
        c->sbuf = perf_buffer_alloc(buffer_bytes(c));
        c->rbuf = perf_buffer_alloc(buffer_bytes(c));
        if (c->sbuf == NULL || c->rbuf == NULL) {
            fprintf(stderr,
                "shoal-perf: rank %d: cannot allocate 2 x %zu bytes of "
                "buffers\n",
                c->rank, buffer_bytes(c));
            return SHOAL_ENOMEM;
        }
        return SHOAL_OK;
    }
    c->shoal_buffers = 1;
    c->sbuf          = shoal_buffer(c, "send");
    c->rbuf          = c->sbuf != NULL ? shoal_buffer(c, "receive") : NULL;
    return c->rbuf != NULL ? SHOAL_OK : SHOAL_ENOMEM;
}

int
perf_buffers_setup(perf_ctx *c)
{
    int rc = allocate(c);

    if (rc == SHOAL_OK && c->o->cold) {
        c->sbase  = c->sbuf;
        c->rbase  = c->rbuf;
        c->region = buffer_bytes(c);
    }
    return rc;
}

void
perf_buffers_rotate(perf_ctx *c, int index, int it)
{
    if (c->sbase == NULL) {
        return;
    }
    size_t stride = round_pages(c->sizes.bytes[index]);
    size_t slots  = (c->region - c->cap) / stride + 1;
    size_t off    = (size_t) it % slots * stride;

    c->sbuf = c->sbase + off;
    c->rbuf = c->rbase + off;
}

void
perf_buffers_teardown(perf_ctx *c)
{
    if (c->sbase != NULL) { // cold mode: back to the regions' starts
        c->sbuf = c->sbase;
        c->rbuf = c->rbase;
    }
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
        perf_buffer_free(c->sbuf, buffer_bytes(c));
        perf_buffer_free(c->rbuf, buffer_bytes(c));
    }
    c->sbuf = c->rbuf = NULL;
    c->sbase = c->rbase = NULL;
}
