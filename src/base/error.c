// Thread-local last-error text (see error.h).
#include "error.h"

#include <stdio.h>
#include <string.h>

#include "shoal.h"

static _Thread_local char error_text[SHI_ERROR_TEXT_MAX];

int
shi_verror(int status, const char *fmt, va_list ap)
{
    vsnprintf(error_text, sizeof(error_text), fmt, ap);
    return status;
}

int
shi_error(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    shi_verror(status, fmt, ap);
    va_end(ap);
    return status;
}

int
shi_error_wrap(int status, const char *fmt, ...)
{
    char    prefix[SHI_ERROR_TEXT_MAX];
    char    old[SHI_ERROR_TEXT_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, error_text, sizeof(old));
    snprintf(error_text, sizeof(error_text), "%s: %s", prefix, old);
    return status;
}

const char *
shi_error_text(void)
{
    return error_text;
}

void
shi_error_clear(void)
{
    error_text[0] = '\0';
}

void
shi_error_save(shi_error_saved *saved)
{
    memcpy(saved->text, error_text, sizeof(saved->text));
}

void
shi_error_restore(const shi_error_saved *saved)
{
    memcpy(error_text, saved->text, sizeof(error_text));
}

const char *
shoal_last_error(void)
{
    return error_text;
}
