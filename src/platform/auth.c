// Job-secret handshake (see auth.h for the purpose, auth_msg.h for the
// messages). All cryptography is OpenSSL's libcrypto: SHA-256 for the key,
// HMAC-SHA256 for the proofs, RAND_bytes for nonces, CRYPTO_memcmp to
// compare MACs in constant time.
//
// Without a secret there are no proofs, and the one thing that tells this
// job's processes from strangers is who owns the other end of a connection
// on this host (every rank, the launcher and the store server run as one
// user): each side refuses a peer on this host that runs as another user.
#include "platform/auth.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "base/error.h"
#include "base/log.h"
#include "platform/auth_msg.h"
#include "platform/net.h"
#include "platform/sock_owner.h"
#include "shoal.h"

#define AUTH_MAGIC     "shoalHS\x01"
#define AUTH_MAGIC_LEN 8
#define AUTH_VERSION   1
#define AUTH_MAC_LEN   32

// Offsets shared by the three messages.
#define AUTH_OFF_VERSION 8
#define AUTH_OFF_FLAG    10
#define AUTH_OFF_BODY    12

// Verdicts in the server's reply.
enum auth_verdict {
    AUTH_OK          = 0,
    AUTH_BAD_PROOF   = 1,
    AUTH_SERVER_ONLY = 2, // server has a secret, client has none
    AUTH_CLIENT_ONLY = 3, // client has a secret, server has none
    AUTH_BAD_VERSION = 4,
    AUTH_OTHER_USER  = 5, // no secret, and the client runs as another user
    AUTH_NO_OWNER    = 6, // no secret, and the client's user is unknown
};

#define AUTH_SAME_SECRET_HINT                                                 \
    "set the same SHOAL_SECRET on every rank (and on the launcher or store "  \
    "server)"

static int auth_unset_warned, auth_no_diag_warned;

int
shi_secret_from_string(shi_secret *out, const char *text)
{
    memset(out, 0, sizeof(*out));
    if (text == NULL || text[0] == '\0') {
        shi_log_warn_once(&auth_unset_warned,
            "SHOAL_SECRET is not set: connections to the store and between "
            "ranks are not authenticated. Processes of other users on this "
            "host are refused, but anyone who can reach the store's or a "
            "rank's port from another host can read and overwrite the "
            "store's keys and pose as a rank. Set one secret, the same on "
            "every rank and node, before the launcher starts: torchrun: "
            "'export SHOAL_SECRET=$(openssl rand -hex 32)' in the job script "
            "before torchrun (made once and passed to every node, e.g. "
            "before 'srun torchrun'); srun: export it before srun (srun "
            "passes the environment on by default); mpirun: export it, then "
            "'mpirun -x SHOAL_SECRET' (Open MPI) or 'mpirun -genv "
            "SHOAL_SECRET \"$SHOAL_SECRET\"' (MPICH). shoalrun makes one "
            "itself");
        return SHOAL_OK;
    }
    if (SHA256((const unsigned char *) text, strlen(text), out->key) == NULL) {
        return shi_error(SHOAL_ESYS, "SHA-256 of the job secret failed");
    }
    out->set = 1;
    return SHOAL_OK;
}

int
shi_random_bytes(void *buf, int n)
{
    if (n < 0) {
        return shi_error(SHOAL_EINVAL, "random byte count %d < 0", n);
    }
    if (n > 0 && RAND_bytes(buf, n) != 1) {
        char why[256];
        ERR_error_string_n(ERR_get_error(), why, sizeof(why));
        return shi_error(
            SHOAL_ESYS, "OpenSSL could not produce random bytes: %s", why);
    }
    return SHOAL_OK;
}

static int
auth_has_secret(const shi_secret *secret)
{
    return secret != NULL && secret->set;
}

// HMAC-SHA256(key, role || a || b).
static int
auth_mac(const shi_secret *secret, const char *role, const unsigned char *a,
    const unsigned char *b, unsigned char out[AUTH_MAC_LEN])
{
    unsigned char data[8 + 2 * SHI_AUTH_NONCE_LEN];
    size_t        rl     = strlen(role);
    unsigned int  outlen = 0;

    memcpy(data, role, rl);
    memcpy(data + rl, a, SHI_AUTH_NONCE_LEN);
    memcpy(data + rl + SHI_AUTH_NONCE_LEN, b, SHI_AUTH_NONCE_LEN);
    if (HMAC(EVP_sha256(), secret->key, sizeof(secret->key), data,
            rl + 2 * SHI_AUTH_NONCE_LEN, out, &outlen)
            == NULL
        || outlen != AUTH_MAC_LEN) {
        return shi_error(SHOAL_ESYS, "HMAC-SHA256 failed");
    }
    return SHOAL_OK;
}

