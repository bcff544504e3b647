// Plans over several named tensors: matching names across ranks, boxes
// of one tensor meeting only each other, per-tensor dimensions (padded),
// extents from the boxes, local tensors one per tensor, the errors, and
// the decoder of the several-tensors blob.
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "plan/plan.h"
#include "plan/plan_obj.h"
#include "test.h"

#define TS_CAP 8

// A several-tensors spec built up box by box (freed by shi_plan_spec_free).
static void
ts_init(shi_plan_spec *s, int reduction)
{
    memset(s, 0, sizeof(*s));
    s->several       = 1;
    s->dtype         = SHOAL_FLOAT32;
    s->reduction     = reduction;
    s->tensors       = calloc(TS_CAP, sizeof(shi_plan_tensor));
    s->inputs        = calloc(TS_CAP, sizeof(shi_box));
    s->outputs       = calloc(TS_CAP, sizeof(shi_box));
    s->input_tensor  = calloc(TS_CAP, sizeof(int));
    s->output_tensor = calloc(TS_CAP, sizeof(int));
}

// Names a tensor (shape NULL: the boxes define it); returns its index.
static int
ts_tensor(shi_plan_spec *s, const char *name, int ndim, const int64_t *shape)
{
    shi_plan_tensor *t = &s->tensors[s->ntensors];

    t->name      = strdup(name);
    t->ndim      = ndim;
    t->has_shape = shape != NULL;
    if (shape != NULL) {
        memcpy(t->shape, shape, sizeof(int64_t) * (size_t) ndim);
    }
    return s->ntensors++;
}

// A box of tensor k: offset then extent, in k's own dimensions.
static void
ts_box(shi_plan_spec *s, int output, int k, const int64_t *off,
    const int64_t *ext)
{
    shi_box *b  = output ? &s->outputs[s->noutputs] : &s->inputs[s->ninputs];
    int      nd = s->tensors[k].ndim;

    for (int d = 0; d < nd; d++) {
        b->lo[d] = off[d];
        b->hi[d] = off[d] + ext[d];
    }
    if (output) {
        s->output_tensor[s->noutputs++] = k;
    } else {
        s->input_tensor[s->ninputs++] = k;
    }
}

static void
ts_free(shi_plan_spec *s, int n)
{
    for (int r = 0; r < n; r++) {
        shi_plan_spec_free(&s[r]);
    }
}

static void
expect_build_error(shi_plan_spec *s, int n, const char *needle)
{
    for (int r = 0; r < n; r++) {
        shi_plan_layout l;
        int             st = shi_plan_build(&l, s, n, r);

        CHECK_MSG(st == SHOAL_EINVAL, "rank %d: %s", r, shoal_status_name(st));
        CHECK_MSG(strstr(shi_error_text(), needle) != NULL,
            "rank %d: '%s' lacks '%s'", r, shi_error_text(), needle);
    }
}

// A layer's weight [4, 6] and bias [6], sharded by rows and halves over 2
// ranks, gathered whole on rank 0. Rank 1 names them in the other order,
// and rank 0 also has a box of the bias at the weight's coordinates: only
// boxes of one tensor meet.
TEST(plan_tensors_meet_only_their_own)
{
    int64_t         wshape[2] = { 4, 6 }, bshape[1] = { 6 };
    int64_t         o2[2] = { 0, 0 }, rows[2] = { 2, 6 }, all2[2] = { 4, 6 };
    int64_t         o1[1] = { 0 }, half[1] = { 3 }, mid[1] = { 3 };
    shi_plan_spec   s[2];
    shi_plan_layout l;
    char            text[4096];
    int             w0, b0, w1, b1;

    ts_init(&s[0], SHI_PLAN_COPY);
    w0 = ts_tensor(&s[0], "w", 2, wshape);
    b0 = ts_tensor(&s[0], "b", 1, bshape);
    ts_box(&s[0], 0, w0, o2, rows); // w rows 0:2
    ts_box(&s[0], 0, b0, o1, half); // b 0:3
    ts_box(&s[0], 1, w0, o2, all2);
    ts_box(&s[0], 1, b0, o1, bshape);
    ts_init(&s[1], SHI_PLAN_COPY);
    b1 = ts_tensor(&s[1], "b", 1, NULL);
    w1 = ts_tensor(&s[1], "w", 2, NULL);
    ts_box(&s[1], 0, b1, mid, half); // b 3:6
    int64_t r2[2] = { 2, 0 };
    ts_box(&s[1], 0, w1, r2, rows); // w rows 2:4
    CHECK_OK(shi_plan_build(&l, s, 2, 0));
    CHECK(l.ntensors == 2 && l.ndim == 2);
    CHECK(strcmp(l.tensors[0].name, "w") == 0);
    CHECK(l.tensors[1].ndim == 1 && l.tensors[1].shape[0] == 6);
    // Local tensors: one per tensor, each holding all of it (the bias
    // padded to [0:1, 0:6]).
    CHECK(l.nlocal_in == 2 && l.nlocal_out == 2);
    CHECK(l.input_local[0] == 0 && l.input_local[1] == 1);
    CHECK(l.local_in[1].tensor == 1);
    CHECK(l.local_in[1].owner.hi[0] == 1 && l.local_in[1].owner.hi[1] == 6);
    CHECK(l.local_out[0].owner.hi[0] == 4 && l.local_out[0].owner.hi[1] == 6);
    // One message from rank 1: its weight rows (for rank 0's outputs[0]),
    // then its bias half.
    CHECK(l.nrecvs == 1 && l.recvs[0].npieces == 2);
    CHECK(l.recvs[0].bytes == (3 + 12) * 4);
    for (int c = 0; c < l.ncells; c++) {
        for (int j = 0; j < l.cells[c].nsources; j++) {
            const shi_plan_source *src = &l.cells[c].sources[j];
            int                    out = l.output_tensor[l.cells[c].output];

            CHECK(src->msg >= 0 || l.input_tensor[src->input] == out);
        }
    }
    shi_plan_format(&l, "plan", text, sizeof(text));
    CHECK_MSG(
        strstr(text, "tensor 'w' [4, 6], tensor 'b' [6]") != NULL, "%s", text);
    CHECK_MSG(strstr(text, "outputs[1] 'b' [3:6] <- rank 1 inputs[0]") != NULL,
        "%s", text);
    shi_plan_layout_free(&l);
    CHECK_OK(shi_plan_build(&l, s, 2, 1));
    CHECK(l.nsends == 1 && l.sends[0].npieces == 2);
    CHECK(l.sends[0].pieces[0].tensor == 0 && l.sends[0].pieces[0].input == 1);
    CHECK(l.sends[0].pieces[1].tensor == 1 && l.sends[0].pieces[1].input == 0);
    CHECK(l.nlocal_in == 2 && l.local_in[0].tensor == 1);
    CHECK(l.nlocal_out == 0);
    shi_plan_layout_free(&l);
    ts_free(s, 2);
}

