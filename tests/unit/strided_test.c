// Strided byte layouts (platform/strided.h) and the layouts of tensor box
// views (plan/box.h): checking a layout a peer sent, walking it from any
// byte, and copying between two layouts against a byte-by-byte reference.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan/box.h"
#include "platform/strided.h"
#include "test.h"

// Offset of stream byte k in layout s, the slow way.
static int64_t
reference_offset(const shi_strided *s, uint64_t k)
{
    uint64_t runs = k / s->run;
    int64_t  off  = (int64_t) (k % s->run);

    for (int d = (int) s->ndim - 1; d >= 0; d--) {
        off += (int64_t) (runs % s->count[d]) * s->stride[d];
        runs /= s->count[d];
    }
    return off;
}

static shi_strided
layout2(uint64_t run, uint64_t c0, int64_t s0, uint64_t c1, int64_t s1)
{
    shi_strided s = { .ndim = 2, .run = run };

    s.count[0]  = c0;
    s.stride[0] = s0;
    s.count[1]  = c1;
    s.stride[1] = s1;
    return s;
}

TEST(strided_extent_checks_what_a_peer_sent)
{
    shi_strided s = layout2(16, 3, 100, 4, 20);
    int64_t     lo, hi;

    CHECK(shi_strided_extent(&s, 3 * 4 * 16, &lo, &hi) == 0);
    CHECK(lo == 0 && hi == 2 * 100 + 3 * 20 + 16);
    CHECK(shi_strided_extent(&s, 3 * 4 * 16 + 1, &lo, &hi) != 0);
    s.stride[0] = -100; // rows backwards: below base
    CHECK(shi_strided_extent(&s, 3 * 4 * 16, &lo, &hi) == 0);
    CHECK(lo == -200 && hi == 3 * 20 + 16);
    s.ndim = SHI_STRIDED_DIMS + 1;
    CHECK(shi_strided_extent(&s, 3 * 4 * 16, &lo, &hi) != 0);
    s = layout2(16, UINT64_MAX / 8, 1, 4, 20); // count x run overflows
    CHECK(shi_strided_extent(&s, 0, &lo, &hi) != 0);
    s = layout2(16, 1ULL << 40, INT64_MAX / 4, 1, 0); // reach overflows
    CHECK(shi_strided_extent(&s, 16ULL << 40, &lo, &hi) != 0);
    s          = layout2(16, 2, 100, 2, 20);
    s.reserved = 1;
    CHECK(shi_strided_extent(&s, 64, &lo, &hi) != 0);
    shi_strided_dense(&s, 0);
    CHECK(shi_strided_extent(&s, 0, &lo, &hi) == 0 && lo == 0 && hi == 0);
}

TEST(strided_seek_and_advance_walk_every_byte)
{
    shi_strided     s     = layout2(12, 5, 200, 3, 40);
    uint64_t        total = 12 * 5 * 3;
    shi_strided_pos p;

    for (uint64_t at = 0; at < total; at += 7) {
        uint64_t k = at;

        shi_strided_seek(&p, &s, at);
        while (k < total) {
            int64_t  off;
            uint64_t n = shi_strided_piece(&p, &off);

            CHECK_MSG(off == reference_offset(&s, k),
                "byte %llu from %llu: offset %lld, want %lld",
                (unsigned long long) k, (unsigned long long) at,
                (long long) off, (long long) reference_offset(&s, k));
            n = n > 5 ? 5 : n; // odd steps cross run ends
            shi_strided_advance(&p, n);
            k += n;
        }
    }
}

TEST(strided_copy_between_two_layouts)
{
    shi_strided    src = layout2(24, 4, 300, 5, 60); // 480 bytes
    shi_strided    dst = layout2(40, 3, 500, 4, 100); // 480 bytes
    unsigned char *a   = malloc(1500);
    unsigned char *b   = malloc(2000);
    unsigned char  dense[480];

    CHECK(a != NULL && b != NULL);
    for (int i = 0; i < 1500; i++) {
        a[i] = (unsigned char) (i * 7 + 3);
    }
    memset(b, 0xee, 2000);
    // In two parts, from a byte inside a run on both sides.
    shi_strided_copy(b, &dst, 0, a, &src, 0, 101);
    shi_strided_copy(b, &dst, 101, a, &src, 101, 379);
    for (uint64_t k = 0; k < 480; k++) {
        CHECK(b[reference_offset(&dst, k)] == a[reference_offset(&src, k)]);
    }
    // Gaps untouched.
    CHECK(b[40] == 0xee && b[1999] == 0xee);
    // To and from dense.
    shi_strided_copy(dense, NULL, 0, a, &src, 0, 480);
    for (uint64_t k = 0; k < 480; k++) {
        CHECK(dense[k] == a[reference_offset(&src, k)]);
    }
    memset(b, 0, 2000);
    shi_strided_copy(b, &dst, 200, dense, NULL, 10, 50);
    for (uint64_t k = 200; k < 250; k++) {
        CHECK(b[reference_offset(&dst, k)] == dense[k - 190]);
    }
    free(a);
    free(b);
}

TEST(strided_layout_of_box_views)
{
    shi_box     owner = { .lo = { 0, 0, 0 }, .hi = { 8, 16, 32 } };
    shi_box     b     = { .lo = { 2, 0, 0 }, .hi = { 4, 16, 8 } };
    shi_strided s;
    shi_view    v;
    static char mem[8 * 16 * 32 * 4];

    // A [2, 16, 8] box of a row-major [8, 16, 32] float tensor: runs of 8
    // floats, 32 rows of them (the two outer dimensions merge).
    shi_view_of(&v, 3, &b, &owner, mem, NULL, 4);
    CHECK(shi_view_strided(&v, 3, 4, 32, &s) == 1);
    CHECK(
        s.run == 32 && s.ndim == 1 && s.count[0] == 32 && s.stride[0] == 128);
    CHECK(shi_view_strided(&v, 3, 4, 64, &s) == 0); // runs too short
    // Whole rows: one run.
    b.hi[2] = 32;
    shi_view_of(&v, 3, &b, &owner, mem, NULL, 4);
    CHECK(shi_view_strided(&v, 3, 4, 32, &s) == 1);
    CHECK(s.ndim == 0 && s.run == 2 * 16 * 32 * 4);
    // Column-major: every element its own run.
    int64_t cm[3] = { 1, 8, 128 };
    shi_view_of(&v, 3, &b, &owner, mem, cm, 4);
    CHECK(shi_view_strided(&v, 3, 4, 4, &s) == 1);
    CHECK(s.run == 4 && s.ndim == 3);
    CHECK(shi_view_strided(&v, 3, 4, 8, &s) == 0);
}
