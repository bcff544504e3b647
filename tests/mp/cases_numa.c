// numa_heap: the NUMA policy of this rank's shared heap, read back from
// the kernel on a shoal_alloc buffer: "preferred" (its node), "default"
// (left to first touch) or "auto" (preferred where the machine has
// several nodes and this rank's CPUs lie in one, else default).
#include <linux/mempolicy.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mptest.h"
#include "platform/numa.h"

static int
auto_places(void)
{
    int nnodes, home = shi_numa_my_home(&nnodes);

    return nnodes >= 2 && home >= 0;
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
    MP_OK(shoal_free(comm, buf));
    MP_OK(shoal_barrier(comm));
    return 0;
}
