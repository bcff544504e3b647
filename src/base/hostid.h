// Host identity: ranks with the same identity share memory. The hostname
// alone is not enough inside containers, so the boot id and the IPC and
// network namespaces (abstract unix sockets live in the latter) are added.
#ifndef SHI_HOSTID_H
#define SHI_HOSTID_H

#include <stddef.h>

#define SHI_HOSTID_MAX 256

// Writes this process's host identity into buf[SHI_HOSTID_MAX].
void shi_host_identity(char *buf);

// Writes the hostname part of an identity into buf (for messages).
void shi_host_name_of(const char *identity, char *buf, size_t len);

#endif
