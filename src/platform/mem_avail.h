// How much memory this process could still get: the lower of the system's
// MemAvailable and the room left under its memory cgroup's limit (v1 or
// v2). Lets shared memory be refused with a message at creation, where
// asking the kernel for it would bring the OOM killer instead.
#ifndef SHI_PLATFORM_MEM_AVAIL_H
#define SHI_PLATFORM_MEM_AVAIL_H

#include <stdint.h>

// Returns 0 with *bytes set, or -1 when nothing could be read.
int shi_memory_available(uint64_t *bytes);

#endif
