// Non-blocking requests may outlive their communicator: a caller can
// destroy it and still test, wait for or free a request it holds. The
// communicator keeps a list of the requests it handed out; destroying it
// finishes and detaches each one (detached_text keeps the final message),
// so a detached request answers from itself and never reads the freed
// communicator.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/engine.h"
#include "core/error.h"

void
shi_req_own(shoal_comm *comm, shoal_request *req)
{
    pthread_mutex_lock(&comm->lock);
    req->oprev = NULL;
    req->onext = comm->owned;
    if (comm->owned != NULL) {
        comm->owned->oprev = req;
    }
    comm->owned = req;
    pthread_mutex_unlock(&comm->lock);
}

void
shi_req_disown(shoal_comm *comm, shoal_request *req)
{
    pthread_mutex_lock(&comm->lock);
    if (req->oprev != NULL) {
        req->oprev->onext = req->onext;
    } else {
        comm->owned = req->onext;
    }
    if (req->onext != NULL) {
        req->onext->oprev = req->oprev;
    }
    req->onext = req->oprev = NULL;
    pthread_mutex_unlock(&comm->lock);
}

// Keeps the message a failed request reports ("all_reduce #3 (...) failed
// on rank 0: <the communicator's cause>"), then cuts it loose.
static void
detach_one(shoal_comm *comm, shoal_request *req)
{
    char desc[256], text[SHI_ERROR_TEXT_MAX + 320];

    if (atomic_load_explicit(&req->status, memory_order_acquire) < 0) {
        shi_req_describe(req, desc, sizeof(desc));
        pthread_mutex_lock(&comm->err_lock);
        snprintf(text, sizeof(text), "%s failed on rank %d: %s", desc,
            comm->rank, comm->fail_text);
        pthread_mutex_unlock(&comm->err_lock);
        req->detached_text = strdup(text); // NULL: the status still says
    }
    req->comm = NULL;
}

void
shi_req_detach_all(shoal_comm *comm)
{
    shi_engine_fail_pending(comm); // every request is final from here
    pthread_mutex_lock(&comm->lock);
    for (shoal_request *r = comm->owned, *next; r != NULL; r = next) {
        next     = r->onext;
        r->onext = r->oprev = NULL;
        detach_one(comm, r);
    }
    comm->owned = NULL;
    pthread_mutex_unlock(&comm->lock);
}

int
shi_req_detached_status(const shoal_request *req)
{
    int st = atomic_load_explicit(&req->status, memory_order_acquire);

    if (st < 0) {
        shi_error(st, "%s",
            req->detached_text != NULL ? req->detached_text
                                       : "the operation failed");
    }
    return st;
}
