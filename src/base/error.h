// Error values with messages: every failing internal call records a sentence
// in a thread-local buffer and returns its (negative) status, so callers can
// `return shi_error(SHOAL_EINVAL, "root %d out of range", root);`.
#ifndef SHI_ERROR_H
#define SHI_ERROR_H

#include <stdarg.h>

#define SHI_ERROR_TEXT_MAX 1024

// Records a formatted message for `status` as this thread's last error and
// returns `status` unchanged.
int shi_error(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// Like shi_error, with a va_list.
int shi_verror(int status, const char *fmt, va_list ap);

// Prepends "prefix: " to this thread's last error text and returns status.
// Used to add context as an error travels up ("store get 'x': ...").
int shi_error_wrap(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// This thread's last error text ("" if none).
const char *shi_error_text(void);

// Forgets this thread's last error.
void shi_error_clear(void);

// A copy of this thread's last error, kept across cleanup that may fail
// on its own (a close, a free): the caller's error is what it reports.
typedef struct shi_error_saved {
    char text[SHI_ERROR_TEXT_MAX];
} shi_error_saved;

void shi_error_save(shi_error_saved *saved);
void shi_error_restore(const shi_error_saved *saved);

#endif
