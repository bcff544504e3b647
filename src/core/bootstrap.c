// Communicator bootstrap: find the peers through the store, then connect
// them over shared memory (every rank on one host) or TCP.
//
// Steps: (1) every rank listens on a fresh abstract unix socket and
// publishes "<host identity>\n<pid>\n<socket name>\n<transport>"; (2) it
// reads every peer's entry. If every rank is on this host and none asked
// for TCP (SHOAL_TRANSPORT=tcp), (3) it connects to every lower rank and
// accepts every higher one, each connection proving the job secret both
// ways and coming from our own user; (4) rank 0 creates the segment and
// sends its descriptor to every peer. The sockets stay open: their closing
// tells a peer's death. Otherwise (3') every rank listens on TCP, publishes
// its address and joins the TCP mesh (transport/tcp), and keeps a private
// segment for its own control words and shoal_alloc's heap.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/comm.h"
#include "core/engine.h"
#include "core/hostid.h"
#include "core/log.h"
#include "platform/net.h"
#include "platform/unix_sock.h"
#include "store/store.h"
#include "transport/tcp/tcp_addr.h"
#include "transport/tcp/tcp_net.h"

#define ENTRY_MAX (SHI_HOSTID_MAX + SHI_UNIX_NAME_MAX + 64)

struct peer_entry {
    char host_id[SHI_HOSTID_MAX];
    char sock[SHI_UNIX_NAME_MAX];
    int  pid;
    int  wants_tcp;
};

