// The transport interface's memory operations (transport.h), called as a
// window would: every rank exposes a block of its heap (shoal_alloc) and a
// block of ordinary memory, the ranks trade the descriptions, and each
// reaches its right neighbour's blocks. Over shared memory a heap block is
// viewed in place and ordinary memory is copied through the kernel (when
// the ranks may); over TCP nothing is mapped and nothing is copied without
// the peer. Descriptions from a peer are untrusted: out-of-range offsets
// and forged heap offsets are refused.
#include <string.h>

#include "core/comm.h"
#include "mptest.h"

#define BLOCK 8192

struct exposed {
    struct shi_tp_region heap, plain;
};

static int
check_forged(shoal_comm *comm, const struct shi_tp_region *r)
{
    struct shi_tp_region bad = *r;

    MP_CHECK(comm->tp->mem_view(comm, r, BLOCK, 1) == NULL);
    MP_CHECK(comm->tp->mem_view(comm, r, 1, BLOCK) == NULL);
    bad.heap_off = UINT64_MAX - 4; // beyond every heap
    MP_CHECK(comm->tp->mem_view(comm, &bad, 0, 1) == NULL);
    bad       = *r;
    bad.bytes = UINT64_MAX; // a region larger than the heap
    MP_CHECK(comm->tp->mem_view(comm, &bad, 0, 1) == NULL);
    bad       = *r;
    bad.owner = comm->size;
    MP_CHECK(comm->tp->mem_view(comm, &bad, 0, 1) == NULL);
    return 0;
}

static int
check_mapped(shoal_comm *comm, const struct exposed *peer, int right)
{
    unsigned char  got[BLOCK];
    unsigned char *view = comm->tp->mem_view(comm, &peer->heap, 0, BLOCK);

    MP_CHECK(view != NULL);
    MP_CHECK(mp_verify(view, BLOCK, right, 1));
    MP_CHECK(comm->tp->mem_view(comm, &peer->plain, 0, BLOCK) == NULL);
    if (check_forged(comm, &peer->heap)) {
        return 1;
    }
    if (!comm->cma_ok) {
        return 0; // the kernel does not let ranks copy each other's memory
    }
    MP_OK(comm->tp->mem_read(comm, &peer->plain, 0, got, BLOCK));
    MP_CHECK(mp_verify(got, BLOCK, right, 2));
    mp_fill(got, 100, comm->rank, 3);
    MP_OK(comm->tp->mem_write(comm, &peer->plain, 50, got, 100));
    MP_CHECK(comm->tp->mem_read(comm, &peer->plain, BLOCK - 1, got, 2)
        == SHOAL_EINVAL);
    return 0;
}

int
mp_case_tp_mem(shoal_comm *comm, int argc, char **argv)
{
    struct exposed *all = calloc((size_t) comm->size, sizeof(*all));
    unsigned char  *heap, plain[BLOCK];
    int             right = (comm->rank + 1) % comm->size, left;

    (void) argc;
    (void) argv;
    MP_CHECK(all != NULL);
    left = (comm->rank + comm->size - 1) % comm->size;
    MP_OK(shoal_alloc(comm, BLOCK, (void **) &heap));
    mp_fill(heap, BLOCK, comm->rank, 1);
    mp_fill(plain, BLOCK, comm->rank, 2);
    comm->tp->mem_expose(comm, heap, BLOCK, &all[comm->rank].heap);
    comm->tp->mem_expose(comm, plain, BLOCK, &all[comm->rank].plain);
    MP_CHECK(all[comm->rank].plain.heap_off == 0);
    MP_OK(shoal_all_gather(
        comm, &all[comm->rank], all, sizeof(*all), SHOAL_UINT8));
    if (comm->tp->klass == SHI_TP_MAPPED) {
        MP_CHECK(all[comm->rank].heap.heap_off != 0);
        if (comm->size > 1 && check_mapped(comm, &all[right], right)) {
            return 1;
        }
    } else {
        MP_CHECK(comm->tp->mem_view(comm, &all[right].heap, 0, 1) == NULL);
        MP_CHECK(comm->tp->mem_read == NULL && comm->tp->mem_write == NULL);
    }
    MP_OK(shoal_barrier(comm)); // every write is in
    if (comm->tp->klass == SHI_TP_MAPPED && comm->cma_ok && comm->size > 1) {
        unsigned char want[100];
        mp_fill(want, sizeof(want), left, 3);
        MP_CHECK(memcmp(plain + 50, want, sizeof(want)) == 0);
        MP_CHECK(mp_verify(plain, 50, comm->rank, 2));
    }
    MP_OK(shoal_free(comm, heap));
    free(all);
    return 0;
}