static void
auth_put_header(unsigned char *msg, int flag)
{
    memcpy(msg, AUTH_MAGIC, AUTH_MAGIC_LEN);
    msg[AUTH_OFF_VERSION]     = (unsigned char) (AUTH_VERSION >> 8);
    msg[AUTH_OFF_VERSION + 1] = (unsigned char) (AUTH_VERSION & 0xff);
    msg[AUTH_OFF_FLAG]        = (unsigned char) flag;
    msg[AUTH_OFF_FLAG + 1]    = 0;
}

int
shi_auth_prefix_ok(const void *buf, size_t n)
{
    return memcmp(buf, AUTH_MAGIC, n < AUTH_MAGIC_LEN ? n : AUTH_MAGIC_LEN)
        == 0;
}

// Checks magic and version of a received message.
static int
auth_check_header(const unsigned char *msg, const char *what, const char *peer)
{
    int version;

    if (!shi_auth_prefix_ok(msg, AUTH_MAGIC_LEN)) {
        return shi_error(SHOAL_EPROTO,
            "%s sent bytes that are not a shoal handshake %s: it is not a "
            "shoal store or rank (check the address and port)",
            peer, what);
    }
    version = msg[AUTH_OFF_VERSION] << 8 | msg[AUTH_OFF_VERSION + 1];
    if (version != AUTH_VERSION) {
        return shi_error(SHOAL_EPROTO,
            "%s speaks handshake version %d, this process version %d: use "
            "the same shoal release on every rank",
            peer, version, AUTH_VERSION);
    }
    return SHOAL_OK;
}

int
shi_auth_make_hello(const shi_secret *secret,
    unsigned char                     ns[SHI_AUTH_NONCE_LEN],
    unsigned char                     hello[SHI_AUTH_HELLO_LEN])
{
    int rc = shi_random_bytes(ns, SHI_AUTH_NONCE_LEN);

    if (rc != SHOAL_OK) {
        return rc;
    }
    auth_put_header(hello, auth_has_secret(secret));
    memcpy(hello + AUTH_OFF_BODY, ns, SHI_AUTH_NONCE_LEN);
    return SHOAL_OK;
}

int
shi_auth_check_proof(const shi_secret *secret,
    const unsigned char                ns[SHI_AUTH_NONCE_LEN],
    const unsigned char                proof[SHI_AUTH_PROOF_LEN],
    unsigned char reply[SHI_AUTH_REPLY_LEN], const char *peer)
{
    const unsigned char *nc  = proof + AUTH_OFF_BODY;
    const unsigned char *mac = nc + SHI_AUTH_NONCE_LEN;
    unsigned char        want[AUTH_MAC_LEN];
    int                  mine = auth_has_secret(secret), theirs, rc;

    memset(reply, 0, SHI_AUTH_REPLY_LEN);
    rc = auth_check_header(proof, "proof", peer);
    if (rc != SHOAL_OK) {
        auth_put_header(reply, AUTH_BAD_VERSION);
        return rc;
    }
    theirs = proof[AUTH_OFF_FLAG] != 0;
    if (mine && !theirs) {
        auth_put_header(reply, AUTH_SERVER_ONLY);
        return shi_error(SHOAL_EAUTH,
            "%s has no job secret but this process requires "
            "one; " AUTH_SAME_SECRET_HINT,
            peer);
    }
    if (!mine && theirs) {
        auth_put_header(reply, AUTH_CLIENT_ONLY);
        return shi_error(SHOAL_EAUTH,
            "%s has a job secret but this process has "
            "none; " AUTH_SAME_SECRET_HINT,
            peer);
    }
    if (mine) {
        rc = auth_mac(secret, "client", ns, nc, want);
        if (rc != SHOAL_OK) {
            auth_put_header(reply, AUTH_BAD_PROOF);
            return rc;
        }
        if (CRYPTO_memcmp(want, mac, AUTH_MAC_LEN) != 0) {
            auth_put_header(reply, AUTH_BAD_PROOF);
            return shi_error(SHOAL_EAUTH,
                "%s failed to prove the job secret (its SHOAL_SECRET "
                "differs); " AUTH_SAME_SECRET_HINT,
                peer);
        }
        rc = auth_mac(secret, "server", nc, ns, reply + AUTH_OFF_BODY);
        if (rc != SHOAL_OK) {
            auth_put_header(reply, AUTH_BAD_PROOF);
            return rc;
        }
    }
    auth_put_header(reply, AUTH_OK);
    return SHOAL_OK;
}

