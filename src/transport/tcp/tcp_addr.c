// Which address a rank listens on for its peers: SHOAL_SOCKET_IFNAME names
// the interface (as NCCL_SOCKET_IFNAME does: "eth0", a prefix "eth", a
// list "eth0,ib0", or "^docker,lo" to exclude); otherwise the address this
// rank uses to reach the store, which the other hosts reach too; with a
// file store, loopback when every rank is on this host, else the first
// interface that is up and not loopback.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "store/store.h"
#include "transport/tcp/tcp_addr.h"
#include "transport/upcalls.h"

// Does interface `name` match one item of the comma-separated `list`
// (exact name or prefix)?
static int
list_matches(const char *list, const char *name)
{
    const char *p = list;

    while (*p != '\0') {
        size_t n = strcspn(p, ",");
        if (n > 0 && strncmp(name, p, n) == 0) {
            return 1;
        }
        p += n + (p[n] == ',');
    }
    return 0;
}

static int
wanted(const char *spec, const char *name, int flags)
{
    if (!(flags & IFF_UP)) {
        return 0;
    }
    if (spec == NULL) {
        return !(flags & IFF_LOOPBACK);
    }
    if (spec[0] == '^') {
        return !list_matches(spec + 1, name);
    }
    return list_matches(spec, name);
}

// The first IPv4 (then IPv6) address of an interface `spec` selects.
static int
pick_interface(const char *spec, char *ip, size_t len)
{
    struct ifaddrs *all, *a;
    char            seen[256] = "";
    int             found     = 0;

    if (getifaddrs(&all) != 0) {
        return shi_error(SHOAL_ESYS, "getifaddrs failed");
    }
    for (int family = AF_INET; !found && family != 0;
         family     = family == AF_INET ? AF_INET6 : 0) {
        for (a = all; a != NULL && !found; a = a->ifa_next) {
            if (a->ifa_addr == NULL || a->ifa_addr->sa_family != family) {
                continue;
            }
            if (family == AF_INET && strstr(seen, a->ifa_name) == NULL
                && strlen(seen) + strlen(a->ifa_name) + 2 < sizeof(seen)) {
                strcat(seen, seen[0] ? ", " : "");
                strcat(seen, a->ifa_name);
            }
            if (!wanted(spec, a->ifa_name, (int) a->ifa_flags)) {
                continue;
            }
            const void *in = family == AF_INET
                ? (const void *) &((struct sockaddr_in *) a->ifa_addr)
                      ->sin_addr
                : (const void *) &((struct sockaddr_in6 *) a->ifa_addr)
                      ->sin6_addr;
            found = inet_ntop(family, in, ip, (socklen_t) len) != NULL;
        }
    }
    freeifaddrs(all);
    if (!found) {
        return shi_error(SHOAL_EENV,
            "no network interface that is up matches %s%s (interfaces: %s)",
            spec ? "SHOAL_SOCKET_IFNAME=" : "", spec ? spec : "non-loopback",
            seen[0] ? seen : "none");
    }
    return SHOAL_OK;
}

int
shi_tcp_pick_ip(shoal_comm *comm, int one_host, char *ip, size_t len)
{
    const char *spec = getenv("SHOAL_SOCKET_IFNAME");

    if (spec != NULL && spec[0] != '\0') {
        return pick_interface(spec, ip, len);
    }
    if (shi_store_local_ip(shi_comm_store(comm), ip, len) == SHOAL_OK) {
        return SHOAL_OK;
    }
    if (one_host) {
        snprintf(ip, len, "127.0.0.1");
        return SHOAL_OK;
    }
    return pick_interface(NULL, ip, len);
}

void
shi_tcp_format_addr(const char *ip, int port, char *buf, size_t len)
{
    snprintf(buf, len, strchr(ip, ':') ? "[%s]:%d" : "%s:%d", ip, port);
}
