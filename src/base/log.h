// Logging to stderr, chosen by SHOAL_DEBUG=WARN|INFO|TRACE (default WARN).
// Every line starts with "host:pid:rank shoal LEVEL", in the spirit of
// NCCL_DEBUG, so interleaved output of many ranks stays readable.
#ifndef SHI_LOG_H
#define SHI_LOG_H

#include <stdatomic.h>
#include <stdint.h>

enum shi_log_level {
    SHI_LOG_NONE  = 0,
    SHI_LOG_WARN  = 1,
    SHI_LOG_INFO  = 2,
    SHI_LOG_TRACE = 3,
};

// Writes one line if `level` is enabled. Thread-safe; one write(2) per line.
void shi_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// True if messages at `level` are printed (cheap: for guarding costly
// formatting).
int shi_log_enabled(int level);

// Sets the rank shown in the prefix of this process's lines (-1: none).
void shi_log_set_rank(int rank);

// Logs a warning only the first time `*once` is seen zero (thread-safe).
void shi_log_warn_once(int *once, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// From now on this thread's lines never block it: they go through a
// bounded queue and a writer thread (dropped and counted when stderr does
// not keep up). For service threads such as the store server's loop.
void shi_log_never_block(void);

// Repeated lines of one cause (strangers knocking at the store, say): at
// most one every SHI_LOG_LIMIT_NS, the next one saying how many were held
// back. One static shi_log_limit per cause, zero-initialised.
#define SHI_LOG_LIMIT_NS (INT64_C(10) * 1000000000)
typedef struct shi_log_limit {
    _Atomic int64_t last_ns;
    atomic_long     held;
} shi_log_limit;
void shi_log_limited(shi_log_limit *lim, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define SHI_WARN(...) shi_log(SHI_LOG_WARN, __VA_ARGS__)
#define SHI_INFO(...) shi_log(SHI_LOG_INFO, __VA_ARGS__)
#define SHI_TRACE(...)                                                        \
    do {                                                                      \
        if (shi_log_enabled(SHI_LOG_TRACE)) {                                 \
            shi_log(SHI_LOG_TRACE, __VA_ARGS__);                              \
        }                                                                     \
    } while (0)

#endif
