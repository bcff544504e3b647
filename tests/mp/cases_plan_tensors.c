// Plans over several named tensors (shoal_plan_spec.tensors) through the
// public API: every rank passes one local tensor per tensor, holding all
// of it, and the boxes are parts of it.
//
// gather: a layer's weight [2n, 5] and bias [3n + 1] (uneven: the last
// rank owns one element more), each rank owning rows of the weight and a
// slice of the bias in full-size tensors, gathered in place (inputs and
// outputs one memory) in one run; ranks name the tensors in different
// orders, and only even ranks give the shapes.
//
// reduce: a 0-d, a 1-d and a 3-d tensor, summed over all ranks into parts
// of each rank's full-size outputs, one of them in transposed storage;
// the elements outside a rank's output boxes must stay as they were.
#include <stdint.h>
#include <string.h>

#include "mptest.h"

// The value rank r holds at element i of tensor t.
static int64_t
pv_value(int t, int64_t i, int r)
{
    return 1000 * (int64_t) t + 7 * i + 100000 * (int64_t) r;
}

// ---- gather
// ------------------------------------------------------------------

#define PG_COLS 5

static int
pg_bias_lo(int r)
{
    return 3 * r;
}

static int
pg_bias_len(int r, int n)
{
    return r == n - 1 ? 4 : 3;
}

static int
pv_gather(shoal_comm *comm)
{
    int               me = shoal_comm_rank(comm), n = shoal_comm_size(comm);
    int64_t           wshape[2] = { 2 * (int64_t) n, PG_COLS };
    int64_t           bshape[1] = { 3 * (int64_t) n + 1 };
    int64_t           wbox[4]   = { 2 * (int64_t) me, 0, 2, PG_COLS };
    int64_t           wall[4]   = { 0, 0, wshape[0], PG_COLS };
    int64_t           bbox[2]   = { pg_bias_lo(me), pg_bias_len(me, n) };
    int64_t           ball[2]   = { 0, bshape[0] };
    int               odd       = me % 2;
    shoal_plan_tensor ts[2]     = {
            { "weight", 2, odd ? NULL : wshape },
            { "bias", 1, odd ? NULL : bshape },
    };
    // Odd ranks list the bias first: their local tensors come in that
    // order.
    int64_t         in[6], out[6];
    int             in_t[2], out_t[2];
    float           w[64 * PG_COLS], b[200];
    const void     *ins[2];
    void           *outs[2];
    shoal_plan     *plan;
    shoal_plan_spec s = SHOAL_PLAN_SPEC_INIT;
    int             nin, nout, nd;
    int64_t         shape[SHOAL_PLAN_MAX_DIMS];
    const char     *name;

    memcpy(in, odd ? bbox : wbox, sizeof(int64_t) * (odd ? 2 : 4));
    memcpy(in + (odd ? 2 : 4), odd ? wbox : bbox,
        sizeof(int64_t) * (odd ? 4 : 2));
    memcpy(out, odd ? ball : wall, sizeof(int64_t) * (odd ? 2 : 4));
    memcpy(out + (odd ? 2 : 4), odd ? wall : ball,
        sizeof(int64_t) * (odd ? 4 : 2));
    in_t[0] = out_t[0] = odd ? 1 : 0;
    in_t[1] = out_t[1] = odd ? 0 : 1;
    s.ntensors         = 2;
    s.tensors          = ts;
    s.ninputs          = 2;
    s.inputs           = in;
    s.input_tensor     = in_t;
    s.noutputs         = 2;
    s.outputs          = out;
    s.output_tensor    = out_t;
    MP_OK(shoal_plan_create(comm, &s, &plan));
    MP_OK(shoal_plan_local_tensors(plan, &nin, &nout));
    MP_CHECK(nin == 2 && nout == 2);
    MP_OK(shoal_plan_local_tensor(plan, 1, odd ? 1 : 0, &nd, shape, &name));
    MP_CHECK(nd == 2 && shape[0] == wshape[0] && shape[1] == PG_COLS);
    MP_CHECK(strcmp(name, "weight") == 0);
    MP_OK(shoal_plan_local_tensor(plan, 0, odd ? 0 : 1, &nd, shape, NULL));
    MP_CHECK(nd == 1 && shape[0] == bshape[0]);
    MP_EXPECT(
        shoal_plan_local_tensor(plan, 0, 2, &nd, shape, NULL), SHOAL_EINVAL);
    for (int run = 0; run < 2; run++) {
        for (int i = 0; i < wshape[0] * PG_COLS; i++) {
            w[i] = (i / PG_COLS) / 2 == me ? (float) pv_value(0, i, me) : -1;
        }
        for (int i = 0; i < bshape[0]; i++) {
            b[i] = i >= bbox[0] && i < bbox[0] + bbox[1]
                ? (float) pv_value(1, i, me)
                : -1;
        }
        ins[0] = outs[0] = odd ? (void *) b : (void *) w;
        ins[1] = outs[1] = odd ? (void *) w : (void *) b;
        MP_OK(shoal_plan_start(plan, 2, ins, NULL, 2, outs, NULL, NULL));
        MP_OK(shoal_plan_wait(plan));
        for (int i = 0; i < wshape[0] * PG_COLS; i++) {
            MP_CHECK(w[i] == (float) pv_value(0, i, (i / PG_COLS) / 2));
        }
        for (int i = 0; i < bshape[0]; i++) {
            int owner = i / 3 < n ? i / 3 : n - 1;
            MP_CHECK(b[i] == (float) pv_value(1, i, owner));
        }
    }
    // One local tensor short: every rank refuses the run, nothing moves.
    MP_EXPECT(shoal_plan_start(
                  plan, me == 0 ? 1 : 2, ins, NULL, 2, outs, NULL, NULL),
        SHOAL_EINVAL);
    MP_CHECK(strstr(shoal_last_error(), "nothing was sent"));
    shoal_plan_free(plan);
    return 0;
}

