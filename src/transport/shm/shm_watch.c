// Liveness watcher: a thread per communicator sleeps in epoll on the
// sockets to its peers. A goodbye byte marks a peer as gone on purpose
// (it destroyed its communicator); a connection that closes without one
// means the peer died, and the communicator is aborted at once, so every
// rank learns of a SIGKILLed peer within milliseconds.
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "transport/shm/shm.h"
#include "transport/upcalls.h"

// Handles readable data or a hang-up on peer `r`'s socket. Returns 1 when
// the socket is finished (removed from the set).
static int
watch_peer_event(shoal_comm *comm, int r)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    struct shi_peer    *p  = &tc->peers[r];
    char                buf[64];
    ssize_t n = recv(shi_shm_of(comm)->fds[r], buf, sizeof(buf), MSG_DONTWAIT);

    if (n > 0) {
        if (memchr(buf, 'B', (size_t) n) != NULL) {
            atomic_store(&p->state, SHI_PEER_LEFT);
            SHI_INFO("communicator '%s': rank %d destroyed its communicator",
                tc->name, r);
            shi_ring(comm, tc->rank, 1); // waiters re-check their peers
        }
        return 0;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return 0;
    }
    if (atomic_load(&p->state) == SHI_PEER_LIVE) {
        atomic_store(&p->state, SHI_PEER_DEAD);
        // A rank that aborted the communicator before it went left the
        // cause in shared memory: that is the news, not its exit.
        if (shi_shm_adopt_abort(comm)) {
            return 1;
        }
        // "Connection closed by peer" is gloo's wording, which torch's
        // and torchft's tests look for; the precise cause follows it.
        shi_comm_abort(comm, SHOAL_EPEER,
            "rank %d (pid %d on %s) died: Connection closed by peer: its "
            "connection to rank %d closed without a goodbye",
            r, p->pid, p->host, tc->rank);
    }
    return 1;
}

static void *
watch_main(void *arg)
{
    shoal_comm        *comm = arg;
    struct shi_shm    *sh   = shi_shm_of(comm);
    struct epoll_event ev[16];

    for (;;) {
        int n = epoll_wait(sh->watch_ep, ev, 16, -1);
        for (int i = 0; i < n; i++) {
            uint32_t r = ev[i].data.u32;
            if (r == UINT32_MAX) {
                return NULL;
            }
            if (watch_peer_event(comm, (int) r)) {
                epoll_ctl(sh->watch_ep, EPOLL_CTL_DEL, sh->fds[r], NULL);
            }
        }
    }
}

// The epoll set is made here, not in the thread: its descriptor exists
// from the moment the communicator does (and a failure is an error).
int
shi_shm_watch_start(shoal_comm *comm)
{
    struct epoll_event stop = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
    struct shi_shm    *sh   = shi_shm_of(comm);

    sh->watch_stop_fd = eventfd(0, EFD_CLOEXEC);
    sh->watch_ep      = epoll_create1(EPOLL_CLOEXEC);
    if (sh->watch_stop_fd < 0 || sh->watch_ep < 0
        || epoll_ctl(sh->watch_ep, EPOLL_CTL_ADD, sh->watch_stop_fd, &stop)
            != 0) {
        return shi_error(SHOAL_ESYS, "cannot set up the watcher of peers: %s",
            strerror(errno));
    }
    for (int r = 0; r < shi_tp_comm(comm)->size; r++) {
        if (sh->fds[r] >= 0) {
            struct epoll_event e
                = { .events = EPOLLIN | EPOLLRDHUP, .data.u32 = (uint32_t) r };
            epoll_ctl(sh->watch_ep, EPOLL_CTL_ADD, sh->fds[r], &e);
        }
    }
    int err = pthread_create(&sh->watch_thread, NULL, watch_main, comm);
    if (err != 0) {
        return shi_error(
            SHOAL_ESYS, "cannot start the watcher thread: %s", strerror(err));
    }
    sh->watch_started = 1;
    return SHOAL_OK;
}

void
shi_shm_watch_stop(shoal_comm *comm)
{
    struct shi_shm *sh  = shi_shm_of(comm);
    uint64_t        one = 1;

    if (sh->watch_started) {
        if (write(sh->watch_stop_fd, &one, sizeof(one)) < 0) {
            SHI_WARN("cannot stop the watcher: %s", strerror(errno));
        }
        pthread_join(sh->watch_thread, NULL);
        sh->watch_started = 0;
    }
    if (sh->watch_stop_fd >= 0) {
        close(sh->watch_stop_fd);
        sh->watch_stop_fd = -1;
    }
    if (sh->watch_ep >= 0) {
        close(sh->watch_ep);
        sh->watch_ep = -1;
    }
}
