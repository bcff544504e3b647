// Between the log's front (log.c) and its queue (log_async.c).
#ifndef SHI_LOG_IMPL_H
#define SHI_LOG_IMPL_H

#include <stddef.h>

#include "base/log.h"

#define SHI_LOG_LINE_MAX 2048

// Hands a formatted line (with its newline) to the writer thread; never
// blocks on stderr. Returns 0 if there is no writer (write it yourself).
int shi_log_enqueue(const char *line, size_t len);

#endif
