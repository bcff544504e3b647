// Request descriptions (see request.h).
#include "request.h"

#include <stdio.h>

#include "core/op_props.h"

const char *
shi_op_kind_name(int kind)
{
    return shi_op_props_of(kind)->name;
}

// "all_reduce #4 (1024 x float32, sum)", "gather #2 (root 1, 8 x int64)".
static void
describe_collective(const shoal_request *req, char *buf, size_t len)
{
    const shi_op_props *p        = shi_op_props_of(req->kind);
    int                 reduces  = p->reduces;
    char                root[32] = "";

    if (p->rooted) {
        snprintf(root, sizeof(root), "root %d, ", req->peer);
    }
    snprintf(buf, len, "%s #%llu (%s%zu x %s%s%s)",
        shi_op_kind_name(req->kind), (unsigned long long) req->seq, root,
        req->count, shoal_dtype_name(req->dtype), reduces ? ", " : "",
        reduces ? shoal_op_name(req->op.kind) : "");
}

// "recv #3 from rank 1 (tag 0, 8 x int32)"; an any-source receive says
// "from any rank", and which rank it matched if it did.
static void
describe_recv(const shoal_request *req, char *buf, size_t len)
{
    char from[48];

    if (req->peer >= 0) {
        snprintf(from, sizeof(from), "rank %d", req->peer);
    } else if (req->source >= 0) {
        snprintf(
            from, sizeof(from), "any rank (matched rank %d)", req->source);
    } else {
        snprintf(from, sizeof(from), "any rank");
    }
    snprintf(buf, len, "recv #%llu from %s (tag %d, %zu x %s)",
        (unsigned long long) req->seq, from, req->tag, req->count,
        shoal_dtype_name(req->dtype));
}

void
shi_req_describe(const shoal_request *req, char *buf, size_t len)
{
    const char *dt = shoal_dtype_name(req->dtype);

    switch (req->kind) {
        case SHI_OP_SEND:
            snprintf(buf, len, "send #%llu to rank %d (tag %d, %zu x %s)",
                (unsigned long long) req->seq, req->peer, req->tag, req->count,
                dt);
            break;
        case SHI_OP_RECV:
            describe_recv(req, buf, len);
            break;
        case SHI_OP_BARRIER:
            snprintf(buf, len, "barrier #%llu", (unsigned long long) req->seq);
            break;
        case SHI_OP_BCAST:
            snprintf(buf, len, "broadcast #%llu (root %d, %zu x %s)",
                (unsigned long long) req->seq, req->peer, req->count, dt);
            break;
        case SHI_OP_PUT:
            snprintf(buf, len, "put to rank %d (%zu x %s)", req->peer,
                req->count, dt);
            break;
        case SHI_OP_SIGNAL:
            snprintf(buf, len, "signal to rank %d", req->peer);
            break;
        case SHI_OP_WAIT_SIGNAL:
            snprintf(buf, len, "wait_signal for rank %d", req->peer);
            break;
        default:
            describe_collective(req, buf, len);
    }
}
