// Communicator lifecycle: create, destroy, accessors, errors and aborts.
#include "core/comm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/env.h"
#include "base/log.h"
#include "core/engine.h"
#include "core/flight.h"
#include "core/ft.h"
#include "core/upcalls.h"
#include "platform/net.h"
#include "store/store.h"

#define DEFAULT_TIMEOUT_MS (600 * 1000LL)

struct shi_store_ref {
    shi_store        *store;
    shi_store_server *server; // when this process (rank 0) serves it
    atomic_int        refs;
    int               wills; // a TCP store: it keeps last wills
};

struct shi_store *
shi_comm_store(shoal_comm *comm)
{
    return comm->store != NULL ? comm->store->store : NULL;
}

int
shi_comm_store_has_wills(shoal_comm *comm)
{
    return comm->store != NULL && comm->store->wills;
}

struct shi_store_ref *
shi_store_ref_get(struct shi_store_ref *ref)
{
    if (ref != NULL) {
        atomic_fetch_add(&ref->refs, 1);
    }
    return ref;
}

void
shi_store_ref_put(struct shi_store_ref *ref)
{
    if (ref == NULL || atomic_fetch_sub(&ref->refs, 1) != 1) {
        return;
    }
    shi_store_close(ref->store);
    shi_store_server_release(ref->server); // others may still be using it
    free(ref);
}

int
shi_comm_invalid(shoal_comm *comm, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    shi_verror(SHOAL_EINVAL, fmt, ap);
    va_end(ap);
    return shi_comm_error(comm, SHOAL_EINVAL);
}

int
shi_comm_failed_error(shoal_comm *comm, const char *op)
{
    int st = atomic_load(&comm->failed) == SHOAL_EREVOKED ? SHOAL_EREVOKED
                                                          : SHOAL_EABORTED;

    pthread_mutex_lock(&comm->err_lock);
    shi_error(st, "%scommunicator '%s' was %s by an earlier error: %s", op,
        comm->name, st == SHOAL_EREVOKED ? "revoked" : "aborted",
        comm->fail_text);
    pthread_mutex_unlock(&comm->err_lock);
    return shi_comm_error(comm, st);
}

int
shi_comm_error(shoal_comm *comm, int status)
{
    if (comm != NULL) {
        pthread_mutex_lock(&comm->err_lock);
        snprintf(comm->last_error, sizeof(comm->last_error), "%s",
            shi_error_text());
        pthread_mutex_unlock(&comm->err_lock);
    }
    return status;
}

void
shi_ring(shoal_comm *comm, int rank, int force)
{
    if (comm->tp != NULL) {
        comm->tp->wake(comm, rank, force);
    }
}

void
shi_ring_peers(shoal_comm *comm)
{
    if (comm->tp != NULL) {
        comm->tp->wake_peers(comm);
    }
}

void
shi_comm_abort(shoal_comm *comm, int status, const char *fmt, ...)
{
    char    text[SHI_ERROR_TEXT_MAX];
    va_list ap;
    int     fine = 0;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    // The cause is written before the failure is published, under the
    // lock its readers take: whoever sees `failed` set finds the text.
    pthread_mutex_lock(&comm->err_lock);
    if (atomic_load(&comm->failed) != fine) {
        pthread_mutex_unlock(&comm->err_lock);
        return; // the first abort wins
    }
    snprintf(comm->fail_text, sizeof(comm->fail_text), "%s", text);
    atomic_store(&comm->failed, status);
    pthread_mutex_unlock(&comm->err_lock);
    // A fault is a warning; an abort or revoke some rank asked for (as
    // torchft does at every reconfiguration) is news.
    shi_log(status == SHOAL_EABORTED || status == SHOAL_EREVOKED
            ? SHI_LOG_INFO
            : SHI_LOG_WARN,
        "communicator '%s' aborted (%s): %s", comm->name,
        shoal_status_name(status), text);
    if (comm->tp != NULL) {
        comm->tp->abort_notify(comm, status, text);
    }
}

