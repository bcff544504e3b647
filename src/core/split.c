// Splitting a communicator, by color and key or by an explicit rank list.
//
// Collective over the parent: every rank publishes its choice under the
// parent's next split number in the store and waits until every rank has
// published one, even a rank that joins no group: one that returned early
// could go on to leave, and take with it the store its process serves,
// while a peer is still choosing. Then each reads the choices of the ranks
// it may share a group with, and the members bootstrap a new communicator
// under their own key prefix (so groups of one split never mix). The
// split's keys are deleted by the last rank to be done with them.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "core/comm.h"
#include "store/store.h"

#define CHOICE_MAX 65536

static int
publish_choice(
    shoal_comm *parent, int split, const char *choice, int64_t deadline)
{
    char key[512];

    snprintf(key, sizeof(key), "%ssplit%d/%d/choice", parent->prefix, split,
        parent->rank);
    return shi_store_set(
        shi_comm_store(parent), key, choice, strlen(choice), deadline);
}

static int
read_choice(shoal_comm *parent, int split, int r, char **out, int64_t deadline)
{
    char   key[512];
    size_t len;

    snprintf(
        key, sizeof(key), "%ssplit%d/%d/choice", parent->prefix, split, r);
    int st = shi_rdv_get_from(parent, r, key, out, &len, deadline);
    if (st != SHOAL_OK) {
        return shi_error_wrap(
            st, "split of '%s': waiting for rank %d", parent->name, r);
    }
    return SHOAL_OK;
}

// Counts this rank done with the split's keys; the last one deletes them.
static void
forget_choices(shoal_comm *parent, int split, int64_t deadline)
{
    char    key[512];
    int64_t done = 0;

    snprintf(key, sizeof(key), "%ssplit%d/done", parent->prefix, split);
    if (shi_store_add(shi_comm_store(parent), key, 1, &done, deadline)
            != SHOAL_OK
        || done < parent->size) {
        return; // a failed count only leaves keys behind
    }
    snprintf(key, sizeof(key), "%ssplit%d/", parent->prefix, split);
    shi_store_delete_prefix(shi_comm_store(parent), key, NULL, deadline);
}

// A wait for every rank's choice.
struct all_wait {
    shoal_comm *parent;
    int         split;
};

// The parent failed, or a peer destroyed its communicator without
// publishing a choice (it may have just before its goodbye: look).
static int
all_wait_check(void *arg)
{
    struct all_wait *w  = arg;
    int              st = shi_rdv_check(w->parent);

    for (int r = 0; st == SHOAL_OK && r < w->parent->size; r++) {
        char   key[512];
        void  *choice;
        size_t len;
        if (atomic_load(&w->parent->peers[r].state) != SHI_PEER_LEFT) {
            continue;
        }
        snprintf(key, sizeof(key), "%ssplit%d/%d/choice", w->parent->prefix,
            w->split, r);
        if (shi_store_get(shi_comm_store(w->parent), key, &choice, &len,
                shi_deadline_in_ms(0))
            == SHOAL_OK) {
            free(choice);
            continue;
        }
        st = shi_error(SHOAL_EPEER,
            "rank %d destroyed its communicator '%s' without taking part in "
            "the split",
            r, w->parent->name);
    }
    return st;
}

// Publishes this rank's choice and returns once every rank has published
// one: the last to arrive sets "all".
static int
publish_and_meet(
    shoal_comm *parent, int split, const char *choice, int64_t deadline)
{
    char            key[512], *value;
    size_t          len;
    int64_t         arrived = 0;
    struct all_wait w       = { parent, split };
    shi_store_watch watch   = { .check = all_wait_check, .arg = &w };
    int             st      = publish_choice(parent, split, choice, deadline);

    snprintf(key, sizeof(key), "%ssplit%d/arrived", parent->prefix, split);
    if (st == SHOAL_OK) {
        st = shi_store_add(shi_comm_store(parent), key, 1, &arrived, deadline);
    }
    snprintf(key, sizeof(key), "%ssplit%d/all", parent->prefix, split);
    if (st == SHOAL_OK && arrived == parent->size) {
        st = shi_store_set(shi_comm_store(parent), key, "1", 1, deadline);
    }
    if (st != SHOAL_OK) {
        return st;
    }
    st = shi_store_get_watched(
        shi_comm_store(parent), key, (void **) &value, &len, deadline, &watch);
    if (st != SHOAL_OK) {
        return shi_error_wrap(st,
            "split of '%s': waiting for every rank to choose", parent->name);
    }
    free(value);
    return SHOAL_OK;
}

