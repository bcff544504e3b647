// The copy into memory another process reads next (see copy_shared.h).
#include "base/copy_shared.h"

#include <stdint.h>
#include <string.h>

// ThreadSanitizer does not see the stores of the streaming intrinsics, so
// its builds copy with memcpy, whose stores it checks.
#if defined(__SSE2__) && !defined(__SANITIZE_THREAD__)
#define COPY_STREAMS 1
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#undef COPY_STREAMS
#endif
#endif
#endif

#ifdef COPY_STREAMS
#include <emmintrin.h>

// Whole 64-byte lines from a 16-byte aligned dst: four 16-byte streaming
// stores fill one write-combining buffer, which then goes out as a line.
static void
stream_lines(unsigned char *dst, const unsigned char *src, size_t lines)
{
    for (size_t i = 0; i < lines; i++, dst += 64, src += 64) {
        const __m128i *s = (const __m128i *) (const void *) src;
        __m128i       *d = (__m128i *) (void *) dst;
        __m128i        a = _mm_loadu_si128(s), b = _mm_loadu_si128(s + 1);
        __m128i        c = _mm_loadu_si128(s + 2), e = _mm_loadu_si128(s + 3);
        _mm_stream_si128(d, a);
        _mm_stream_si128(d + 1, b);
        _mm_stream_si128(d + 2, c);
        _mm_stream_si128(d + 3, e);
    }
}

static void
stream_copy(unsigned char *dst, const unsigned char *src, size_t bytes)
{
    size_t head = (size_t) (-(uintptr_t) dst & 63), lines;

    memcpy(dst, src, head); // up to dst's next line
    dst += head;
    src += head;
    bytes -= head;
    lines = bytes / 64;
    stream_lines(dst, src, lines);
    memcpy(dst + lines * 64, src + lines * 64, bytes - lines * 64);
    // Streaming stores are weakly ordered: without the fence a later flag
    // could be seen before the data.
    _mm_sfence();
}
#endif

void
shi_copy_shared(void *dst, const void *src, size_t bytes)
{
#ifdef COPY_STREAMS
    if (bytes >= SHI_COPY_SHARED_STREAM_MIN) {
        stream_copy(dst, src, bytes);
        return;
    }
#endif
    memcpy(dst, src, bytes);
}
