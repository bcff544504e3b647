// Shared steps of every public operation (ops.c): fill a request, run it
// on the caller's stack, or start it on the heap.
#ifndef SHI_OPS_H
#define SHI_OPS_H

#include <string.h>

#include "core/comm.h"

// The options the calling thread gave its next operation, taken (see
// shoal_next_call_opts): every public operation takes them first thing.
shoal_call_opts shi_call_opts_take(void);

// The error of a non-blocking operation called without its request
// pointer (it takes the thread's call options too, as a refused call).
int shi_missing_req(const char *op);

// Requests are zeroed and copied in 16-byte pieces. A memset or struct
// copy of their 384 bytes compiles to `rep stos` / `rep movs` on x86-64,
// whose start-up costs tens of cycles on every call (a 64-byte exchange:
// 0.30 -> 0.28 us without it). The size is a multiple of 16 (the struct
// holds a 16-byte-aligned member); may_alias keeps these stores in order
// with the field stores around them.
typedef unsigned char shi_req_piece
    __attribute__((vector_size(16), may_alias));
_Static_assert(sizeof(shoal_request) % sizeof(shi_req_piece) == 0,
    "a request is whole 16-byte pieces");
#define SHI_REQ_PIECES (sizeof(shoal_request) / sizeof(shi_req_piece))

static inline void
shi_req_zero(shoal_request *req)
{
    shi_req_piece *to = (shi_req_piece *) (void *) req;

#pragma GCC unroll 32
    for (size_t i = 0; i < SHI_REQ_PIECES; i++) {
        to[i] = (shi_req_piece) { 0 };
    }
}

static inline void
shi_req_copy(shoal_request *dst, const shoal_request *src)
{
    shi_req_piece       *to   = (shi_req_piece *) (void *) dst;
    const shi_req_piece *from = (const shi_req_piece *) (const void *) src;

#pragma GCC unroll 32
    for (size_t i = 0; i < SHI_REQ_PIECES; i++) {
        to[i] = from[i];
    }
}

// Zeroes `req` and fills the fields every operation has. The start time
// and the deadline (req->timeout_ms, else the comm's timeout, from then)
// are set at submission.
// Inline: on every call's path.
static inline void
shi_req_fill(shoal_request *req, int kind, const void *buf, size_t count,
    int dtype, int peer)
{
    shi_req_zero(req);
    req->kind   = kind;
    req->buf    = (unsigned char *) buf;
    req->count  = count;
    req->dtype  = dtype;
    req->esize  = shoal_dtype_size(dtype);
    req->bytes  = count * req->esize;
    req->peer   = peer;
    req->source = -1;
}

// Submits a filled stack request and waits for it.
int shi_run_blocking(shoal_comm *comm, shoal_request *req);

// Moves a filled request to the heap (with ownership of its counts) and
// submits it; *out is the request, or NULL on error.
int shi_start_async(
    shoal_comm *comm, const shoal_request *tmpl, shoal_request **out);

// Starts a point-to-point transfer of `bytes` bytes with any tag: negative
// tags are shoal's own (compiled plans), apart from every user tag. The
// bytes lie at buf in `layout` (checked by the caller, kept until the
// request completes; NULL: dense), which needs shi_p2p_strided_ok. The
// caller has checked buf, peer (not this rank) and bytes.
int shi_p2p_start(shoal_comm *comm, int kind, const void *buf, size_t bytes,
    const shi_strided *layout, int peer, int tag, shoal_request **out);

// Whether this communicator's transport moves strided messages itself.
int shi_p2p_strided_ok(const shoal_comm *comm);

#endif
