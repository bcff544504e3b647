// Communicator bootstrap: find the peers through the store, pick the
// transport and let it connect them (transport.h).
//
// Steps: (1) every rank listens on a fresh abstract unix socket and
// publishes "<host identity>\n<pid>\n<socket name>\n<transport>"; (2) it
// reads every peer's entry; (3) it reads rank 0's algorithm table (every
// read of the store comes before the mesh, see connect_peers); (4) the
// shared-memory transport connects the unix sockets and shares a segment
// when every rank is on this host and none asked for TCP
// (SHOAL_TRANSPORT=tcp); otherwise the TCP transport joins its socket
// mesh. Then the collectives' setup, the transport's own threads and the
// engine start.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/hostid.h"
#include "core/ft.h"
#include "base/log.h"
#include "core/comm.h"
#include "core/engine.h"
#include "core/upcalls.h"
#include "platform/net.h"
#include "platform/unix_sock.h"
#include "store/store.h"

#define ENTRY_MAX (SHI_HOSTID_MAX + SHI_UNIX_NAME_MAX + 64)

struct peer_entry {
    char host_id[SHI_HOSTID_MAX];
    char sock[SHI_UNIX_NAME_MAX];
    int  pid;
    int  wants_tcp;
    int  wants_ucx;
    int  has_rdma; // auto, and UCX would find an RDMA device
};

// SHOAL_TRANSPORT: "tcp" forces TCP even on one host; "ucx" forces UCX
// (where built); "shm" refuses to run across hosts; unset or "auto"
// chooses by host. Published as it is, but auto as "auto-rdma" where this
// rank could reach the others through UCX over an RDMA device.
static int
transport_wanted(const char **out)
{
    const char *t = getenv("SHOAL_TRANSPORT");

    *out = "auto";
    if (t == NULL || t[0] == '\0' || strcmp(t, "auto") == 0) {
#if SHOAL_HAVE_UCX
        *out = shi_ucx_transport.wanted_by_auto() ? "auto-rdma" : "auto";
#endif
        return SHOAL_OK;
    }
    if (strcmp(t, "tcp") != 0 && strcmp(t, "shm") != 0
        && strcmp(t, "ucx") != 0) {
        return shi_error(SHOAL_EENV,
            "SHOAL_TRANSPORT=\"%s\": use tcp, ucx, shm or auto", t);
    }
#if !SHOAL_HAVE_UCX
    if (strcmp(t, "ucx") == 0) {
        return shi_error(SHOAL_ENOTSUP,
            "SHOAL_TRANSPORT=ucx, but this shoal was built without UCX "
            "(install libucx-dev and rebuild; or use tcp)");
    }
#endif
    *out = t;
    return SHOAL_OK;
}

static int
publish_self(shoal_comm *comm, const char *sock, int64_t deadline)
{
    char        key[512], value[ENTRY_MAX], host_id[SHI_HOSTID_MAX];
    const char *transport;
    int         st;

    if ((st = transport_wanted(&transport)) != SHOAL_OK) {
        return st;
    }
    shi_host_identity(host_id);
    snprintf(key, sizeof(key), "%sboot/peer/%d", comm->prefix, comm->rank);
    int n = snprintf(value, sizeof(value), "%s\n%d\n%s\n%s", host_id,
        (int) getpid(), sock, transport);
    return shi_store_set(
        shi_comm_store(comm), key, value, (size_t) n, deadline);
}

static int
parse_entry(const char *text, struct peer_entry *e)
{
    const char *nl1 = strchr(text, '\n');
    const char *nl2 = nl1 ? strchr(nl1 + 1, '\n') : NULL;
    const char *nl3 = nl2 ? strchr(nl2 + 1, '\n') : NULL;

    if (nl3 == NULL || (size_t) (nl1 - text) >= sizeof(e->host_id)
        || (size_t) (nl3 - nl2 - 1) >= sizeof(e->sock)) {
        return shi_error(SHOAL_EPROTO, "malformed peer entry in the store");
    }
    memcpy(e->host_id, text, (size_t) (nl1 - text));
    e->host_id[nl1 - text] = '\0';
    e->pid                 = atoi(nl1 + 1);
    memcpy(e->sock, nl2 + 1, (size_t) (nl3 - nl2 - 1));
    e->sock[nl3 - nl2 - 1] = '\0';
    e->wants_tcp           = strcmp(nl3 + 1, "tcp") == 0;
    e->wants_ucx           = strcmp(nl3 + 1, "ucx") == 0;
    e->has_rdma            = strcmp(nl3 + 1, "auto-rdma") == 0;
    return SHOAL_OK;
}

