// NUMA placement: which node a process's CPUs belong to (read from sysfs)
// and a preferred node for the pages of a shared mapping (mbind), so that
// on a machine of several nodes a rank's own part of the shared segment
// lives beside the CPUs that write it.
#ifndef SHI_PLATFORM_NUMA_H
#define SHI_PLATFORM_NUMA_H

#include <sched.h>
#include <stddef.h>

#define SHI_NUMA_MAX_NODES 64

// The nodes that have CPUs, as sysfs lists them.
typedef struct shi_numa_topo {
    int       nnodes;
    int       id[SHI_NUMA_MAX_NODES]; // the N of nodeN
    cpu_set_t cpus[SHI_NUMA_MAX_NODES];
} shi_numa_topo;

// Reads every nodeN/cpulist under `root` (NULL: /sys/devices/system/node);
// nodes without CPUs (memory only), with an unreadable or malformed list,
// or numbered past SHI_NUMA_MAX_NODES are left out. No node at all (no
// sysfs, a container that hides it) gives nnodes 0; never fails.
void shi_numa_read(const char *root, shi_numa_topo *out);

// The node holding every CPU of `set`, or -1 (the set spans nodes, holds
// a CPU no node lists, or is empty).
int shi_numa_home(const shi_numa_topo *t, const cpu_set_t *set);

// The node holding every CPU this process may run on (its affinity), or
// -1; *nnodes (may be NULL) gets the number of nodes with CPUs. Reads
// /sys/devices/system/node.
int shi_numa_my_home(int *nnodes);

// Prefers node `node` for the pages of [addr, addr + len) not backed yet
// (mbind, MPOL_PREFERRED; addr page aligned). On a shared mapping the
// policy belongs to the memory, so it holds for whichever process backs a
// page first. SHOAL_ESYS with the reason if the kernel refuses.
int shi_numa_prefer(void *addr, size_t len, int node);

#endif
