// The compile_op planner and box arithmetic, without any transport: specs
// built in memory, plans checked piece by piece.
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "plan/plan.h"
#include "plan/plan_obj.h"
#include "test.h"

#define MAX_RANKS 8

// One rank's spec from "offset, shape" pairs (2 * ndim values per box).
static void
spec(shi_plan_spec *s, int nd, const int64_t *shape, int reduction, int ni,
    const int64_t *in, int no, const int64_t *out)
{
    memset(s, 0, sizeof(*s));
    s->ndim      = nd;
    s->dtype     = SHOAL_FLOAT32;
    s->reduction = reduction;
    memcpy(s->shape, shape, sizeof(int64_t) * (size_t) nd);
    s->ninputs  = ni;
    s->noutputs = no;
    s->inputs   = calloc((size_t) ni + 1, sizeof(shi_box));
    s->outputs  = calloc((size_t) no + 1, sizeof(shi_box));
    for (int i = 0; i < ni; i++) {
        for (int d = 0; d < nd; d++) {
            s->inputs[i].lo[d] = in[2 * nd * i + d];
            s->inputs[i].hi[d] = in[2 * nd * i + d] + in[2 * nd * i + nd + d];
        }
    }
    for (int i = 0; i < no; i++) {
        for (int d = 0; d < nd; d++) {
            s->outputs[i].lo[d] = out[2 * nd * i + d];
            s->outputs[i].hi[d]
                = out[2 * nd * i + d] + out[2 * nd * i + nd + d];
        }
    }
}

static void
specs_free(shi_plan_spec *s, int n)
{
    for (int r = 0; r < n; r++) {
        free(s[r].inputs);
        free(s[r].outputs);
    }
}

static int64_t
box_elems(const shi_plan_msg *m, int nd)
{
    int64_t n = 0;

    for (int i = 0; i < m->npieces; i++) {
        n += shi_box_volume(&m->pieces[i].box, nd);
    }
    return n;
}

TEST(plan_box_intersect_subtract_format)
{
    shi_box a = { .lo = { 0, 0 }, .hi = { 4, 6 } };
    shi_box b = { .lo = { 1, 2 }, .hi = { 3, 9 } };
    shi_box x, parts[4];
    char    s[64];
    int64_t vol = 0;

    CHECK(shi_box_intersect(&a, &b, 2, &x));
    shi_box_format(&x, 2, s, sizeof(s));
    CHECK_MSG(strcmp(s, "[1:3, 2:6]") == 0, "%s", s);
    int n = shi_box_subtract(&a, &x, 2, parts);
    CHECK(n == 3);
    for (int i = 0; i < n; i++) {
        vol += shi_box_volume(&parts[i], 2);
        CHECK(!shi_box_intersect(&parts[i], &x, 2, &b));
    }
    CHECK(vol + shi_box_volume(&x, 2) == shi_box_volume(&a, 2));
    shi_box c = { .lo = { 5, 0 }, .hi = { 6, 1 } };
    CHECK(!shi_box_intersect(&a, &c, 2, &x));
    CHECK(shi_box_volume(&a, 0) == 1); // a 0-d box is one element
}

TEST(plan_view_copy_strided_and_transposed)
{
    // A 4x5 row-major int32 tensor holding global box [2:6, 10:15].
    int32_t  src[20], dst[6], tr[20];
    shi_box  owner = { .lo = { 2, 10 }, .hi = { 6, 15 } };
    shi_box  sub   = { .lo = { 3, 11 }, .hi = { 5, 14 } };
    shi_view from, to;

    for (int i = 0; i < 20; i++) {
        src[i] = i;
    }
    shi_view_of(&from, 2, &sub, &owner, src, NULL, 4);
    CHECK(!shi_view_is_dense(&from, 2));
    shi_view_packed(&to, 2, &sub, dst);
    CHECK(shi_view_is_dense(&to, 2));
    shi_view_copy(&to, &from, 2, 4);
    for (int r = 0; r < 2; r++) {
        for (int c = 0; c < 3; c++) {
            CHECK(dst[r * 3 + c] == (1 + r) * 5 + 1 + c);
        }
    }
    // The whole box into a column-major (transposed) tensor.
    int64_t cm[2] = { 1, 4 };
    shi_view_of(&from, 2, &owner, &owner, src, NULL, 4);
    shi_view_of(&to, 2, &owner, &owner, tr, cm, 4);
    shi_view_copy(&to, &from, 2, 4);
    for (int r = 0; r < 4; r++) {
        for (int c = 0; c < 5; c++) {
            CHECK(tr[c * 4 + r] == r * 5 + c);
        }
    }
}

