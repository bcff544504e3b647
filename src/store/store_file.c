// File store: one append-only file that every rank sees, guarded by
// flock(2). Layout: the 8-byte magic "shoalFS1", then records
//   u32 klen | u32 vlen | key | value      (big-endian lengths)
// where a later record for a key replaces an earlier one. Writers append
// under an exclusive lock; readers take a shared lock, read only what was
// appended since their last look into an in-memory table, and poll with
// backoff (1 ms doubling to 50 ms) until their deadline. ADD reads the
// current value and appends the sum under one exclusive lock, so it is
// atomic across processes. A record left half-written by a writer that
// died is cut off by the next writer (it holds the lock, so nobody else is
// writing it).
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "shoal.h"
#include "store/store_impl.h"
#include "store/table.h"
#include "store/wire.h"

#define FILE_MAGIC        "shoalFS1"
#define FILE_MAGIC_LEN    8
#define FILE_RECORD_HEAD  8
#define FILE_NAP_FIRST_NS 1000000 // 1 ms
#define FILE_NAP_MAX_NS   50000000 // 50 ms

typedef struct store_file {
    shi_store base; // first: the handle is cast to and from it
    int       fd;
    char     *path;
    shi_table table; // every record read so far
    uint64_t  parsed; // file offset after the last complete record read
} store_file;

// Sleeps *nap (never past the deadline) and doubles it up to the maximum.
static void
file_nap(int64_t *nap, int64_t deadline)
{
    int64_t         ns = *nap, left = deadline - shi_now_ns();
    struct timespec ts;

    if (deadline != SHI_NO_DEADLINE && ns > left) {
        ns = left;
    }
    if (ns > 0) {
        ts.tv_sec  = ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        nanosleep(&ts, NULL);
    }
    *nap = *nap * 2 > FILE_NAP_MAX_NS ? FILE_NAP_MAX_NS : *nap * 2;
}

// flock(op) without blocking past the deadline.
static int
file_lock(store_file *sf, int op, int64_t deadline)
{
    int64_t nap = FILE_NAP_FIRST_NS;

    for (;;) {
        if (flock(sf->fd, op | LOCK_NB) == 0) {
            return SHOAL_OK;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno != EWOULDBLOCK) {
            return shi_error(SHOAL_ESYS,
                "cannot lock '%s': %s (the file system must support "
                "flock; use a local or NFS path, or a TCP store)",
                sf->path, strerror(errno));
        }
        if (shi_now_ns() >= deadline) {
            return shi_error(SHOAL_ETIMEDOUT,
                "another process held the lock on '%s' until the deadline",
                sf->path);
        }
        file_nap(&nap, deadline);
    }
}

static void
file_unlock(store_file *sf)
{
    flock(sf->fd, LOCK_UN);
}

// Reads up to n bytes at off; returns how many (short only at end of file).
static int
file_pread(
    store_file *sf, unsigned char *buf, size_t n, uint64_t off, size_t *got)
{
    *got = 0;
    while (*got < n) {
        ssize_t r = pread(sf->fd, buf + *got, n - *got, (off_t) (off + *got));
        if (r == 0) {
            break;
        }
        if (r < 0) {
            if (errno == EINTR) {
                continue;
            }
            return shi_error(
                SHOAL_ESYS, "cannot read '%s': %s", sf->path, strerror(errno));
        }
        *got += (size_t) r;
    }
    return SHOAL_OK;
}

// Adds the complete records in buf[0..n) to the table; *used is where the
// first incomplete one starts.
static int
file_parse(store_file *sf, const unsigned char *buf, size_t n, size_t *used)
{
    size_t off = 0;

    while (n - off >= FILE_RECORD_HEAD) {
        uint32_t klen = shi_wire_get_u32(buf + off);
        uint32_t vlen = shi_wire_get_u32(buf + off + 4);
        int      rc;

        if (klen == 0 || klen > SHI_STORE_KEY_MAX
            || vlen > SHI_STORE_VALUE_MAX) {
            *used = off;
            return shi_error(SHOAL_EPROTO,
                "'%s' is corrupt at offset %" PRIu64 " (a record claims a "
                "%" PRIu32 "-byte key and a %" PRIu32 "-byte value); remove "
                "it and restart the job",
                sf->path, sf->parsed + off, klen, vlen);
        }
        if (n - off - FILE_RECORD_HEAD < (size_t) klen + vlen) {
            break;
        }
        rc = shi_table_put(&sf->table,
            (const char *) buf + off + FILE_RECORD_HEAD, klen,
            buf + off + FILE_RECORD_HEAD + klen, vlen);
        if (rc != SHOAL_OK) {
            *used = off;
            return rc;
        }
        off += FILE_RECORD_HEAD + (size_t) klen + vlen;
    }
    *used = off;
    return SHOAL_OK;
}

