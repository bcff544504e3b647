// Status, dtype and op names: the public lookup tables.
#include "shoal.h"

int
shoal_version(void)
{
    return SHOAL_VERSION_MAJOR * 10000 + SHOAL_VERSION_MINOR * 100
        + SHOAL_VERSION_PATCH;
}

const char *
shoal_strerror(int status)
{
    switch (status) {
#define STATUS_TEXT_(name, value, text)                                       \
    case value:                                                               \
        return text;
        SHOAL_STATUS_MAP(STATUS_TEXT_)
#undef STATUS_TEXT_
    }
    return "unknown status";
}

const char *
shoal_status_name(int status)
{
    switch (status) {
#define STATUS_NAME_(name, value, text)                                       \
    case value:                                                               \
        return "SHOAL_" #name;
        SHOAL_STATUS_MAP(STATUS_NAME_)
#undef STATUS_NAME_
    }
    return "unknown status";
}