int
shi_comm_alloc(
    shoal_comm **out, const char *name, int rank, int size, int64_t timeout_ms)
{
    shoal_comm *comm = calloc(1, sizeof(*comm));

    *out = NULL;
    if (comm == NULL
        || (comm->peers = calloc((size_t) size, sizeof(*comm->peers)))
            == NULL) {
        free(comm);
        return shi_error(SHOAL_ENOMEM,
            "out of memory for a communicator of "
            "%d ranks",
            size);
    }
    snprintf(comm->name, sizeof(comm->name), "%s", name);
    comm->rank       = rank;
    comm->size       = size;
    comm->timeout_ms = timeout_ms;
    int st           = shi_fr_init(comm);
    if (st != SHOAL_OK) {
        free(comm->peers);
        free(comm);
        return st;
    }
    pthread_mutex_init(&comm->lock, NULL);
    pthread_mutex_init(&comm->err_lock, NULL);
    shi_engine_init(comm);
    shi_fork_mark(comm);
    shi_leave_list(comm);
    *out = comm;
    return SHOAL_OK;
}

void
shi_comm_free(shoal_comm *comm)
{
    shi_error_saved caller; // a failed creation's cause, kept over teardown

    shi_error_save(&caller);
    shi_leave_unlist(comm); // before anything is torn down
    if (comm->queue_close != NULL) {
        comm->queue_close(comm); // its service uses the windows and local
    }
    // The per-host and between-host communicators first: they may still
    // drive an operation of ours.
    shoal_comm_destroy(comm->local);
    shoal_comm_destroy(comm->leaders);
    comm->local = comm->leaders = NULL;
    if (comm->tp != NULL) {
        comm->tp->stop(comm);
    }
    shi_engine_stop(comm);
    shi_req_detach_all(comm);
    if (comm->tp != NULL) {
        shi_mem_reg_detach_all(comm);
    }
    if (comm->windows_detach != NULL) {
        comm->windows_detach(comm);
    }
    if (comm->tp != NULL) {
        comm->tp->teardown(comm);
    }
    shi_coll_teardown(comm);
    shi_store_ref_put(comm->store);
    pthread_mutex_destroy(&comm->lock);
    pthread_mutex_destroy(&comm->err_lock);
    shi_engine_destroy(comm);
    free(comm->host_first);
    free(comm->local_rank_of);
    free(comm->host_hash);
    shi_fr_free(comm);
    free(comm->peers);
    free(comm);
    shi_error_restore(&caller);
}

static int
timeout_from(const shoal_config *cfg, int64_t *out)
{
    if (cfg != NULL && cfg->timeout_ms != SHOAL_UNDEF) {
        if (cfg->timeout_ms <= 0) {
            return shi_error(SHOAL_EINVAL,
                "config.timeout_ms must be > 0, "
                "got %lld",
                (long long) cfg->timeout_ms);
        }
        *out = cfg->timeout_ms;
        return SHOAL_OK;
    }
    return shi_env_seconds("SHOAL_TIMEOUT_SECONDS", DEFAULT_TIMEOUT_MS, out);
}

// Rank 0 serves a TCP store itself unless a launcher does, or something
// already listens there. An address from the launch environment is the
// meeting point of every communicator of the job: its server is kept for
// the life of the process (store_keep.c). One given in the config is this
// communicator's own, and its server stops with it.
static void
serve_store(shoal_comm *comm, const shi_launch *env)
{
    struct shi_store_ref *ref = comm->store;
    char                  host[SHI_ADDR_MAX];
    int                   port, st;

    if (strchr(env->store, '/') != NULL || env->launcher_serves
        || env->rank != 0
        || shi_parse_host_port(env->store, host, sizeof(host), &port) != 0) {
        return;
    }
    st = env->store_from_env
        ? shi_store_server_keep(host, port, &comm->secret)
        : shi_store_server_start(&ref->server, host, port, &comm->secret);
    if (st != SHOAL_OK) {
        SHI_INFO("not serving the store at %s (%s); connecting to it",
            env->store, shi_error_text());
        ref->server = NULL;
    }
}

