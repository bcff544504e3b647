// Monotonic time and deadlines, in nanoseconds. SHI_NO_DEADLINE never passes.
#ifndef SHI_CLOCK_H
#define SHI_CLOCK_H

#include <stdint.h>
#include <time.h>

#define SHI_NO_DEADLINE INT64_MAX

// Nanoseconds on CLOCK_MONOTONIC.
int64_t shi_now_ns(void);

// The deadline `ms` milliseconds from now (ms < 0: SHI_NO_DEADLINE).
int64_t shi_deadline_in_ms(int64_t ms);

// The deadline `ms` milliseconds after `now` (ms < 0: SHI_NO_DEADLINE).
int64_t shi_deadline_after(int64_t now, int64_t ms);

// The earlier of two times or deadlines.
static inline int64_t
shi_earliest(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

// The absolute time `ns` nanoseconds from now on `clock`, as the timed
// waits of pthreads take it (pthread_cond_timedwait on a condition of that
// clock, pthread_mutex_timedlock on CLOCK_REALTIME).
struct timespec shi_timespec_in_ns(clockid_t clock, int64_t ns);

// Milliseconds left until `deadline` (0 if passed; INT32_MAX-ish capped for
// poll(2); -1 for SHI_NO_DEADLINE, as poll(2) takes it).
int shi_poll_timeout_ms(int64_t deadline);

#endif
