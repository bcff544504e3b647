// Host-aware collectives: shared memory within each host, messages
// between them.
//
// When ranks span several hosts and some host runs more than one of them,
// the communicator keeps two internal ones, split off at creation:
// `local` (the ranks of this host, over shared memory) and `leaders` (the
// first rank of each host, over TCP). A host-aware collective runs in
// stages, each a non-blocking operation on one of them; this driver runs
// the stages one after the other (one in flight at a time, comm->hier_sub)
// and each algorithm says what its stages start (allreduce_hier.c,
// broadcast_hier.c). Preconditions: a communicator with `local` set (see
// shi_hier_setup).
#include "algo/common/hier.h"

#include <stdio.h>
#include <stdlib.h>

#include "algo/net/net_driver.h"
#include "algo/registry.h"
#include "base/log.h"
#include "core/engine.h"

static void
hier_fail(shoal_comm *comm, shoal_request *req, int st, const char *what)
{
    char desc[256];

    shi_req_describe(req, desc, sizeof(desc));
    shi_comm_abort(comm, st, "%s: %s within %s: %s", desc,
        *shi_hier_stage(req) == HIER_LEADERS ? "the exchange between hosts"
                                             : "the shared-memory stage",
        what, shoal_last_error());
}

int
shi_hier_run(shoal_comm *comm, shoal_request *req, shi_hier_stage_fn start)
{
    int n = 0;

    while (*shi_hier_stage(req) < HIER_DONE) {
        if (comm->hier_sub == NULL && !comm->hier_started) {
            int st = start(comm, req, &comm->hier_sub);
            if (st != SHOAL_OK) {
                hier_fail(comm, req, st, "starting");
                return n + 1;
            }
            comm->hier_started = 1;
            n++;
        }
        if (comm->hier_sub != NULL) {
            int st = shoal_test(comm->hier_sub);
            if (st == SHOAL_INPROGRESS) {
                return n;
            }
            shoal_request_free(comm->hier_sub);
            comm->hier_sub = NULL;
            if (st != SHOAL_OK) {
                hier_fail(comm, req, st, "failed");
                return n + 1;
            }
        }
        comm->hier_started = 0;
        (*shi_hier_stage(req))++;
        n++;
    }
    shi_engine_complete(comm, req, SHOAL_OK);
    return n + 1;
}

// After an abort: the stage in flight fails too (its communicators are
// aborted), so that nothing writes the caller's buffers any more.
void
shi_hier_abandon(shoal_comm *comm)
{
    if (comm->local == NULL && comm->leaders == NULL) {
        return;
    }
    char text[SHI_ERROR_TEXT_MAX];
    pthread_mutex_lock(&comm->err_lock);
    snprintf(text, sizeof(text), "%s", comm->fail_text);
    pthread_mutex_unlock(&comm->err_lock);
    int st = atomic_load(&comm->failed);
    if (comm->local != NULL) {
        shi_comm_abort(
            comm->local, st, "communicator '%s' failed: %s", comm->name, text);
    }
    if (comm->leaders != NULL) {
        shi_comm_abort(comm->leaders, st, "communicator '%s' failed: %s",
            comm->name, text);
    }
    if (comm->hier_sub != NULL) {
        shoal_wait(comm->hier_sub, -1);
        shoal_request_free(comm->hier_sub);
        comm->hier_sub = NULL;
    }
    comm->hier_started = 0;
}

int
shi_hier_setup(shoal_comm *comm, int host_index, int local_rank)
{
    int st = shoal_comm_split(comm, host_index, comm->rank, &comm->local);

    if (st == SHOAL_OK) {
        st = shoal_comm_split(comm, local_rank == 0 ? 0 : SHOAL_SPLIT_NONE,
            comm->rank, &comm->leaders);
    }
    if (st != SHOAL_OK) {
        return shi_error_wrap(st,
            "creating the per-host and between-host communicators of '%s'",
            comm->name);
    }
    comm->algos_available = shi_algos_offered(comm->tp->klass,
        SHI_NEEDS_HOSTS | (comm->cma_ok ? SHI_NEEDS_SINGLE_COPY : 0));
    SHI_INFO("communicator '%s': rank %d is rank %d of %d on its host%s",
        comm->name, comm->rank, shoal_comm_rank(comm->local),
        shoal_comm_size(comm->local),
        comm->leaders != NULL ? ", its leader" : "");
    return SHOAL_OK;
}
