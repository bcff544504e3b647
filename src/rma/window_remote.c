// What a message transport asks when a peer's put or signal arrives
// (transport.h: shi_transport_put_target, shi_transport_signal_arrived).
// The window number, offset and size come from the peer: each is checked
// against this rank's registration before a byte is written.
#include <stdatomic.h>

#include "rma/window.h"
#include "transport/upcalls.h"

unsigned char *
shi_transport_put_target(
    shoal_comm *comm, int origin, uint32_t id, uint64_t off, uint64_t bytes)
{
    shoal_window *win = shi_window_find(comm, id);

    if (win == NULL) {
        shi_error(SHOAL_EPROTO,
            "rank %d put into window %u, which rank %d has not registered "
            "(deregistered or freed already?)",
            origin, id, comm->rank);
        return NULL;
    }
    if (off > win->bytes || bytes > win->bytes - off) {
        shi_error(SHOAL_EPROTO,
            "rank %d put %llu bytes at byte %llu of window %u, which has "
            "%zu bytes on rank %d",
            origin, (unsigned long long) bytes, (unsigned long long) off, id,
            win->bytes, comm->rank);
        return NULL;
    }
    return win->base + off;
}

int
shi_transport_signal_arrived(
    shoal_comm *comm, int origin, uint32_t id, uint64_t which)
{
    shoal_window *win = shi_window_find(comm, id);

    if (win == NULL || which > SHI_WIN_FENCE || origin < 0
        || origin >= comm->size) {
        return shi_error(SHOAL_EPROTO,
            "rank %d signalled counter %llu of window %u, which rank %d does "
            "not have",
            origin, (unsigned long long) which, id, comm->rank);
    }
    struct shi_win_line *line = &win->lines[origin];
    atomic_fetch_add(
        which == SHI_WIN_FENCE ? &line->fence : &line->signals, 1);
    return SHOAL_OK;
}
