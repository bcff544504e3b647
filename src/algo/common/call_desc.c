// Hash of a collective's call descriptor (see call_desc.h).
#include "algo/common/call_desc.h"

#include <stddef.h>

uint64_t
shi_desc_hash(const struct shi_call_desc *d)
{
    uint64_t v[] = { atomic_load_explicit(&d->seq, memory_order_relaxed),
        d->kind, (uint64_t) (uint32_t) d->root, d->dtype, d->count, d->redop,
        d->algo, d->counts_hash };
    uint64_t h   = 1469598103934665603ull;

    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        h = (h ^ v[i]) * 1099511628211ull;
    }
    return h;
}
