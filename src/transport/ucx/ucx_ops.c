// UCX operations in flight (struct shi_ucx_op): started here, finished by
// UCX's callback inside ucp_worker_progress (or at once, when UCX says it
// completed immediately), then handed to the part of the transport that
// owns them: messages (ucx_msg.c) or control and one-sided (ucx_ctl.c).
// An op whose owner gave up is only freed when UCX lets go of its buffer.
#include <stdlib.h>

#include "base/clock.h"
#include "transport/ucx/ucx.h"
#include "transport/upcalls.h"

struct shi_ucx_op *
shi_ucx_op_new(struct shi_ucx *ucx, int kind, int peer)
{
    static atomic_ullong ids;
    struct shi_ucx_op   *op = calloc(1, sizeof(*op));

    if (op == NULL) {
        shi_comm_abort(ucx->comm, SHOAL_ENOMEM, "out of memory for a message");
        return NULL;
    }
    op->ucx  = ucx;
    op->kind = kind;
    op->peer = peer;
    op->id   = atomic_fetch_add(&ids, 1) + 1;
    op->next = ucx->ops;
    if (ucx->ops != NULL) {
        ucx->ops->prev = op;
    }
    ucx->ops = op;
    ucx->nops++;
    return op;
}

static void
op_free(struct shi_ucx_op *op)
{
    struct shi_ucx *ucx = op->ucx;

    if (op->prev != NULL) {
        op->prev->next = op->next;
    } else {
        ucx->ops = op->next;
    }
    if (op->next != NULL) {
        op->next->prev = op->prev;
    }
    ucx->nops--;
    if (op->handle != NULL) {
        ucp_request_free(op->handle);
    }
    free(op->ctl);
    free(op);
}

void
shi_ucx_op_drop(struct shi_ucx_op *op)
{
    op->handle = NULL;
    op_free(op);
}

// Whether the owner still waits for the op.
static int
op_attached(const struct shi_ucx_op *op)
{
    return op->msg != NULL || op->req != NULL || op->kind == SHI_UCX_CTL
        || op->kind == SHI_UCX_PUTDATA;
}

static void
op_finish(struct shi_ucx_op *op, ucs_status_t status,
    const ucp_tag_recv_info_t *info)
{
    struct shi_ucx *ucx = op->ucx;

    ucx->moved++;
    if (!ucx->closing && !op->detached && op_attached(op)) {
        if (op->kind == SHI_UCX_DATA || op->kind == SHI_UCX_P2P) {
            shi_ucx_msg_done(op, status, info);
        } else if (op->kind == SHI_UCX_CTL && op->is_recv) {
            shi_ucx_ctl_arrived(op, status, info);
        } else if (op->kind == SHI_UCX_PUTDATA && op->is_recv) {
            shi_ucx_put_written(op, status, info);
        } else {
            shi_ucx_sent(op, status);
        }
    }
    if (op->starting) {
        op->finished = 1; // UCX called back inside the call: see op_started
        return;
    }
    op_free(op);
}

void
shi_ucx_send_cb(void *request, ucs_status_t status, void *user)
{
    (void) request;
    op_finish(user, status, NULL);
}

void
shi_ucx_recv_cb(void *request, ucs_status_t status,
    const ucp_tag_recv_info_t *info, void *user)
{
    (void) request;
    op_finish(user, status, info);
}

int
shi_ucx_op_started(struct shi_ucx_op *op, ucs_status_ptr_t ret,
    const ucp_tag_recv_info_t *info)
{
    op->starting = 0;
    if (op->finished) {
        op->handle = UCS_PTR_IS_PTR(ret) ? ret : NULL;
        op_free(op);
        return 1;
    }
    if (ret == NULL) {
        op_finish(op, UCS_OK, info);
        return 1;
    }
    if (UCS_PTR_IS_ERR(ret)) {
        op_finish(op, UCS_PTR_STATUS(ret), NULL);
        return 1;
    }
    op->handle = ret;
    return 0;
}

