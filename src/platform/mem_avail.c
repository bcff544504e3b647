// Reads /proc/meminfo and the memory cgroup of this process (see
// mem_avail.h). Every file is optional: what cannot be read is no limit.
#include "platform/mem_avail.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

// The first unsigned number in a file ("max" and the like: none).
static int
read_number(const char *path, uint64_t *out)
{
    FILE *f = fopen(path, "re");
    int   ok;

    if (f == NULL) {
        return -1;
    }
    ok = fscanf(f, "%" SCNu64, out) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

static int
meminfo_available(uint64_t *bytes)
{
    FILE    *f = fopen("/proc/meminfo", "re");
    char     line[128];
    uint64_t kib;
    int      found = -1;

    if (f == NULL) {
        return -1;
    }
    while (found < 0 && fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "MemAvailable: %" SCNu64 " kB", &kib) == 1) {
            *bytes = kib * 1024;
            found  = 0;
        }
    }
    fclose(f);
    return found;
}

// This process's cgroup path for the v1 "memory" controller (v1 = 1) or
// the v2 unified hierarchy (v1 = 0), from /proc/self/cgroup.
static int
cgroup_path(int v1, char *path, size_t len)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    char  line[512];
    int   found = -1;

    if (f == NULL) {
        return -1;
    }
    while (found < 0 && fgets(line, sizeof(line), f) != NULL) {
        const char *want = v1 ? ":memory:" : "0::";
        char       *at   = strstr(line, want);
        if (at != NULL && (v1 || at == line)) {
            snprintf(path, len, "%s", at + strlen(want));
            path[strcspn(path, "\n")] = '\0';
            found                     = 0;
        }
    }
    fclose(f);
    return found;
}

// Room under the cgroup's limit: limit - usage, for the files of v1 or v2.
static int
cgroup_room(uint64_t *bytes)
{
    static const struct {
        int         v1;
        const char *root, *limit, *usage;
    } kinds[] = {
        { 0, "/sys/fs/cgroup", "memory.max", "memory.current" },
        { 1, "/sys/fs/cgroup/memory", "memory.limit_in_bytes",
            "memory.usage_in_bytes" },
    };
    char     dir[512], file[700];
    uint64_t limit, usage;

    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (cgroup_path(kinds[i].v1, dir, sizeof(dir)) != 0) {
            continue;
        }
        snprintf(
            file, sizeof(file), "%s%s/%s", kinds[i].root, dir, kinds[i].limit);
        if (read_number(file, &limit) != 0) {
            continue;
        }
        snprintf(
            file, sizeof(file), "%s%s/%s", kinds[i].root, dir, kinds[i].usage);
        if (read_number(file, &usage) != 0) {
            continue;
        }
        *bytes = usage < limit ? limit - usage : 0;
        return 0;
    }
    return -1;
}

int
shi_memory_available(uint64_t *bytes)
{
    uint64_t system = 0, room = 0;
    int      have_system = meminfo_available(&system) == 0;
    int      have_room   = cgroup_room(&room) == 0;

    if (!have_system && !have_room) {
        return -1;
    }
    *bytes = !have_room ? system
        : !have_system  ? room
                        : (system < room ? system : room);
    return 0;
}
