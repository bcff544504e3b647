// A private, lazily backed range for shoal_alloc (private_heap.h).
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "base/env.h"
#include "base/error.h"
#include "platform/private_heap.h"
#include "shoal.h"

int
shi_private_heap_map(unsigned char **base, size_t *bytes)
{
    long long want;
    int       st = shi_env_bytes("SHOAL_SHM_HEAP_BYTES", 4LL << 30, &want);

    *base  = NULL;
    *bytes = 0;
    if (st != SHOAL_OK) {
        return st;
    }
    if (want < 0 || want > (1LL << 40)) {
        return shi_error(SHOAL_EENV,
            "SHOAL_SHM_HEAP_BYTES=%lld is outside 0..%lld", want, 1LL << 40);
    }
    size_t n = (size_t) want / 4096 * 4096;
    if (n == 0) {
        return SHOAL_OK;
    }
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        return shi_error(SHOAL_ENOSPACE,
            "cannot reserve %lld bytes of address space for shoal_alloc "
            "(SHOAL_SHM_HEAP_BYTES): %s",
            want, strerror(errno));
    }
    *base  = p;
    *bytes = n;
    return SHOAL_OK;
}

void
shi_private_heap_unmap(unsigned char *base, size_t bytes)
{
    if (base != NULL) {
        munmap(base, bytes);
    }
}
