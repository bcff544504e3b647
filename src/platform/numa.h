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

// The same for [addr, addr + len) already backed (a shared mapping another
// process allocated): this process maps every page, then the kernel moves
// the pages only it maps to `node` (MPOL_MF_MOVE). SHOAL_ESYS with the
// reason if the kernel refuses.
int shi_numa_move(void *addr, size_t len, int node);

// What SHOAL_SHM_NUMA (auto, on, off; default auto) asks of a rank for the
// shared memory it owns: `node` to prefer, or -1 to leave it to the
// kernel's first touch (off; one node under auto; CPUs spanning nodes).
// `strict` (on): a refusal is an error, else only worth a warning.
typedef struct shi_numa_plan {
    int node;
    int strict;
    int nnodes; // nodes with CPUs
} shi_numa_plan;

// SHOAL_EENV for a value other than auto, on and off.
int shi_numa_plan_get(shi_numa_plan *out);

// The end of placing `what` (rank `rank`'s memory) by `plan`, whose call
// returned `st`: says where it went (INFO), or why not; a refusal is
// returned under a strict plan and only warned of otherwise.
int shi_numa_placed(
    const shi_numa_plan *plan, int st, int rank, const char *what);

#endif
