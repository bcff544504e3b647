// Hash of a collective's call descriptor (see call_desc.h).
#include "algo/common/call_desc.h"

// Packs the fields into four words, multiplies each by its own odd
// constant (a bijection of the word, so two calls that differ in one field
// always differ here) and mixes the sum. The four products are
// independent: the hash costs about a tenth of a chained FNV over eight
// words, on every collective's entry.
uint64_t
shi_desc_hash(const struct shi_call_desc *d)
{
    uint64_t w0 = atomic_load_explicit(&d->seq, memory_order_relaxed)
        | (uint64_t) (uint32_t) d->root << 32;
    uint64_t w1 = (uint64_t) (d->kind & 0xffffu)
        | (uint64_t) (d->dtype & 0xffffu) << 16
        | (uint64_t) (d->redop & 0xffffu) << 32
        | (uint64_t) ((d->algo & 0xffu) | (d->may_hand_over & 0xffu) << 8)
            << 48;
    uint64_t h = w0 * 0x9e3779b97f4a7c15ull ^ w1 * 0xc2b2ae3d27d4eb4full
        ^ d->count * 0x165667b19e3779f9ull
        ^ d->counts_hash * 0xd6e8feb86659fd93ull;

    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    return h ^ (h >> 32);
}
