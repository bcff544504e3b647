// What the plan module's files share (not part of the plan's interface).
#ifndef SHI_PLAN_IMPL_H
#define SHI_PLAN_IMPL_H

#include <string.h>

#include "plan/plan.h"

// Checks that the specs agree on dtype and reduction, and that these are
// valid (plan_check.c). Same message on every rank.
int shi_plan_check_specs(const shi_plan_spec *specs, int size);

// One rank's boxes as the planner works on them: padded to the plan's
// ndim, each with the index of its tensor among the plan's.
typedef struct shi_plan_rank_boxes {
    int      ninputs, noutputs;
    shi_box *inputs, *outputs;
    int     *input_tensor, *output_tensor;
} shi_plan_rank_boxes;

// Every rank's boxes over the tensors all ranks agreed on (plan_tensors.c).
typedef struct shi_plan_world {
    int                  size;
    int                  ndim; // the most of any tensor
    int                  ntensors;
    shi_plan_gtensor    *tensors; // in the order ranks first name them
    shi_plan_rank_boxes *ranks;
} shi_plan_world;

// Matches the tensors the specs name across ranks (agreement on each one's
// ndim and shape; extents from the boxes where no rank gives a shape),
// checks every box against its tensor's shape, and pads the boxes. Same
// message on every rank. Returns SHOAL_OK, SHOAL_EINVAL or SHOAL_ENOMEM
// (then *w holds nothing to free).
int shi_plan_world_make(
    shi_plan_world *w, const shi_plan_spec *specs, int size);
void shi_plan_world_free(shi_plan_world *w);

// Writes box b of `t` (padded to ndim) in t's own dimensions, as
// shi_box_format does.
int shi_plan_box_format(const shi_plan_gtensor *t, const shi_box *b, int ndim,
    char *buf, size_t len);

// " (tensor 'name')" for a named tensor, "" for the spec's one tensor:
// what error messages add after a box.
const char *shi_plan_tensor_label(
    const shi_plan_gtensor *t, char *buf, size_t len);

// Grows *arr (of *cap elements of `elem` bytes) to hold at least `need`.
// Returns 0, or -1 when out of memory.
int shi_plan_grow(void **arr, int *cap, int need, size_t elem);

#endif