// Opens the store (serving it first where this rank should).
static int
open_store(shoal_comm *comm, const shi_launch *env, int64_t deadline)
{
    struct shi_store_ref *ref = calloc(1, sizeof(*ref));
    int                   st;

    if (ref == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    atomic_init(&ref->refs, 1);
    comm->store = ref;
    serve_store(comm, env);
    st = shi_store_open(&ref->store, env->store, &comm->secret, deadline);
    if (st != SHOAL_OK) {
        return shi_error_wrap(st, "rank %d of %d (from %s): store %s",
            env->rank, env->size, env->source, env->store);
    }
    ref->wills = strchr(env->store, '/') == NULL;
    return ref->wills ? shi_gone_will(ref->store, deadline) : SHOAL_OK;
}

// The key prefix of a new communicator: its name, its size and which
// creation of that name and size on this store it is. The store hands out
// the creation's number: every rank takes a ticket, and the ranks of one
// creation hold tickets n * size .. n * size + size - 1, since no rank
// finishes a creation (and takes its next ticket) before every rank has
// joined it. So the prefix follows from what every member knows, never
// from what this process did before: a restarted rank, or a thread that
// holds one rank of several, meets its peers. Ranks that create
// communicators of one name and size at the same time on one store would
// mix: such communicators need distinct names.
static int
name_creation(shoal_comm *comm, int64_t deadline)
{
    char    key[300];
    int64_t ticket = 1;

    snprintf(key, sizeof(key), "shoal/%s/%d/joins", comm->name, comm->size);
    if (comm->store != NULL) {
        int st
            = shi_store_add(shi_comm_store(comm), key, 1, &ticket, deadline);
        if (st != SHOAL_OK) {
            return shi_error_wrap(st, "creating '%s'", comm->name);
        }
    }
    snprintf(comm->prefix, sizeof(comm->prefix), "shoal/%s/%d.%lld/",
        comm->name, comm->size, (long long) ((ticket - 1) / comm->size));
    return SHOAL_OK;
}

static int
comm_create(shoal_comm **out, const shoal_config *cfg)
{
    shi_launch  env;
    shoal_comm *comm;
    int64_t     timeout_ms = 0, deadline;
    const char *secret
        = cfg && cfg->secret ? cfg->secret : getenv("SHOAL_SECRET");
    const char *name = cfg && cfg->name ? cfg->name : "world";
    int         st;

    if (cfg != NULL && cfg->size < sizeof(shoal_config)) {
        return shi_error(SHOAL_EINVAL,
            "config.size is %zu, expected %zu: "
            "initialize the config with SHOAL_CONFIG_INIT",
            cfg->size, sizeof(shoal_config));
    }
    if ((st = shi_launch_detect(&env, cfg)) != SHOAL_OK
        || (st = timeout_from(cfg, &timeout_ms)) != SHOAL_OK
        || (st = shi_comm_alloc(&comm, name, env.rank, env.size, timeout_ms))
            != SHOAL_OK) {
        return st;
    }
    shi_log_set_rank(env.rank);
    deadline = shi_deadline_in_ms(timeout_ms);
    st       = shi_secret_from_string(&comm->secret, secret);
    if (st == SHOAL_OK && env.size > 1) {
        st = open_store(comm, &env, deadline);
    }
    if (st == SHOAL_OK) {
        st = name_creation(comm, deadline);
    }
    if (st == SHOAL_OK && env.size > 1) {
        st = shi_rdv_job_will(comm, &env, deadline);
    }
    if (st == SHOAL_OK) {
        st = shi_comm_bootstrap(comm, deadline);
    }
    if (st != SHOAL_OK) {
        shi_comm_free(comm);
        return st;
    }
    SHI_INFO("communicator '%s': rank %d of %d ready (%s)", comm->name,
        comm->rank, comm->size, env.source);
    *out = comm;
    return SHOAL_OK;
}

int
shoal_comm_create(shoal_comm **out, const shoal_config *cfg)
{
    if (out == NULL) {
        return shi_error(SHOAL_EINVAL, "comm_create: out is NULL");
    }
    *out = NULL;
    return comm_create(out, cfg);
}

int
shoal_comm_destroy(shoal_comm *comm)
{
    int st;

    if (comm == NULL) {
        return SHOAL_OK;
    }
    if (shi_fork_check(comm, "comm_destroy") != SHOAL_OK) {
        return SHOAL_OK; // a forked child's copy: let go, touch nothing
    }
    if (comm->queue_close != NULL) {
        comm->queue_close(comm); // its service thread sends while it runs
    }
    // Only a pending operation's error is destroy's: a failure that lands
    // while nothing is in flight (a peer died since the last call) is not,
    // and sync would report it, depending on when it came.
    st = atomic_load(&comm->failed) || !shi_engine_pending(comm)
        ? SHOAL_OK
        : shoal_comm_sync(comm);
    // Say goodbye, so peers tell a clean exit from a crash (an abort's
    // text first, if it is not sent yet).
    if (comm->tp != NULL && comm->tp_state != NULL) {
        pthread_mutex_lock(&comm->lock);
        if (atomic_load(&comm->failed)) {
            shi_engine_flush_abort(comm);
        }
        comm->tp->goodbye(comm, shi_deadline_in_ms(1000));
        pthread_mutex_unlock(&comm->lock);
    }
    shi_comm_free(comm);
    return st;
}

int
shoal_comm_rank(const shoal_comm *comm)
{
    return comm != NULL ? comm->rank
                        : shi_error(SHOAL_EINVAL, "comm_rank: comm is NULL");
}

int
shoal_comm_size(const shoal_comm *comm)
{
    return comm != NULL ? comm->size
                        : shi_error(SHOAL_EINVAL, "comm_size: comm is NULL");
}

const char *
shoal_comm_name(const shoal_comm *comm)
{
    return comm != NULL ? comm->name : "";
}

int64_t
shoal_comm_timeout(const shoal_comm *comm)
{
    return comm != NULL
        ? comm->timeout_ms
        : shi_error(SHOAL_EINVAL, "comm_timeout: comm is NULL");
}

int
shoal_comm_set_timeout(shoal_comm *comm, int64_t timeout_ms)
{
    if (comm == NULL || timeout_ms <= 0) {
        return shi_error(SHOAL_EINVAL,
            "comm_set_timeout: need a "
            "communicator and a timeout > 0 ms");
    }
    comm->timeout_ms = timeout_ms;
    return SHOAL_OK;
}

int
shi_comm_abort_asked(shoal_comm *comm, int status, const char *op,
    const char *done, const char *reason)
{
    if (comm == NULL) {
        return shi_error(SHOAL_EINVAL, "%s: comm is NULL", op);
    }
    if (shi_fork_check(comm, op) != SHOAL_OK) {
        return SHOAL_EINVAL; // it would reach the parent's job
    }
    // Peers hear of it as of any abort: the shared segment's abort record,
    // or over TCP the engine's pass, made here if nobody is in one.
    shi_comm_abort(comm, status, "rank %d %s the communicator: %s", comm->rank,
        done, reason != NULL ? reason : "asked by the application");
    shi_engine_after_abort(comm);
    return SHOAL_OK;
}

int
shoal_comm_abort(shoal_comm *comm, const char *reason)
{
    return shi_comm_abort_asked(
        comm, SHOAL_EABORTED, "comm_abort", "aborted", reason);
}

const char *
shoal_comm_last_error(const shoal_comm *comm)
{
    return comm != NULL ? comm->last_error : "";
}
