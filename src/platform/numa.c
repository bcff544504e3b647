// NUMA topology from sysfs and preferred-node policies (see numa.h).
#include "platform/numa.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <linux/mempolicy.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "shoal.h"

#define PAGE 4096

#define NODE_ROOT "/sys/devices/system/node"

// One number of a CPU list; advances *p. -1 if none is there.
static long
list_number(const char **p)
{
    char *end;
    long  v;

    if (!isdigit((unsigned char) **p)) {
        return -1;
    }
    errno = 0;
    v     = strtol(*p, &end, 10);
    if (errno != 0 || v >= CPU_SETSIZE) {
        return -1;
    }
    *p = end;
    return v;
}

// Parses a CPU list ("0-3,8,10-11", a newline allowed at the end) into
// *set; 0 if malformed.
static int
parse_cpulist(const char *text, cpu_set_t *set)
{
    const char *p = text;

    CPU_ZERO(set);
    while (*p != '\0' && *p != '\n') {
        long lo = list_number(&p), hi = lo;
        if (lo < 0) {
            return 0;
        }
        if (*p == '-') {
            p++;
            if ((hi = list_number(&p)) < lo) {
                return 0;
            }
        }
        for (long c = lo; c <= hi; c++) {
            CPU_SET((int) c, set);
        }
        if (*p == ',') {
            p++;
        } else if (*p != '\0' && *p != '\n') {
            return 0;
        }
    }
    return 1;
}

// The N of a directory entry "nodeN", or -1.
static int
node_number(const char *name)
{
    const char *p = name + 4;
    long        n;

    if (strncmp(name, "node", 4) != 0) {
        return -1;
    }
    n = list_number(&p);
    return *p == '\0' && n >= 0 && n < SHI_NUMA_MAX_NODES ? (int) n : -1;
}

// Adds node n if its cpulist names CPUs.
static void
read_node(const char *root, int n, shi_numa_topo *t)
{
    char  path[512], text[4096];
    FILE *f;
    int   ok;

    snprintf(path, sizeof(path), "%s/node%d/cpulist", root, n);
    if ((f = fopen(path, "r")) == NULL) {
        return;
    }
    ok = fgets(text, sizeof(text), f) != NULL;
    fclose(f);
    if (ok && parse_cpulist(text, &t->cpus[t->nnodes])
        && CPU_COUNT(&t->cpus[t->nnodes]) > 0) {
        t->id[t->nnodes++] = n;
    }
}

void
shi_numa_read(const char *root, shi_numa_topo *out)
{
    DIR           *d;
    struct dirent *e;

    out->nnodes = 0;
    root        = root != NULL ? root : NODE_ROOT;
    if ((d = opendir(root)) == NULL) {
        return;
    }
    while ((e = readdir(d)) != NULL && out->nnodes < SHI_NUMA_MAX_NODES) {
        int n = node_number(e->d_name);
        if (n >= 0) {
            read_node(root, n, out);
        }
    }
    closedir(d);
}

int
shi_numa_home(const shi_numa_topo *t, const cpu_set_t *set)
{
    cpu_set_t both;

    if (CPU_COUNT(set) == 0) {
        return -1;
    }
    for (int i = 0; i < t->nnodes; i++) {
        CPU_AND(&both, set, &t->cpus[i]);
        if (CPU_EQUAL(&both, set)) {
            return t->id[i];
        }
    }
    return -1;
}

int
shi_numa_my_home(int *nnodes)
{
    shi_numa_topo *t = malloc(sizeof(*t)); // 8 KiB of CPU sets
    cpu_set_t      mine;
    int            home = -1, n = 0;

    if (t != NULL) {
        shi_numa_read(NULL, t);
        n = t->nnodes;
        if (sched_getaffinity(0, sizeof(mine), &mine) == 0) {
            home = shi_numa_home(t, &mine);
        }
        free(t);
    }
    if (nnodes != NULL) {
        *nnodes = n;
    }
    return home;
}

// mbind(MPOL_PREFERRED, node) with `flags`.
static int
prefer_with(void *addr, size_t len, int node, unsigned flags)
{
    unsigned long mask[SHI_NUMA_MAX_NODES / (8 * sizeof(unsigned long))]
        = { 0 };

    if (node < 0 || node >= SHI_NUMA_MAX_NODES) {
        return shi_error(SHOAL_EINVAL, "NUMA node %d is out of range", node);
    }
    mask[node / (8 * sizeof(unsigned long))] |= 1ul
        << (node % (8 * sizeof(unsigned long)));
    if (syscall(SYS_mbind, addr, len, MPOL_PREFERRED, mask,
            (unsigned long) SHI_NUMA_MAX_NODES + 1, flags)
        != 0) {
        return shi_error(SHOAL_ESYS,
            "cannot prefer NUMA node %d for %zu bytes at %p: mbind: %s", node,
            len, addr, strerror(errno));
    }
    return SHOAL_OK;
}

int
shi_numa_prefer(void *addr, size_t len, int node)
{
    return prefer_with(addr, len, node, 0);
}

int
shi_numa_move(void *addr, size_t len, int node)
{
    // The kernel moves only pages in this process's page tables: a read of
    // each maps it (the pages exist already, so nothing is allocated).
    for (size_t off = 0; off < len; off += PAGE) {
        (void) *(volatile const unsigned char *) ((char *) addr + off);
    }
    return prefer_with(addr, len, node, MPOL_MF_MOVE);
}

int
shi_numa_plan_get(shi_numa_plan *out)
{
    const char *v      = getenv("SHOAL_SHM_NUMA");
    int         strict = 0;

    *out = (shi_numa_plan) { .node = -1 };
    if (v != NULL && strcmp(v, "off") == 0) {
        return SHOAL_OK;
    }
    if (v != NULL && strcmp(v, "on") == 0) {
        strict = 1;
    } else if (v != NULL && v[0] != '\0' && strcmp(v, "auto") != 0) {
        return shi_error(
            SHOAL_EENV, "SHOAL_SHM_NUMA=\"%s\": use auto, on or off", v);
    }
    int node    = shi_numa_my_home(&out->nnodes);
    out->strict = strict;
    if (out->nnodes >= (strict ? 1 : 2)) {
        out->node = node;
    }
    return SHOAL_OK;
}

int
shi_numa_placed(const shi_numa_plan *plan, int st, int rank, const char *what)
{
    if (st == SHOAL_OK) {
        SHI_INFO("rank %d: %s on NUMA node %d", rank, what, plan->node);
    } else if (!plan->strict) {
        SHI_WARN("rank %d: %s left where the kernel puts it: %s", rank, what,
            shi_error_text());
        return SHOAL_OK;
    }
    return st;
}
