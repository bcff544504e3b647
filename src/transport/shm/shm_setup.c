// Connecting the ranks of one host: every rank connects to every lower
// rank's unix socket and accepts every higher one, each connection proving
// the job secret both ways and coming from our own user; then rank 0
// creates the segment and sends its descriptor to every peer over them.
// The sockets stay open: their closing tells a peer's death (shm_watch.c).
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/log.h"
#include "platform/auth.h"
#include "platform/net.h"
#include "platform/unix_sock.h"
#include "transport/shm/shm.h"
#include "transport/upcalls.h"

static int
connect_lower(
    shoal_comm *comm, const struct shi_tp_peer_info *entries, int64_t deadline)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    struct shi_shm     *sh = shi_shm_of(comm);
    char                what[64];

    for (int r = 0; r < tc->rank; r++) {
        int     fd, st;
        int32_t me = tc->rank;
        snprintf(what, sizeof(what), "rank %d (pid %d)", r, entries[r].pid);
        do {
            int64_t until = shi_rdv_until(deadline);
            st            = shi_unix_connect(entries[r].sock, until, &fd);
            st            = st == SHOAL_OK ? st
                                           : shi_rdv_sliced(comm, st, until, deadline);
        } while (st == SHOAL_INPROGRESS);
        if (st == SHOAL_OK) {
            sh->fds[r] = fd;
            st         = shi_unix_check_peer_uid(fd);
        }
        if (st == SHOAL_OK) {
            st = shi_auth_client(fd, &tc->secret, what, deadline);
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
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    struct shi_shm     *sh = shi_shm_of(comm);
    int                 fd, st;
    int32_t             r = -1;

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
        st = shi_auth_server(fd, &tc->secret, "a rank connecting", deadline);
    }
    if (st == SHOAL_OK) {
        st = shi_read_all(fd, &r, sizeof(r), deadline);
    }
    if (st == SHOAL_OK
        && (r <= tc->rank || r >= tc->size || sh->fds[r] >= 0)) {
        st = shi_error(SHOAL_EPROTO, "connection claims to be rank %d", r);
    }
    if (st != SHOAL_OK) {
        SHI_WARN("communicator '%s': refused a connection: %s", tc->name,
            shi_error_text());
        close(fd);
        return st == SHOAL_ETIMEDOUT ? st : SHOAL_OK;
    }
    sh->fds[r] = fd;
    *done      = 1;
    return SHOAL_OK;
}

static int
accept_higher(shoal_comm *comm, int lfd, int64_t deadline)
{
    struct shi_tp_comm *tc   = shi_tp_comm(comm);
    int                 need = tc->size - 1 - tc->rank;

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
share_segment(
    shoal_comm *comm, const struct shi_tp_area *area, int64_t deadline)
{
    struct shi_tp_comm *tc    = shi_tp_comm(comm);
    struct shi_shm     *sh    = shi_shm_of(comm);
    uint64_t            bytes = 0;
    int                 fd, st;

    if (tc->rank == 0) {
        if ((st = shm_segment_create(&sh->seg, tc->size, area, &fd))
            != SHOAL_OK) {
            return st;
        }
        bytes = sh->seg.bytes;
        for (int r = 1; r < tc->size && st == SHOAL_OK; r++) {
            st = shi_unix_send_fd(
                sh->fds[r], fd, &bytes, sizeof(bytes), deadline);
        }
        close(fd);
        return st;
    }
    st = shi_unix_recv_fd(sh->fds[0], &fd, &bytes, sizeof(bytes), deadline);
    if (st == SHOAL_OK) {
        st = shm_segment_attach(&sh->seg, fd, tc->size);
        close(fd);
    }
    return st;
}

static int
alloc_state(shoal_comm *comm)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    struct shi_shm     *sh = calloc(1, sizeof(*sh));

    if (sh == NULL
        || (sh->fds = malloc((size_t) tc->size * sizeof(int))) == NULL
        || (sh->peers = calloc((size_t) tc->size, sizeof(*sh->peers)))
            == NULL) {
        if (sh != NULL) {
            free(sh->fds);
        }
        free(sh);
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    for (int r = 0; r < tc->size; r++) {
        sh->fds[r] = -1;
    }
    sh->watch_stop_fd = sh->watch_ep = -1;
    tc->tp_state                     = sh;
    return SHOAL_OK;
}

int
shi_shm_setup(
    shoal_comm *comm, const struct shi_tp_boot *boot, int64_t deadline)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    int                 st = alloc_state(comm), fd;

    if (st == SHOAL_OK && tc->size == 1) {
        st = shm_segment_create(&shi_shm_of(comm)->seg, 1, &boot->area, &fd);
        if (st == SHOAL_OK) {
            close(fd);
        }
    } else {
        if (st == SHOAL_OK) {
            st = connect_lower(comm, boot->peers, deadline);
        }
        if (st == SHOAL_OK) {
            st = accept_higher(comm, boot->unix_listen_fd, deadline);
        }
        if (st == SHOAL_OK) {
            st = share_segment(comm, &boot->area, deadline);
        }
    }
    if (st == SHOAL_OK) {
        struct shi_shm *sh = shi_shm_of(comm);
        sh->me             = shm_rank_of(&sh->seg, tc->rank);
        st                 = shm_place_heap(comm);
    }
    return st;
}
