// What a rank reads from another rank before trusting it: the TCP frame
// header (transport/tcp, shi_tcp_frame_ok) and the job-secret handshake
// (platform/auth.c: the magic prefix, the client's proof as the server checks
// it, the hello and reply as the client reads them). The first byte picks
// which; the rest is what the peer sent.
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/clock.h"
#include "fuzz.h"
#include "platform/auth.h"
#include "platform/auth_msg.h"
#include "shoal.h"
#include "transport/tcp/tcp_net.h"

// The handshake messages' layout (auth_msg.h): magic, u16 version, flag
// or verdict, pad, then the body.
#define FUZZ_MAGIC_LEN 8
#define FUZZ_OFF_FLAG  10
#define FUZZ_OFF_BODY  12
#define FUZZ_MAC_LEN   32

// Copies up to n bytes of the input into out (the rest stays as it was)
// and moves past them.
static void
fuzz_take(const uint8_t **data, size_t *size, void *out, size_t n)
{
    n = n < *size ? n : *size;
    memcpy(out, *data, n);
    *data += n;
    *size -= n;
}

// Where the receiver puts a frame's payload: a control payload in the
// socket's buffer of SHI_TCP_CTL_MAX bytes, data at its offset in a buffer
// of the message's size. ASan sees a write that lands outside.
static void
receive_payload(const struct shi_tcp_frame *h)
{
    int    control = h->type == SHI_TCP_ABORT || h->type == SHI_TCP_BYE;
    size_t cap     = control ? SHI_TCP_CTL_MAX : h->total;
    unsigned char *buf;

    if (cap > 1 << 16) {
        return; // the bounds below are checked all the same
    }
    buf = malloc(cap + 1);
    FUZZ_CHECK(buf != NULL);
    memset(buf + (control ? 0 : h->off), 0xab, h->len);
    free(buf);
}

// Frames back to back, each header checked as the receiver checks it.
static void
fuzz_frames(const uint8_t *data, size_t size)
{
    struct shi_tcp_frame h;

    for (; size >= sizeof(h); data += sizeof(h), size -= sizeof(h)) {
        memcpy(&h, data, sizeof(h));
        if (!shi_tcp_frame_ok(&h)) {
            continue;
        }
        FUZZ_CHECK(h.off <= h.total && h.len <= h.total - h.off);
        if (h.type == SHI_TCP_ABORT || h.type == SHI_TCP_BYE) {
            FUZZ_CHECK(h.len <= SHI_TCP_CTL_MAX);
        }
        receive_payload(&h);
    }
}

// A prefix that matches the magic stays matching when shortened.
static void
fuzz_prefix(const uint8_t *data, size_t size)
{
    int prev = 1;

    for (size_t n = 0; n <= size && n <= 16; n++) {
        int ok = shi_auth_prefix_ok(data, n);
        FUZZ_CHECK(prev || !ok);
        prev = ok;
    }
}

// The secret both ends are meant to share, or none.
static void
fuzz_secret(shi_secret *s, int set)
{
    memset(s, 0, sizeof(*s));
    if (set) {
        FUZZ_CHECK(shi_secret_from_string(s, "fuzz secret") == SHOAL_OK);
    }
}

// HMAC-SHA256(key, role || a || b), as an honest peer computes it.
static void
fuzz_mac(const shi_secret *s, const char *role, const unsigned char *a,
    const unsigned char *b, unsigned char *out)
{
    unsigned char data[16 + 2 * SHI_AUTH_NONCE_LEN];
    size_t        rl = strlen(role);
    unsigned int  n  = 0;

    memcpy(data, role, rl);
    memcpy(data + rl, a, SHI_AUTH_NONCE_LEN);
    memcpy(data + rl + SHI_AUTH_NONCE_LEN, b, SHI_AUTH_NONCE_LEN);
    FUZZ_CHECK(HMAC(EVP_sha256(), s->key, sizeof(s->key), data,
                   rl + 2 * SHI_AUTH_NONCE_LEN, out, &n)
        != NULL);
}

