// Store servers kept for the life of the process.
//
// Under torchrun, mpirun or srun every communicator of a job meets at the
// same address (MASTER_ADDR:MASTER_PORT + 1, say), which rank 0 serves. If
// the server belonged to one communicator, it would stop when that
// communicator is finalized while other ranks may already be looking for
// the next one there: they would reach a dying server (their keys lost
// with it) or find nobody. So a server for an address from the launch
// environment is started once per process and kept until the process
// exits; communicators only connect to it.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "shoal.h"
#include "store/store.h"

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

// At exit, this process's servers stop (a child's inherited entries are
// only forgotten: their threads are its parent's).
__attribute__((destructor)) static void
keep_stop_all(void)
{
    struct kept_server *k, *next;

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
