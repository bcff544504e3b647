// The store handle: picks the backend from the address, checks arguments,
// serializes calls, and names the operation, key and store in every error.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "platform/net.h"
#include "shoal.h"
#include "store/store_impl.h"

int
shi_store_open(shi_store **out, const char *addr, const shi_secret *secret,
    int64_t deadline)
{
    char host[256];
    int  port, rc;

    if (out == NULL) {
        return shi_error(SHOAL_EINVAL, "store open: out is NULL");
    }
    *out = NULL;
    if (addr == NULL || addr[0] == '\0') {
        return shi_error(SHOAL_EINVAL,
            "store address is empty: give 'host:port' for a TCP store or a "
            "path containing '/' for a file store");
    }
    if (strchr(addr, '/') != NULL) {
        rc = shi_store_file_open(out, addr, deadline);
    } else {
        rc = shi_parse_host_port(addr, host, sizeof(host), &port);
        if (rc == SHOAL_OK && port == 0) {
            rc = shi_error(
                SHOAL_EINVAL, "store address '%s' has port 0", addr);
        }
        if (rc == SHOAL_OK) {
            rc = shi_store_tcp_open(out, host, port, secret, deadline);
        }
    }
    if (rc != SHOAL_OK) {
        return shi_error_wrap(rc, "opening store '%s'", addr);
    }
    pthread_mutex_init(&(*out)->lock, NULL);
    return SHOAL_OK;
}

int
shi_store_local_ip(shi_store *st, char *buf, size_t len)
{
    int rc;

    if (st->ops->local_ip == NULL) {
        return shi_error(
            SHOAL_ENOTSUP, "%s has no network address", st->where);
    }
    pthread_mutex_lock(&st->lock);
    rc = st->ops->local_ip(st, buf, len);
    pthread_mutex_unlock(&st->lock);
    return rc;
}

void
shi_store_close(shi_store *st)
{
    shi_error_saved caller;

    if (st == NULL) {
        return;
    }
    // Taking wills back may fail (the server gone): logged, not reported.
    shi_error_save(&caller);
    pthread_mutex_destroy(&st->lock);
    st->ops->close(st);
    shi_error_restore(&caller);
}

static int
store_check_key(const char *key)
{
    size_t n;

    if (key == NULL || key[0] == '\0') {
        return shi_error(SHOAL_EINVAL, "store key is NULL or empty");
    }
    n = strnlen(key, SHI_STORE_KEY_MAX + 1);
    if (n > SHI_STORE_KEY_MAX) {
        return shi_error(SHOAL_EINVAL,
            "store key '%.40s...' is longer than %d bytes", key,
            SHI_STORE_KEY_MAX);
    }
    return SHOAL_OK;
}

// Adds "store OP 'KEY' (WHERE, after T s)" in front of the cause.
static int
store_fail(
    shi_store *st, int rc, const char *op, const char *key, int64_t start)
{
    return shi_error_wrap(rc, "store %s '%s' (%s, after %.2f s)", op, key,
        st->where, (double) (shi_now_ns() - start) / 1e9);
}

int
shi_store_set(shi_store *st, const char *key, const void *value, size_t len,
    int64_t deadline)
{
    int64_t start = shi_now_ns();
    int     rc;

    if (st == NULL) {
        return shi_error(SHOAL_EINVAL, "store set: store is NULL");
    }
    rc = store_check_key(key);
    if (rc == SHOAL_OK && value == NULL && len > 0) {
        rc = shi_error(SHOAL_EINVAL, "store set: value is NULL");
    }
    if (rc == SHOAL_OK && len > SHI_STORE_VALUE_MAX) {
        rc = shi_error(SHOAL_EINVAL,
            "store set: value of %zu bytes exceeds the limit of %u bytes", len,
            SHI_STORE_VALUE_MAX);
    }
    if (rc != SHOAL_OK) {
        return rc;
    }
    pthread_mutex_lock(&st->lock);
    rc = st->ops->set(st, key, value, len, deadline);
    pthread_mutex_unlock(&st->lock);
    return rc == SHOAL_OK ? rc : store_fail(st, rc, "set", key, start);
}

