// Rendezvous through the store that survive a peer's death.
//
// Creating a communicator (and splitting one) means waiting in the store
// for keys other ranks set. A rank that dies meanwhile never sets them, and
// waiting for the deadline (600 s by default) hangs the job for nothing.
// So every such wait is watched (store.h): every 100 ms it asks
//   - whether the parent communicator (of a split) has failed: its watcher
//     or engine saw a peer die, or it was aborted;
//   - whether the creation's failure key <prefix>boot/fail is set. A rank
//     sets it when its own creation fails (a bad setting, no memory), and
//     the store server sets it from the rank's last will when the rank's
//     connection closes before its creation ended: the rank died.
// Either ends the wait at once, naming the rank and the cause.
//
// A creation's keys live under <prefix>boot/; once every rank is done with
// them (a counter reaches the size) the last rank deletes them, so a job
// that creates and splits communicators all day keeps the store small.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/env.h"
#include "base/log.h"
#include "core/comm.h"
#include "core/engine.h"
#include "store/store.h"
#include "transport/upcalls.h"

// The others' cause of failure, if one comes, explains ours: a rank that
// lost rank 0 mid-creation waits this long for rank 0's reason.
#define RDV_CAUSE_WAIT_MS 1000
// Time to report a failure and take the will back.
#define RDV_CLEANUP_MS 1000

void
shi_rdv_key(const shoal_comm *comm, const char *what, char *buf, size_t len)
{
    snprintf(buf, len, "%sboot/%s", comm->prefix, what);
}

// Parses "<status>:<text>" from a failure key into the thread's error.
static int
rdv_adopt_failure(const char *value)
{
    char *end;
    long  st = strtol(value, &end, 10);

    if (end == value || *end != ':' || st >= 0 || st < -1000) {
        return shi_error(SHOAL_EPROTO,
            "a rank reported a failure in an unreadable form: '%.200s'",
            value);
    }
    return shi_error((int) st, "%s", end + 1);
}

// The failure recorded under key, or SHOAL_OK. wait_ms 0: only a look.
static int
rdv_failure_at(shoal_comm *comm, const char *key, int64_t wait_ms)
{
    void  *value;
    size_t len;
    int    st = shi_store_get(
           shi_comm_store(comm), key, &value, &len, shi_deadline_in_ms(wait_ms));
    if (st != SHOAL_OK) {
        return SHOAL_OK; // not set (or the store is gone: said elsewhere)
    }
    st = rdv_adopt_failure(value);
    free(value);
    return st;
}

// A failure recorded by another rank of this creation, or of the job.
static int
rdv_failure_of_others(shoal_comm *comm, int64_t wait_ms)
{
    char key[512];
    int  st;

    if (comm->store == NULL || comm->size == 1) {
        return SHOAL_OK;
    }
    shi_rdv_key(comm, "fail", key, sizeof(key));
    st = rdv_failure_at(comm, key, wait_ms);
    if (st == SHOAL_OK && comm->rdv_job_key[0] != '\0') {
        st = rdv_failure_at(comm, comm->rdv_job_key, 0);
    }
    return st;
}

int
shi_rdv_job_will(
    shoal_comm *comm, const struct shi_launch *env, int64_t deadline)
{
    char text[300], host[128] = "";

    if (!env->store_from_env || strcmp(env->source, "shoal_config") == 0) {
        return SHOAL_OK; // ranks of the caller's choosing, not the job's
    }
    gethostname(host, sizeof(host) - 1);
    snprintf(comm->rdv_job_key, sizeof(comm->rdv_job_key), "shoal/job%d/gone",
        comm->size);
    int n = snprintf(text, sizeof(text),
        "%d:rank %d of the job (pid %d on %s) is gone: it died or exited "
        "without destroying its communicators (its connection to the "
        "store closed)",
        SHOAL_EPEER, comm->rank, (int) getpid(), host);
    return shi_store_will(
        shi_comm_store(comm), comm->rdv_job_key, text, (size_t) n, deadline);
}

