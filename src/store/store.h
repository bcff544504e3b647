// Rendezvous key-value store: how ranks find each other.
//
// Two backends behind one handle: a TCP store ("host:port"), served by the
// launcher or by rank 0 (shi_store_server), and a file store (a path on a
// file system every rank sees), for jobs without a reachable server.
// Values are opaque bytes. Every call takes an absolute deadline (clock.h)
// and fails with SHOAL_ETIMEDOUT, naming the key, when it passes.
// All functions return a shoal status and record a message with shi_error.
// A handle is safe to use from several threads (calls are serialized: a get
// blocked on a handle holds up the other threads' calls on it, so a thread
// that must set a key another one waits for needs a handle of its own).
// After a call that failed on the connection (a passed deadline included),
// a TCP handle reconnects on its next call; no request is ever re-sent by
// itself, so a failed add may or may not have been applied.
#ifndef SHI_STORE_H
#define SHI_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "platform/auth.h"

// Largest key and value the store accepts; larger frames are refused.
#define SHI_STORE_KEY_MAX   1024
#define SHI_STORE_VALUE_MAX (16u << 20)

typedef struct shi_store        shi_store;
typedef struct shi_store_server shi_store_server;

// Opens a store. `addr` is "host:port" (TCP: connection retried with
// backoff until `deadline`, then proves `secret`) or a path containing '/'
// (file store; created with mode 0600 if absent).
// Errors: SHOAL_EINVAL (bad address), SHOAL_ECONNECT (nothing answered
// before the deadline; the message names the address), SHOAL_EAUTH
// (secret refused or required), SHOAL_ESYS.
int shi_store_open(shi_store **out, const char *addr, const shi_secret *secret,
    int64_t deadline);

// Stores `value` (len bytes, may be 0) under `key`, replacing any value.
int shi_store_set(shi_store *st, const char *key, const void *value,
    size_t len, int64_t deadline);

// Waits until `key` exists, then returns a malloc'd copy of its value in
// *value (caller frees; a NUL byte is appended, not counted in *len).
int shi_store_get(shi_store *st, const char *key, void **value, size_t *len,
    int64_t deadline);

// Atomically adds `delta` to the integer stored under `key` (absent: 0)
// and returns the new value in *result (result may be NULL). Counters are
// stored as decimal text, so get returns e.g. "42". SHOAL_EINVAL if the
// value is not decimal text or the sum overflows int64.
int shi_store_add(shi_store *st, const char *key, int64_t delta,
    int64_t *result, int64_t deadline);

// A check made between the slices of a watched wait: SHOAL_OK to go on
// waiting, or the status (with its message recorded) that ends the wait,
// e.g. because a peer the wait depends on has died.
typedef struct shi_store_watch {
    int (*check)(void *arg);
    void *arg;
} shi_store_watch;

// How often a watched wait looks at its watch.
#define SHI_STORE_WATCH_SLICE_NS 100000000 // 100 ms

// shi_store_get, consulting `watch` (NULL: none) every slice while the key
// is missing; returns the watch's status, unchanged, when it ends the wait.
int shi_store_get_watched(shi_store *st, const char *key, void **value,
    size_t *len, int64_t deadline, const shi_store_watch *watch);

// Waits until every key in keys[0..nkeys) exists.
int shi_store_wait(
    shi_store *st, const char *const *keys, size_t nkeys, int64_t deadline);

// shi_store_wait with a watch, as shi_store_get_watched.
int shi_store_wait_watched(shi_store *st, const char *const *keys,
    size_t nkeys, int64_t deadline, const shi_store_watch *watch);

// Leaves a last will on this handle's connection: if the connection closes
// (the process dies) before shi_store_unwill(key), the server sets key to
// value. A file store keeps no wills (SHOAL_OK, nothing done).
int shi_store_will(shi_store *st, const char *key, const void *value,
    size_t len, int64_t deadline);
int shi_store_unwill(shi_store *st, const char *key, int64_t deadline);

// Deletes every key starting with prefix; *count (may be NULL): how many.
// SHOAL_ENOTSUP for a file store (it only ever appends).
int shi_store_delete_prefix(
    shi_store *st, const char *prefix, int64_t *count, int64_t deadline);

// Writes this end's IP address of the store connection into buf ("10.0.0.2",
// "::1"): the address that reaches the store, where ranks on other hosts
// are likely to reach us too. SHOAL_ENOTSUP for a file store.
int shi_store_local_ip(shi_store *st, char *buf, size_t len);

// Closes the handle (NULL accepted). Keys stay in the store. The thread's
// last error is left as it was: a failed creation closes its store and
// still reports its own cause.
void shi_store_close(shi_store *st);

// Starts a TCP store server on host:port (port 0: an ephemeral port; host
// NULL: all interfaces) in a background thread. Connections that do not
// prove `secret`, or send malformed or oversized frames, are closed with a
// logged warning; other clients are not disturbed.
int shi_store_server_start(shi_store_server **out, const char *host, int port,
    const shi_secret *secret);

// The port the server listens on.
int shi_store_server_port(const shi_store_server *srv);

// Stops the server thread, closes every connection, frees the server.
// NULL accepted.
void shi_store_server_stop(shi_store_server *srv);

// The owner is done with the server, but other processes may still use it
// (a rank still reading a creation's or a split's keys, or bootstrapping a
// child there). It serves on until its last connection closes, then stops
// and frees itself. Never stop a released server. NULL accepted.
void shi_store_server_release(shi_store_server *srv);

// Connections of other processes to the servers this process runs that
// are in use: a request waits for a key there, or one came within the
// last `idle_ns`. What the process waits for at exit (store_keep.c).
int shi_store_servers_in_use(int64_t idle_ns);

// Makes sure this process serves a TCP store on host:port until it exits:
// starts a server the first time an address is asked for, and answers
// SHOAL_OK at once for an address it already serves with the same secret
// (store_keep.c says why). Errors: those of shi_store_server_start (e.g.
// someone else listens there), SHOAL_EAUTH (served with another secret).
int shi_store_server_keep(
    const char *host, int port, const shi_secret *secret);

#endif
