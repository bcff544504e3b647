// Logging (see log.h). The level is read once from SHOAL_DEBUG.
#include "log.h"

#include "base/clock.h"
#include "base/log_impl.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static pthread_once_t    log_once = PTHREAD_ONCE_INIT;
static atomic_int        log_ready; // log_init has run (its fields are set)
static int               log_level = SHI_LOG_WARN;
static atomic_int        log_rank  = -1;
static char              log_host[64];
static _Thread_local int log_never_block; // this thread queues its lines

static void
log_init(void)
{
    const char *env = getenv("SHOAL_DEBUG");

    if (gethostname(log_host, sizeof(log_host)) != 0) {
        strcpy(log_host, "?");
    }
    log_host[sizeof(log_host) - 1] = '\0';
    if (env == NULL || *env == '\0') {
        log_level = SHI_LOG_WARN;
    } else if (strcasecmp(env, "NONE") == 0 || strcasecmp(env, "OFF") == 0) {
        log_level = SHI_LOG_NONE;
    } else if (strcasecmp(env, "INFO") == 0) {
        log_level = SHI_LOG_INFO;
    } else if (strcasecmp(env, "TRACE") == 0) {
        log_level = SHI_LOG_TRACE;
    } else {
        log_level = SHI_LOG_WARN;
    }
    atomic_store_explicit(&log_ready, 1, memory_order_release);
}

// Asked several times per operation: once the level is known, one load.
int
shi_log_enabled(int level)
{
    if (!atomic_load_explicit(&log_ready, memory_order_acquire)) {
        pthread_once(&log_once, log_init);
    }
    return level <= log_level;
}

void
shi_log_set_rank(int rank)
{
    atomic_store(&log_rank, rank);
}

static void
log_write(int level, const char *fmt, va_list ap)
{
    static const char *names[] = { "NONE", "WARN", "INFO", "TRACE" };
    char               line[SHI_LOG_LINE_MAX];
    int                n;
    int                rank = atomic_load(&log_rank);

    if (rank >= 0) {
        n = snprintf(line, sizeof(line), "%s:%d:%d shoal %s ", log_host,
            (int) getpid(), rank, names[level]);
    } else {
        n = snprintf(line, sizeof(line), "%s:%d shoal %s ", log_host,
            (int) getpid(), names[level]);
    }
    if (n < 0 || (size_t) n >= sizeof(line)) {
        return;
    }
    vsnprintf(line + n, sizeof(line) - (size_t) n - 1, fmt, ap);
    n         = (int) strlen(line);
    line[n++] = '\n';
    if (log_never_block && shi_log_enqueue(line, (size_t) n)) {
        return;
    }
    // One write per line keeps lines of concurrent ranks from interleaving.
    if (write(STDERR_FILENO, line, (size_t) n) < 0) {
        return;
    }
}

void
shi_log_never_block(void)
{
    log_never_block = 1;
}

// Whether a line of `lim`'s cause may be printed now; if so, *missed is
// how many were held back since the last one.
static int
log_limit_pass(shi_log_limit *lim, long *missed)
{
    int64_t now  = shi_now_ns();
    int64_t last = atomic_load(&lim->last_ns);

    if (last != 0 && now - last < SHI_LOG_LIMIT_NS) {
        atomic_fetch_add(&lim->held, 1);
        return 0;
    }
    if (!atomic_compare_exchange_strong(&lim->last_ns, &last, now)) {
        atomic_fetch_add(&lim->held, 1); // another thread prints this one
        return 0;
    }
    *missed = atomic_exchange(&lim->held, 0);
    return 1;
}

void
shi_log_limited(shi_log_limit *lim, int level, const char *fmt, ...)
{
    char    text[SHI_LOG_LINE_MAX - 256];
    long    missed;
    va_list ap;

    if (!shi_log_enabled(level) || !log_limit_pass(lim, &missed)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (missed > 0) {
        shi_log(level, "%s (and %ld more like it in the last %d s)", text,
            missed, (int) (SHI_LOG_LIMIT_NS / 1000000000));
    } else {
        shi_log(level, "%s", text);
    }
}

void
shi_log(int level, const char *fmt, ...)
{
    va_list ap;

    if (!shi_log_enabled(level)) {
        return;
    }
    va_start(ap, fmt);
    log_write(level, fmt, ap);
    va_end(ap);
}

void
shi_log_warn_once(int *once, const char *fmt, ...)
{
    va_list ap;

    if (__atomic_exchange_n(once, 1, __ATOMIC_RELAXED) != 0) {
        return;
    }
    if (!shi_log_enabled(SHI_LOG_WARN)) {
        return;
    }
    va_start(ap, fmt);
    log_write(SHI_LOG_WARN, fmt, ap);
    va_end(ap);
}