// Reads the records appended since the last look (caller holds a lock).
// *size gets the file's size.
static int
file_refresh(store_file *sf, uint64_t *size)
{
    struct stat    sb;
    unsigned char *buf;
    size_t         got = 0, used = 0;
    int            rc;

    if (fstat(sf->fd, &sb) != 0) {
        return shi_error(
            SHOAL_ESYS, "cannot stat '%s': %s", sf->path, strerror(errno));
    }
    *size = (uint64_t) sb.st_size;
    if (*size < sf->parsed) {
        return shi_error(SHOAL_EPROTO,
            "'%s' shrank from %" PRIu64 " to %" PRIu64 " bytes: another "
            "job may be reusing it; give each job its own store file",
            sf->path, sf->parsed, *size);
    }
    if (*size == sf->parsed) {
        return SHOAL_OK;
    }
    buf = malloc(*size - sf->parsed);
    if (buf == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory reading '%s'", sf->path);
    }
    rc = file_pread(sf, buf, *size - sf->parsed, sf->parsed, &got);
    if (rc == SHOAL_OK) {
        rc = file_parse(sf, buf, got, &used);
    }
    sf->parsed += used;
    free(buf);
    return rc;
}

// Appends a record (caller holds the exclusive lock and has refreshed, so
// `size` is the file's size and anything past sf->parsed is a torn record).
static int
file_append(store_file *sf, uint64_t size, const char *key, const void *value,
    size_t vlen)
{
    size_t         klen = strlen(key), len = FILE_RECORD_HEAD + klen + vlen;
    unsigned char *rec;
    size_t         done = 0;
    int            rc;

    if (size > sf->parsed) {
        shi_log(SHI_LOG_WARN,
            "file store '%s': cutting off %" PRIu64 " bytes of a record "
            "left incomplete by a writer that died",
            sf->path, size - sf->parsed);
    }
    rec = malloc(len);
    if (rec == NULL) {
        return shi_error(
            SHOAL_ENOMEM, "out of memory for a %zu-byte record", len);
    }
    shi_wire_put_u32(rec, (uint32_t) klen);
    shi_wire_put_u32(rec + 4, (uint32_t) vlen);
    memcpy(rec + FILE_RECORD_HEAD, key, klen);
    if (vlen > 0) {
        memcpy(rec + FILE_RECORD_HEAD + klen, value, vlen);
    }
    if (size > sf->parsed && ftruncate(sf->fd, (off_t) sf->parsed) != 0) {
        free(rec);
        return shi_error(
            SHOAL_ESYS, "cannot truncate '%s': %s", sf->path, strerror(errno));
    }
    while (done < len) {
        ssize_t w = pwrite(
            sf->fd, rec + done, len - done, (off_t) (sf->parsed + done));
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            rc = shi_error(SHOAL_ESYS, "cannot write '%s': %s", sf->path,
                w < 0 ? strerror(errno) : "no progress");
            // Leave no torn record behind if we can help it.
            if (ftruncate(sf->fd, (off_t) sf->parsed) != 0) {
                SHI_WARN("file store '%s': cannot truncate: %s", sf->path,
                    strerror(errno));
            }
            free(rec);
            return rc;
        }
        done += (size_t) w;
    }
    free(rec);
    rc = shi_table_put(&sf->table, key, klen, value, vlen);
    if (rc == SHOAL_OK) {
        sf->parsed += len;
    }
    return rc;
}

// Appends `value` under `key`, or with add set, the sum of the key's
// current value and `delta` (into *result): one exclusive lock around
// reading the file's end and appending, so adds are atomic.
static int
file_write(store_file *sf, const char *key, const void *value, size_t len,
    int add, int64_t delta, int64_t *result, int64_t deadline)
{
    const shi_table_entry *e;
    char                   text[SHI_STORE_INT_TEXT];
    uint64_t               size;
    int                    rc = file_lock(sf, LOCK_EX, deadline);

    if (rc != SHOAL_OK) {
        return rc;
    }
    rc = file_refresh(sf, &size);
    if (rc == SHOAL_OK && add) {
        e     = shi_table_get(&sf->table, key, strlen(key));
        rc    = shi_store_add_value(key, e ? e->value : NULL, e ? e->vlen : 0,
               e != NULL, delta, result, text, &len);
        value = text;
    }
    if (rc == SHOAL_OK) {
        rc = file_append(sf, size, key, value, len);
    }
    file_unlock(sf);
    return rc;
}

static int
file_set(shi_store *st, const char *key, const void *value, size_t len,
    int64_t deadline)
{
    return file_write(
        (store_file *) st, key, value, len, 0, 0, NULL, deadline);
}

static int
file_add(shi_store *st, const char *key, int64_t delta, int64_t *result,
    int64_t deadline)
{
    return file_write(
        (store_file *) st, key, NULL, 0, 1, delta, result, deadline);
}

