// shoal_comm_stats: who arrives last at the collectives (the mapped
// family's accounting, algo/mapped/lateness.c).
#include <string.h>

#include "algo/mapped/driver.h"
#include "core/comm.h"

int
shoal_comm_stats(shoal_comm *comm, shoal_peer_stats *out, int nranks)
{
    if (comm == NULL || out == NULL || nranks != comm->size) {
        return shi_error(SHOAL_EINVAL,
            "comm_stats: need a communicator and room for its %d ranks",
            comm != NULL ? comm->size : 0);
    }
    if (comm->mapped_state == NULL) {
        return shi_comm_error(comm,
            shi_error(SHOAL_ENOTSUP,
                "comm_stats: arrival statistics are kept over shared memory "
                "only; '%s' runs over messages",
                comm->name));
    }
    pthread_mutex_lock(&comm->lock);
    for (int r = 0; r < nranks; r++) {
        out[r] = comm->mapped_state->peers[r].late;
    }
    pthread_mutex_unlock(&comm->lock);
    return SHOAL_OK;
}