// The end of the next slice of a watched wait.
static int64_t
store_slice_end(int64_t deadline)
{
    int64_t end = shi_now_ns() + SHI_STORE_WATCH_SLICE_NS;

    return deadline != SHI_NO_DEADLINE && deadline < end ? deadline : end;
}

// After a slice ran out: SHOAL_OK to wait on, or why not (the watch's
// verdict, or the deadline's ETIMEDOUT as it is).
static int
store_watch_says(const shi_store_watch *watch, int rc, int64_t deadline)
{
    if (rc != SHOAL_ETIMEDOUT
        || (deadline != SHI_NO_DEADLINE && shi_now_ns() >= deadline)) {
        return rc;
    }
    return watch->check(watch->arg);
}

int
shi_store_get(shi_store *st, const char *key, void **value, size_t *len,
    int64_t deadline)
{
    return shi_store_get_watched(st, key, value, len, deadline, NULL);
}

int
shi_store_get_watched(shi_store *st, const char *key, void **value,
    size_t *len, int64_t deadline, const shi_store_watch *watch)
{
    int64_t start = shi_now_ns();
    int     rc, verdict;

    if (st == NULL || value == NULL || len == NULL) {
        return shi_error(SHOAL_EINVAL, "store get: NULL argument");
    }
    *value = NULL;
    *len   = 0;
    rc     = store_check_key(key);
    if (rc != SHOAL_OK) {
        return rc;
    }
    for (;;) {
        pthread_mutex_lock(&st->lock);
        rc = st->ops->get(st, key, value, len,
            watch != NULL ? store_slice_end(deadline) : deadline);
        pthread_mutex_unlock(&st->lock);
        if (rc == SHOAL_OK || watch == NULL) {
            break;
        }
        if ((verdict = store_watch_says(watch, rc, deadline)) != SHOAL_OK) {
            return verdict == rc ? store_fail(st, rc, "get", key, start)
                                 : verdict;
        }
    }
    return rc == SHOAL_OK ? rc : store_fail(st, rc, "get", key, start);
}

int
shi_store_add(shi_store *st, const char *key, int64_t delta, int64_t *result,
    int64_t deadline)
{
    int64_t start = shi_now_ns();
    int64_t ignored;
    int     rc;

    if (st == NULL) {
        return shi_error(SHOAL_EINVAL, "store add: store is NULL");
    }
    rc = store_check_key(key);
    if (rc != SHOAL_OK) {
        return rc;
    }
    pthread_mutex_lock(&st->lock);
    rc = st->ops->add(st, key, delta, result ? result : &ignored, deadline);
    pthread_mutex_unlock(&st->lock);
    return rc == SHOAL_OK ? rc : store_fail(st, rc, "add", key, start);
}

int
shi_store_wait(
    shi_store *st, const char *const *keys, size_t nkeys, int64_t deadline)
{
    return shi_store_wait_watched(st, keys, nkeys, deadline, NULL);
}

int
shi_store_wait_watched(shi_store *st, const char *const *keys, size_t nkeys,
    int64_t deadline, const shi_store_watch *watch)
{
    int64_t start = shi_now_ns();
    char    what[64];
    int     rc = SHOAL_OK, verdict = SHOAL_OK;

    if (st == NULL || (keys == NULL && nkeys > 0)) {
        return shi_error(SHOAL_EINVAL, "store wait: NULL argument");
    }
    for (size_t i = 0; i < nkeys && rc == SHOAL_OK; i++) {
        rc = store_check_key(keys[i]);
    }
    if (rc != SHOAL_OK || nkeys == 0) {
        return rc;
    }
    for (;;) {
        pthread_mutex_lock(&st->lock);
        rc = st->ops->wait(st, keys, nkeys,
            watch != NULL ? store_slice_end(deadline) : deadline);
        pthread_mutex_unlock(&st->lock);
        if (rc == SHOAL_OK || watch == NULL
            || (verdict = store_watch_says(watch, rc, deadline)) != SHOAL_OK) {
            break;
        }
    }
    if (rc == SHOAL_OK) {
        return rc;
    }
    if (verdict != rc && verdict != SHOAL_OK) {
        return verdict;
    }
    snprintf(what, sizeof(what), "wait (%zu key%s)", nkeys,
        nkeys == 1 ? "" : "s, first");
    return store_fail(st, rc, what, keys[0], start);
}

