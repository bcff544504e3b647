// Compile-time validation of every rank's compile_op spec (plan.h): each
// rank's own complaint, then agreement on the dtype and the reduction.
// Runs on every rank over the same exchanged specs, so each failure gives
// the same message everywhere. The tensors' shapes and the boxes are
// checked where they are matched across ranks (plan_tensors.c).
#include <stdio.h>

#include "algo/kernels/reduce.h"
#include "base/error.h"
#include "plan/plan_impl.h"

static const char *
reduction_name(int reduction)
{
    return reduction == SHI_PLAN_COPY ? "none" : shoal_op_name(reduction);
}

static int
check_agreement(const shi_plan_spec *s0, const shi_plan_spec *s, int r)
{
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
check_dtype_and_reduction(const shi_plan_spec *s)
{
    if (s->dtype < 0 || s->dtype >= SHOAL_DTYPE_COUNT) {
        return shi_error(
            SHOAL_EINVAL, "compile_op: unknown dtype %d", s->dtype);
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

int
shi_plan_check_specs(const shi_plan_spec *specs, int size)
{
    for (int r = 0; r < size; r++) {
        if (specs[r].error != NULL) {
            return shi_error(
                SHOAL_EINVAL, "compile_op: rank %d: %s", r, specs[r].error);
        }
    }
    for (int r = 1; r < size; r++) {
        int st = check_agreement(&specs[0], &specs[r], r);

        if (st < 0) {
            return st;
        }
    }
    return check_dtype_and_reduction(&specs[0]);
}
