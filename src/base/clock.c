// Monotonic clock helpers (see clock.h).
#include "clock.h"

#include <time.h>

int64_t
shi_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct timespec
shi_timespec_in_ns(clockid_t clock, int64_t ns)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    ns += ts.tv_nsec;
    ts.tv_sec += ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
    return ts;
}

int64_t
shi_deadline_in_ms(int64_t ms)
{
    return shi_deadline_after(shi_now_ns(), ms);
}

int64_t
shi_deadline_after(int64_t now, int64_t ms)
{
    if (ms < 0 || ms > INT64_MAX / 2000000) {
        return SHI_NO_DEADLINE;
    }
    return now + ms * 1000000;
}

int
shi_poll_timeout_ms(int64_t deadline)
{
    int64_t left;

    if (deadline == SHI_NO_DEADLINE) {
        return -1;
    }
    left = deadline - shi_now_ns();
    if (left <= 0) {
        return 0;
    }
    left = (left + 999999) / 1000000;
    return left > 1000000000 ? 1000000000 : (int) left;
}
