// What the plan module's files share (not part of the plan's interface).
#ifndef SHI_PLAN_IMPL_H
#define SHI_PLAN_IMPL_H

#include <string.h>

#include "plan/plan.h"

// Checks that the specs agree and that every box lies inside the shape
// (plan_check.c). Same message on every rank.
int shi_plan_check_specs(const shi_plan_spec *specs, int size);

// Grows *arr (of *cap elements of `elem` bytes) to hold at least `need`.
// Returns 0, or -1 when out of memory.
int shi_plan_grow(void **arr, int *cap, int need, size_t elem);

#endif
