// A peer's slot header is not trusted. Rank 1 writes a false header by
// hand into its shared-memory channel to rank 0: a chunk larger than a
// slot ("big"), or a last chunk that ends its message short ("short").
// Rank 0's receive of that message fails with SHOAL_EPROTO naming rank 1,
// rather than copying past a slot or completing half-written, and the
// communicator is aborted on both ranks. Other transports have no slots:
// there the case only syncs.
#include <string.h>

#include "core/comm.h"
#include "mptest.h"
#include "transport/shm/shm.h"

#define FORGED_TAG 77

// Publishes a slot with `chunk` bytes of a `msg`-byte message that says it
// is the message's only slot.
static void
forge_slot(shoal_comm *comm, uint64_t msg, uint32_t chunk)
{
    struct shi_shm_peer    *p;
    struct shm_slot_header *h;

    pthread_mutex_lock(&comm->lock);
    p              = &shi_shm_of(comm)->peers[0];
    h              = shm_p2p_slot(shi_shm_seg(comm), 1, 0, p->send_slot);
    h->msg_bytes   = msg;
    h->tag         = FORGED_TAG;
    h->chunk_bytes = chunk;
    h->flags       = SHM_FIRST | SHM_LAST;
    atomic_store_explicit(&h->seq, p->send_slot + 1, memory_order_release);
    p->send_slot++;
    pthread_mutex_unlock(&comm->lock);
}

int
mp_case_p2p_forged(shoal_comm *comm, int argc, char **argv)
{
    int      big   = argc > 0 && strcmp(argv[0], "big") == 0;
    uint32_t slot  = 0;
    uint64_t bytes = 16;
    char    *buf;

    MP_OK(shoal_barrier(comm));
    if (strcmp(comm->tp->name, "shm") != 0 || comm->size != 2) {
        return 0;
    }
    slot = shi_shm_seg(comm)->p2p_slot_bytes;
    if (big) {
        bytes = (uint64_t) slot + 64;
    }
    if (comm->rank == 1) {
        forge_slot(comm, bytes, big ? slot + 64 : 8);
    } else {
        MP_CHECK((buf = calloc(1, bytes)) != NULL);
        mp_sleep_ms(20); // arrived (perhaps buffered) before the receive
        MP_EXPECT(shoal_recv(comm, buf, bytes, SHOAL_UINT8, 1, FORGED_TAG),
            SHOAL_EPROTO);
        MP_CHECK(strstr(shoal_last_error(), "rank 1 sent") != NULL);
        free(buf);
    }
    MP_CHECK(shoal_barrier(comm) < 0);
    return 0;
}