// Polls until every key is present; a timeout names the first missing.
static int
file_poll(
    store_file *sf, const char *const *keys, size_t nkeys, int64_t deadline)
{
    int64_t     nap = FILE_NAP_FIRST_NS;
    const char *missing;
    uint64_t    size;
    int         rc;

    for (;;) {
        rc = file_lock(sf, LOCK_SH, deadline);
        if (rc != SHOAL_OK) {
            return rc;
        }
        rc = file_refresh(sf, &size);
        file_unlock(sf);
        if (rc != SHOAL_OK) {
            return rc;
        }
        missing = NULL;
        for (size_t i = 0; i < nkeys && missing == NULL; i++) {
            if (shi_table_get(&sf->table, keys[i], strlen(keys[i])) == NULL) {
                missing = keys[i];
            }
        }
        if (missing == NULL) {
            return SHOAL_OK;
        }
        if (shi_now_ns() >= deadline) {
            return shi_error(SHOAL_ETIMEDOUT,
                "key '%s' not set before the deadline; the rank that should "
                "set it may be slow, stuck or dead (file store '%s')",
                missing, sf->path);
        }
        file_nap(&nap, deadline);
    }
}

static int
file_get(shi_store *st, const char *key, void **value, size_t *len,
    int64_t deadline)
{
    store_file            *sf = (store_file *) st;
    const shi_table_entry *e;
    int                    rc = file_poll(sf, &key, 1, deadline);

    if (rc != SHOAL_OK) {
        return rc;
    }
    e      = shi_table_get(&sf->table, key, strlen(key));
    *value = malloc(e->vlen + 1);
    if (*value == NULL) {
        return shi_error(
            SHOAL_ENOMEM, "out of memory for a %zu-byte value", e->vlen);
    }
    memcpy(*value, e->value, e->vlen + 1);
    *len = e->vlen;
    return SHOAL_OK;
}

static int
file_wait(
    shi_store *st, const char *const *keys, size_t nkeys, int64_t deadline)
{
    return file_poll((store_file *) st, keys, nkeys, deadline);
}

static void
file_close(shi_store *st)
{
    store_file *sf = (store_file *) st;

    if (sf->fd >= 0) {
        close(sf->fd);
    }
    shi_table_free(&sf->table);
    free(sf->path);
    free(sf);
}

static const shi_store_ops file_ops = {
    .set   = file_set,
    .get   = file_get,
    .add   = file_add,
    .wait  = file_wait,
    .close = file_close,
};

// Writes the magic into a new file, or checks it in an existing one
// (caller holds the exclusive lock).
static int
file_check_magic(store_file *sf)
{
    unsigned char head[FILE_MAGIC_LEN];
    size_t        got;
    int           rc;

    rc = file_pread(sf, head, sizeof(head), 0, &got);
    if (rc != SHOAL_OK) {
        return rc;
    }
    if (got == FILE_MAGIC_LEN && memcmp(head, FILE_MAGIC, got) == 0) {
        return SHOAL_OK;
    }
    if (got == FILE_MAGIC_LEN || memcmp(head, FILE_MAGIC, got) != 0) {
        return shi_error(SHOAL_EPROTO,
            "'%s' exists and is not a shoal file store; remove it or choose "
            "another path",
            sf->path);
    }
    // Empty, or a header cut short by a creator that died: write it.
    if (ftruncate(sf->fd, 0) != 0
        || pwrite(sf->fd, FILE_MAGIC, FILE_MAGIC_LEN, 0) != FILE_MAGIC_LEN) {
        return shi_error(
            SHOAL_ESYS, "cannot write '%s': %s", sf->path, strerror(errno));
    }
    return SHOAL_OK;
}

int
shi_store_file_open(shi_store **out, const char *path, int64_t deadline)
{
    store_file *sf = calloc(1, sizeof(*sf));
    int         rc;

    if (sf == NULL || (sf->path = strdup(path)) == NULL) {
        free(sf);
        return shi_error(SHOAL_ENOMEM, "out of memory for a store handle");
    }
    sf->base.ops = &file_ops;
    sf->parsed   = FILE_MAGIC_LEN;
    snprintf(sf->base.where, sizeof(sf->base.where), "file store %s", path);
    sf->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (sf->fd < 0) {
        rc = shi_error(SHOAL_ESYS,
            "cannot open file store '%s': %s; its directory must exist, be "
            "writable and be shared by every rank",
            path, strerror(errno));
        file_close(&sf->base);
        return rc;
    }
    rc = file_lock(sf, LOCK_EX, deadline);
    if (rc == SHOAL_OK) {
        rc = file_check_magic(sf);
        file_unlock(sf);
    }
    if (rc != SHOAL_OK) {
        file_close(&sf->base);
        return rc;
    }
    *out = &sf->base;
    return SHOAL_OK;
}
