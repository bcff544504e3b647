// Logging to stderr, chosen by SHOAL_DEBUG=WARN|INFO|TRACE (default WARN).
// Every line starts with "host:pid:rank shoal LEVEL", in the spirit of
// NCCL_DEBUG, so interleaved output of many ranks stays readable.
#ifndef SHI_LOG_H
#define SHI_LOG_H

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

#define SHI_WARN(...) shi_log(SHI_LOG_WARN, __VA_ARGS__)
#define SHI_INFO(...) shi_log(SHI_LOG_INFO, __VA_ARGS__)
#define SHI_TRACE(...)                                                        \
    do {                                                                      \
        if (shi_log_enabled(SHI_LOG_TRACE)) {                                 \
            shi_log(SHI_LOG_TRACE, __VA_ARGS__);                              \
        }                                                                     \
    } while (0)

#endif