// Example 2 of the spec: rank 0 scatters rows of a 6x4 tensor to 1, 2, 3.
TEST(plan_scatter_pattern)
{
    int64_t         shape[2] = { 6, 4 };
    int64_t         all[4]   = { 0, 0, 6, 4 };
    shi_plan_spec   s[4];
    shi_plan_layout l;

    spec(&s[0], 2, shape, SHI_PLAN_COPY, 1, all, 0, NULL);
    for (int r = 1; r < 4; r++) {
        int64_t out[4] = { (r - 1) * 2, 0, 2, 4 };
        spec(&s[r], 2, shape, SHI_PLAN_COPY, 0, NULL, 1, out);
    }
    CHECK_OK(shi_plan_build(&l, s, 4, 0));
    CHECK(l.nsends == 3 && l.nrecvs == 0 && l.ncells == 0);
    for (int i = 0; i < 3; i++) {
        CHECK(l.sends[i].peer == i + 1 && l.sends[i].npieces == 1);
        CHECK(l.sends[i].bytes == 2 * 4 * 4);
        CHECK(l.sends[i].pieces[0].box.lo[0] == 2 * i);
    }
    shi_plan_layout_free(&l);
    CHECK_OK(shi_plan_build(&l, s, 4, 2));
    CHECK(l.nsends == 0 && l.nrecvs == 1 && l.ncells == 1);
    CHECK(l.recvs[0].peer == 0);
    CHECK(l.cells[0].nsources == 1 && l.cells[0].sources[0].msg == 0);
    shi_plan_layout_free(&l);
    specs_free(s, 4);
}

// Example 5: reduce-scatter; each cell combines all 4 ranks in rank order.
TEST(plan_reduce_scatter_pattern)
{
    int64_t         shape[2] = { 8, 4 };
    int64_t         all[4]   = { 0, 0, 8, 4 };
    shi_plan_spec   s[4];
    shi_plan_layout l;

    for (int r = 0; r < 4; r++) {
        int64_t out[4] = { r * 2, 0, 2, 4 };
        spec(&s[r], 2, shape, SHOAL_SUM, 1, all, 1, out);
    }
    CHECK_OK(shi_plan_build(&l, s, 4, 1));
    CHECK(l.nsends == 3 && l.nrecvs == 3 && l.ncells == 1);
    CHECK(l.cells[0].nsources == 4);
    for (int j = 0; j < 4; j++) {
        CHECK(l.cells[0].sources[j].rank == j);
        CHECK((l.cells[0].sources[j].msg < 0) == (j == 1));
    }
    shi_plan_layout_free(&l);
    specs_free(s, 4);
}

