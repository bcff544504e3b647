// Request queues and descriptions (see request.h).
#include "request.h"

#include <stdio.h>

void
shi_queue_push(shi_req_queue *q, shoal_request *req)
{
    req->qnext = NULL;
    if (q->tail != NULL) {
        q->tail->qnext = req;
    } else {
        q->head = req;
    }
    q->tail = req;
}

void
shi_queue_remove(shi_req_queue *q, shoal_request *req)
{
    shoal_request *prev = NULL;

    for (shoal_request *r = q->head; r != NULL; prev = r, r = r->qnext) {
        if (r != req) {
            continue;
        }
        if (prev != NULL) {
            prev->qnext = r->qnext;
        } else {
            q->head = r->qnext;
        }
        if (q->tail == r) {
            q->tail = prev;
        }
        r->qnext = NULL;
        return;
    }
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
            snprintf(buf, len, "recv #%llu from rank %d (tag %d, %zu x %s)",
                (unsigned long long) req->seq, req->peer, req->tag, req->count,
                dt);
            break;
        case SHI_OP_BARRIER:
            snprintf(buf, len, "barrier #%llu", (unsigned long long) req->seq);
            break;
        case SHI_OP_BCAST:
            snprintf(buf, len, "broadcast #%llu (root %d, %zu x %s)",
                (unsigned long long) req->seq, req->peer, req->count, dt);
            break;
        default:
            snprintf(
                buf, len, "operation #%llu", (unsigned long long) req->seq);
    }
}
