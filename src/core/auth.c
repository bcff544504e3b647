// Job-secret handshake (see auth.h for the purpose, auth_msg.h for the
// messages). All cryptography is OpenSSL's libcrypto: SHA-256 for the key,
// HMAC-SHA256 for the proofs, RAND_bytes for nonces, CRYPTO_memcmp to
// compare MACs in constant time.
#include "core/auth.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "core/auth_msg.h"
#include "core/error.h"
#include "core/log.h"
#include "platform/net.h"
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
};

#define AUTH_SAME_SECRET_HINT                                                 \
    "set the same SHOAL_SECRET on every rank (and on the launcher or store "  \
    "server)"

static int auth_unset_warned;

int
shi_secret_from_string(shi_secret *out, const char *text)
{
    memset(out, 0, sizeof(*out));
    if (text == NULL || text[0] == '\0') {
        shi_log_warn_once(&auth_unset_warned,
            "SHOAL_SECRET is not set: connections to the store and between "
            "ranks are not authenticated; set SHOAL_SECRET to the same value "
            "on every rank to require a job secret");
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
    rc = shi_auth_check_proof(secret, ns, proof, reply, peer);
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
    }
    return SHOAL_OK;
}