// The user of the process at the other end of `fd`, where the kernel can
// tell: SO_PEERCRED for unix sockets, socket diagnostics for TCP. *known 0:
// a peer on another host, or fd is no socket.
static int
auth_peer_owner(int fd, uid_t *uid, int *known)
{
    struct sockaddr_storage ss;
    socklen_t               len = sizeof(ss);
    struct ucred            cred;
    socklen_t               clen = sizeof(cred);

    *known = 0;
    if (getsockname(fd, (struct sockaddr *) &ss, &len) != 0) {
        return SHOAL_OK; // not a socket: no peer to ask about
    }
    if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) {
        return shi_tcp_peer_uid(fd, uid, known);
    }
    if (ss.ss_family != AF_UNIX) {
        return SHOAL_OK;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0) {
        return shi_error(SHOAL_ESYS, "SO_PEERCRED: %s", strerror(errno));
    }
    *uid   = cred.uid;
    *known = 1;
    return SHOAL_OK;
}

// SHOAL_OK if the peer on `fd` may talk to this process without a secret:
// it is on another host, or runs as our user. Else SHOAL_EAUTH with
// *other its user, or the error that kept us from knowing. Root is no
// exception unless we are root: a root process that is not part of the job
// is a stranger like any other, and one job rank run as root by mistake had
// better fail here, loudly, than half join.
static int
auth_check_owner(int fd, const char *peer, uid_t *other)
{
    uid_t uid = 0;
    int   known, rc = auth_peer_owner(fd, &uid, &known);

    if (rc == SHOAL_ENOTSUP) {
        // Refusing every local connection would stop every job on such a
        // kernel (old, or sandboxed); the warning says what goes unchecked.
        shi_log_warn_once(&auth_no_diag_warned,
            "%s: without SHOAL_SECRET, TCP connections from other users on "
            "this host cannot be told apart and are not refused; set "
            "SHOAL_SECRET to authenticate them",
            shi_error_text());
        return SHOAL_OK;
    }
    if (rc != SHOAL_OK) {
        return shi_error_wrap(rc, "cannot tell which user runs %s", peer);
    }
    if (!known || uid == geteuid()) {
        return SHOAL_OK;
    }
    *other = uid;
    return SHOAL_EAUTH;
}

int
shi_auth_check_proof_fd(int fd, const shi_secret *secret,
    const unsigned char ns[SHI_AUTH_NONCE_LEN],
    const unsigned char proof[SHI_AUTH_PROOF_LEN],
    unsigned char reply[SHI_AUTH_REPLY_LEN], const char *peer)
{
    uid_t other = 0;
    int   rc    = shi_auth_check_proof(secret, ns, proof, reply, peer);

    if (rc != SHOAL_OK || auth_has_secret(secret)) {
        return rc; // with a secret, the proof alone decides
    }
    rc = auth_check_owner(fd, peer, &other);
    if (rc == SHOAL_OK) {
        return SHOAL_OK;
    }
    memset(reply, 0, SHI_AUTH_REPLY_LEN);
    auth_put_header(
        reply, rc == SHOAL_EAUTH ? AUTH_OTHER_USER : AUTH_NO_OWNER);
    if (rc != SHOAL_EAUTH) {
        return rc;
    }
    return shi_error(SHOAL_EAUTH,
        "%s is a process of user %u on this host, not of this process's user "
        "%u: without a job secret only the same user may connect; to allow "
        "it, " AUTH_SAME_SECRET_HINT,
        peer, (unsigned) other, (unsigned) geteuid());
}

