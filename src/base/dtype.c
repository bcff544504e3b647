// Element types and reduce-op names.
#include "shoal.h"

static const struct {
    const char *name;
    size_t      size;
} dtype_table[SHOAL_DTYPE_COUNT] = {
    [SHOAL_BOOL]     = { "bool", 1 },
    [SHOAL_UINT8]    = { "uint8", 1 },
    [SHOAL_INT8]     = { "int8", 1 },
    [SHOAL_INT16]    = { "int16", 2 },
    [SHOAL_INT32]    = { "int32", 4 },
    [SHOAL_INT64]    = { "int64", 8 },
    [SHOAL_FLOAT16]  = { "float16", 2 },
    [SHOAL_BFLOAT16] = { "bfloat16", 2 },
    [SHOAL_FLOAT32]  = { "float32", 4 },
    [SHOAL_FLOAT64]  = { "float64", 8 },
};

static const char *const op_names[SHOAL_OP_COUNT] = {
    [SHOAL_SUM]        = "sum",
    [SHOAL_PROD]       = "prod",
    [SHOAL_MIN]        = "min",
    [SHOAL_MAX]        = "max",
    [SHOAL_BAND]       = "band",
    [SHOAL_BOR]        = "bor",
    [SHOAL_BXOR]       = "bxor",
    [SHOAL_AVG]        = "avg",
    [SHOAL_PREMUL_SUM] = "premul_sum",
};

size_t
shoal_dtype_size(int dtype)
{
    if (dtype < 0 || dtype >= SHOAL_DTYPE_COUNT) {
        return 0;
    }
    return dtype_table[dtype].size;
}

const char *
shoal_dtype_name(int dtype)
{
    if (dtype < 0 || dtype >= SHOAL_DTYPE_COUNT) {
        return "unknown";
    }
    return dtype_table[dtype].name;
}

const char *
shoal_op_name(int op_kind)
{
    if (op_kind < 0 || op_kind >= SHOAL_OP_COUNT) {
        return "unknown";
    }
    return op_names[op_kind];
}
