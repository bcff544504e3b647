// Status, dtype and op tables.
#include <string.h>

#include "test.h"

TEST(status_strings_cover_every_code)
{
    CHECK(strcmp(shoal_status_name(SHOAL_OK), "SHOAL_OK") == 0);
    CHECK(strcmp(shoal_status_name(SHOAL_ETIMEDOUT), "SHOAL_ETIMEDOUT") == 0);
    CHECK(strstr(shoal_strerror(SHOAL_EPEER), "peer") != NULL);
    CHECK(strcmp(shoal_strerror(12345), "unknown status") == 0);
    CHECK(SHOAL_INPROGRESS > 0);
    CHECK(SHOAL_EINVAL < 0);
}

TEST(dtype_sizes_and_names)
{
    CHECK(shoal_dtype_size(SHOAL_BOOL) == 1);
    CHECK(shoal_dtype_size(SHOAL_BFLOAT16) == 2);
    CHECK(shoal_dtype_size(SHOAL_FLOAT64) == 8);
    CHECK(shoal_dtype_size(SHOAL_DTYPE_COUNT) == 0);
    CHECK(shoal_dtype_size(-1) == 0);
    CHECK(strcmp(shoal_dtype_name(SHOAL_FLOAT16), "float16") == 0);
    CHECK(strcmp(shoal_op_name(SHOAL_PREMUL_SUM), "premul_sum") == 0);
    CHECK(strcmp(shoal_op_name(99), "unknown") == 0);
}
