// Non-blocking requests may outlive their communicator: a caller can
// destroy it and still test, wait for or free a request it holds. The
// communicator keeps a list of the requests it handed out; destroying it
// finishes and detaches each one (detached_text keeps the final message),
// so a detached request answers from itself and never reads the freed
// communicator.
//
// Untracked requests (a send or receive issued without a handle, as the
// native communicator view's send and recv are) are on that list too, and
// nobody else holds them: the communicator frees each once it completed,
// keeping the first failure for shoal_comm_sync (and the barrier, which
// implies it) to report, naming the operation.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/comm.h"
#include "core/engine.h"

void
shi_req_own_locked(shoal_comm *comm, shoal_request *req)
{
    req->oprev = NULL;
    req->onext = comm->owned;
    if (comm->owned != NULL) {
        comm->owned->oprev = req;
    }
    comm->owned = req;
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
    shi_req_reap_untracked(comm, 0);
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

// Keeps the first failure of an untracked request (under comm->lock).
static void
note_untracked_failure(shoal_comm *comm, const shoal_request *req, int st)
{
    char desc[256];

    if (comm->untracked_failed != 0) {
        return;
    }
    shi_req_describe(req, desc, sizeof(desc));
    pthread_mutex_lock(&comm->err_lock);
    snprintf(comm->untracked_text, sizeof(comm->untracked_text),
        "%s, issued without a request, failed on rank %d: %s", desc,
        comm->rank,
        comm->fail_text[0] != '\0' ? comm->fail_text : shoal_strerror(st));
    pthread_mutex_unlock(&comm->err_lock);
    comm->untracked_failed = st;
}

// Unlinks the completed untracked requests (under comm->lock) and returns
// them chained through onext.
static shoal_request *
take_completed_untracked(shoal_comm *comm)
{
    shoal_request *done = NULL;

    for (shoal_request *r = comm->owned, *next; r != NULL; r = next) {
        next   = r->onext;
        int st = atomic_load_explicit(&r->status, memory_order_acquire);
        if (!r->untracked || st == SHOAL_INPROGRESS || r->in_engine) {
            continue;
        }
        if (st < 0) {
            note_untracked_failure(comm, r, st);
        }
        if (r->oprev != NULL) {
            r->oprev->onext = r->onext;
        } else {
            comm->owned = r->onext;
        }
        if (r->onext != NULL) {
            r->onext->oprev = r->oprev;
        }
        r->onext = done;
        done     = r;
    }
    return done;
}

int
shi_req_reap_untracked(shoal_comm *comm, int report)
{
    shoal_request *done;
    int            st = SHOAL_OK;

    pthread_mutex_lock(&comm->lock);
    done = take_completed_untracked(comm);
    if (report && comm->untracked_failed != 0) {
        st = shi_error(comm->untracked_failed, "%s", comm->untracked_text);
        comm->untracked_failed = 0;
    }
    pthread_mutex_unlock(&comm->lock);
    while (done != NULL) {
        shoal_request *r = done;
        done             = r->onext;
        free(r->counts);
        shi_req_release(r);
    }
    return st;
}