// SHOAL_EABORTED (SHOAL_EREVOKED) with the cause if comm has failed (a
// created one is asked to look at its peers first).
static int
rdv_failed(shoal_comm *comm)
{
    if (shi_engine_running(comm)) {
        shi_engine_check_peers(comm);
    }
    return atomic_load(&comm->failed) == 0 ? SHOAL_OK
                                           : shi_comm_failed_error(comm, "");
}

int
shi_rdv_usable(shoal_comm *comm, const char *op)
{
    int st = rdv_failed(comm);

    return st == SHOAL_OK ? st : shi_error_wrap(st, "%s", op);
}

int64_t
shi_rdv_until(int64_t deadline)
{
    int64_t end = shi_now_ns() + SHI_STORE_WATCH_SLICE_NS;

    return deadline < end ? deadline : end;
}

int
shi_rdv_sliced(shoal_comm *comm, int st, int64_t until, int64_t deadline)
{
    if (st != SHOAL_ETIMEDOUT && st != SHOAL_ECONNECT) {
        return st;
    }
    if (until >= deadline || shi_now_ns() < until) {
        return st; // the real deadline, or a failure of its own
    }
    int verdict = shi_rdv_check(comm);
    return verdict == SHOAL_OK ? SHOAL_INPROGRESS : verdict;
}

static int
rdv_check(void *arg)
{
    shoal_comm *comm = arg;
    int         st;

    if ((st = rdv_failed(comm)) != SHOAL_OK
        || (comm->rdv_parent != NULL
            && (st = rdv_failed(comm->rdv_parent)) != SHOAL_OK)) {
        return st;
    }
    if (comm->rdv_extra != NULL
        && (st = comm->rdv_extra(comm->rdv_extra_arg)) != SHOAL_OK) {
        return st;
    }
    if (comm->rdv_will && (st = rdv_failure_of_others(comm, 0)) != SHOAL_OK) {
        comm->rdv_adopted = 1; // their news: nothing to add to it
        return st;
    }
    return SHOAL_OK;
}

int
shi_rdv_get(shoal_comm *comm, const char *key, char **value, size_t *len,
    int64_t deadline)
{
    shi_store_watch watch = { .check = rdv_check, .arg = comm };

    return shi_store_get_watched(
        shi_comm_store(comm), key, (void **) value, len, deadline, &watch);
}

// A wait for what `peer` of a created communicator sets.
struct rdv_peer_wait {
    shoal_comm *comm;
    int         peer;
    const char *key;
};

// rdv_check, and: the peer destroyed its communicator without setting
// the key. (It may have set it just before its goodbye: look once more.)
static int
rdv_peer_check(void *arg)
{
    struct rdv_peer_wait *w  = arg;
    int                   st = rdv_check(w->comm);
    void                 *value;
    size_t                len;

    if (st != SHOAL_OK
        || atomic_load(&w->comm->peers[w->peer].state) != SHI_PEER_LEFT) {
        return st;
    }
    if (shi_store_get(shi_comm_store(w->comm), w->key, &value, &len,
            shi_deadline_in_ms(0))
        == SHOAL_OK) {
        free(value);
        return SHOAL_OK; // there after all: the next slice gets it
    }
    return shi_error(SHOAL_EPEER,
        "rank %d destroyed its communicator '%s' without taking part", w->peer,
        w->comm->name);
}

int
shi_rdv_get_from(shoal_comm *comm, int peer, const char *key, char **value,
    size_t *len, int64_t deadline)
{
    struct rdv_peer_wait w     = { comm, peer, key };
    shi_store_watch      watch = { .check = rdv_peer_check, .arg = &w };

    return shi_store_get_watched(
        shi_comm_store(comm), key, (void **) value, len, deadline, &watch);
}