int
shi_comm_child_alloc(
    shoal_comm *parent, const char *name, int rank, int size, shoal_comm **out)
{
    shoal_comm *child;
    int st = shi_comm_alloc(&child, name, rank, size, parent->timeout_ms);

    if (st != SHOAL_OK) {
        return st;
    }
    child->secret = parent->secret;
    child->store  = shi_store_ref_get(parent->store);
    *out          = child;
    return SHOAL_OK;
}

int
shi_comm_child_boot(shoal_comm *child, int64_t deadline, shoal_comm **out)
{
    int st = shi_comm_bootstrap(child, deadline);

    if (st != SHOAL_OK) {
        shi_comm_free(child);
        return st;
    }
    *out = child;
    return SHOAL_OK;
}

// Creates the member communicator: `rank` of `size`, keys under `tag`.
static int
make_child(shoal_comm *parent, int split, const char *tag, int rank, int size,
    int64_t deadline, shoal_comm **out)
{
    shoal_comm *child;
    char        name[64];
    int         st;

    snprintf(name, sizeof(name), "%s.split%d", parent->name, split);
    if ((st = shi_comm_child_alloc(parent, name, rank, size, &child))
        != SHOAL_OK) {
        return st;
    }
    child->rdv_parent = parent; // its failure ends the child's creation
    snprintf(child->prefix, sizeof(child->prefix), "%ssplit%d.%s/",
        parent->prefix, split, tag);
    return shi_comm_child_boot(child, deadline, out);
}

struct member {
    int key, rank;
};

static int
by_key_then_rank(const void *a, const void *b)
{
    const struct member *x = a, *y = b;

    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    return x->rank < y->rank ? -1 : (x->rank > y->rank);
}

// Reads every rank's (color, key) and collects those of `color`.
static int
collect_color(shoal_comm *parent, int split, int color, struct member *m,
    int *count, int64_t deadline)
{
    *count = 0;
    for (int r = 0; r < parent->size; r++) {
        char *choice;
        int   c, k, st = read_choice(parent, split, r, &choice, deadline);
        if (st != SHOAL_OK) {
            return st;
        }
        int ok = sscanf(choice, "color %d %d", &c, &k) == 2;
        free(choice);
        if (!ok) {
            return shi_error(SHOAL_EMISMATCH,
                "split of '%s': rank %d called "
                "shoal_comm_split_ranks where rank %d called "
                "shoal_comm_split",
                parent->name, r, parent->rank);
        }
        if (c == color) {
            m[*count].key  = k;
            m[*count].rank = r;
            (*count)++;
        }
    }
    return SHOAL_OK;
}

int
shoal_comm_split(shoal_comm *comm, int color, int key, shoal_comm **out)
{
    char           choice[64], tag[32];
    struct member *m;
    int            n, me = -1, st;

    if (out == NULL || comm == NULL || color < SHOAL_SPLIT_NONE) {
        return shi_error(SHOAL_EINVAL,
            "comm_split: need a communicator, an "
            "out pointer and a color >= 0 or SHOAL_SPLIT_NONE");
    }
    *out = NULL;
    if ((st = shi_rdv_usable(comm, "comm_split")) != SHOAL_OK) {
        return shi_comm_error(comm, st);
    }
    int     split    = ++comm->nsplits;
    int64_t deadline = shi_deadline_in_ms(comm->timeout_ms);
    snprintf(choice, sizeof(choice), "color %d %d", color, key);
    if (comm->size > 1
        && (st = publish_and_meet(comm, split, choice, deadline))
            != SHOAL_OK) {
        return shi_comm_error(comm, st);
    }
    if (color == SHOAL_SPLIT_NONE) {
        if (comm->size > 1) {
            forget_choices(comm, split, deadline);
        }
        return SHOAL_OK;
    }
    if ((m = calloc((size_t) comm->size, sizeof(*m))) == NULL) {
        return shi_comm_error(comm, shi_error(SHOAL_ENOMEM, "out of memory"));
    }
    if (comm->size == 1) {
        m[0] = (struct member) { key, 0 };
        n    = 1;
        st   = SHOAL_OK;
    } else {
        st = collect_color(comm, split, color, m, &n, deadline);
        if (st == SHOAL_OK) {
            forget_choices(comm, split, deadline);
        }
    }
    if (st == SHOAL_OK) {
        qsort(m, (size_t) n, sizeof(*m), by_key_then_rank);
        for (int i = 0; i < n; i++) {
            me = m[i].rank == comm->rank ? i : me;
        }
        snprintf(tag, sizeof(tag), "c%d", color);
        st = make_child(comm, split, tag, me, n, deadline, out);
    }
    free(m);
    return st == SHOAL_OK ? st : shi_comm_error(comm, st);
}