// Without a shape anywhere, a tensor reaches as far as its furthest box.
// A rank taking no part names no tensor.
TEST(plan_tensors_extents_from_boxes)
{
    int64_t         off[1] = { 2 }, ext[1] = { 5 }, small[1] = { 3 };
    shi_plan_spec   s[3];
    shi_plan_layout l;

    ts_init(&s[0], SHOAL_SUM);
    ts_box(&s[0], 0, ts_tensor(&s[0], "x", 1, NULL), off, ext); // 2:7
    ts_init(&s[1], SHOAL_SUM);
    int k = ts_tensor(&s[1], "x", 1, NULL);
    ts_box(&s[1], 0, k, off, ext);
    ts_box(&s[1], 1, k, off, small); // 2:5
    ts_init(&s[2], SHOAL_SUM);
    CHECK_OK(shi_plan_build(&l, s, 3, 1));
    CHECK(l.ntensors == 1 && l.tensors[0].shape[0] == 7);
    CHECK(l.nlocal_out == 1 && l.local_out[0].owner.lo[0] == 0);
    CHECK(l.local_out[0].owner.hi[0] == 7);
    CHECK(l.ncells == 1 && l.cells[0].nsources == 2);
    shi_plan_layout_free(&l);
    CHECK_OK(shi_plan_build(&l, s, 3, 2));
    CHECK(l.nlocal_in == 0 && l.nlocal_out == 0 && l.ncells == 0);
    CHECK(l.nsends == 0 && l.nrecvs == 0);
    shi_plan_layout_free(&l);
    ts_free(s, 3);
}

TEST(plan_tensors_errors_name_the_tensor)
{
    int64_t       w[2] = { 4, 6 }, w2[2] = { 4, 7 }, o2[2] = { 0, 0 };
    int64_t       o1[1] = { 0 }, six[1] = { 6 }, four[1] = { 4 };
    int64_t       out2[2] = { 2, 0 }, rows[2] = { 4, 6 };
    shi_plan_spec s[2];

    // Ranks disagree on the number of dimensions of "w".
    ts_init(&s[0], SHI_PLAN_COPY);
    ts_tensor(&s[0], "w", 2, NULL);
    ts_init(&s[1], SHI_PLAN_COPY);
    ts_tensor(&s[1], "w", 1, NULL);
    expect_build_error(s, 2,
        "ranks disagree on the number of dimensions of tensor 'w': rank 0 "
        "gives it 2, rank 1 gives it 1");
    ts_free(s, 2);
    // ... on its shape.
    ts_init(&s[0], SHI_PLAN_COPY);
    ts_tensor(&s[0], "w", 2, w);
    ts_init(&s[1], SHI_PLAN_COPY);
    ts_tensor(&s[1], "w", 2, w2);
    expect_build_error(s, 2,
        "ranks disagree on the shape of tensor 'w': rank 0 passed [4, 6], "
        "rank 1 passed [4, 7]");
    ts_free(s, 2);
    // A name given twice by one rank.
    ts_init(&s[0], SHI_PLAN_COPY);
    ts_tensor(&s[0], "w", 2, w);
    ts_tensor(&s[0], "w", 2, w);
    ts_init(&s[1], SHI_PLAN_COPY);
    expect_build_error(s, 2, "rank 0 names tensor 'w' twice");
    ts_free(s, 2);
    // A box outside its tensor's shape.
    ts_init(&s[0], SHI_PLAN_COPY);
    ts_box(&s[0], 0, ts_tensor(&s[0], "w", 2, w), out2, rows);
    ts_init(&s[1], SHI_PLAN_COPY);
    expect_build_error(s, 2,
        "rank 0's inputs[0] (tensor 'w', offset [2, 0], shape [4, 6]) lies "
        "outside the global shape [4, 6]");
    ts_free(s, 2);
    // The bias output covered only by a weight input at its coordinates.
    ts_init(&s[0], SHI_PLAN_COPY);
    ts_box(&s[0], 0, ts_tensor(&s[0], "w", 2, w), o2, w);
    ts_box(&s[0], 0, ts_tensor(&s[0], "b", 1, six), o1, four);
    ts_init(&s[1], SHI_PLAN_COPY);
    ts_box(&s[1], 1, ts_tensor(&s[1], "b", 1, NULL), o1, six);
    expect_build_error(s, 2,
        "elements [4:6] of rank 1's outputs[0] (tensor 'b', global box "
        "[0:6]) are in no rank's inputs of that tensor (2 of its elements");
    ts_free(s, 2);
}

