// Shared memory is backed when a communicator's segment is made, and
// shoal_alloc backs what it hands out: too little room (free memory, or the
// memory cgroup's limit) is SHOAL_ENOSPACE there, naming the settings,
// instead of the OOM killer later.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "algo/mapped/area.h"
#include "base/error.h"
#include "platform/mem_avail.h"
#include "test.h"
#include "transport/shm/shm_segment.h"

TEST(memory_available_is_known)
{
    uint64_t bytes = 0;

    CHECK(shi_memory_available(&bytes) == 0);
    CHECK(bytes > 0);
}

// A v1 or v2 memory cgroup of our own with `limit` bytes; "" if none can
// be made (not root, no writable cgroup file system).
static void
make_cgroup(char *dir, size_t len, const char *limit)
{
    static const struct {
        const char *root, *file;
    } kinds[] = { { "/sys/fs/cgroup/memory", "memory.limit_in_bytes" },
        { "/sys/fs/cgroup", "memory.max" } };
    char file[300];

    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        snprintf(dir, len, "%s/shoal-test-%d", kinds[i].root, (int) getpid());
        if (mkdir(dir, 0755) != 0) {
            continue;
        }
        snprintf(file, sizeof(file), "%s/%s", dir, kinds[i].file);
        FILE *f = fopen(file, "w");
        if (f != NULL && fputs(limit, f) >= 0 && fclose(f) == 0) {
            return;
        }
        rmdir(dir);
    }
    dir[0] = '\0';
}

// In a child inside a 200 MiB cgroup: a 4-rank segment with 512 MiB of
// staging per rank must be refused with a message, and the child live.
TEST(shm_segment_too_big_for_the_cgroup_is_refused)
{
    char  dir[256], procs[300];
    int   status;
    pid_t pid;

    make_cgroup(dir, sizeof(dir), "209715200");
    if (dir[0] == '\0') {
        SKIP("cannot make a memory cgroup here (not root?)");
    }
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
    if ((pid = fork()) == 0) {
        shm_segment        seg;
        struct shi_tp_area area;
        int                fd;
        FILE              *f = fopen(procs, "w");
        if (f == NULL || fprintf(f, "%d", (int) getpid()) < 0
            || fclose(f) != 0) {
            _exit(3);
        }
        setenv("SHOAL_SHM_BYTES", "512M", 1);
        int st = shi_area_plan(4, &area);
        if (st == SHOAL_OK) {
            st = shm_segment_create(&seg, 4, &area, &fd);
        }
        if (st != SHOAL_ENOSPACE
            || strstr(shi_error_text(), "SHOAL_SHM_BYTES") == NULL) {
            fprintf(stderr, "got %d: %s\n", st, shi_error_text());
            _exit(1);
        }
        _exit(0);
    }
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    rmdir(dir);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %s %d",
        WIFEXITED(status) ? "exit" : "signal",
        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

// In a child inside a 200 MiB cgroup, a one-rank communicator: a 64 MiB
// shoal_alloc works, a 512 MiB one is refused with a message (the heap is
// shared memory charged to the cgroup), and the child lives on.
TEST(shoal_alloc_beyond_the_cgroup_is_refused)
{
    char  dir[256], procs[300], store[64];
    int   status;
    pid_t pid;

    make_cgroup(dir, sizeof(dir), "209715200");
    if (dir[0] == '\0') {
        SKIP("cannot make a memory cgroup here (not root?)");
    }
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
    snprintf(store, sizeof(store), "/tmp/shoal-alloc-cg-%d", (int) getpid());
    if ((pid = fork()) == 0) {
        shoal_config cfg   = SHOAL_CONFIG_INIT;
        shoal_comm  *comm  = NULL;
        void        *small = NULL, *big = NULL;
        FILE        *f = fopen(procs, "w");
        if (f == NULL || fprintf(f, "%d", (int) getpid()) < 0
            || fclose(f) != 0) {
            _exit(3);
        }
        cfg.rank   = 0;
        cfg.nranks = 1;
        cfg.store  = store;
        cfg.secret = "cgroup-test";
        if (shoal_comm_create(&comm, &cfg) != SHOAL_OK
            || shoal_alloc(comm, 64u << 20, &small) != SHOAL_OK) {
            fprintf(stderr, "setup: %s\n", shi_error_text());
            _exit(2);
        }
        int st = shoal_alloc(comm, 512u << 20, &big);
        if (st != SHOAL_ENOSPACE || big != NULL
            || strstr(shi_error_text(), "cgroup") == NULL) {
            fprintf(stderr, "got %d: %s\n", st, shi_error_text());
            _exit(1);
        }
        shoal_free(comm, small);
        shoal_comm_destroy(comm);
        _exit(0);
    }
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    rmdir(dir);
    unlink(store);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %s %d",
        WIFEXITED(status) ? "exit" : "signal",
        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}
