// Unix-domain stream sockets in the abstract namespace (no file is ever
// created, so nothing is left behind when a process is killed), with
// descriptor passing and peer credentials.
#ifndef SHI_UNIX_SOCK_H
#define SHI_UNIX_SOCK_H

#include <stdint.h>
#include <sys/types.h>

#define SHI_UNIX_NAME_MAX 100

// Listens on a fresh abstract address; writes its printable name (without
// the leading NUL) to name[SHI_UNIX_NAME_MAX].
int shi_unix_listen(int *fd, char *name, int backlog);

// Connects to the abstract address `name`, retrying until `deadline` while
// nobody listens yet.
int shi_unix_connect(const char *name, int64_t deadline, int *fd);

// Accepts one connection, waiting until `deadline`.
int shi_unix_accept(int listen_fd, int64_t deadline, int *fd);

// Sends `fd_to_send` with a small payload; receives it (the descriptor is
// returned close-on-exec).
int shi_unix_send_fd(int sock, int fd_to_send, const void *payload, size_t len,
    int64_t deadline);
int shi_unix_recv_fd(
    int sock, int *fd_received, void *payload, size_t len, int64_t deadline);

// Fails with SHOAL_EAUTH unless the peer of `sock` runs as our user.
int shi_unix_check_peer_uid(int sock);

#endif
