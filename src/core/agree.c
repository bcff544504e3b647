// The fault-tolerant agreement: an AND over the live ranks, and who they
// are, on a communicator that may have lost ranks and failed.
//
// Agreement k of a communicator (agreements and shrinks are numbered
// together; every live rank makes them in the same order) lives under
// <prefix>ft<k>/ in the store. No rank leads, so no rank's death can stall
// the others: each decides alone, from facts that every rank reads alike.
//   1. set in/<me> to the flag ("1" or "0"): this rank joined;
//   2. for every rank q, wait until in/q is set, or q's process is gone
//      (the store set its "gone" key: ft.h), or q said goodbye (it
//      destroyed its communicator);
//   3. the joined set J is the ranks whose in/q is set, read once more
//      for those found gone: a dead process's sets precede its gone key
//      (the store applies one connection's requests in order, the will
//      last), and a rank that said goodbye had returned from its calls.
//      So no later look can find a different J.
// The flag is the AND of J's flags; the failed set is the others. The
// transport's own view of a death is not used here: a rank whose link
// dropped may still join, and a rank that judged it dead would disagree.
// Cost: about 2n store round trips per rank, then one per joined rank.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "core/ft.h"
#include "store/store.h"

enum { UNKNOWN, JOINED, OUT };

// How long one wait for a missing rank's key lasts before every rank is
// looked at again.
#define AGREE_SLICE_MS 50

void
shi_ft_key(
    const shoal_comm *comm, int k, const char *what, char *buf, size_t len)
{
    snprintf(buf, len, "%sft%d/%s", comm->prefix, k, what);
}

static void
in_key(const shoal_comm *comm, int k, int q, char *buf, size_t len)
{
    char what[32];

    snprintf(what, sizeof(what), "in/%d", q);
    shi_ft_key(comm, k, what, buf, len);
}

// Marks the ranks now known to have joined or to be out; returns the
// first rank still unknown, or -1.
static int
look_at_everyone(shoal_comm *comm, int k, unsigned char *state)
{
    char key[600];
    int  first = -1;

    for (int q = 0; q < comm->size; q++) {
        if (state[q] != UNKNOWN) {
            continue;
        }
        in_key(comm, k, q, key, sizeof(key));
        if (shi_ft_look(comm, key, NULL)) {
            state[q] = JOINED;
        } else if (atomic_load(&comm->peers[q].state) == SHI_PEER_LEFT
            || shi_process_gone(comm, q)) {
            state[q] = OUT;
        } else if (first < 0) {
            first = q;
        }
    }
    return first;
}

// Steps 2: until every rank joined or is out, or the deadline.
static int
await_everyone(shoal_comm *comm, int k, unsigned char *state, int64_t deadline)
{
    char key[600];
    int  q;

    while ((q = look_at_everyone(comm, k, state)) >= 0) {
        int64_t now = shi_now_ns();
        if (now >= deadline) {
            return shi_error(SHOAL_ETIMEDOUT,
                "agreement %d on '%s': rank %d (pid %d on %s) neither joined "
                "nor died before the deadline (it is alive but does not "
                "call the agreement: stopped, or busy elsewhere)",
                k, comm->name, q, comm->peers[q].pid, comm->peers[q].host);
        }
        int64_t until = shi_deadline_in_ms(AGREE_SLICE_MS);
        void   *value;
        size_t  len;
        in_key(comm, k, q, key, sizeof(key));
        int st = shi_store_get(shi_comm_store(comm), key, &value, &len,
            shi_earliest(until, deadline));
        if (st == SHOAL_OK) {
            free(value);
            state[q] = JOINED;
        } else if (st != SHOAL_ETIMEDOUT) {
            return shi_error_wrap(st,
                "agreement %d on '%s' needs the store (a store served by a "
                "dead rank cannot be used: serve it from the launcher, "
                "shoalrun)",
                k, comm->name);
        }
    }
    return SHOAL_OK;
}

