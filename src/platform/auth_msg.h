// The job-secret handshake's messages, for callers that run it without
// blocking (the store server's per-connection state machine). shi_auth_server
// and shi_auth_client (auth.h) are the blocking form of the same exchange.
//
// Three fixed-size messages, all starting with an 8-byte magic and a
// big-endian u16 version, so a peer that is not shoal is told apart:
//   hello  server -> client  magic ver has_secret pad  ns[32]
//   proof  client -> server  magic ver has_secret pad  nc[32] mac_c[32]
//   reply  server -> client  magic ver verdict    pad  mac_s[32]
// mac_c = HMAC-SHA256(key, "client" || ns || nc),
// mac_s = HMAC-SHA256(key, "server" || nc || ns), key = SHA-256(secret).
// Without a secret on either side the MACs are zero and only the magic,
// version and flags are checked.
#ifndef SHI_AUTH_MSG_H
#define SHI_AUTH_MSG_H

#include <stddef.h>

#include "platform/auth.h"

#define SHI_AUTH_NONCE_LEN 32
#define SHI_AUTH_HELLO_LEN 44
#define SHI_AUTH_PROOF_LEN 76
#define SHI_AUTH_REPLY_LEN 44

// Server, step 1: draws a nonce into `ns` and builds the hello.
int shi_auth_make_hello(const shi_secret *secret,
    unsigned char                         ns[SHI_AUTH_NONCE_LEN],
    unsigned char                         hello[SHI_AUTH_HELLO_LEN]);

// True if the first n bytes received could begin a handshake message (the
// magic matches so far): lets a server drop garbage at its first byte.
int shi_auth_prefix_ok(const void *buf, size_t n);

// Server, step 2: checks the client's proof against `ns` and fills `reply`
// (always: on failure it carries the verdict, so the client can say why).
// Returns SHOAL_OK, SHOAL_EAUTH or SHOAL_EPROTO with a message naming
// `peer`.
int shi_auth_check_proof(const shi_secret *secret,
    const unsigned char                    ns[SHI_AUTH_NONCE_LEN],
    const unsigned char                    proof[SHI_AUTH_PROOF_LEN],
    unsigned char reply[SHI_AUTH_REPLY_LEN], const char *peer);

// Server, step 2, for the connection `fd`: shi_auth_check_proof, and
// without a secret also the check that a client on this host runs as our
// user (auth.h); a refusal's verdict goes in `reply` as well. Every server
// with a socket should use this form.
int shi_auth_check_proof_fd(int fd, const shi_secret *secret,
    const unsigned char ns[SHI_AUTH_NONCE_LEN],
    const unsigned char proof[SHI_AUTH_PROOF_LEN],
    unsigned char reply[SHI_AUTH_REPLY_LEN], const char *peer);

#endif
