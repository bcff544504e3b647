// Shrinking a communicator to its live ranks.
//
// Steps (each an agreement number k of the parent, agree.c):
//   1. agree (flag 1) on the joined set J: the live ranks, in parent order;
//   2. the members of J build the new communicator under <prefix>ft<k>.new/
//      (its creation also ends when a member's process is gone, since a
//      member that died before it began would leave the others waiting);
//   3. each member records built/<me> = "1" or "0"; the verdict is "1"
//      from every member of J, each waited for until it recorded one or its
//      process is gone (then "0": the same for all, as in agree.c);
//   4. on a "0" every member destroys what it built and goes back to 1
//      with k + 1, where a member that died is left out.
// Preconditions: the store is alive and keeps wills (a TCP store served by
// the launcher or a live rank). Cost: one agreement and one creation per
// attempt; one attempt unless a rank dies during the shrink.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "core/ft.h"
#include "store/store.h"

// Attempts beyond the first: each is caused by a rank's death.
#define SHRINK_RETRIES_MAX 8
// One wait for a member's record before looking at whether it is gone.
#define SLICE_MS 50

struct members {
    shoal_comm          *parent;
    const unsigned char *joined;
};

// A member whose process is gone ends the new communicator's creation.
static int
member_gone(void *arg)
{
    const struct members *m = arg;

    for (int q = 0; q < m->parent->size; q++) {
        if (m->joined[q] && q != m->parent->rank
            && shi_process_gone(m->parent, q)) {
            return shi_error(SHOAL_EPEER,
                "rank %d (pid %d on %s) of '%s' died during the shrink", q,
                m->parent->peers[q].pid, m->parent->peers[q].host,
                m->parent->name);
        }
    }
    return SHOAL_OK;
}

// Step 2: this rank's communicator of the members.
static int
build(shoal_comm *parent, int k, const unsigned char *joined, int64_t deadline,
    shoal_comm **out)
{
    struct members m = { parent, joined };
    shoal_comm    *child;
    char           name[64];
    int            me = 0, size = 0, st;

    for (int q = 0; q < parent->size; q++) {
        me += q < parent->rank && joined[q];
        size += joined[q];
    }
    snprintf(name, sizeof(name), "%s.shrink%d", parent->name, k);
    if ((st = shi_comm_child_alloc(parent, name, me, size, &child))
        != SHOAL_OK) {
        return st;
    }
    child->rdv_extra     = member_gone;
    child->rdv_extra_arg = &m;
    snprintf(child->prefix, sizeof(child->prefix), "%sft%d.new/",
        parent->prefix, k);
    return shi_comm_child_boot(child, deadline, out);
}

// One slice of the wait for member q's record under key: SHOAL_OK with
// it in *value, SHOAL_INPROGRESS to look again, or the failure.
static int
await_built(
    shoal_comm *parent, int q, const char *key, char **value, int64_t deadline)
{
    int64_t until = shi_deadline_in_ms(SLICE_MS);
    size_t  len;
    int st = shi_store_get(shi_comm_store(parent), key, (void **) value, &len,
        shi_earliest(until, deadline));

    if (st != SHOAL_ETIMEDOUT) {
        return st;
    }
    if (shi_process_gone(parent, q)) {
        if (shi_ft_look(parent, key, value)) {
            return SHOAL_OK; // it recorded, then died
        }
        return shi_error(SHOAL_EPEER,
            "rank %d (pid %d on %s) died while the shrink of '%s' built the "
            "new communicator",
            q, parent->peers[q].pid, parent->peers[q].host, parent->name);
    }
    if (shi_now_ns() >= deadline) {
        return shi_error(SHOAL_ETIMEDOUT,
            "shrink of '%s': rank %d never said whether it built its part "
            "of the new communicator",
            parent->name, q);
    }
    return SHOAL_INPROGRESS;
}

// Step 3: whether every member built its part (the same answer on all).
static int
verdict(shoal_comm *parent, int k, const unsigned char *joined, int built,
    int64_t deadline)
{
    char key[600], what[32], *value;
    int  st = SHOAL_OK;

    snprintf(what, sizeof(what), "built/%d", parent->rank);
    shi_ft_key(parent, k, what, key, sizeof(key));
    st = shi_store_set(
        shi_comm_store(parent), key, built ? "1" : "0", 1, deadline);
    for (int q = 0; st == SHOAL_OK && q < parent->size; q++) {
        if (!joined[q]) {
            continue;
        }
        snprintf(what, sizeof(what), "built/%d", q);
        shi_ft_key(parent, k, what, key, sizeof(key));
        while ((st = await_built(parent, q, key, &value, deadline))
            == SHOAL_INPROGRESS) { }
        if (st != SHOAL_OK) {
            return st;
        }
        int ok = strcmp(value, "1") == 0;
        free(value);
        if (!ok) {
            st = shi_error(SHOAL_EPEER,
                "shrink of '%s': rank %d could not build its part of the "
                "new communicator",
                parent->name, q);
        }
    }
    return st;
}

// One attempt: steps 1 to 3. *again: it failed on a verdict (a member
// died or failed), which every member saw alike.
static int
attempt(shoal_comm *comm, unsigned char *joined, int64_t deadline,
    shoal_comm **out, int *again)
{
    shoal_comm *child = NULL;
    int         k = ++comm->nagrees, flag = 1, members = 0;
    char        why[SHI_ERROR_TEXT_MAX];

    *again = 0;
    int st = shi_ft_agree(comm, k, &flag, joined, deadline);
    if (st != SHOAL_OK) {
        return st;
    }
    for (int q = 0; q < comm->size; q++) {
        members += joined[q];
    }
    int built = build(comm, k, joined, deadline, &child);
    if (comm->size == 1) {
        *out = child; // no store, nobody else: nothing to agree on
        return built;
    }
    snprintf(why, sizeof(why), "%s", shi_error_text());
    st = verdict(comm, k, joined, built == SHOAL_OK, deadline);
    if (st == SHOAL_OK) {
        shi_ft_forget(comm, k, members, deadline);
        *out = child;
        return SHOAL_OK;
    }
    *again = st == SHOAL_EPEER;
    if (built != SHOAL_OK) {
        SHI_INFO("shrink of '%s': building rank %d's part failed: %s",
            comm->name, comm->rank, why);
    }
    shoal_comm_destroy(child);
    return st;
}

int
shoal_comm_shrink(shoal_comm *comm, shoal_comm **out)
{
    unsigned char *joined;
    int            st, again = 1;

    if (comm == NULL || out == NULL) {
        return shi_error(SHOAL_EINVAL,
            "comm_shrink: need a communicator and an out pointer");
    }
    *out = NULL;
    if (shi_fork_check(comm, "comm_shrink") != SHOAL_OK) {
        return SHOAL_EINVAL;
    }
    if ((joined = calloc((size_t) comm->size, 1)) == NULL) {
        return shi_comm_error(comm, shi_error(SHOAL_ENOMEM, "out of memory"));
    }
    int64_t deadline = shi_deadline_in_ms(comm->timeout_ms);
    st               = SHOAL_EPEER;
    for (int i = 0; again && i <= SHRINK_RETRIES_MAX; i++) {
        st = attempt(comm, joined, deadline, out, &again);
        if (again) {
            SHI_INFO("shrink of '%s': %s; agreeing again", comm->name,
                shi_error_text());
        }
    }
    free(joined);
    return st == SHOAL_OK ? st : shi_comm_error(comm, st);
}