// Without a reduction, the highest rank wins, then its last listed input.
TEST(plan_last_writer_wins)
{
    int64_t         shape[1] = { 10 };
    int64_t         r0[2]    = { 0, 10 };
    int64_t         r1[4]    = { 2, 4, 3, 2 }; // [2:6] then [3:5]
    int64_t         out[2]   = { 0, 10 };
    shi_plan_spec   s[2];
    shi_plan_layout l;
    char            text[4096];

    spec(&s[0], 1, shape, SHI_PLAN_COPY, 1, r0, 1, out);
    spec(&s[1], 1, shape, SHI_PLAN_COPY, 2, r1, 0, NULL);
    CHECK_OK(shi_plan_build(&l, s, 2, 0));
    // Cells: [0:2] r0, [2:3] r1 in0, [3:5] r1 in1, [5:6] r1 in0, [6:10] r0.
    CHECK_MSG(l.ncells == 5, "%d cells", l.ncells);
    int want_rank[5]  = { 0, 1, 1, 1, 0 };
    int want_input[5] = { 0, 0, 1, 0, 0 };
    for (int i = 0; i < 5; i++) {
        CHECK(l.cells[i].nsources == 1);
        CHECK(l.cells[i].sources[0].rank == want_rank[i]);
        CHECK(l.cells[i].sources[0].input == want_input[i]);
    }
    CHECK(l.nrecvs == 1 && l.recvs[0].npieces == 3);
    CHECK(box_elems(&l.recvs[0], 1) == 4);
    shi_plan_format(&l, "plan", text, sizeof(text));
    CHECK_MSG(strstr(text, "outputs[0] [3:5] <- rank 1 inputs[1]") != NULL,
        "%s", text);
    shi_plan_layout_free(&l);
    specs_free(s, 2);
}

// Cells along the innermost dimension with the same sources are merged.
TEST(plan_cells_merge_along_rows)
{
    int64_t         shape[2] = { 4, 8 };
    int64_t         in0[4]   = { 0, 0, 2, 8 };
    int64_t         in1[4]   = { 2, 0, 2, 8 };
    int64_t         out[4]   = { 0, 0, 4, 8 };
    shi_plan_spec   s[2];
    shi_plan_layout l;

    spec(&s[0], 2, shape, SHI_PLAN_COPY, 1, in0, 1, out);
    spec(&s[1], 2, shape, SHI_PLAN_COPY, 1, in1, 0, NULL);
    CHECK_OK(shi_plan_build(&l, s, 2, 0));
    CHECK(l.ncells == 2);
    CHECK(l.cells[0].box.hi[1] - l.cells[0].box.lo[1] == 8);
    shi_plan_layout_free(&l);
    specs_free(s, 2);
}

static void
expect_error(shi_plan_spec *s, int n, const char *needle)
{
    for (int r = 0; r < n; r++) {
        shi_plan_layout l;
        int             st = shi_plan_build(&l, s, n, r);

        CHECK_MSG(st == SHOAL_EINVAL, "rank %d: %s", r, shoal_status_name(st));
        CHECK_MSG(strstr(shi_error_text(), needle) != NULL,
            "rank %d: '%s' lacks '%s'", r, shi_error_text(), needle);
    }
}

TEST(plan_uncovered_output_names_elements_and_rank)
{
    int64_t       shape[2] = { 8, 8 };
    int64_t       in[4]    = { 0, 0, 2, 8 };
    int64_t       out[4]   = { 0, 0, 4, 8 };
    shi_plan_spec s[2];

    spec(&s[0], 2, shape, SHI_PLAN_COPY, 1, in, 0, NULL);
    spec(&s[1], 2, shape, SHI_PLAN_COPY, 0, NULL, 1, out);
    expect_error(s, 2,
        "elements [2:4, 0:8] of rank 1's outputs[0] (global box [0:4, "
        "0:8]) are in no rank's inputs (16 of its elements are uncovered)");
    specs_free(s, 2);
}

