// Socket helpers with deadlines (clock.h). All return shoal statuses and
// record a message with shi_error naming the address involved.
#ifndef SHI_NET_H
#define SHI_NET_H

#include <stddef.h>
#include <stdint.h>

// Splits "host:port" (IPv4, name, or "[v6]:port").
int shi_parse_host_port(
    const char *addr, char *host, size_t host_len, int *port);

// Listens on host:port (host NULL: all interfaces; port 0: ephemeral).
// Returns the fd in *fd and the bound port in *bound_port. SO_REUSEADDR and
// close-on-exec are set; the socket is left in blocking mode. With host
// NULL an IPv6 socket also accepts IPv4 (IPV6_V6ONLY off).
int shi_tcp_listen(
    const char *host, int port, int backlog, int *fd, int *bound_port);

// Connects to host:port, retrying with backoff (10 ms doubling to 1 s)
// while the peer refuses or is unreachable, until `deadline`. TCP_NODELAY
// and close-on-exec are set; the returned socket is in blocking mode.
// SHOAL_ECONNECT names the address tried and how long it tried; a
// non-transient failure (e.g. EACCES) ends the retries early.
int shi_tcp_connect(const char *host, int port, int64_t deadline, int *fd);

// Writes/reads exactly len bytes, waiting with poll(2) until `deadline`.
// A closed connection gives SHOAL_EPEER; a passed deadline SHOAL_ETIMEDOUT.
// Deadlines hold on blocking sockets too (MSG_DONTWAIT + poll); writes never
// raise SIGPIPE (MSG_NOSIGNAL). On an error, part of buf may have moved.
int shi_write_all(int fd, const void *buf, size_t len, int64_t deadline);
int shi_read_all(int fd, void *buf, size_t len, int64_t deadline);

// Writes the remote address of socket `fd` as "10.0.0.2:41234" (IPv6:
// "[::1]:41234") into buf, or "fd N" if it has none; for messages.
void shi_socket_peer_name(int fd, char *buf, size_t len);

// Raises this process's soft limit on open descriptors to its hard limit
// (a launcher's pipes, a store server's connections); quiet if it cannot.
void shi_raise_fd_limit(void);

#endif
