// The store's wire decoder (store/wire.c): the length prefix and one frame
// body, as a store server or client reads them from an untrusted peer.
// What decodes must encode back to the same bytes: the format has one
// encoding per message, so any difference is a decoder that accepted
// something it misread.
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "shoal.h"
#include "store/wire.h"

static void
check_prefix(const uint8_t *data, size_t size)
{
    uint32_t len;

    if (size >= SHI_WIRE_LEN_BYTES
        && shi_wire_frame_length(data, &len) == SHOAL_OK) {
        FUZZ_CHECK(len >= SHI_WIRE_HEAD_BYTES && len <= SHI_WIRE_FRAME_MAX);
    }
}

// A decoded WAIT's keys as the C strings shi_wire_encode takes.
static char **
wait_keys(const shi_wire_msg *m)
{
    const unsigned char *blob = m->keyblob;
    size_t               left = m->keyblob_len, klen;
    const char          *key;
    char               **keys = calloc((size_t) m->nkeys + 1, sizeof(char *));
    uint32_t             n    = 0;

    FUZZ_CHECK(keys != NULL);
    while (shi_wire_next_key(&blob, &left, &key, &klen)) {
        FUZZ_CHECK(n < m->nkeys && klen <= SHI_STORE_KEY_MAX);
        keys[n] = strndup(key, klen);
        FUZZ_CHECK(keys[n] != NULL && strlen(keys[n]) == klen);
        n++;
    }
    FUZZ_CHECK(n == m->nkeys && left == 0);
    return keys;
}

// Encodes `m` and checks that the frame is the decoded bytes again.
static void
check_round_trip(shi_wire_msg *m, const uint8_t *data, size_t size)
{
    shi_wire_buf buf  = { 0 };
    char       **keys = NULL;
    uint32_t     len;

    if (m->cmd == SHI_WIRE_WAIT) {
        keys    = wait_keys(m);
        m->keys = (const char *const *) keys;
    }
    FUZZ_CHECK(shi_wire_encode(&buf, m) == SHOAL_OK);
    FUZZ_CHECK(shi_wire_frame_length(buf.data, &len) == SHOAL_OK);
    FUZZ_CHECK(len == size && buf.len == SHI_WIRE_LEN_BYTES + size);
    FUZZ_CHECK(memcmp(buf.data + SHI_WIRE_LEN_BYTES, data, size) == 0);
    for (uint32_t i = 0; keys != NULL && i < m->nkeys; i++) {
        free(keys[i]);
    }
    free(keys);
    shi_wire_buf_free(&buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    shi_wire_msg m;

    check_prefix(data, size);
    if (shi_wire_decode(data, size, &m) == SHOAL_OK) {
        check_round_trip(&m, data, size);
    }
    return 0;
}
