// This process's own TCP connections, as the kernel lists them.
#ifndef SHI_TCP_PEERS_H
#define SHI_TCP_PEERS_H

// The connections this process accepted on `port` whose other end is not
// a socket of this process: how many other processes are connected to a
// server of ours. Found through /proc/self/fd (getsockname, getpeername);
// -1 when that cannot be read.
int shi_tcp_foreign_peers(int port);

#endif