int
shi_store_will(shi_store *st, const char *key, const void *value, size_t len,
    int64_t deadline)
{
    int rc = st != NULL ? store_check_key(key)
                        : shi_error(SHOAL_EINVAL, "store will: NULL store");

    // A file store has no connection that could outlive its owner: there
    // is nothing to leave, and nobody learns of a death from it.
    if (rc != SHOAL_OK || st->ops->will == NULL) {
        return rc;
    }
    pthread_mutex_lock(&st->lock);
    rc = st->ops->will(st, key, value != NULL ? value : "", len, deadline);
    pthread_mutex_unlock(&st->lock);
    return rc == SHOAL_OK ? rc : store_fail(st, rc, "will", key, shi_now_ns());
}

int
shi_store_unwill(shi_store *st, const char *key, int64_t deadline)
{
    int rc = st != NULL ? store_check_key(key)
                        : shi_error(SHOAL_EINVAL, "store unwill: NULL store");

    if (rc != SHOAL_OK || st->ops->will == NULL) {
        return rc;
    }
    pthread_mutex_lock(&st->lock);
    rc = st->ops->will(st, key, NULL, 0, deadline);
    pthread_mutex_unlock(&st->lock);
    return rc == SHOAL_OK ? rc
                          : store_fail(st, rc, "unwill", key, shi_now_ns());
}

int
shi_store_delete_prefix(
    shi_store *st, const char *prefix, int64_t *count, int64_t deadline)
{
    int64_t ignored;
    int     rc = st != NULL ? store_check_key(prefix)
                            : shi_error(SHOAL_EINVAL, "store delete: NULL store");

    if (rc != SHOAL_OK) {
        return rc;
    }
    if (st->ops->delete_prefix == NULL) {
        return shi_error(SHOAL_ENOTSUP, "%s cannot delete keys", st->where);
    }
    pthread_mutex_lock(&st->lock);
    rc = st->ops->delete_prefix(
        st, prefix, count != NULL ? count : &ignored, deadline);
    pthread_mutex_unlock(&st->lock);
    return rc == SHOAL_OK ? rc
                          : store_fail(st, rc, "delete", prefix, shi_now_ns());
}

int
shi_store_add_value(const char *key, const void *old, size_t old_len,
    int has_old, int64_t delta, int64_t *result, char *buf, size_t *len)
{
    int64_t v = 0;
    char    text[SHI_STORE_INT_TEXT];
    char   *end;

    if (has_old) {
        if (old_len == 0 || old_len >= sizeof(text)) {
            return shi_error(SHOAL_EINVAL,
                "the value of '%s' is not an integer (%zu bytes); add works "
                "only on keys set by add or holding decimal text",
                key, old_len);
        }
        memcpy(text, old, old_len);
        text[old_len] = '\0';
        errno         = 0;
        v             = strtoll(text, &end, 10);
        if (*end != '\0' || errno != 0 || end == text) {
            return shi_error(SHOAL_EINVAL,
                "the value of '%s' ('%s') is not a decimal integer; add "
                "works only on keys set by add or holding decimal text",
                key, text);
        }
    }
    if ((delta > 0 && v > INT64_MAX - delta)
        || (delta < 0 && v < INT64_MIN - delta)) {
        return shi_error(SHOAL_EINVAL,
            "adding %" PRId64 " to '%s' (%" PRId64 ") overflows int64", delta,
            key, v);
    }
    *result = v + delta;
    *len    = (size_t) snprintf(buf, SHI_STORE_INT_TEXT, "%" PRId64, *result);
    return SHOAL_OK;
}