// ---- reduce
// ------------------------------------------------------------------

static int
pv_reduce(shoal_comm *comm)
{
    int     me = shoal_comm_rank(comm), n = shoal_comm_size(comm);
    int64_t vshape[1] = { 7 }, cshape[3] = { 2, 3, 4 };
    // Inputs: all of each tensor (the scalar's box has no values).
    int64_t in[2 + 6] = { 0, 7, 0, 0, 0, 2, 3, 4 };
    int     in_t[3]   = { 0, 1, 2 };
    // Outputs: c [me % 2, 0:3, 1:3], v [me % 7 : 7], the scalar.
    int64_t out[6 + 2]      = { me % 2, 0, 1, 1, 3, 2, me % 7, 7 - me % 7 };
    int     out_t[3]        = { 2, 1, 0 };
    shoal_plan_tensor ts[3] = {
        { "scalar", 0, NULL },
        { "v", 1, vshape },
        { "c", 3, cshape },
    };
    int64_t         sc = 0, v[7], c[24], cout[24], vout[7], scout = -1;
    int64_t         ct[3] = { 1, 2, 6 }; // c's output: column-major storage
    const int64_t  *out_strides[3] = { ct, NULL, NULL };
    const void     *ins[3]         = { &sc, v, c };
    void           *outs[3]        = { cout, vout, &scout };
    shoal_plan     *plan;
    shoal_plan_spec s = SHOAL_PLAN_SPEC_INIT;

    s.dtype         = SHOAL_INT64;
    s.reduction     = SHOAL_SUM;
    s.ntensors      = 3;
    s.tensors       = ts;
    s.ninputs       = 3;
    s.inputs        = in;
    s.input_tensor  = in_t;
    s.noutputs      = 3;
    s.outputs       = out;
    s.output_tensor = out_t;
    MP_OK(shoal_plan_create(comm, &s, &plan));
    sc = pv_value(0, 0, me);
    for (int i = 0; i < 7; i++) {
        v[i]    = pv_value(1, i, me);
        vout[i] = -5;
    }
    for (int i = 0; i < 24; i++) {
        c[i]    = pv_value(2, i, me);
        cout[i] = -5;
    }
    MP_OK(shoal_plan_start(plan, 3, ins, NULL, 3, outs, out_strides, NULL));
    MP_OK(shoal_plan_wait(plan));
    int64_t ranks = (int64_t) n * (n - 1) / 2;
    MP_CHECK(scout == n * pv_value(0, 0, 0) + 100000 * ranks);
    for (int i = 0; i < 7; i++) {
        MP_CHECK(vout[i]
            == (i >= me % 7 ? n * pv_value(1, i, 0) + 100000 * ranks : -5));
    }
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 3; j++) {
            for (int k = 0; k < 4; k++) {
                int64_t lin  = (i * 3 + j) * 4 + k;
                int64_t got  = cout[i + 2 * j + 6 * k];
                int     hit  = i == me % 2 && k >= 1 && k < 3;
                int64_t want = n * pv_value(2, lin, 0) + 100000 * ranks;
                MP_CHECK(got == (hit ? want : -5));
            }
        }
    }
    shoal_plan_free(plan);
    // A box naming a tensor the spec does not have: every rank fails.
    in_t[1] = me == n - 1 ? 3 : 1;
    MP_EXPECT(shoal_plan_create(comm, &s, &plan), SHOAL_EINVAL);
    MP_CHECK(strstr(shoal_last_error(), "input_tensor[1] is"));
    return 0;
}

int
mp_case_plan_tensors(shoal_comm *comm, int argc, char **argv)
{
    (void) argc;
    (void) argv;
    return pv_gather(comm) != 0 || pv_reduce(comm) != 0;
}
