// Compile-time validation of every rank's compile_op spec (plan.h). Runs
// on every rank over the same exchanged specs, so each failure gives the
// same message everywhere.
#include <stdio.h>

#include "algo/kernels/reduce.h"
#include "core/error.h"
#include "plan/plan_impl.h"

static const char *
reduction_name(int reduction)
{
    return reduction == SHI_PLAN_COPY ? "none" : shoal_op_name(reduction);
}

static int
check_agreement(const shi_plan_spec *s0, const shi_plan_spec *s, int r)
{
    char a[256], b[256];

    if (s->ndim != s0->ndim
        || memcmp(s->shape, s0->shape, sizeof(int64_t) * (size_t) s->ndim)
            != 0) {
        shi_dims_format(s0->shape, s0->ndim, a, sizeof(a));
        shi_dims_format(s->shape, s->ndim, b, sizeof(b));
        return shi_error(SHOAL_EINVAL,
            "compile_op: ranks disagree on the global shape: rank 0 passed "
            "%s, rank %d passed %s",
            a, r, b);
    }
    if (s->dtype != s0->dtype) {
        return shi_error(SHOAL_EINVAL,
            "compile_op: ranks disagree on the dtype: rank 0 passed %s, "
            "rank %d passed %s",
            shoal_dtype_name(s0->dtype), r, shoal_dtype_name(s->dtype));
    }
    if (s->reduction != s0->reduction) {
        return shi_error(SHOAL_EINVAL,
            "compile_op: ranks disagree on the reduction: rank 0 passed %s, "
            "rank %d passed %s",
            reduction_name(s0->reduction), r, reduction_name(s->reduction));
    }
    return SHOAL_OK;
}

static int
check_shape(const shi_plan_spec *s)
{
    char a[256];

    if (s->dtype < 0 || s->dtype >= SHOAL_DTYPE_COUNT) {
        return shi_error(
            SHOAL_EINVAL, "compile_op: unknown dtype %d", s->dtype);
    }
    for (int d = 0; d < s->ndim; d++) {
        if (s->shape[d] < 0) {
            shi_dims_format(s->shape, s->ndim, a, sizeof(a));
            return shi_error(SHOAL_EINVAL,
                "compile_op: the global shape %s has a negative size", a);
        }
    }
    if (s->reduction == SHI_PLAN_COPY) {
        return SHOAL_OK;
    }
    if (s->reduction == SHOAL_PREMUL_SUM) {
        return shi_error(SHOAL_EINVAL,
            "compile_op: reduction premul_sum is not supported (use sum, "
            "prod, min, max or avg)");
    }
    if (shi_reduce_check(s->dtype, SHOAL_REDUCE_OP(s->reduction)) < 0) {
        return shi_error_wrap(SHOAL_EINVAL, "compile_op");
    }
    return SHOAL_OK;
}

// More bytes than any machine has: also keeps every offset computation
// in range.
static int
box_too_big(const shi_plan_spec *s, const int64_t *extent)
{
    int64_t bytes = (int64_t) shoal_dtype_size(s->dtype);

    for (int d = 0; d < s->ndim; d++) {
        if (__builtin_mul_overflow(bytes, extent[d], &bytes)
            || bytes > (INT64_C(1) << 62)) {
            return 1;
        }
    }
    return 0;
}

static int
check_box(
    const shi_plan_spec *s, const shi_box *b, int r, const char *what, int i)
{
    char    off[256], ext[256], shape[256];
    int     outside = 0, negative = 0;
    int64_t extent[SHI_BOX_MAX_DIMS];

    for (int d = 0; d < s->ndim; d++) {
        extent[d] = b->hi[d] - b->lo[d];
        negative |= extent[d] < 0;
        outside |= b->lo[d] < 0 || b->hi[d] > s->shape[d];
    }
    if (!negative && !outside && !box_too_big(s, extent)) {
        return SHOAL_OK;
    }
    shi_dims_format(b->lo, s->ndim, off, sizeof(off));
    shi_dims_format(extent, s->ndim, ext, sizeof(ext));
    shi_dims_format(s->shape, s->ndim, shape, sizeof(shape));
    return shi_error(SHOAL_EINVAL,
        "compile_op: rank %d's %s[%d] (offset %s, shape %s) %s the global "
        "shape %s",
        r, what, i, off, ext,
        negative      ? "has a negative size in"
            : outside ? "lies outside"
                      : "has more than 2^62 bytes in",
        shape);
}

int
shi_plan_check_specs(const shi_plan_spec *specs, int size)
{
    int st;

    for (int r = 0; r < size; r++) {
        if (specs[r].error != NULL) {
            return shi_error(
                SHOAL_EINVAL, "compile_op: rank %d: %s", r, specs[r].error);
        }
    }
    for (int r = 1; r < size; r++) {
        st = check_agreement(&specs[0], &specs[r], r);
        if (st < 0) {
            return st;
        }
    }
    st = check_shape(&specs[0]);
    for (int r = 0; r < size && st == SHOAL_OK; r++) {
        const shi_plan_spec *s = &specs[r];

        for (int i = 0; i < s->ninputs && st == SHOAL_OK; i++) {
            st = check_box(s, &s->inputs[i], r, "inputs", i);
        }
        for (int i = 0; i < s->noutputs && st == SHOAL_OK; i++) {
            st = check_box(s, &s->outputs[i], r, "outputs", i);
        }
    }
    return st;
}
