// Job-secret handshake: proves, in both directions, that each end of a fresh
// connection knows the job secret, without sending it. Each side sends a
// random nonce; each answers with HMAC-SHA256(key, role || nonces), where
// key = SHA-256(secret). Used by the store and between ranks.
#ifndef SHI_AUTH_H
#define SHI_AUTH_H

#include <stdint.h>

typedef struct shi_secret {
    int           set; // 0: no secret (connections unauthenticated)
    unsigned char key[32]; // SHA-256 of the secret string
} shi_secret;

// Derives a secret from `text`. NULL or "" gives an unset secret (and
// warns once per process that connections are not authenticated).
int shi_secret_from_string(shi_secret *out, const char *text);

// Fills buf with n cryptographically random bytes.
int shi_random_bytes(void *buf, int n);

// Runs the handshake on a connected, blocking-or-not socket `fd` as the
// accepting side (server) or the connecting side (client). `peer` names the
// other end for messages ("store at 10.0.0.1:29500"). Both ends must agree
// on whether a secret is set. Without a secret, each side refuses a peer on
// this host that runs as another user than geteuid() (unix sockets:
// SO_PEERCRED; TCP: the kernel's socket diagnostics), and allows peers on
// other hosts, whose user cannot be known. Errors: SHOAL_EAUTH (proof wrong
// or missing, only one side has a secret, or a local peer of another user),
// SHOAL_EPROTO (not a shoal peer), SHOAL_ETIMEDOUT, SHOAL_EPEER (connection
// closed).
int shi_auth_server(
    int fd, const shi_secret *secret, const char *peer, int64_t deadline);
int shi_auth_client(
    int fd, const shi_secret *secret, const char *peer, int64_t deadline);

// For transports whose connections cannot run the socket handshake
// (UCX): each rank draws a nonce and publishes it through the store (which
// the secret guards); rank `from` proves the secret to rank `to` with a
// token, HMAC-SHA256(key, "peer" || to's nonce || from's nonce), that
// `to` checks. Without a secret the token is zeros and every token passes
// (as every peer on another host does over TCP without one).
#define SHI_AUTH_PEER_NONCE_LEN 32
#define SHI_AUTH_PEER_TOKEN_LEN 32
int shi_auth_peer_token(const shi_secret *secret,
    const unsigned char                   to_nonce[SHI_AUTH_PEER_NONCE_LEN],
    const unsigned char                   from_nonce[SHI_AUTH_PEER_NONCE_LEN],
    unsigned char                         token[SHI_AUTH_PEER_TOKEN_LEN]);
// SHOAL_OK, or SHOAL_EAUTH naming `peer` when the token is wrong.
int shi_auth_peer_token_ok(const shi_secret *secret,
    const unsigned char                      to_nonce[SHI_AUTH_PEER_NONCE_LEN],
    const unsigned char from_nonce[SHI_AUTH_PEER_NONCE_LEN],
    const unsigned char token[SHI_AUTH_PEER_TOKEN_LEN], const char *peer);

#endif
