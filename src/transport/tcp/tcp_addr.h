// The address a rank listens on for its peers (see tcp_addr.c).
#ifndef SHI_TCP_ADDR_H
#define SHI_TCP_ADDR_H

#include <stddef.h>

struct shoal_comm;

// Writes the IP address to listen on into ip. `one_host`: every rank runs
// on this host. Errors: SHOAL_EENV when SHOAL_SOCKET_IFNAME matches no
// interface (the message lists them).
int shi_tcp_pick_ip(
    struct shoal_comm *comm, int one_host, char *ip, size_t len);

// "10.0.0.2:4567" or "[fe80::1]:4567".
void shi_tcp_format_addr(const char *ip, int port, char *buf, size_t len);

#endif