// The one tensor of the spec's form and a named tensor are different
// tensors, each with its own local tensors.
TEST(plan_tensors_beside_the_one_tensor_form)
{
    int64_t       shape[1] = { 4 }, o1[1] = { 0 };
    shi_plan_spec s[2];

    memset(&s[0], 0, sizeof(s[0]));
    s[0].ndim            = 1;
    s[0].shape[0]        = 4;
    s[0].dtype           = SHOAL_FLOAT32;
    s[0].reduction       = SHI_PLAN_COPY;
    s[0].ninputs         = 1;
    s[0].inputs          = calloc(1, sizeof(shi_box));
    s[0].inputs[0].hi[0] = 4;
    ts_init(&s[1], SHI_PLAN_COPY);
    ts_box(&s[1], 1, ts_tensor(&s[1], "x", 1, shape), o1, shape);
    expect_build_error(s, 2, "(tensor 'x', global box [0:4]) are in no");
    ts_free(s, 2);
}

// ---- the several-tensors blob --------------------------------------------

static char *
decode_text(const int64_t *v, size_t n, shi_plan_spec *out)
{
    shi_plan_spec s;
    char         *err;

    CHECK_OK(shi_plan_spec_decode(&s, v, n));
    err = strdup(s.error != NULL ? s.error : "");
    if (out != NULL && s.error == NULL) {
        *out = s;
    } else {
        shi_plan_spec_free(&s);
    }
    return err;
}

static void
expect_unreadable(const int64_t *v, size_t n, const char *why)
{
    char *err = decode_text(v, n, NULL);

    CHECK_MSG(strstr(err, why) != NULL, "'%s' lacks '%s'", err, why);
    free(err);
}

TEST(plan_tensors_decoder_trusts_nothing)
{
    const int64_t M = SHI_PLAN_SPEC_MAGIC_TENSORS;
    int64_t       name_w, name_b;
    shi_plan_spec s;

    memcpy(&name_w, "w\0\0\0\0\0\0\0", 8);
    memcpy(&name_b, "b\0\0\0\0\0\0\0", 8);
    // Tensors w (2-d, shape [4, 6]) and b (1-d, no shape); input w
    // [0:2, 0:6], output b [1:3].
    int64_t good[] = { M, SHOAL_FLOAT32, SHOAL_PLAN_COPY, 2, 1, 1, //
        2, 1, 1, 4, 6, name_w, //
        1, 0, 1, name_b, //
        0, 0, 0, 2, 6, //
        1, 1, 2 };
    size_t  n      = sizeof(good) / sizeof(good[0]);
    char   *err    = decode_text(good, n, &s);
    CHECK_MSG(err[0] == '\0', "%s", err);
    free(err);
    CHECK(s.ntensors == 2 && strcmp(s.tensors[1].name, "b") == 0);
    CHECK(s.tensors[0].has_shape && s.tensors[0].shape[1] == 6);
    CHECK(!s.tensors[1].has_shape && s.output_tensor[0] == 1);
    CHECK(s.outputs[0].lo[0] == 1 && s.outputs[0].hi[0] == 3);
    shi_plan_spec_free(&s);
    expect_unreadable(good, n - 1, "ends early");
    good[n - 3] = 2; // a box of tensor 2 of 2
    expect_unreadable(good, n, "a box of no tensor");
    good[n - 3] = 1;
    good[8]     = 0; // w's name: 0 bytes long
    expect_unreadable(good, n, "tensor values out of range");
    good[8] = 3; // "w\0\0": a NUL inside the name
    expect_unreadable(good, n, "NUL byte");
    good[8] = 1;
    good[3] = 1 << 29; // a billion tensors in 24 values
    expect_unreadable(good, n, "header values out of range");
    good[3]  = 2;
    good[19] = INT64_MAX - 1; // an offset near INT64_MAX
    expect_unreadable(good, n, "beyond 2^62");
}