// Before a client without a secret trusts a server on this host, that
// server must run as our user: another user could pose as the store or a
// rank (by listening on its port first) and feed the job false addresses
// and data, or collect what the job sends.
static int
auth_check_server_owner(int fd, const char *peer)
{
    uid_t other = 0;
    int   rc    = auth_check_owner(fd, peer, &other);

    if (rc != SHOAL_EAUTH) {
        return rc;
    }
    return shi_error(SHOAL_EAUTH,
        "%s is served by a process of user %u on this host, not of this "
        "process's user %u (another user may be posing as it): without a "
        "job secret only the same user is trusted; if it is meant to "
        "serve this job, " AUTH_SAME_SECRET_HINT,
        peer, (unsigned) other, (unsigned) geteuid());
}

int
shi_auth_server(
    int fd, const shi_secret *secret, const char *peer, int64_t deadline)
{
    unsigned char ns[SHI_AUTH_NONCE_LEN];
    unsigned char hello[SHI_AUTH_HELLO_LEN];
    unsigned char proof[SHI_AUTH_PROOF_LEN];
    unsigned char reply[SHI_AUTH_REPLY_LEN];
    char          why[SHI_ERROR_TEXT_MAX];
    int           rc, sent;

    rc = shi_auth_make_hello(secret, ns, hello);
    if (rc == SHOAL_OK) {
        rc = shi_write_all(fd, hello, sizeof(hello), deadline);
    }
    if (rc == SHOAL_OK) {
        rc = shi_read_all(fd, proof, sizeof(proof), deadline);
    }
    if (rc != SHOAL_OK) {
        return shi_error_wrap(rc, "handshake with %s", peer);
    }
    rc = shi_auth_check_proof_fd(fd, secret, ns, proof, reply, peer);
    if (rc == SHOAL_OK) {
        sent = shi_write_all(fd, reply, sizeof(reply), deadline);
        return sent == SHOAL_OK
            ? SHOAL_OK
            : shi_error_wrap(sent, "handshake with %s", peer);
    }
    // The refusal goes out too, so the client can say why; a client that
    // has already given up is no error of ours, and keeps our message.
    snprintf(why, sizeof(why), "%s", shi_error_text());
    shi_write_all(fd, reply, sizeof(reply), deadline);
    return shi_error(rc, "%s", why);
}

// The client's reading of a refusing verdict.
static int
auth_refused(int verdict, const char *peer)
{
    switch (verdict) {
        case AUTH_SERVER_ONLY:
            return shi_error(SHOAL_EAUTH,
                "%s requires a job secret but this process has "
                "none; " AUTH_SAME_SECRET_HINT,
                peer);
        case AUTH_CLIENT_ONLY:
            return shi_error(SHOAL_EAUTH,
                "%s runs without a job secret but this process has "
                "one; " AUTH_SAME_SECRET_HINT,
                peer);
        case AUTH_BAD_VERSION:
            return shi_error(SHOAL_EPROTO,
                "%s refused this process's handshake version %d: use the "
                "same shoal release on every rank",
                peer, AUTH_VERSION);
        case AUTH_OTHER_USER:
            return shi_error(SHOAL_EAUTH,
                "%s refused this process because it runs as another user "
                "(%u): without a job secret only the server's own user may "
                "connect from its host; " AUTH_SAME_SECRET_HINT,
                peer, (unsigned) geteuid());
        case AUTH_NO_OWNER:
            return shi_error(SHOAL_EAUTH,
                "%s refused this process: without a job secret it must "
                "check which user runs a connection from its host, and "
                "could not (its log says why); " AUTH_SAME_SECRET_HINT,
                peer);
        default:
            return shi_error(SHOAL_EAUTH,
                "%s refused this process's proof of the job secret (the "
                "SHOAL_SECRET values differ); " AUTH_SAME_SECRET_HINT,
                peer);
    }
}