// Step 3: the joined set and the AND of its flags.
static int
read_flags(shoal_comm *comm, int k, const unsigned char *state, int *flag,
    unsigned char *joined)
{
    char key[600], *value;

    *flag = 1;
    for (int q = 0; q < comm->size; q++) {
        in_key(comm, k, q, key, sizeof(key));
        joined[q] = state[q] == JOINED || shi_ft_look(comm, key, NULL);
        if (!joined[q]) {
            continue;
        }
        if (!shi_ft_look(comm, key, &value)) {
            return shi_error(SHOAL_EPROTO,
                "agreement %d on '%s': rank %d's entry vanished from the "
                "store",
                k, comm->name, q);
        }
        int bad = strcmp(value, "0") != 0 && strcmp(value, "1") != 0;
        *flag &= value[0] == '1';
        free(value);
        if (bad) {
            return shi_error(SHOAL_EPROTO,
                "agreement %d on '%s': rank %d's entry is not a flag", k,
                comm->name, q);
        }
    }
    return SHOAL_OK;
}

int
shi_ft_agree(shoal_comm *comm, int k, int *flag, unsigned char *joined,
    int64_t deadline)
{
    char           key[600];
    unsigned char *state;
    int            st;

    if (comm->size == 1) {
        joined[0] = 1; // nobody to wait for, and no store
        return SHOAL_OK;
    }
    if (!shi_comm_store_has_wills(comm)) {
        return shi_error(SHOAL_ENOTSUP,
            "agreement on '%s' needs a TCP store: a file store cannot tell "
            "a dead rank from a slow one",
            comm->name);
    }
    if (shi_process_gone(comm, comm->rank)) {
        return shi_error(SHOAL_EPEER,
            "agreement %d on '%s': the store took this rank (%d) for dead "
            "when its connection to the store dropped; the others go on "
            "without it",
            k, comm->name, comm->rank);
    }
    if ((state = calloc((size_t) comm->size, 1)) == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    in_key(comm, k, comm->rank, key, sizeof(key));
    st = shi_store_set(
        shi_comm_store(comm), key, *flag ? "1" : "0", 1, deadline);
    if (st == SHOAL_OK) {
        state[comm->rank] = JOINED;
        st                = await_everyone(comm, k, state, deadline);
    }
    if (st == SHOAL_OK) {
        st = read_flags(comm, k, state, flag, joined);
    }
    free(state);
    return st;
}

// Counts this rank done with agreement k; the last of the `members`
// deletes its keys (a member that died leaves them: a few bytes).
void
shi_ft_forget(shoal_comm *comm, int k, int members, int64_t deadline)
{
    char    key[600];
    int64_t done = 0;

    shi_ft_key(comm, k, "done", key, sizeof(key));
    if (shi_store_add(shi_comm_store(comm), key, 1, &done, deadline)
            != SHOAL_OK
        || done < members) {
        return;
    }
    shi_ft_key(comm, k, "", key, sizeof(key));
    shi_store_delete_prefix(shi_comm_store(comm), key, NULL, deadline);
}

int
shoal_comm_agree(
    shoal_comm *comm, int *flag, int *failed, int max_failed, int *nfailed)
{
    unsigned char *joined;
    int            st, members = 0, n = 0;

    if (comm == NULL || flag == NULL || nfailed == NULL || max_failed < 0
        || (max_failed > 0 && failed == NULL)) {
        return shi_error(SHOAL_EINVAL,
            "comm_agree: need a communicator, a flag, a count and room for "
            "max_failed >= 0 ranks");
    }
    *nfailed = 0;
    if ((joined = calloc((size_t) comm->size, 1)) == NULL) {
        return shi_comm_error(comm, shi_error(SHOAL_ENOMEM, "out of memory"));
    }
    int     k        = ++comm->nagrees;
    int64_t deadline = shi_deadline_in_ms(comm->timeout_ms);
    int     agreed   = *flag != 0;
    st               = shi_ft_agree(comm, k, &agreed, joined, deadline);
    for (int q = 0; st == SHOAL_OK && q < comm->size; q++) {
        members += joined[q];
        if (!joined[q] && n < max_failed) {
            failed[n] = q;
        }
        n += !joined[q];
    }
    free(joined);
    if (st != SHOAL_OK) {
        return shi_comm_error(comm, st);
    }
    if (comm->size > 1) {
        shi_ft_forget(comm, k, members, deadline);
    }
    *flag    = agreed;
    *nfailed = n;
    return SHOAL_OK;
}
