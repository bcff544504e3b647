// Strided byte layouts: where the bytes of a message lie in a buffer that
// is not one dense block (a box of a tensor, rows of a matrix), so that a
// transfer can read them from there and write them to where they go
// without packing them into a staging buffer first.
//
// A layout is a stream of bytes: `prod(count)` runs of `run` contiguous
// bytes each, the runs placed by nested counts and byte strides
// (outermost first, as an N-d array whose innermost dimension is the run).
// Byte k of the stream lies at base + offset_of(k). A dense block of n
// bytes is { ndim 0, run n }.
#ifndef SHI_PLATFORM_STRIDED_H
#define SHI_PLATFORM_STRIDED_H

#include <stddef.h>
#include <stdint.h>

// Outer dimensions a layout may have (a tensor box has at most 12
// dimensions, one of which becomes the run).
#define SHI_STRIDED_DIMS 12

typedef struct shi_strided {
    uint32_t ndim; // outer dimensions; 0: one run
    uint32_t reserved; // 0
    uint64_t run; // contiguous bytes per run
    uint64_t count[SHI_STRIDED_DIMS]; // runs per outer dimension
    int64_t  stride[SHI_STRIDED_DIMS]; // bytes between neighbours
} shi_strided;

// The layout of `bytes` dense bytes.
void shi_strided_dense(shi_strided *s, uint64_t bytes);

// Checks a layout (one a peer sent, say): at most SHI_STRIDED_DIMS outer
// dimensions, a stream of exactly `bytes` bytes, and every byte within
// [lo, hi) of base, no sum overflowing. On success fills *lo and *hi with
// the byte extent the layout touches relative to base (hi exclusive; both
// 0 for an empty stream) and returns 0; returns -1 otherwise.
int shi_strided_extent(
    const shi_strided *s, uint64_t bytes, int64_t *lo, int64_t *hi);

// A position in a layout's stream.
typedef struct shi_strided_pos {
    const shi_strided *s;
    uint64_t           idx[SHI_STRIDED_DIMS];
    uint64_t           in_run; // bytes of the current run already passed
    int64_t            run_off; // the current run's offset from base
} shi_strided_pos;

// Places *p at byte `at` of the stream of a checked layout.
void shi_strided_seek(shi_strided_pos *p, const shi_strided *s, uint64_t at);

// The contiguous bytes at *p: their offset from base in *off, their number
// returned (to the end of the current run).
uint64_t shi_strided_piece(const shi_strided_pos *p, int64_t *off);

// Moves *p forward by n bytes, n at most what shi_strided_piece returned.
void shi_strided_advance(shi_strided_pos *p, uint64_t n);

// Two streams walked together a piece at a time, each piece contiguous in
// both (the shorter of the two current runs): what copies between two
// layouts need, whatever moves the bytes (memcpy, an iovec for the
// kernel). Not to be copied once started (it points into itself).
typedef struct shi_strided_pair {
    shi_strided     dense_dst, dense_src; // stand-ins for NULL layouts
    shi_strided_pos d, s;
    uint64_t        left; // bytes still to walk
} shi_strided_pair;

// Starts a walk of `n` bytes: dst's stream from its byte dst_at, src's
// from src_at. The layouts are checked; NULL means dense.
void shi_strided_pair_start(shi_strided_pair *w, const shi_strided *dst,
    uint64_t dst_at, const shi_strided *src, uint64_t src_at, uint64_t n);

// The next piece: its length (0 once the walk is over), its offsets from
// each base in *doff and *soff; the walk moves past it.
uint64_t shi_strided_pair_next(
    shi_strided_pair *w, int64_t *doff, int64_t *soff);

// Copies `n` bytes of the stream of `src` (from its byte `src_at`, in
// memory at src_base) to the stream of `dst` (from its byte `dst_at`, at
// dst_base): memcpy of each piece where both runs go on. The layouts are
// checked; they may be NULL for dense.
void shi_strided_copy(unsigned char *dst_base, const shi_strided *dst,
    uint64_t dst_at, const unsigned char *src_base, const shi_strided *src,
    uint64_t src_at, uint64_t n);

#endif
