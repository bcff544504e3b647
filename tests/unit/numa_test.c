// NUMA placement (platform/numa.h): the topology read from a fake sysfs
// tree of several nodes (this machine has one), the home node of a CPU
// set, and a preferred-node policy set on a shared mapping, read back from
// the kernel; then over a communicator (SHOAL_SHM_NUMA).
#include <linux/mempolicy.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "platform/numa.h"
#include "test.h"

static void
write_file(const char *dir, const char *node, const char *text)
{
    char  path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, node);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(path, sizeof(path), "%s/%s/cpulist", dir, node);
    CHECK((f = fopen(path, "w")) != NULL);
    fputs(text, f);
    fclose(f);
}

static cpu_set_t
cpus(const int *list, int n)
{
    cpu_set_t s;

    CPU_ZERO(&s);
    for (int i = 0; i < n; i++) {
        CPU_SET(list[i], &s);
    }
    return s;
}

// Two nodes with CPUs, one with memory only, one with a malformed list and
// a directory that only looks like a node.
TEST(numa_topology_from_a_fake_sysfs)
{
    char          dir[] = "/tmp/shoal-numa-XXXXXX", cmd[64];
    shi_numa_topo t;

    CHECK(mkdtemp(dir) != NULL);
    write_file(dir, "node0", "0-1,4\n");
    write_file(dir, "node1", "2-3,5-6\n");
    write_file(dir, "node2", "\n");
    write_file(dir, "node3", "x-1\n");
    write_file(dir, "nodes", "7\n");
    shi_numa_read(dir, &t);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);

    CHECK_MSG(t.nnodes == 2, "%d nodes", t.nnodes);
    int first = t.id[0] == 0 ? 0 : 1; // readdir's order is any
    CHECK(t.id[first] == 0 && t.id[1 - first] == 1);
    CHECK(CPU_COUNT(&t.cpus[first]) == 3 && CPU_ISSET(4, &t.cpus[first]));
    CHECK(CPU_COUNT(&t.cpus[1 - first]) == 4);

    cpu_set_t a = cpus((int[]) { 0, 1, 4 }, 3), b = cpus((int[]) { 2, 6 }, 2);
    cpu_set_t across = cpus((int[]) { 1, 2 }, 2), none = cpus(NULL, 0);
    cpu_set_t unknown = cpus((int[]) { 7 }, 1);
    CHECK(shi_numa_home(&t, &a) == 0);
    CHECK(shi_numa_home(&t, &b) == 1);
    CHECK(shi_numa_home(&t, &across) == -1);
    CHECK(shi_numa_home(&t, &none) == -1);
    CHECK(shi_numa_home(&t, &unknown) == -1);

    shi_numa_read("/nonexistent/shoal", &t);
    CHECK(t.nnodes == 0);
}

// The policy of the page at addr: its mode, and the mask's first word.
static int
policy_at(void *addr, unsigned long *mask)
{
    int mode = -1;

    CHECK(syscall(SYS_get_mempolicy, &mode, mask, 64 + 1, addr, MPOL_F_ADDR)
        == 0);
    return mode;
}

// The machine's own node 0 (every Linux machine has one): the policy is
// set on the memory of a shared mapping, as the kernel reports it; a node
// out of range or not online is refused with a message.
TEST(numa_prefer_sets_the_policy_of_a_shared_mapping)
{
    size_t         len = 2u << 20;
    unsigned char *p   = mmap(
          NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    unsigned long mask = 0;

    CHECK(p != MAP_FAILED);
    CHECK(policy_at(p, &mask) == MPOL_DEFAULT);
    CHECK_OK(shi_numa_prefer(p, len, 0));
    CHECK(policy_at(p + len / 2, &mask) == MPOL_PREFERRED);
    CHECK(mask == 1);
    CHECK_ST(shi_numa_prefer(p, len, SHI_NUMA_MAX_NODES), SHOAL_EINVAL);
    CHECK_ST(shi_numa_prefer(p, len, SHI_NUMA_MAX_NODES - 1), SHOAL_ESYS);
    CHECK(strstr(shoal_last_error(), "mbind") != NULL);
    munmap(p, len);
}

// Memory another process backed (a child that wrote it, then exited):
// moving it here maps its pages and gives them the node's policy; a node
// out of range is refused.
TEST(numa_move_takes_memory_another_process_backed)
{
    size_t         len = 1u << 20;
    unsigned char *p   = mmap(
          NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    unsigned long mask = 0;
    int           node = -1, status = -1;

    CHECK(p != MAP_FAILED);
    pid_t child = fork();
    if (child == 0) {
        memset(p, 7, len);
        _exit(0);
    }
    CHECK(child > 0 && waitpid(child, &status, 0) == child && status == 0);
    CHECK_OK(shi_numa_move(p, len, 0));
    CHECK(policy_at(p + len - 1, &mask) == MPOL_PREFERRED && mask == 1);
    CHECK(syscall(
              SYS_get_mempolicy, &node, NULL, 0, p, MPOL_F_NODE | MPOL_F_ADDR)
        == 0);
    CHECK(node == 0 && p[len - 1] == 7);
    CHECK_ST(shi_numa_move(p, len, SHI_NUMA_MAX_NODES), SHOAL_EINVAL);
    munmap(p, len);
}

static void
expect_case(const char *mode, const char *want)
{
    char        var[64];
    const char *env[] = { var, NULL };
    char       *out;
    int         rc;

    snprintf(var, sizeof(var), "SHOAL_SHM_NUMA=%s", mode);
    rc = test_run_mptest(2, "numa_heap", want, env, &out, 60);
    CHECK_MSG(rc == 0 && test_count(out, " OK\n") == 2,
        "case numa_heap %s with %s: exit %d\n%s", want, var, rc, out);
    free(out);
}

// Over a communicator: "on" places each rank's heap and its collectives'
// staging on its node (one node here), "auto" only where there are several
// nodes and the rank's CPUs lie in one (the case works that out), "off" never;
// a bad value fails the creation naming the variable.
TEST_T(numa_heap_placement_by_setting, 120)
{
    char                    *out;
    static const char *const bad[] = { "SHOAL_SHM_NUMA=always", NULL };

    expect_case("on", "preferred");
    expect_case("auto", "auto");
    expect_case("off", "default");
    int rc = test_run_mptest(2, "numa_heap", "default", bad, &out, 60);
    CHECK_MSG(rc != 0 && strstr(out, "SHOAL_SHM_NUMA=\"always\"") != NULL,
        "exit %d\n%s", rc, out);
    free(out);
}
