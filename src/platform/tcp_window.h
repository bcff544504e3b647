// The send window a TCP peer last advertised, which tells a peer whose
// host answers but whose process reads nothing (stopped, stuck) from one
// whose link or host is down.
#ifndef SHI_PLATFORM_TCP_WINDOW_H
#define SHI_PLATFORM_TCP_WINDOW_H

#include <stdint.h>

// *wnd: the peer's advertised receive window in bytes (after scaling).
// Returns 0, or -1 when the kernel does not report it (before Linux 5.4)
// or the socket is not TCP.
int shi_tcp_peer_window(int fd, uint32_t *wnd);

#endif