TEST(plan_disagreements_and_bad_boxes)
{
    int64_t       shape[2] = { 8, 8 }, other[2] = { 8, 4 };
    int64_t       in[4]  = { 0, 0, 8, 8 };
    int64_t       bad[4] = { 6, 0, 4, 8 };
    shi_plan_spec s[3];

    spec(&s[0], 2, shape, SHI_PLAN_COPY, 1, in, 0, NULL);
    spec(&s[1], 2, shape, SHI_PLAN_COPY, 0, NULL, 0, NULL);
    spec(&s[2], 2, other, SHI_PLAN_COPY, 0, NULL, 0, NULL);
    expect_error(s, 3,
        "ranks disagree on the global shape: rank 0 passed [8, 8], rank 2 "
        "passed [8, 4]");
    specs_free(s, 3);

    spec(&s[0], 2, shape, SHI_PLAN_COPY, 1, in, 0, NULL);
    spec(&s[1], 2, shape, SHOAL_SUM, 0, NULL, 0, NULL);
    expect_error(s, 2,
        "ranks disagree on the reduction: rank 0 passed "
        "none, rank 1 passed sum");
    specs_free(s, 2);

    spec(&s[0], 2, shape, SHI_PLAN_COPY, 1, in, 0, NULL);
    spec(&s[1], 2, shape, SHI_PLAN_COPY, 0, NULL, 1, bad);
    expect_error(s, 2,
        "rank 1's outputs[0] (offset [6, 0], shape [4, 8]) "
        "lies outside the global shape [8, 8]");
    specs_free(s, 2);

    // A box with more bytes than 2^62 (its offsets would overflow).
    int64_t huge_shape[2] = { INT64_C(1) << 40, INT64_C(1) << 40 };
    int64_t huge[4]       = { 0, 0, INT64_C(1) << 40, INT64_C(1) << 40 };
    spec(&s[0], 2, huge_shape, SHI_PLAN_COPY, 1, huge, 0, NULL);
    spec(&s[1], 2, huge_shape, SHI_PLAN_COPY, 0, NULL, 0, NULL);
    expect_error(s, 2, "has more than 2^62 bytes in the global shape");
    specs_free(s, 2);

    spec(&s[0], 2, shape, SHOAL_BAND, 1, in, 0, NULL);
    spec(&s[1], 2, shape, SHOAL_BAND, 0, NULL, 0, NULL);
    expect_error(s, 2, "needs an integer or bool dtype");
    specs_free(s, 2);

    spec(&s[0], 2, shape, SHI_PLAN_COPY, 1, in, 0, NULL);
    spec(&s[1], 2, shape, SHI_PLAN_COPY, 0, NULL, 0, NULL);
    s[1].error = "inputs[0] has 3 dimensions, the shape 2";
    expect_error(s, 2, "rank 1: inputs[0] has 3 dimensions, the shape 2");
    s[1].error = NULL;
    specs_free(s, 2);
}

// Every rank sees the same pieces for each (sender, receiver) pair: the
// sender's message layout equals the receiver's.
TEST(plan_senders_and_receivers_agree)
{
    int64_t         shape[3] = { 6, 5, 7 };
    shi_plan_spec   s[MAX_RANKS];
    shi_plan_layout l[MAX_RANKS];
    int             n = 5;

    srand(7);
    for (int r = 0; r < n; r++) {
        int64_t in[2 * 3 * 3], out[2 * 3 * 2];
        for (int i = 0; i < 3; i++) {
            for (int d = 0; d < 3; d++) {
                int64_t lo        = rand() % shape[d];
                in[6 * i + d]     = lo;
                in[6 * i + 3 + d] = 1 + rand() % (shape[d] - lo);
            }
        }
        // Outputs inside the union of rank 0's full-cover input below.
        for (int i = 0; i < 2; i++) {
            for (int d = 0; d < 3; d++) {
                int64_t lo         = rand() % shape[d];
                out[6 * i + d]     = lo;
                out[6 * i + 3 + d] = 1 + rand() % (shape[d] - lo);
            }
        }
        if (r == 0) {
            int64_t full[6] = { 0, 0, 0, 6, 5, 7 };
            memcpy(in, full, sizeof(full));
        }
        spec(&s[r], 3, shape, SHOAL_SUM, 3, in, 2, out);
    }
    for (int r = 0; r < n; r++) {
        CHECK_OK(shi_plan_build(&l[r], s, n, r));
    }
    for (int a = 0; a < n; a++) {
        for (int i = 0; i < l[a].nsends; i++) {
            const shi_plan_msg *snd = &l[a].sends[i];
            const shi_plan_msg *rcv = NULL;
            for (int j = 0; j < l[snd->peer].nrecvs; j++) {
                if (l[snd->peer].recvs[j].peer == a) {
                    rcv = &l[snd->peer].recvs[j];
                }
            }
            CHECK(rcv != NULL && rcv->bytes == snd->bytes);
            CHECK(rcv->npieces == snd->npieces);
            for (int k = 0; k < snd->npieces; k++) {
                const shi_plan_piece *x = &rcv->pieces[k],
                                     *y = &snd->pieces[k];
                CHECK(x->input == y->input && x->offset == y->offset);
                CHECK(memcmp(x->box.lo, y->box.lo, 3 * sizeof(int64_t)) == 0);
                CHECK(memcmp(x->box.hi, y->box.hi, 3 * sizeof(int64_t)) == 0);
            }
        }
    }
    for (int r = 0; r < n; r++) {
        shi_plan_layout_free(&l[r]);
    }
    specs_free(s, n);
}

