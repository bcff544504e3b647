// The TCP store's frames, shared by client (store_tcp.c) and server
// (store_server.c). Integers are big-endian.
//
//   frame   = u32 length (of what follows) | u8 cmd | u32 id | body
//   request bodies:
//     SET    key value          GET  key u32 wait_ms
//     ADD    key i64 delta      WAIT u32 wait_ms, u32 nkeys, nkeys x key
//     WILL   key value          UNWILL key
//     DELETE key (a prefix: every key starting with it goes)
//   reply   cmd = request cmd | SHI_WIRE_REPLY, same id,
//           body = i32 status, then on success:
//             GET  value   ADD  i64 result   DELETE  i64 keys deleted
//             SET, WAIT, WILL, UNWILL  nothing
//           and on failure: bytes message (a sentence for the user)
//
// wait_ms bounds how long the server holds a GET or WAIT whose keys are
// missing (SHI_WIRE_WAIT_FOREVER: no bound); then it answers
// SHOAL_ETIMEDOUT and the connection stays in step, so a client can wait
// in slices and look at other things between them.
// WILL leaves a last will on the connection: if the connection closes
// before an UNWILL of the same key, the server sets key to value (a
// rank's death during a rendezvous becomes a key the others can see).
//   key     = u32 n (1..SHI_STORE_KEY_MAX, no NUL byte) | n bytes
//   value   = u32 n (0..SHI_STORE_VALUE_MAX) | n bytes
//
// Anything else is a protocol error: an unknown command, a length over
// SHI_WIRE_FRAME_MAX, a field running past the frame, bytes left over.
#ifndef SHI_STORE_WIRE_H
#define SHI_STORE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

enum shi_wire_cmd {
    SHI_WIRE_SET    = 1,
    SHI_WIRE_GET    = 2,
    SHI_WIRE_ADD    = 3,
    SHI_WIRE_WAIT   = 4,
    SHI_WIRE_WILL   = 5,
    SHI_WIRE_UNWILL = 6,
    SHI_WIRE_DELETE = 7,
    SHI_WIRE_REPLY  = 0x80,
};

// Bytes of the length prefix, and of cmd + id.
#define SHI_WIRE_LEN_BYTES  4
#define SHI_WIRE_HEAD_BYTES 5
// Longest frame after the length prefix: a SET of the largest key and value.
#define SHI_WIRE_FRAME_MAX                                                    \
    (SHI_WIRE_HEAD_BYTES + 4 + SHI_STORE_KEY_MAX + 4 + SHI_STORE_VALUE_MAX)
// A GET or WAIT's wait_ms for "until the keys are set".
#define SHI_WIRE_WAIT_FOREVER UINT32_MAX
// Most message bytes an error reply carries.
#define SHI_WIRE_MESSAGE_MAX 1024

// One decoded (or to be encoded) frame. Decoded pointers point into the
// frame's buffer and are not NUL-terminated.
typedef struct shi_wire_msg {
    uint8_t              cmd;
    uint32_t             id;
    int32_t              status; // replies
    const char          *key; // SET GET ADD WILL UNWILL DELETE
    size_t               klen;
    const unsigned char *value; // SET, WILL, GET reply, error message
    size_t               vlen;
    int64_t              num; // ADD delta, ADD and DELETE reply result
    uint32_t             wait_ms; // GET, WAIT
    uint32_t             nkeys; // WAIT
    const char *const   *keys; // WAIT, to encode: C strings
    const unsigned char *keyblob; // WAIT, decoded: nkeys encoded keys
    size_t               keyblob_len;
} shi_wire_msg;

// A growable byte buffer frames are encoded into.
typedef struct shi_wire_buf {
    unsigned char *data;
    size_t         len, cap;
} shi_wire_buf;

void shi_wire_buf_free(shi_wire_buf *b);

// Big-endian u32 at p (also the file store's record lengths).
void     shi_wire_put_u32(unsigned char *p, uint32_t v);
uint32_t shi_wire_get_u32(const unsigned char *p);

// Appends n raw bytes (the handshake's messages); SHOAL_ENOMEM.
int shi_wire_buf_append(shi_wire_buf *b, const void *p, size_t n);

// Appends one frame encoding `m` (a request, or a reply if cmd has
// SHI_WIRE_REPLY) to `b`. SHOAL_ENOMEM, or SHOAL_EINVAL if it would not fit
// in a frame.
int shi_wire_encode(shi_wire_buf *b, const shi_wire_msg *m);

// Bytes a WAIT frame's key list takes for `key`: lets a client split long
// key lists into frames that fit.
size_t shi_wire_key_size(const char *key);

// Reads the length prefix; SHOAL_EPROTO if it is 0-sized or over
// SHI_WIRE_FRAME_MAX.
int shi_wire_frame_length(const unsigned char prefix[4], uint32_t *len);

// Decodes and validates one frame (the `len` bytes after the prefix).
// SHOAL_EPROTO with a message on anything malformed.
int shi_wire_decode(const unsigned char *frame, size_t len, shi_wire_msg *m);

// Steps through a decoded WAIT's keys: returns 0 when none is left.
int shi_wire_next_key(
    const unsigned char **blob, size_t *left, const char **key, size_t *klen);

#endif