int
shi_rdv_begin(shoal_comm *comm, int64_t deadline)
{
    char key[512], text[600], host[128] = "";
    int  n, st;

    if (comm->size == 1 || comm->store == NULL) {
        return SHOAL_OK;
    }
    gethostname(host, sizeof(host) - 1);
    shi_rdv_key(comm, "fail", key, sizeof(key));
    n  = snprintf(text, sizeof(text),
         "%d:rank %d (pid %d on %s) died while communicator '%s' was being "
          "created: its connection to the store closed before it finished",
         SHOAL_EPEER, comm->rank, (int) getpid(), host, comm->name);
    st = shi_store_will(shi_comm_store(comm), key, text, (size_t) n, deadline);
    comm->rdv_will = st == SHOAL_OK;
    return st;
}

// Tells the other ranks why this one failed (they stop waiting for it),
// unless their own failure explains ours: then ours becomes theirs. A
// lost peer's cause is waited for (`patient`) unless the creation's own
// watch named it (a shrink's: a member died).
static int
rdv_report(shoal_comm *comm, int st, int patient, int64_t deadline)
{
    char key[512], *text, saved[SHI_ERROR_TEXT_MAX];

    snprintf(saved, sizeof(saved), "%s", shi_error_text());
    if (comm->rdv_adopted) {
        return st;
    }
    int lost = st == SHOAL_EPEER || st == SHOAL_EPROTO || st == SHOAL_ECONNECT;
    int theirs
        = rdv_failure_of_others(comm, lost && patient ? RDV_CAUSE_WAIT_MS : 0);

    if (theirs != SHOAL_OK) {
        return theirs;
    }
    size_t len = strlen(saved) + 64;
    if ((text = malloc(len)) == NULL) {
        return shi_error(st, "%s", saved);
    }
    int n = snprintf(text, len, "%d:rank %d could not create '%s': %s", st,
        comm->rank, comm->name, saved);
    shi_rdv_key(comm, "fail", key, sizeof(key));
    if (shi_store_set(shi_comm_store(comm), key, text, (size_t) n, deadline)
        != SHOAL_OK) {
        SHI_INFO("could not tell the other ranks why: %s", shi_error_text());
    }
    free(text);
    return shi_error(st, "%s", saved);
}

// Every rank counts itself done; the last one deletes the creation's keys.
static void
rdv_clean(shoal_comm *comm, int64_t deadline)
{
    char    key[512];
    int64_t done = 0;

    shi_rdv_key(comm, "done", key, sizeof(key));
    if (shi_store_add(shi_comm_store(comm), key, 1, &done, deadline)
            != SHOAL_OK
        || done < comm->size) {
        return;
    }
    shi_rdv_key(comm, "", key, sizeof(key));
    int st
        = shi_store_delete_prefix(shi_comm_store(comm), key, NULL, deadline);
    if (st != SHOAL_OK && st != SHOAL_ENOTSUP) {
        SHI_INFO("keys of '%s' left in the store: %s", comm->name,
            shi_error_text());
    }
}

int
shi_rdv_end(shoal_comm *comm, int st, int64_t deadline)
{
    char key[512], text[SHI_ERROR_TEXT_MAX];

    int patient      = comm->rdv_extra == NULL;
    comm->rdv_parent = NULL;
    comm->rdv_extra  = NULL;
    if (comm->size == 1 || comm->store == NULL) {
        return st;
    }
    // A failed creation may have used up its deadline: the report and
    // the will's withdrawal get a moment of their own.
    if (st != SHOAL_OK) {
        deadline = shi_deadline_in_ms(RDV_CLEANUP_MS);
        st       = rdv_report(comm, st, patient, deadline);
    } else {
        rdv_clean(comm, deadline);
    }
    snprintf(text, sizeof(text), "%s", shi_error_text());
    if (comm->rdv_will) {
        // Its own moment: the report may have waited out the one above.
        shi_rdv_key(comm, "fail", key, sizeof(key));
        if (shi_store_unwill(
                shi_comm_store(comm), key, shi_deadline_in_ms(RDV_CLEANUP_MS))
            != SHOAL_OK) {
            SHI_INFO("%s", shi_error_text());
        }
        comm->rdv_will = 0;
    }
    return st == SHOAL_OK ? st : shi_error(st, "%s", text);
}

int
shi_rdv_check(shoal_comm *comm)
{
    return rdv_check(comm);
}
