// Which user owns the other end of a TCP connection, when that end is on
// this host. Without a job secret this is what tells a job's own processes
// from other users' (unix sockets have SO_PEERCRED; TCP has nothing like it,
// but the kernel's socket diagnostics, which `ss -e` reads, report the owner
// of every socket).
#ifndef SHI_SOCK_OWNER_H
#define SHI_SOCK_OWNER_H

#include <sys/types.h>

// For a connected TCP socket `fd` (accepted or connected; IPv4 or IPv6):
// asks NETLINK_SOCK_DIAG for the socket at the other end, named by the
// connection's 4-tuple swapped. When this host holds it, sets *is_local = 1
// and *uid to its owner (the user whose process created it, or accepted it).
// When the peer address is not this host's (not 127.0.0.0/8, ::1 or an
// address of a local interface) and no such socket exists, sets
// *is_local = 0: a peer on another host, whose user cannot be known.
//
// Returns SHOAL_OK, or:
//   SHOAL_ENOTSUP  socket diagnostics are unavailable (a kernel without
//                  inet_diag/tcp_diag, a sandbox refusing NETLINK_SOCK_DIAG):
//                  the caller decides what to do without an answer;
//   SHOAL_EPEER    the peer is on this host but its socket is closed or not
//                  yet accepted, so it has no owner; or the connection was
//                  reset (it may still hold data to read);
//   SHOAL_EINVAL   fd is not a TCP socket;
//   SHOAL_ESYS     a system call failed, or the kernel did not answer within
//                  a second.
// Each with a message (shi_error). After an error, *is_local means nothing
// and the peer's user is unknown.
int shi_tcp_peer_uid(int fd, uid_t *uid, int *is_local);

#endif
