// Futex system calls (see futex.h).
#include "futex.h"

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void
shi_futex_wait(_Atomic uint32_t *word, uint32_t expected, int64_t timeout_ns)
{
    struct timespec  ts;
    struct timespec *tsp = NULL;

    if (timeout_ns >= 0) {
        ts.tv_sec  = timeout_ns / 1000000000;
        ts.tv_nsec = timeout_ns % 1000000000;
        tsp        = &ts;
    }
    syscall(SYS_futex, (uint32_t *) word, FUTEX_WAIT, expected, tsp, NULL, 0);
}

void
shi_futex_wake_all(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *) word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