static int
read_peer(shoal_comm *comm, int r, struct peer_entry *e, int64_t deadline)
{
    char   key[512];
    char  *value;
    size_t len;
    int    st;

    snprintf(key, sizeof(key), "%sboot/peer/%d", comm->prefix, r);
    st = shi_rdv_get(comm, key, &value, &len, deadline);
    if (st != SHOAL_OK) {
        return shi_error_wrap(
            st, "waiting for rank %d to join '%s'", r, comm->name);
    }
    st = parse_entry(value, e);
    free(value);
    return st;
}

// Reads every peer's entry. *one_host: every rank is on this host;
// *use_tcp: the ranks talk over TCP (other hosts, or a rank asked for it).
static int
gather_peers(shoal_comm *comm, struct peer_entry *entries, int *one_host,
    int *use_tcp, int64_t deadline)
{
    char        me[SHI_HOSTID_MAX], h1[64], h2[64];
    const char *transport;
    int         st, other = -1;

    shi_host_identity(me);
    *use_tcp = 0;
    for (int r = 0; r < comm->size; r++) {
        if ((st = read_peer(comm, r, &entries[r], deadline)) != SHOAL_OK) {
            return st;
        }
        comm->peers[r].pid = entries[r].pid;
        shi_host_name_of(entries[r].host_id, comm->peers[r].host,
            sizeof(comm->peers[r].host));
        *use_tcp |= entries[r].wants_tcp || entries[r].wants_ucx;
        if (other < 0 && strcmp(entries[r].host_id, me) != 0) {
            other = r;
        }
    }
    *one_host = other < 0;
    // Host-aware collectives when hosts differ and one runs several ranks
    // (SHOAL_TRANSPORT=tcp on any rank keeps TCP between every pair).
    int forced = *use_tcp, local_max = 1;
    comm->host_index    = -1;
    size_t n            = comm->size > 0 ? (size_t) comm->size : 1;
    comm->host_first    = calloc(n, sizeof(int));
    comm->local_rank_of = calloc(n, sizeof(int));
    comm->host_hash     = calloc(n, sizeof(uint64_t));
    if (comm->host_first == NULL || comm->local_rank_of == NULL
        || comm->host_hash == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    for (int r = 0; r < comm->size; r++) {
        comm->host_hash[r] = shi_host_hash(entries[r].host_id);
    }
    for (int r = 0; r < comm->size; r++) {
        int first = r, same = 0;
        for (int q = 0; q < r && first == r; q++) {
            if (strcmp(entries[q].host_id, entries[r].host_id) == 0) {
                first = q;
            }
        }
        for (int q = 0; q < r; q++) {
            same += strcmp(entries[q].host_id, entries[r].host_id) == 0;
        }
        local_max              = same + 1 > local_max ? same + 1 : local_max;
        comm->host_first[r]    = first;
        comm->local_rank_of[r] = same;
        if (r == comm->rank) {
            comm->local_rank = same;
            comm->host_index = first; // the host's first rank names it
        }
    }
    comm->hier_wanted = other >= 0 && !forced && local_max > 1;
    *use_tcp |= other >= 0;
    if (other >= 0 && transport_wanted(&transport) == SHOAL_OK
        && strcmp(transport, "shm") == 0) {
        shi_host_name_of(me, h1, sizeof(h1));
        shi_host_name_of(entries[other].host_id, h2, sizeof(h2));
        return shi_error(SHOAL_ENOTSUP,
            "SHOAL_TRANSPORT=shm, but rank %d runs on host %s and rank %d "
            "on host %s (or another container or network namespace): "
            "ranks on different hosts need TCP (unset SHOAL_TRANSPORT)",
            comm->rank, h1, other, h2);
    }
    return SHOAL_OK;
}

// The message transport, where shared memory is not it: UCX where a rank
// asked for it, or (auto) where every rank found an RDMA device for it,
// then *preferred (TCP takes over if UCX cannot start); TCP otherwise.
static int
pick_messages(shoal_comm *comm, const struct peer_entry *e,
    const struct shi_transport_ops **tp, int *preferred)
{
    int ucx = -1, tcp = -1, rdma = 1;

    for (int r = comm->size - 1; r >= 0; r--) {
        ucx = e[r].wants_ucx ? r : ucx;
        tcp = e[r].wants_tcp ? r : tcp;
        rdma &= e[r].has_rdma || e[r].wants_ucx;
    }
    if (ucx >= 0 && tcp >= 0) {
        return shi_error(SHOAL_EENV,
            "rank %d asked for SHOAL_TRANSPORT=ucx and rank %d for tcp: set "
            "the same on every rank",
            ucx, tcp);
    }
    *tp        = &shi_tcp_transport;
    *preferred = 0;
#if SHOAL_HAVE_UCX
    if (ucx >= 0 || (tcp < 0 && rdma)) {
        *tp        = &shi_ucx_transport;
        *preferred = ucx < 0;
    }
#else
    (void) rdma;
#endif
    return SHOAL_OK;
}

// Lets the chosen transport connect the peers, first asking the
// collective layer for its area where the transport maps memory.
static int
setup_transport(shoal_comm *comm, struct shi_tp_boot *boot, int64_t deadline)
{
    int st;

    if (comm->tp->klass == SHI_TP_MAPPED
        && (st = shi_coll_area_plan(comm, &boot->area)) != SHOAL_OK) {
        return st;
    }
    return comm->tp->setup(comm, boot, deadline);
}

// Sets the transport up; where UCX was only preferred and cannot start
// (every rank learns so alike, transport/ucx/ucx_setup.c), TCP instead, with a
// warning.
static int
setup_with_fallback(shoal_comm *comm, struct shi_tp_boot *boot, int preferred,
    int64_t deadline)
{
    static int warned;
    int        st = setup_transport(comm, boot, deadline);

    if (st == SHOAL_ENOTSUP && preferred) {
        shi_log_warn_once(&warned, "%s; using TCP instead", shi_error_text());
        comm->tp->teardown(comm);
        comm->tp = &shi_tcp_transport;
        st       = setup_transport(comm, boot, deadline);
    }
    return st;
}

// Finds the peers through the store, picks the transport and lets it
// connect them.
static int
connect_peers(shoal_comm *comm, int64_t deadline)
{
    struct peer_entry       *entries = NULL;
    struct shi_tp_peer_info *infos   = NULL;
    struct shi_tp_boot       boot    = { .one_host = 1, .unix_listen_fd = -1 };
    char                     sock[SHI_UNIX_NAME_MAX];
    int                      st, use_tcp = 0, preferred = 0;

    comm->tp = &shi_shm_transport;
    if (comm->size == 1) {
        return setup_transport(comm, &boot, deadline);
    }
    entries = calloc((size_t) comm->size, sizeof(*entries));
    infos   = calloc((size_t) comm->size, sizeof(*infos));
    if (entries == NULL || infos == NULL) {
        free(entries);
        free(infos);
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    st = shi_unix_listen(&boot.unix_listen_fd, sock, comm->size);
    if (st == SHOAL_OK) {
        st = publish_self(comm, sock, deadline);
    }
    if (st == SHOAL_OK) {
        st = gather_peers(comm, entries, &boot.one_host, &use_tcp, deadline);
    }
    if (use_tcp && boot.unix_listen_fd >= 0) {
        close(boot.unix_listen_fd);
        boot.unix_listen_fd = -1;
    }
    // Every read of the store comes before the mesh: rank 0 (which may
    // serve the store) completes its mesh only once every rank connected
    // to it, so it cannot finish its work and exit, taking the store
    // along, while a slower rank still reads it.
    if (st == SHOAL_OK) {
        st = shi_coll_agree_table(comm, deadline);
    }
    for (int r = 0; r < comm->size; r++) {
        memcpy(infos[r].sock, entries[r].sock, sizeof(infos[r].sock));
        infos[r].pid = entries[r].pid;
    }
    boot.peers = infos;
    if (st == SHOAL_OK && use_tcp) {
        st = pick_messages(comm, entries, &comm->tp, &preferred);
    }
    if (st == SHOAL_OK) {
        st = setup_with_fallback(comm, &boot, preferred, deadline);
    }
    if (boot.unix_listen_fd >= 0) {
        close(boot.unix_listen_fd);
    }
    free(entries);
    free(infos);
    return st;
}

static int
bootstrap_steps(shoal_comm *comm, int64_t deadline)
{
    int st = connect_peers(comm, deadline);

    // A deadline that passed says "timeout after N ms" first (gloo's
    // wording, which torchft's tests look for), then where it passed.
    if (st == SHOAL_ETIMEDOUT) {
        return shi_error_wrap(st,
            "creating communicator '%s' (rank %d of %d): timeout after "
            "%lldms",
            comm->name, comm->rank, comm->size, (long long) comm->timeout_ms);
    }
    if (st != SHOAL_OK) {
        return shi_error_wrap(st, "creating communicator '%s' (rank %d of %d)",
            comm->name, comm->rank, comm->size);
    }
    if ((st = shi_coll_setup(comm, deadline)) != SHOAL_OK) {
        return shi_error_wrap(st, "creating communicator '%s'", comm->name);
    }
    SHI_INFO("communicator '%s': %d ranks connected over %s", comm->name,
        comm->size, comm->tp->name);
    if ((st = comm->tp->start(comm)) != SHOAL_OK) {
        return st;
    }
    if ((st = shi_engine_start(comm)) != SHOAL_OK) {
        return st;
    }
    return shi_coll_start(comm);
}

int
shi_comm_bootstrap(shoal_comm *comm, int64_t deadline)
{
    int st = shi_rdv_begin(comm, deadline);

    if (st == SHOAL_OK) {
        st = bootstrap_steps(comm, deadline);
    }
    return shi_rdv_end(comm, st, deadline);
}