// Decodes a blob and returns its error text ("" when it decoded), freeing
// what it allocated; *boxes gets the decoded box count.
static char *
decode_error(const int64_t *v, size_t n, int *boxes)
{
    shi_plan_spec s;
    char         *err;

    CHECK_OK(shi_plan_spec_decode(&s, v, n));
    *boxes = s.ninputs + s.noutputs;
    err    = strdup(s.error != NULL ? s.error : "");
    CHECK((s.error != NULL) == (s.inputs == NULL));
    free(s.inputs);
    free(s.outputs);
    free(s.error);
    return err;
}

static void
expect_unreadable(const int64_t *v, size_t n, const char *why)
{
    int   boxes;
    char *err = decode_error(v, n, &boxes);

    CHECK_MSG(strstr(err, why) != NULL, "'%s' lacks '%s'", err, why);
    CHECK(boxes == 0);
    free(err);
}

TEST(plan_spec_decoder_trusts_nothing)
{
    const int64_t M = SHI_PLAN_SPEC_MAGIC;
    // A good one: shape [4], input [0:4], output [1:3].
    int64_t good[]
        = { M, 1, SHOAL_FLOAT32, SHOAL_PLAN_COPY, 1, 1, 0, 4, 0, 4, 1, 2 };
    int   boxes;
    char *err = decode_error(good, 12, &boxes);
    CHECK_MSG(err[0] == '\0' && boxes == 2, "%s", err);
    free(err);
    // 0-d with a billion boxes in 7 values: refused, nothing allocated.
    int64_t huge[] = { M, 0, SHOAL_FLOAT32, SHOAL_PLAN_COPY, 1 << 29, 0, 0 };
    expect_unreadable(huge, 7, "more boxes than values");
    // An offset near INT64_MAX (lo + size would overflow).
    int64_t far[] = { M, 1, SHOAL_FLOAT32, SHOAL_PLAN_COPY, 1, 0, 0, 10,
        INT64_MAX - 1, 5 };
    expect_unreadable(far, 10, "beyond 2^62");
    int64_t negative[]
        = { M, 1, SHOAL_FLOAT32, SHOAL_PLAN_COPY, 1, 0, 0, 10, INT64_MIN, 5 };
    expect_unreadable(negative, 10, "beyond 2^62");
    // Lengths that do not add up, bad header values, another magic.
    expect_unreadable(good, 11, "does not match");
    int64_t dims[] = { M, 99, SHOAL_FLOAT32, SHOAL_PLAN_COPY, 0, 0, 0 };
    expect_unreadable(dims, 7, "out of range");
    int64_t neg[] = { M, 1, SHOAL_FLOAT32, SHOAL_PLAN_COPY, -1, 0, 0, 4 };
    expect_unreadable(neg, 8, "out of range");
    int64_t other[] = { M + 1, 1, 0, 0, 0, 0, 0, 4 };
    expect_unreadable(other, 8, "another shoal version");
    expect_unreadable(good, 3, "another shoal version");
}