// The request's parameters: the op's callback and, where the buffer lies
// in registered memory, its UCX handle.
static void
set_memh(struct shi_ucx_op *op, ucp_request_param_t *param, const void *buf,
    size_t bytes)
{
    ucp_mem_h memh = shi_ucx_memh_of(op->ucx, buf, bytes);

    if (memh != NULL) {
        param->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
        param->memh = memh;
    }
}

void
shi_ucx_send(
    struct shi_ucx_op *op, const void *buf, size_t bytes, uint64_t tag)
{
    struct shi_ucx     *ucx   = op->ucx;
    ucp_request_param_t param = {
        .op_attr_mask
        = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.send   = shi_ucx_send_cb,
        .user_data = op,
    };
    ucp_ep_h ep = ucx->peers[op->peer].ep;

    if (ep == NULL || ucx->peers[op->peer].failed) {
        op_finish(op, UCS_ERR_CONNECTION_RESET, NULL);
        return;
    }
    set_memh(op, &param, buf, bytes);
    op->starting = 1;
    shi_ucx_op_started(
        op, ucp_tag_send_nbx(ep, buf, bytes, tag, &param), NULL);
}

// Receives complete through the callback even when the message was there
// already (UCP_OP_ATTR_FLAG_NO_IMM_CMPL), so that the callback's
// description of the message is the one source of it.
void
shi_ucx_recv(struct shi_ucx_op *op, void *buf, size_t bytes, uint64_t tag,
    uint64_t mask)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK
            | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
        .cb.recv   = shi_ucx_recv_cb,
        .user_data = op,
    };

    op->is_recv  = 1;
    op->want     = bytes;
    op->starting = 1;
    set_memh(op, &param, buf, bytes);
    shi_ucx_op_started(op,
        ucp_tag_recv_nbx(op->ucx->worker, buf, bytes, tag, mask, &param),
        NULL);
}

static struct shi_ucx_op *
find_op(struct shi_ucx *ucx, unsigned long long id)
{
    for (struct shi_ucx_op *op = ucx->ops; op != NULL; op = op->next) {
        if (op->id == id) {
            return op;
        }
    }
    return NULL;
}

// The owner stops waiting for `op` (its request ended early, or the
// communicator failed): a receive is cancelled, and since UCX may be
// writing into the owner's buffer right now, this waits (a bounded time)
// until UCX lets go of it. A send cannot be cancelled; its buffer is only
// read, and the endpoint's close at teardown ends it.
void
shi_ucx_op_forget(struct shi_ucx_op *op, int64_t deadline)
{
    struct shi_ucx    *ucx = op->ucx;
    unsigned long long id  = op->id;

    op->detached = 1;
    if (!op->is_recv || op->handle == NULL) {
        return;
    }
    ucp_request_cancel(ucx->worker, op->handle); // may free op at once
    while (find_op(ucx, id) != NULL && shi_now_ns() < deadline) {
        ucp_worker_progress(ucx->worker);
    }
}

void
shi_ucx_op_forget_all(struct shi_ucx *ucx, int64_t deadline)
{
    struct shi_ucx_op *next;

    for (struct shi_ucx_op *op = ucx->ops; op != NULL; op = next) {
        next = op->next;
        if (!op->detached
            && (op->msg != NULL || op->req != NULL
                || (op->is_recv && op->kind == SHI_UCX_PUTDATA))) {
            op->detached = 1;
            if (op->is_recv && op->handle != NULL) {
                ucp_request_cancel(ucx->worker, op->handle);
            }
        }
    }
    while (shi_now_ns() < deadline) {
        int busy = 0;
        for (struct shi_ucx_op *op = ucx->ops; op != NULL; op = op->next) {
            busy |= op->detached && op->is_recv;
        }
        if (!busy) {
            return;
        }
        ucp_worker_progress(ucx->worker);
    }
}
