// Futex wait/wake on 32-bit words in memory shared between processes.
// The words live in shared mappings, so the shared (not PRIVATE) forms are
// used.
#ifndef SHI_FUTEX_H
#define SHI_FUTEX_H

#include <stdatomic.h>
#include <stdint.h>

// Sleeps while *word == expected, for at most timeout_ns (< 0: no limit).
// Returns on a wake, a value change, a signal or the time-out; callers
// re-check their condition.
void shi_futex_wait(
    _Atomic uint32_t *word, uint32_t expected, int64_t timeout_ns);

// Wakes every thread sleeping on `word`.
void shi_futex_wake_all(_Atomic uint32_t *word);

#endif
