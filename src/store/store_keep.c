// Store servers that outlive their communicator.
//
// Under torchrun, mpirun or srun every communicator of a job meets at the
// same address (MASTER_ADDR:MASTER_PORT + 1, say), which rank 0 serves. If
// the server belonged to one communicator, it would stop when that
// communicator is finalized while other ranks may already be looking for
// the next one there: they would reach a dying server (their keys lost
// with it) or find nobody. So a server for an address from the launch
// environment is started once per process and kept until the process
// exits; communicators only connect to it.
//
// A communicator's own server (an address in its config) is released when
// the communicator is destroyed (store_server.c): it serves on until the
// other ranks' connections close, then stops by itself.
//
// A process that exits while it serves a store other ranks still use would
// pull it from under them: a rank that finished its part of a split and
// returned could break a peer still splitting. So at exit it waits while
// another process is connected to a server it runs (kept, released, or of
// a communicator nobody destroyed) and uses it: a request of theirs waits
// for a key, or one came within the last second. Clients that only hold
// their connections (or cannot close them, a host cut off) do not keep it.
// The wait ends within SHOAL_STORE_LINGER_SECONDS (10 s by default) and
// says so when it is longer than a second.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/env.h"
#include "base/error.h"
#include "base/log.h"
#include "shoal.h"
#include "store/store.h"

#define LINGER_DEFAULT_MS 10000
#define LINGER_POLL_US    20000
// A store nobody asked anything for this long, with no request waiting,
// is done with: its clients only hold their connections (or cannot close
// them: a host cut off).
#define LINGER_IDLE_NS  1000000000LL
#define LINGER_QUIET_MS 1000 // waits shorter than this are not announced

struct kept_server {
    struct kept_server *next;
    char               *host;
    int                 port;
    pid_t             pid; // a forked child inherits the entry, not the thread
    shi_secret        secret;
    shi_store_server *server;
};

static pthread_mutex_t     keep_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept_server *kept;

static struct kept_server *
keep_find(const char *host, int port)
{
    for (struct kept_server *k = kept; k != NULL; k = k->next) {
        if (k->pid == getpid() && k->port == port
            && strcmp(k->host, host) == 0) {
            return k;
        }
    }
    return NULL;
}

static int
keep_start(const char *host, int port, const shi_secret *secret)
{
    struct kept_server *k = calloc(1, sizeof(*k));
    int                 rc;

    if (k == NULL || (k->host = strdup(host)) == NULL) {
        free(k);
        return shi_error(SHOAL_ENOMEM, "out of memory for a store server");
    }
    rc = shi_store_server_start(&k->server, host, port, secret);
    if (rc != SHOAL_OK) {
        free(k->host);
        free(k);
        return rc;
    }
    k->port   = port;
    k->pid    = getpid();
    k->secret = *secret;
    k->next   = kept;
    kept      = k;
    return SHOAL_OK;
}

int
shi_store_server_keep(const char *host, int port, const shi_secret *secret)
{
    struct kept_server *k;
    int                 rc = SHOAL_OK;

    pthread_mutex_lock(&keep_lock);
    k = keep_find(host, port);
    if (k == NULL) {
        rc = keep_start(host, port, secret);
    } else if (memcmp(&k->secret, secret, sizeof(*secret)) != 0) {
        rc = shi_error(SHOAL_EAUTH,
            "this process already serves the store at %s:%d with another "
            "job secret: give every communicator of the job the same "
            "SHOAL_SECRET",
            host, port);
    }
    pthread_mutex_unlock(&keep_lock);
    return rc;
}

// Waits, within the bound, until no other process uses our servers.
static void
linger(void)
{
    int64_t bound_ms, waited_ms = 0;
    int     told = 0, n;

    if (shi_env_seconds(
            "SHOAL_STORE_LINGER_SECONDS", LINGER_DEFAULT_MS, &bound_ms)
        != SHOAL_OK) {
        SHI_WARN("%s; waiting at most %d s", shi_error_text(),
            LINGER_DEFAULT_MS / 1000);
        bound_ms = LINGER_DEFAULT_MS;
    }
    int64_t start = shi_now_ns();
    while ((n = shi_store_servers_in_use(LINGER_IDLE_NS)) > 0
        && waited_ms < bound_ms) {
        if (!told && waited_ms >= LINGER_QUIET_MS) {
            SHI_WARN("this process serves the rendezvous store of ranks that "
                     "still use it (%d connections); it waits "
                     "up to %.1f s for them before exiting "
                     "(SHOAL_STORE_LINGER_SECONDS)",
                n, (double) bound_ms / 1000.0);
            told = 1;
        }
        usleep(LINGER_POLL_US);
        waited_ms = (shi_now_ns() - start) / 1000000;
    }
    if (n > 0) {
        SHI_WARN("exiting after %.1f s although %d connections to this "
                 "process's store remain: those ranks lose the store",
            (double) waited_ms / 1000.0, n);
    } else if (told) {
        SHI_WARN("the other ranks are done with the store after %.1f s; "
                 "exiting",
            (double) waited_ms / 1000.0);
    }
}

// At exit, this process's kept servers stop once the other ranks are done
// with them (a child's inherited entries are only forgotten: their threads
// are its parent's).
__attribute__((destructor)) static void
keep_stop_all(void)
{
    struct kept_server *k, *next;

    linger();
    pthread_mutex_lock(&keep_lock);
    for (k = kept, kept = NULL; k != NULL; k = next) {
        next = k->next;
        if (k->pid == getpid()) {
            shi_store_server_stop(k->server);
        }
        free(k->host);
        free(k);
    }
    pthread_mutex_unlock(&keep_lock);
}
