// numa_heap: the NUMA policy of the shared memory this rank writes, read
// back from the kernel: a shoal_alloc buffer of its heap, and its
// collectives' staging (its slabs and its outbox, moved there at
// creation): "preferred" (its node), "default" (left where it is) or
// "auto" (preferred where the machine has several nodes and this rank's
// CPUs lie in one, else default).
#include <linux/mempolicy.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "algo/mapped/driver.h"
#include "mptest.h"
#include "platform/numa.h"

static int
auto_places(void)
{
    int nnodes, home = shi_numa_my_home(&nnodes);

    return nnodes >= 2 && home >= 0;
}

// The policy of the page at addr; *mask gets the first word of its nodes.
static int
policy_at(void *addr, unsigned long *mask)
{
    int           mode     = -1;
    unsigned long words[2] = { 0, 0 };

    if (syscall(SYS_get_mempolicy, &mode, words, 128 + 1, addr, MPOL_F_ADDR)
        != 0) {
        return -1;
    }
    *mask = words[0];
    return mode;
}

// Both slabs and the outbox of this rank, first and last page.
static int
staging_has(shoal_comm *comm, int want)
{
    const struct shi_area *a    = shi_area_of(comm);
    int                    r    = shoal_comm_rank(comm);
    unsigned char         *slab = shi_area_slab(a, r, 0);
    unsigned char         *box  = (unsigned char *) shi_area_box_tail(a, r, 0);
    unsigned char         *at[]
        = { slab, slab + 2 * a->slab_bytes - 1, box, box + a->box_bytes - 1 };
    unsigned long mask = 0;

    for (size_t i = 0; i < sizeof(at) / sizeof(*at); i++) {
        int mode = policy_at(at[i], &mask);
        if (mode != want || (want == MPOL_PREFERRED && mask == 0)) {
            printf("rank %d: staging page %zu has policy %d (mask %lx), "
                   "wanted %d\n",
                r, i, mode, mask, want);
            return 0;
        }
    }
    return 1;
}

int
mp_case_numa_heap(shoal_comm *comm, int argc, char **argv)
{
    size_t        len = 4u << 20;
    void         *buf;
    int           mode    = -1;
    unsigned long mask[2] = { 0, 0 };

    MP_CHECK(argc > 0);
    int want = strcmp(argv[0], "preferred") == 0
            || (strcmp(argv[0], "auto") == 0 && auto_places())
        ? MPOL_PREFERRED
        : MPOL_DEFAULT;
    MP_OK(shoal_alloc(comm, len, &buf));
    memset(buf, 1, len);
    MP_CHECK(syscall(SYS_get_mempolicy, &mode, mask, 128 + 1, buf, MPOL_F_ADDR)
        == 0);
    printf("rank %d: heap policy %d (mask %lx), wanted %d\n",
        shoal_comm_rank(comm), mode, mask[0], want);
    MP_CHECK(mode == want);
    MP_CHECK(want == MPOL_DEFAULT || mask[0] != 0);
    MP_CHECK(staging_has(comm, want));
    MP_OK(shoal_free(comm, buf));
    MP_OK(shoal_barrier(comm));
    return 0;
}
