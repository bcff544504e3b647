// Who is gone, revoking a communicator and polling its failure.
//
// A process's "gone" key is "shoal/gone/<host hash>.<pid>" (ft.h says when
// the store sets it). Every communicator of a process that opens its own
// store handle leaves the will once on that handle.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/hostid.h"
#include "core/engine.h"
#include "core/ft.h"
#include "store/store.h"

uint64_t
shi_host_hash(const char *host_id)
{
    uint64_t h = 1469598103934665603ULL; // FNV-1a

    for (const unsigned char *p = (const unsigned char *) host_id; *p; p++) {
        h = (h ^ *p) * 1099511628211ULL;
    }
    return h;
}

void
shi_gone_key(char *buf, size_t len, uint64_t host_hash, int pid)
{
    snprintf(buf, len, "shoal/gone/%016llx.%d", (unsigned long long) host_hash,
        pid);
}

int
shi_gone_will(struct shi_store *st, int64_t deadline)
{
    char id[SHI_HOSTID_MAX], key[96], text[64];

    shi_host_identity(id);
    shi_gone_key(key, sizeof(key), shi_host_hash(id), (int) getpid());
    int n = snprintf(text, sizeof(text), "pid %d", (int) getpid());
    return shi_store_will(st, key, text, (size_t) n, deadline);
}

int
shi_ft_look(shoal_comm *comm, const char *key, char **value)
{
    void  *v;
    size_t len;

    if (shi_store_get(
            shi_comm_store(comm), key, &v, &len, shi_deadline_in_ms(0))
        != SHOAL_OK) {
        return 0;
    }
    if (value != NULL) {
        *value = v;
    } else {
        free(v);
    }
    return 1;
}

int
shi_process_gone(shoal_comm *comm, int peer)
{
    char key[96];

    if (!shi_comm_store_has_wills(comm) || comm->host_hash == NULL) {
        return 0;
    }
    shi_gone_key(
        key, sizeof(key), comm->host_hash[peer], comm->peers[peer].pid);
    return shi_ft_look(comm, key, NULL);
}

int
shi_peer_gone(shoal_comm *comm, int peer)
{
    return atomic_load(&comm->peers[peer].state) == SHI_PEER_DEAD
        || shi_process_gone(comm, peer);
}

int
shoal_comm_get_failed(shoal_comm *comm, int *ranks, int max)
{
    int n = 0;

    if (comm == NULL || max < 0 || (max > 0 && ranks == NULL)) {
        return shi_error(SHOAL_EINVAL,
            "comm_get_failed: need a communicator and room for max >= 0 "
            "ranks");
    }
    for (int r = 0; r < comm->size; r++) {
        if (r == comm->rank || !shi_peer_gone(comm, r)) {
            continue;
        }
        if (n < max) {
            ranks[n] = r;
        }
        n++;
    }
    return n;
}

int
shoal_comm_revoke(shoal_comm *comm, const char *reason)
{
    // Peers hear of it as of an abort: the transport carries the status.
    return shi_comm_abort_asked(
        comm, SHOAL_EREVOKED, "comm_revoke", "revoked", reason);
}

int
shoal_comm_get_async_error(shoal_comm *comm)
{
    if (comm == NULL) {
        return shi_error(SHOAL_EINVAL, "comm_get_async_error: comm is NULL");
    }
    int st = atomic_load(&comm->failed);
    if (st == 0) {
        return SHOAL_OK;
    }
    // Every failure aborts the communicator (a revoke revokes it): said
    // first, as torch's and torchft's callers look for it.
    pthread_mutex_lock(&comm->err_lock);
    shi_error(st, "communicator '%s' was %s: %s", comm->name,
        st == SHOAL_EREVOKED ? "revoked" : "aborted", comm->fail_text);
    pthread_mutex_unlock(&comm->err_lock);
    return st;
}