// Checks a rank list: in range, no duplicates, contains the caller.
static int
check_list(shoal_comm *comm, const int *ranks, int n, int *me)
{
    *me = -1;
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= comm->size) {
            return shi_error(SHOAL_EINVAL,
                "comm_split_ranks: rank %d is "
                "outside 0..%d",
                ranks[i], comm->size - 1);
        }
        for (int j = 0; j < i; j++) {
            if (ranks[j] == ranks[i]) {
                return shi_error(SHOAL_EINVAL,
                    "comm_split_ranks: rank %d "
                    "is listed twice",
                    ranks[i]);
            }
        }
        *me = ranks[i] == comm->rank ? i : *me;
    }
    if (*me < 0) {
        return shi_error(SHOAL_EINVAL,
            "comm_split_ranks: the list does not "
            "contain this rank (%d); ranks outside the new group "
            "pass an empty list",
            comm->rank);
    }
    return SHOAL_OK;
}

static int
format_list(char *buf, size_t len, const int *ranks, int n)
{
    size_t used = (size_t) snprintf(buf, len, "ranks");

    for (int i = 0; i < n && used < len; i++) {
        used += (size_t) snprintf(buf + used, len - used, " %d", ranks[i]);
    }
    return used < len ? SHOAL_OK
                      : shi_error(SHOAL_EINVAL,
                          "comm_split_ranks: list too "
                          "long");
}

// Every member must have passed exactly our list.
static int
verify_members(shoal_comm *comm, int split, const int *ranks, int n,
    const char *mine, int64_t deadline)
{
    for (int i = 0; i < n; i++) {
        char *theirs;
        int   st = read_choice(comm, split, ranks[i], &theirs, deadline);
        if (st != SHOAL_OK) {
            return st;
        }
        int same = strcmp(theirs, mine) == 0;
        if (!same) {
            st = shi_error(SHOAL_EMISMATCH,
                "split of '%s': rank %d passed "
                "[%s] but rank %d passed [%s]",
                comm->name, comm->rank, mine, ranks[i], theirs);
        }
        free(theirs);
        if (!same) {
            return st;
        }
    }
    return SHOAL_OK;
}

int
shoal_comm_split_ranks(
    shoal_comm *comm, const int *ranks, int nranks, shoal_comm **out)
{
    char *mine;
    char  tag[32];
    int   me = -1, st;

    if (out == NULL || comm == NULL || nranks < 0
        || (nranks > 0 && ranks == NULL)) {
        return shi_error(SHOAL_EINVAL,
            "comm_split_ranks: need a "
            "communicator, an out pointer and a list");
    }
    *out = NULL;
    if ((st = shi_rdv_usable(comm, "comm_split_ranks")) != SHOAL_OK) {
        return shi_comm_error(comm, st);
    }
    int     split    = ++comm->nsplits;
    int64_t deadline = shi_deadline_in_ms(comm->timeout_ms);
    if ((mine = malloc(CHOICE_MAX)) == NULL) {
        return shi_comm_error(comm, shi_error(SHOAL_ENOMEM, "out of memory"));
    }
    // A bad list still takes part, so that no peer waits for this rank;
    // members comparing their list with it see the difference.
    st = nranks > 0 ? check_list(comm, ranks, nranks, &me) : SHOAL_OK;
    if (st == SHOAL_OK) {
        st = format_list(mine, CHOICE_MAX, ranks, nranks);
    }
    if (st != SHOAL_OK) {
        snprintf(mine, CHOICE_MAX, "an invalid list");
    }
    if (comm->size > 1) {
        int met = publish_and_meet(comm, split, mine, deadline);
        st      = st == SHOAL_OK ? met : st;
        if (st == SHOAL_OK && nranks > 0) {
            st = verify_members(comm, split, ranks, nranks, mine, deadline);
        }
        if (met == SHOAL_OK) {
            forget_choices(comm, split, deadline);
        }
    }
    if (st == SHOAL_OK && nranks > 0) {
        snprintf(tag, sizeof(tag), "r%d", ranks[0]);
        st = make_child(comm, split, tag, me, nranks, deadline, out);
    }
    free(mine);
    return st == SHOAL_OK ? st : shi_comm_error(comm, st);
}
