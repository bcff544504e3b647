// What the store's backends share with store.c: the handle's ops table,
// the backends' constructors, and counter arithmetic.
#ifndef SHI_STORE_IMPL_H
#define SHI_STORE_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

// Each backend implements these; store.c has already checked arguments and
// holds the handle's lock. They record the cause with shi_error; store.c
// prefixes the operation, key and store.
typedef struct shi_store_ops {
    int (*set)(shi_store *st, const char *key, const void *value, size_t len,
        int64_t deadline);
    int (*get)(shi_store *st, const char *key, void **value, size_t *len,
        int64_t deadline);
    int (*add)(shi_store *st, const char *key, int64_t delta, int64_t *result,
        int64_t deadline);
    int (*wait)(shi_store *st, const char *const *keys, size_t nkeys,
        int64_t deadline);
    // Optional: leave (value non-NULL) or take back (value NULL) a last
    // will, set by the server if this handle's connection closes first.
    int (*will)(shi_store *st, const char *key, const void *value, size_t len,
        int64_t deadline);
    // Optional: delete every key starting with prefix.
    int (*delete_prefix)(
        shi_store *st, const char *prefix, int64_t *count, int64_t deadline);
    void (*close)(shi_store *st);
    // Optional: this end's IP address of the connection to the store.
    int (*local_ip)(shi_store *st, char *buf, size_t len);
} shi_store_ops;

// The head of every backend's handle.
struct shi_store {
    const shi_store_ops *ops;
    pthread_mutex_t      lock;
    char                 where[320]; // "TCP store at h:p", "file store /p"
};

int shi_store_tcp_open(shi_store **out, const char *host, int port,
    const shi_secret *secret, int64_t deadline);
int shi_store_file_open(shi_store **out, const char *path, int64_t deadline);

// Counters are stored as decimal text ("42"), as torch's TCPStore does.
// Computes old + delta (old absent: has_old 0) into *result and its text
// into buf[SHI_STORE_INT_TEXT]; SHOAL_EINVAL if the old value is not an
// integer or the sum overflows.
#define SHI_STORE_INT_TEXT 24
int shi_store_add_value(const char *key, const void *old, size_t old_len,
    int has_old, int64_t delta, int64_t *result, char *buf, size_t *len);

// Time the server gives a new connection to complete the handshake
// (default SHI_STORE_AUTH_TIMEOUT_MS); for tests.
#define SHI_STORE_AUTH_TIMEOUT_MS 30000
void shi_store_server_set_auth_timeout(shi_store_server *srv, int ms);

// How long a connection may leave a frame half sent before it is closed
// (default SHI_STORE_FRAME_IDLE_MS); for tests.
#define SHI_STORE_FRAME_IDLE_MS 30000
void shi_store_server_set_frame_idle_timeout(shi_store_server *srv, int ms);

#endif
