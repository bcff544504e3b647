// --tag-output: every line a rank writes to stdout or stderr comes out of
// the launcher's stdout or stderr as "[rank] line". Only whole lines are
// written, so lines of different ranks never mix; an unfinished last line
// is written, with a newline, when the rank closes the stream, and a line
// longer than OUTPUT_LINE_MAX is cut into pieces of that size.
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shoalrun.h"

#define OUTPUT_READ_MAX     (64 * 1024)
#define OUTPUT_LINE_MAX     (64 * 1024)
#define OUTPUT_PUMP_READS   16
#define OUTPUT_FINISH_READS 1024

// Lines with their prefixes, gathered so that one read costs one write.
static struct {
    char  *buf;
    size_t len, cap;
} output_stage;

// Once a destination fails (a closed pipe), output for it is dropped but
// ranks are still read, so they never block on a full pipe.
static int output_broken[3];

// Makes room for `more` bytes after `len` in *buf; returns 0 or -1.
static int
output_reserve(char **buf, size_t *cap, size_t len, size_t more)
{
    size_t want = len + more;
    char  *p;

    if (want <= *cap) {
        return 0;
    }
    want = want < 2 * *cap ? 2 * *cap : want;
    p    = realloc(*buf, want);
    if (p == NULL) {
        return -1;
    }
    *buf = p;
    *cap = want;
    return 0;
}

// Writes all of p[0..n) to fd, waiting if fd is non-blocking and full.
static void
output_write(int fd, const char *p, size_t n)
{
    while (n > 0 && !output_broken[fd]) {
        ssize_t w = write(fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t) w;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = { .fd = fd, .events = POLLOUT };
            poll(&pfd, 1, -1);
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else {
            output_broken[fd] = 1;
        }
    }
}

// Adds "[rank] " + line[0..n) + "\n" to the staging buffer.
static void
output_stage_line(int rank, const char *line, size_t n)
{
    char prefix[24];
    int  plen = snprintf(prefix, sizeof(prefix), "[%d] ", rank);

    if (output_reserve(&output_stage.buf, &output_stage.cap, output_stage.len,
            (size_t) plen + n + 1)
        != 0) {
        return; // out of memory: the line is lost, the job goes on
    }
    memcpy(output_stage.buf + output_stage.len, prefix, (size_t) plen);
    output_stage.len += (size_t) plen;
    memcpy(output_stage.buf + output_stage.len, line, n);
    output_stage.len += n;
    output_stage.buf[output_stage.len++] = '\n';
}

static void
output_stage_flush(int dest)
{
    output_write(dest, output_stage.buf, output_stage.len);
    output_stage.len = 0;
}

// Stages the complete lines of s->buf (a newline may only be at or after
// `from`) and keeps the unfinished rest; `eof` stages the rest too.
static void
output_lines(struct sr_stream *s, size_t from, int eof)
{
    size_t start = 0;
    char  *nl;

    while ((nl = memchr(s->buf + from, '\n', s->len - from)) != NULL) {
        size_t end = (size_t) (nl - s->buf);
        output_stage_line(s->rank, s->buf + start, end - start);
        start = from = end + 1;
    }
    while (s->len - start >= OUTPUT_LINE_MAX) {
        output_stage_line(s->rank, s->buf + start, OUTPUT_LINE_MAX);
        start += OUTPUT_LINE_MAX;
    }
    if (eof && s->len > start) {
        output_stage_line(s->rank, s->buf + start, s->len - start);
        start = s->len;
    }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
    output_stage_flush(s->dest);
}

void
sr_stream_init(struct sr_stream *s, int fd, int dest, int rank)
{
    memset(s, 0, sizeof(*s));
    s->fd   = fd;
    s->dest = dest;
    s->rank = rank;
}

static void
output_close(struct sr_stream *s)
{
    output_lines(s, 0, 1);
    close(s->fd);
    s->fd = -1;
    free(s->buf);
    s->buf = NULL;
    s->len = s->cap = 0;
}

// One read. Returns 1 if data came, 0 at end of file (or an error), -1 if
// nothing was there.
static int
output_read(struct sr_stream *s)
{
    ssize_t n;
    size_t  old = s->len;

    if (output_reserve(&s->buf, &s->cap, s->len, OUTPUT_READ_MAX) != 0) {
        return 0;
    }
    do {
        n = read(s->fd, s->buf + s->len, OUTPUT_READ_MAX);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return -1;
    }
    if (n <= 0) {
        return 0;
    }
    s->len += (size_t) n;
    output_lines(s, old, 0);
    return 1;
}

int
sr_stream_pump(struct sr_stream *s)
{
    int got = 1;

    // A few reads at most, so one chatty rank cannot starve the others.
    for (int i = 0; i < OUTPUT_PUMP_READS && got == 1; i++) {
        if (s->fd < 0) {
            return 0;
        }
        got = output_read(s);
        if (got == 0) {
            output_close(s);
            return 0;
        }
    }
    return 1;
}

void
sr_stream_finish(struct sr_stream *s)
{
    if (s->fd < 0) {
        return;
    }
    // Bounded: something left behind might still be writing.
    for (int i = 0; i < OUTPUT_FINISH_READS && output_read(s) == 1; i++) { }
    output_close(s);
}