// SHOAL_TRANSPORT: "tcp" forces TCP even on one host; "shm" refuses to
// run across hosts; unset or "auto" chooses by host.
static int
transport_wanted(const char **out)
{
    const char *t = getenv("SHOAL_TRANSPORT");

    *out = "auto";
    if (t == NULL || t[0] == '\0' || strcmp(t, "auto") == 0) {
        return SHOAL_OK;
    }
    if (strcmp(t, "tcp") != 0 && strcmp(t, "shm") != 0) {
        return shi_error(
            SHOAL_EENV, "SHOAL_TRANSPORT=\"%s\": use tcp, shm or auto", t);
    }
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
        *use_tcp |= entries[r].wants_tcp;
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
    if (comm->host_first == NULL || comm->local_rank_of == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory");
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

// Listens on TCP, trades addresses through the store, joins the mesh.
static int
join_tcp_mesh(shoal_comm *comm, int one_host, int64_t deadline)
{
    char   ip[64], key[512], (*addrs)[64];
    int    lfd = -1, port, st;
    char  *value;
    size_t len;

    if ((st = shi_tcp_pick_ip(comm, one_host, ip, sizeof(ip))) != SHOAL_OK) {
        return st;
    }
    if ((addrs = calloc((size_t) comm->size, sizeof(*addrs))) == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    st = shi_tcp_listen(ip, 0, comm->size * 16, &lfd, &port);
    if (st == SHOAL_OK) {
        shi_tcp_format_addr(ip, port, addrs[comm->rank], sizeof(*addrs));
        snprintf(key, sizeof(key), "%sboot/tcp/%d", comm->prefix, comm->rank);
        st = shi_store_set(shi_comm_store(comm), key, addrs[comm->rank],
            strlen(addrs[comm->rank]), deadline);
    }
    for (int r = 0; st == SHOAL_OK && r < comm->size; r++) {
        snprintf(key, sizeof(key), "%sboot/tcp/%d", comm->prefix, r);
        st = shi_rdv_get(comm, key, &value, &len, deadline);
        if (st == SHOAL_OK) {
            snprintf(addrs[r], sizeof(*addrs), "%s", value);
            free(value);
        }
    }
    if (st == SHOAL_OK) {
        st = shi_tcp_mesh(comm, lfd, addrs, deadline);
    }
    if (lfd >= 0) {
        close(lfd); // strangers knocking later find nothing listening
    }
    free(addrs);
    return st;
}

static int
connect_lower(
    shoal_comm *comm, const struct peer_entry *entries, int64_t deadline)
{
    char what[64];

    for (int r = 0; r < comm->rank; r++) {
        int     fd, st;
        int32_t me = comm->rank;
        snprintf(what, sizeof(what), "rank %d (pid %d)", r, entries[r].pid);
        do {
            int64_t until = shi_rdv_until(deadline);
            st            = shi_unix_connect(entries[r].sock, until, &fd);
            st            = st == SHOAL_OK ? st
                                           : shi_rdv_sliced(comm, st, until, deadline);
        } while (st == SHOAL_INPROGRESS);
        if (st == SHOAL_OK) {
            comm->peers[r].fd = fd;
            st                = shi_unix_check_peer_uid(fd);
        }
        if (st == SHOAL_OK) {
            st = shi_auth_client(fd, &comm->secret, what, deadline);
        }
        if (st == SHOAL_OK) {
            st = shi_write_all(fd, &me, sizeof(me), deadline);
        }
        if (st != SHOAL_OK) {
            return shi_error_wrap(st, "connecting to %s", what);
        }
    }
    return SHOAL_OK;
}

// Accepts one connection; a stranger that fails the handshake is closed
// with a warning and does not disturb the job (returns 0 to try again).
static int
accept_one(shoal_comm *comm, int lfd, int64_t deadline, int *done)
{
    int     fd, st;
    int32_t r = -1;

    *done = 0;
    do {
        int64_t until = shi_rdv_until(deadline);
        st            = shi_unix_accept(lfd, until, &fd);
        st = st == SHOAL_OK ? st : shi_rdv_sliced(comm, st, until, deadline);
    } while (st == SHOAL_INPROGRESS);
    if (st != SHOAL_OK) {
        return st;
    }
    st = shi_unix_check_peer_uid(fd);
    if (st == SHOAL_OK) {
        st = shi_auth_server(fd, &comm->secret, "a rank connecting", deadline);
    }
    if (st == SHOAL_OK) {
        st = shi_read_all(fd, &r, sizeof(r), deadline);
    }
    if (st == SHOAL_OK
        && (r <= comm->rank || r >= comm->size || comm->peers[r].fd >= 0)) {
        st = shi_error(SHOAL_EPROTO, "connection claims to be rank %d", r);
    }
    if (st != SHOAL_OK) {
        SHI_WARN("communicator '%s': refused a connection: %s", comm->name,
            shi_error_text());
        close(fd);
        return st == SHOAL_ETIMEDOUT ? st : SHOAL_OK;
    }
    comm->peers[r].fd = fd;
    *done             = 1;
    return SHOAL_OK;
}

static int
accept_higher(shoal_comm *comm, int lfd, int64_t deadline)
{
    int need = comm->size - 1 - comm->rank;

    while (need > 0) {
        int done, st = accept_one(comm, lfd, deadline, &done);
        if (st != SHOAL_OK) {
            return shi_error_wrap(st,
                "waiting for %d higher rank(s) to "
                "connect",
                need);
        }
        need -= done;
    }
    return SHOAL_OK;
}

static int
share_segment(shoal_comm *comm, int64_t deadline)
{
    uint64_t bytes = 0;
    int      fd, st;

    if (comm->rank == 0) {
        if ((st = shm_segment_create(&comm->seg, comm->size, &fd))
            != SHOAL_OK) {
            return st;
        }
        bytes = comm->seg.bytes;
        for (int r = 1; r < comm->size && st == SHOAL_OK; r++) {
            st = shi_unix_send_fd(
                comm->peers[r].fd, fd, &bytes, sizeof(bytes), deadline);
        }
        close(fd);
        return st;
    }
    st = shi_unix_recv_fd(
        comm->peers[0].fd, &fd, &bytes, sizeof(bytes), deadline);
    if (st == SHOAL_OK) {
        st = shm_segment_attach(&comm->seg, fd, comm->size);
        close(fd);
    }
    return st;
}

static int
connect_mesh(shoal_comm *comm, int64_t deadline)
{
    struct peer_entry *entries = calloc((size_t) comm->size, sizeof(*entries));
    char               sock[SHI_UNIX_NAME_MAX];
    int                lfd = -1, st, one_host = 1, use_tcp = 0;

    if (entries == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    st = shi_unix_listen(&lfd, sock, comm->size);
    if (st == SHOAL_OK) {
        st = publish_self(comm, sock, deadline);
    }
    if (st == SHOAL_OK) {
        st = gather_peers(comm, entries, &one_host, &use_tcp, deadline);
    }
    if (st == SHOAL_OK && use_tcp) {
        if (lfd >= 0) {
            close(lfd);
            lfd = -1;
        }
        // Every read of the store comes before the mesh: rank 0 (which
        // may serve the store) completes its mesh only once every rank
        // connected to it, so it cannot finish its work and exit, taking
        // the store along, while a slower rank still reads it.
        st = shi_coll_agree_table(comm, deadline);
        if (st == SHOAL_OK) {
            st = join_tcp_mesh(comm, one_host, deadline);
        }
    } else if (st == SHOAL_OK) {
        st = connect_lower(comm, entries, deadline);
        if (st == SHOAL_OK) {
            st = accept_higher(comm, lfd, deadline);
        }
    }
    if (lfd >= 0) {
        close(lfd);
    }
    free(entries);
    return st;
}

static int
bootstrap_steps(shoal_comm *comm, int64_t deadline)
{
    int st = SHOAL_OK, fd;

    if (comm->size == 1) {
        st = shm_segment_create(&comm->seg, 1, &fd);
        if (st == SHOAL_OK) {
            close(fd);
        }
    } else {
        st = connect_mesh(comm, deadline);
        if (st == SHOAL_OK && comm->net != NULL) {
            // Our own control words and heap; nobody else maps it.
            st = shm_segment_create(&comm->seg, comm->size, &fd);
            if (st == SHOAL_OK) {
                close(fd);
            }
        } else if (st == SHOAL_OK) {
            st = share_segment(comm, deadline);
        }
    }
    if (st != SHOAL_OK) {
        return shi_error_wrap(st, "creating communicator '%s' (rank %d of %d)",
            comm->name, comm->rank, comm->size);
    }
    comm->my_ctl = shm_ctl_of(&comm->seg, comm->rank);
    if ((st = shi_coll_setup(comm, deadline)) != SHOAL_OK) {
        return shi_error_wrap(st, "creating communicator '%s'", comm->name);
    }
    SHI_TRACE("communicator '%s': mesh of %d ranks connected, %zu bytes of "
              "shared memory mapped",
        comm->name, comm->size, comm->seg.bytes);
    // Over TCP the engine itself sees a peer's connection close.
    if (comm->size > 1 && comm->net == NULL
        && (st = shi_watch_start(comm)) != SHOAL_OK) {
        return st;
    }
    if ((st = shi_engine_start(comm)) != SHOAL_OK || !comm->hier_wanted) {
        return st;
    }
    return shi_hier_setup(comm, comm->host_index, comm->local_rank);
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