int
shi_auth_client(
    int fd, const shi_secret *secret, const char *peer, int64_t deadline)
{
    unsigned char        hello[SHI_AUTH_HELLO_LEN];
    unsigned char        proof[SHI_AUTH_PROOF_LEN] = { 0 };
    unsigned char        reply[SHI_AUTH_REPLY_LEN];
    unsigned char        want[AUTH_MAC_LEN];
    const unsigned char *ns   = hello + AUTH_OFF_BODY;
    unsigned char       *nc   = proof + AUTH_OFF_BODY;
    int                  mine = auth_has_secret(secret), theirs, rc;

    rc = shi_read_all(fd, hello, sizeof(hello), deadline);
    if (rc != SHOAL_OK) {
        return shi_error_wrap(rc, "handshake with %s", peer);
    }
    rc = auth_check_header(hello, "hello", peer);
    if (rc != SHOAL_OK) {
        return rc;
    }
    theirs = hello[AUTH_OFF_FLAG] != 0;
    auth_put_header(proof, mine);
    rc = shi_random_bytes(nc, SHI_AUTH_NONCE_LEN);
    if (rc == SHOAL_OK && mine && theirs) {
        rc = auth_mac(secret, "client", ns, nc, nc + SHI_AUTH_NONCE_LEN);
    }
    if (rc == SHOAL_OK) {
        // Sent even when the flags differ, so the server logs why too.
        rc = shi_write_all(fd, proof, sizeof(proof), deadline);
    }
    if (rc != SHOAL_OK) {
        return shi_error_wrap(rc, "handshake with %s", peer);
    }
    if (mine != theirs) {
        return auth_refused(mine ? AUTH_CLIENT_ONLY : AUTH_SERVER_ONLY, peer);
    }
    rc = shi_read_all(fd, reply, sizeof(reply), deadline);
    if (rc != SHOAL_OK) {
        return shi_error_wrap(rc, "handshake with %s", peer);
    }
    rc = auth_check_header(reply, "reply", peer);
    if (rc != SHOAL_OK) {
        return rc;
    }
    if (reply[AUTH_OFF_FLAG] != AUTH_OK) {
        return auth_refused(reply[AUTH_OFF_FLAG], peer);
    }
    if (mine) {
        rc = auth_mac(secret, "server", nc, ns, want);
        if (rc != SHOAL_OK) {
            return rc;
        }
        if (CRYPTO_memcmp(want, reply + AUTH_OFF_BODY, AUTH_MAC_LEN) != 0) {
            return shi_error(SHOAL_EAUTH,
                "%s failed to prove the job secret (its SHOAL_SECRET "
                "differs, or it is not the server you "
                "meant); " AUTH_SAME_SECRET_HINT,
                peer);
        }
        return SHOAL_OK;
    }
    // Checked last, so that a server of another user that checks too says
    // why in its own log (a proof without a secret gives nothing away).
    return auth_check_server_owner(fd, peer);
}

int
shi_auth_peer_token(const shi_secret *secret,
    const unsigned char               to_nonce[SHI_AUTH_PEER_NONCE_LEN],
    const unsigned char               from_nonce[SHI_AUTH_PEER_NONCE_LEN],
    unsigned char                     token[SHI_AUTH_PEER_TOKEN_LEN])
{
    _Static_assert(SHI_AUTH_PEER_NONCE_LEN == SHI_AUTH_NONCE_LEN
            && SHI_AUTH_PEER_TOKEN_LEN == AUTH_MAC_LEN,
        "a peer token is a handshake MAC");
    memset(token, 0, SHI_AUTH_PEER_TOKEN_LEN);
    return auth_has_secret(secret)
        ? auth_mac(secret, "peer", to_nonce, from_nonce, token)
        : SHOAL_OK;
}

int
shi_auth_peer_token_ok(const shi_secret *secret,
    const unsigned char                  to_nonce[SHI_AUTH_PEER_NONCE_LEN],
    const unsigned char                  from_nonce[SHI_AUTH_PEER_NONCE_LEN],
    const unsigned char token[SHI_AUTH_PEER_TOKEN_LEN], const char *peer)
{
    unsigned char want[AUTH_MAC_LEN];
    int           st = shi_auth_peer_token(secret, to_nonce, from_nonce, want);

    if (st != SHOAL_OK) {
        return st;
    }
    if (CRYPTO_memcmp(want, token, AUTH_MAC_LEN) != 0) {
        return shi_error(SHOAL_EAUTH,
            "%s failed to prove the job secret (its SHOAL_SECRET differs, "
            "or it is not a rank of this job); " AUTH_SAME_SECRET_HINT,
            peer);
    }
    return SHOAL_OK;
}