// The server's check of a proof: options byte (bit 0: the server has a
// secret, bit 1: sign the proof as an honest client would), the server's
// nonce, the proof. The reply must always be a handshake message, and a
// signed proof with a good header must pass and be answered with the
// server's MAC.
static void
fuzz_proof(const uint8_t *data, size_t size)
{
    unsigned char  ns[SHI_AUTH_NONCE_LEN]    = { 0 };
    unsigned char  proof[SHI_AUTH_PROOF_LEN] = { 0 };
    unsigned char  reply[SHI_AUTH_REPLY_LEN], want[FUZZ_MAC_LEN];
    unsigned char  opt = 0;
    unsigned char *nc  = proof + FUZZ_OFF_BODY;
    shi_secret     s;
    int            rc;

    fuzz_take(&data, &size, &opt, 1);
    fuzz_take(&data, &size, ns, sizeof(ns));
    fuzz_take(&data, &size, proof, sizeof(proof));
    fuzz_secret(&s, opt & 1);
    if ((opt & 2) && s.set) {
        fuzz_mac(&s, "client", ns, nc, nc + SHI_AUTH_NONCE_LEN);
    }
    rc = shi_auth_check_proof(&s, ns, proof, reply, "fuzz peer");
    FUZZ_CHECK(shi_auth_prefix_ok(reply, sizeof(reply)));
    FUZZ_CHECK(rc == SHOAL_OK || rc == SHOAL_EAUTH || rc == SHOAL_EPROTO);
    FUZZ_CHECK((rc == SHOAL_OK) == (reply[FUZZ_OFF_FLAG] == 0));
    if (rc == SHOAL_OK && s.set) {
        fuzz_mac(&s, "server", nc, ns, want);
        FUZZ_CHECK(memcmp(reply + FUZZ_OFF_BODY, want, sizeof(want)) == 0);
    }
    if ((opt & 2) && s.set && shi_auth_prefix_ok(proof, FUZZ_MAGIC_LEN)
        && proof[FUZZ_MAGIC_LEN] == 0 && proof[FUZZ_MAGIC_LEN + 1] == 1
        && proof[FUZZ_OFF_FLAG] != 0) {
        FUZZ_CHECK(rc == SHOAL_OK);
    }
}

// The client's side: options byte (bit 0: the client has a secret), then
// the server's hello and reply as they arrive on the socket, then the end
// of the connection.
static void
fuzz_client(const uint8_t *data, size_t size)
{
    unsigned char opt = 0;
    shi_secret    s;
    int           sv[2], rc;

    fuzz_take(&data, &size, &opt, 1);
    if (size > SHI_AUTH_HELLO_LEN + SHI_AUTH_REPLY_LEN) {
        size = SHI_AUTH_HELLO_LEN + SHI_AUTH_REPLY_LEN;
    }
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    FUZZ_CHECK(write(sv[1], data, size) == (ssize_t) size);
    shutdown(sv[1], SHUT_WR);
    fuzz_secret(&s, opt & 1);
    rc = shi_auth_client(sv[0], &s, "fuzz peer", shi_now_ns() + 1000000000);
    FUZZ_CHECK(rc == SHOAL_OK || rc == SHOAL_EAUTH || rc == SHOAL_EPROTO
        || rc == SHOAL_EPEER);
    // With a secret the server's MAC covers our random nonce, which the
    // input cannot know; without one a well-formed exchange passes.
    if (rc == SHOAL_OK) {
        FUZZ_CHECK(!s.set && size == SHI_AUTH_HELLO_LEN + SHI_AUTH_REPLY_LEN);
    }
    close(sv[0]);
    close(sv[1]);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) {
        return 0;
    }
    switch (data[0] & 3) {
        case 0:
            fuzz_frames(data + 1, size - 1);
            break;
        case 1:
            fuzz_prefix(data + 1, size - 1);
            break;
        case 2:
            fuzz_proof(data + 1, size - 1);
            break;
        default:
            fuzz_client(data + 1, size - 1);
            break;
    }
    return 0;
}
