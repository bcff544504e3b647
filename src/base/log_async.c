// Log lines from threads that must never block (the store server's event
// loop): they go to a bounded queue that a writer thread of their own
// drains to stderr. With stderr a pipe nobody reads, the writer blocks and
// the queue fills; further lines are dropped and counted, and the count is
// reported once the writer moves again. The serving thread never waits.
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log_impl.h"

#define QUEUE_LINES 64

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  queue_cv   = PTHREAD_COND_INITIALIZER;
static char            queue_line[QUEUE_LINES][SHI_LOG_LINE_MAX];
static size_t          queue_len[QUEUE_LINES];
static unsigned        queue_head, queue_count;
static unsigned long   queue_dropped;
static int             writer_started;

static void *
writer_main(void *arg)
{
    char          line[SHI_LOG_LINE_MAX];
    size_t        len;
    unsigned long dropped;

    (void) arg;
    pthread_mutex_lock(&queue_lock);
    for (;;) {
        while (queue_count == 0 && queue_dropped == 0) {
            pthread_cond_wait(&queue_cv, &queue_lock);
        }
        dropped       = queue_dropped;
        queue_dropped = 0;
        len           = 0;
        if (queue_count > 0) {
            len = queue_len[queue_head];
            memcpy(line, queue_line[queue_head], len);
            queue_head = (queue_head + 1) % QUEUE_LINES;
            queue_count--;
        }
        pthread_mutex_unlock(&queue_lock);
        if (dropped > 0) {
            shi_log(SHI_LOG_WARN,
                "%lu log lines were dropped: stderr did not keep up", dropped);
        }
        if (len > 0 && write(STDERR_FILENO, line, len) < 0) {
            // Nowhere to report it; the next line tries again.
        }
        pthread_mutex_lock(&queue_lock);
    }
    return NULL;
}

// Starts the writer (with every signal blocked: they stay with the
// application's threads). Under queue_lock.
static int
writer_start_locked(void)
{
    pthread_t      t;
    pthread_attr_t attr;
    sigset_t       all, old;
    int            rc;

    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&t, &attr, writer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    writer_started = rc == 0;
    return writer_started;
}

int
shi_log_enqueue(const char *line, size_t len)
{
    unsigned tail;

    pthread_mutex_lock(&queue_lock);
    if (!writer_started && !writer_start_locked()) {
        pthread_mutex_unlock(&queue_lock);
        return 0; // the caller writes it itself
    }
    if (queue_count == QUEUE_LINES) {
        queue_dropped++;
    } else {
        tail = (queue_head + queue_count) % QUEUE_LINES;
        memcpy(queue_line[tail], line, len);
        queue_len[tail] = len;
        queue_count++;
    }
    pthread_cond_signal(&queue_cv);
    pthread_mutex_unlock(&queue_lock);
    return 1;
}
