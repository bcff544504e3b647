// Host identity (see hostid.h).
#include "hostid.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void
read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");

    buf[0] = '\0';
    if (f == NULL) {
        return;
    }
    if (fgets(buf, (int) len, f) != NULL) {
        buf[strcspn(buf, "\n")] = '\0';
    }
    fclose(f);
}

static unsigned long
namespace_inode(const char *path)
{
    struct stat sb;

    return stat(path, &sb) == 0 ? (unsigned long) sb.st_ino : 0;
}

void
shi_host_identity(char *buf)
{
    char host[128], boot[64];

    if (gethostname(host, sizeof(host)) != 0) {
        strcpy(host, "unknown");
    }
    host[sizeof(host) - 1] = '\0';
    read_line("/proc/sys/kernel/random/boot_id", boot, sizeof(boot));
    snprintf(buf, SHI_HOSTID_MAX, "%s|%s|ipc:%lu|net:%lu", host, boot,
        namespace_inode("/proc/self/ns/ipc"),
        namespace_inode("/proc/self/ns/net"));
}

void
shi_host_name_of(const char *identity, char *buf, size_t len)
{
    size_t n = strcspn(identity, "|");

    if (n >= len) {
        n = len - 1;
    }
    memcpy(buf, identity, n);
    buf[n] = '\0';
}
