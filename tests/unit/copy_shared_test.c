// The copy into shared memory (base/copy_shared.h): every byte lands,
// and none beside the destination, for sizes around the streaming
// threshold and every alignment of the destination and source within a
// line (the streaming copy writes whole lines from the destination's
// first line boundary and copies the ends plainly).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/copy_shared.h"
#include "test.h"

#define GUARD 128 // bytes checked on each side of the destination

// Copies `bytes` from src offset `so` to dst offset `doff` and checks the
// destination and its guards.
static int
copy_lands_exactly(unsigned char *dst, const unsigned char *src, size_t doff,
    size_t so, size_t bytes)
{
    memset(dst, 0xA5, doff + bytes + 2 * GUARD);
    shi_copy_shared(dst + GUARD + doff, src + so, bytes);
    for (size_t i = 0; i < GUARD + doff; i++) {
        if (dst[i] != 0xA5) {
            return 0;
        }
    }
    if (memcmp(dst + GUARD + doff, src + so, bytes) != 0) {
        return 0;
    }
    for (size_t i = GUARD + doff + bytes; i < doff + bytes + 2 * GUARD; i++) {
        if (dst[i] != 0xA5) {
            return 0;
        }
    }
    return 1;
}

TEST(copy_shared_copies_every_size_and_alignment)
{
    const size_t   most    = 3 * SHI_COPY_SHARED_STREAM_MIN;
    const size_t   sizes[] = { 0, 1, 63, 64, 65, 4096,
          SHI_COPY_SHARED_STREAM_MIN - 1, SHI_COPY_SHARED_STREAM_MIN,
          SHI_COPY_SHARED_STREAM_MIN + 1, SHI_COPY_SHARED_STREAM_MIN + 63,
          2 * SHI_COPY_SHARED_STREAM_MIN + 17, most };
    unsigned char *src     = aligned_alloc(64, most + 64);
    unsigned char *dst     = aligned_alloc(64, most + 64 + 2 * GUARD);

    CHECK(src != NULL && dst != NULL);
    for (size_t i = 0; i < most + 64; i++) {
        src[i] = (unsigned char) (i * 131 + 7);
    }
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        for (size_t doff = 0; doff < 64; doff += 7) {
            size_t so = (doff * 5 + 3) % 64;
            CHECK_MSG(copy_lands_exactly(dst, src, doff, so, sizes[s]),
                "%zu bytes to offset %zu from offset %zu", sizes[s], doff, so);
        }
    }
    free(src);
    free(dst);
}
