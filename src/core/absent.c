// Which rank never reached a collective whose deadline passed.
//
// Over a message transport a collective's waits form a chain: with rank 1
// stopped, rank 0 may wait for rank 2, which waits for rank 1, so the rank
// a request is blocked on is the next link, not the one that never came.
// At its deadline each rank says so in the store under the collective's
// number, then looks for a moment for the others: every survivor of the
// same collective times out within a moment of the others, while a rank
// that never called it (stopped, stuck elsewhere) never says so. Only the
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

int
shi_absent_ranks(
    shoal_comm *comm, const shoal_request *req, char *buf, size_t len)
{
    char    key[600];
    int     absent = 0;
    int64_t until  = shi_deadline_in_ms(ABSENT_WINDOW_MS);

    if (comm->store == NULL || comm->size < 3) {
        return 0; // with two ranks the one waited for is the one
    }
    late_key(comm, req->seq, comm->rank, key, sizeof(key));
    if (shi_store_set(shi_comm_store(comm), key, "1", 1, until) != SHOAL_OK) {
        return 0;
    }
    unsigned char *seen = calloc((size_t) comm->size, 1);
    if (seen == NULL) {
        return 0;
    }
    seen[comm->rank] = 1;
    int missing      = comm->size - 1;
    while (missing > 0 && shi_now_ns() < until) {
        for (int q = 0; q < comm->size; q++) {
            late_key(comm, req->seq, q, key, sizeof(key));
            if (!seen[q] && shi_ft_look(comm, key, NULL)) {
                seen[q] = 1;
                missing--;
            }
        }
        struct timespec pause = { 0, ABSENT_PAUSE_NS };
        nanosleep(&pause, NULL);
    }
    buf[0] = '\0';
    for (int q = 0; missing > 0 && q < comm->size; q++) {
        size_t used = strlen(buf);
        if (!seen[q] && used + 80 < len) {
            snprintf(buf + used, len - used, "%srank %d (pid %d on %s)",
                absent > 0 ? ", " : "", q, comm->peers[q].pid,
                comm->peers[q].host);
            absent++;
        }
    }
    free(seen);
    return absent;
}
