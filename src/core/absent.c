// Which rank never reached a collective whose deadline passed, or called
// another one.
//
// Over a message transport a collective's waits form a chain: with rank 1
// stopped, rank 0 may wait for rank 2, which waits for rank 1, so the rank
// a request is blocked on is the next link, not the one that never came.
// At its deadline each rank says so in the store under the collective's
// number, then looks for a moment for the others: every survivor of the
// same collective times out within a moment of the others, while a rank
// that never called it (stopped, stuck elsewhere) never says so. The word
// carries the call, so a rank that called another collective under the
// same number (a gather against a scatter: both only receive, and nothing
// on the wire shows the difference) is named as a mismatch. Only the
// failure path pays: a store set and a few looks per peer.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "core/engine.h"
#include "core/ft.h"
#include "store/store.h"

// How long a rank looks for the others' word: the skew between survivors'
// deadlines, which started when each entered the collective.
#define ABSENT_WINDOW_MS 100
// Between looks at the store for the others' word.
#define ABSENT_PAUSE_NS 5000000

static void
late_key(const shoal_comm *comm, uint64_t seq, int rank, char *buf, size_t len)
{
    snprintf(buf, len, "%slate/%llu/%d", comm->prefix,
        (unsigned long long) seq, rank);
}

// Our word: the call's kind and root, then its description.
static int
word_of(const shoal_request *req, char *buf, size_t len)
{
    char desc[256];

    shi_req_describe(req, desc, sizeof(desc));
    return snprintf(buf, len, "%d %d\n%s", req->kind, req->peer, desc);
}

// Whether rank q's word names another call than ours; its description
// then goes to `theirs`.
static int
word_differs(
    const char *word, const shoal_request *req, char *theirs, size_t len)
{
    int         kind, root;
    const char *nl = strchr(word, '\n');

    if (sscanf(word, "%d %d", &kind, &root) != 2 || nl == NULL) {
        snprintf(theirs, len, "something unreadable");
        return 1;
    }
    if (kind == req->kind && root == req->peer) {
        return 0;
    }
    snprintf(theirs, len, "%s", nl + 1);
    return 1;
}

int
shi_absent_ranks(
    shoal_comm *comm, const shoal_request *req, struct shi_absent *out)
{
    char    key[600], word[300];
    int64_t until = shi_deadline_in_ms(ABSENT_WINDOW_MS);

    out->absent = 0;
    out->other  = -1;
    if (comm->store == NULL) {
        return 0;
    }
    late_key(comm, req->seq, comm->rank, key, sizeof(key));
    int n = word_of(req, word, sizeof(word));
    if (shi_store_set(shi_comm_store(comm), key, word, (size_t) n, until)
        != SHOAL_OK) {
        return 0;
    }
    unsigned char *seen = calloc((size_t) comm->size, 1);
    if (seen == NULL) {
        return 0;
    }
    seen[comm->rank] = 1;
    int missing      = comm->size - 1;
    while (missing > 0 && out->other < 0 && shi_now_ns() < until) {
        for (int q = 0; q < comm->size && out->other < 0; q++) {
            char *theirs;
            late_key(comm, req->seq, q, key, sizeof(key));
            if (seen[q] || !shi_ft_look(comm, key, &theirs)) {
                continue;
            }
            seen[q] = 1;
            missing--;
            if (word_differs(
                    theirs, req, out->other_call, sizeof(out->other_call))) {
                out->other = q;
            }
            free(theirs);
        }
        struct timespec pause = { 0, ABSENT_PAUSE_NS };
        nanosleep(&pause, NULL);
    }
    out->names[0] = '\0';
    for (int q = 0; out->other < 0 && missing > 0 && q < comm->size; q++) {
        size_t used = strlen(out->names);
        if (!seen[q] && used + 80 < sizeof(out->names)) {
            snprintf(out->names + used, sizeof(out->names) - used,
                "%srank %d (pid %d on host %s)", out->absent > 0 ? ", " : "",
                q, comm->peers[q].pid, comm->peers[q].host);
            out->absent++;
        }
    }
    free(seen);
    return out->absent > 0 || out->other >= 0;
}
