// The operations' properties (see op_props.h).
#include "core/op_props.h"

#include <stddef.h>
#include <stdio.h>

#include "core/request.h"

#define COLL(n, r, red, c, rc, ip, coll, sel)                                 \
    {                                                                         \
        n, 1, r, red, c, rc, SHI_IN_PLACE_##ip, SHI_COLL_##coll, sel          \
    }
#define NOT_COLL(n)                                                           \
    {                                                                         \
        n, 0, 0, 0, 0, 0, SHI_IN_PLACE_NONE, SHI_COLL_COUNT, NULL             \
    }

const shi_op_props shi_op_props_table[SHI_OP_KINDS] = {
    [SHI_OP_SEND]    = NOT_COLL("send"),
    [SHI_OP_RECV]    = NOT_COLL("recv"),
    [SHI_OP_BARRIER] = COLL("barrier", 0, 0, 0, 0, NONE, BARRIER, "barrier"),
    [SHI_OP_BCAST]
    = COLL("broadcast", 1, 0, 0, 0, NONE, BROADCAST, "broadcast"),
    [SHI_OP_ALLREDUCE]
    = COLL("all_reduce", 0, 1, 0, 0, SAME, ALLREDUCE, "allreduce"),
    [SHI_OP_REDUCE] = COLL("reduce", 1, 1, 0, 0, SAME, REDUCE, "reduce"),
    [SHI_OP_ALLGATHER]
    = COLL("all_gather", 0, 0, 0, 0, SEND_AT_MY_BLOCK, ALLGATHER, "allgather"),
    [SHI_OP_ALLGATHERV] = COLL(
        "all_gather_v", 0, 0, 1, 0, SEND_AT_MY_BLOCK, ALLGATHER, "allgather"),
    [SHI_OP_REDUCE_SCATTER]  = COLL("reduce_scatter", 0, 1, 0, 0,
         RECV_AT_MY_BLOCK, REDUCE_SCATTER, "reducescatter"),
    [SHI_OP_REDUCE_SCATTERV] = COLL("reduce_scatter_v", 0, 1, 1, 0,
        RECV_AT_MY_BLOCK, REDUCE_SCATTER, "reducescatter"),
    [SHI_OP_ALLTOALL]
    = COLL("all_to_all", 0, 0, 0, 0, NONE, ALLTOALL, "alltoall"),
    [SHI_OP_ALLTOALLV]
    = COLL("all_to_all_v", 0, 0, 1, 1, NONE, ALLTOALL, "alltoall"),
    [SHI_OP_GATHER]
    = COLL("gather", 1, 0, 0, 0, ROOT_SEND_AT_ITS_BLOCK, GATHER, "gather"),
    [SHI_OP_SCATTER]
    = COLL("scatter", 1, 0, 0, 0, ROOT_RECV_AT_ITS_BLOCK, SCATTER, "scatter"),
    [SHI_OP_PUT]         = NOT_COLL("put"),
    [SHI_OP_SIGNAL]      = NOT_COLL("signal"),
    [SHI_OP_WAIT_SIGNAL] = NOT_COLL("wait_signal"),
};

const shi_op_props shi_op_props_unknown = NOT_COLL("operation");

_Static_assert(SHI_OP_WAIT_SIGNAL + 1 == SHI_OP_KINDS,
    "SHI_OP_KINDS is one past the last operation kind");

size_t
shi_counts_sum(const size_t *counts, int n)
{
    size_t total = 0;

    for (int i = 0; counts != NULL && i < n; i++) {
        total += counts[i];
    }
    return total;
}

size_t
shi_op_block_displ(const shi_op_shape *s, int r)
{
    return shi_op_props_of(s->kind)->counts ? shi_counts_sum(s->counts, r)
                                            : (size_t) r * s->count;
}

// Elements of rank r's block (v-forms: its count).
static size_t
block_count(const shi_op_shape *s, int r)
{
    return shi_op_props_of(s->kind)->counts ? s->counts[r] : s->count;
}

void
shi_op_buffer_elems(const shi_op_shape *s, size_t *send, size_t *recv)
{
    size_t n    = (size_t) s->nranks;
    int    root = s->rank == s->root;

    switch (s->kind) {
        case SHI_OP_ALLREDUCE:
            *send = *recv = s->count;
            return;
        case SHI_OP_BCAST: // one buffer, the request's (recv) one
            *send = 0;
            *recv = s->count;
            return;
        case SHI_OP_REDUCE:
            *send = s->count;
            *recv = root ? s->count : 0;
            return;
        case SHI_OP_ALLGATHER:
        case SHI_OP_ALLGATHERV:
            *send = block_count(s, s->rank);
            *recv = shi_op_block_displ(s, s->nranks);
            return;
        case SHI_OP_REDUCE_SCATTER:
        case SHI_OP_REDUCE_SCATTERV:
            *send = shi_op_block_displ(s, s->nranks);
            *recv = block_count(s, s->rank);
            return;
        case SHI_OP_ALLTOALL:
            *send = *recv = s->count * n;
            return;
        case SHI_OP_ALLTOALLV:
            *send = shi_counts_sum(s->counts, s->nranks);
            *recv = shi_counts_sum(s->rcounts, s->nranks);
            return;
        case SHI_OP_GATHER:
            *send = s->count;
            *recv = root ? s->count * n : 0;
            return;
        case SHI_OP_SCATTER:
            *send = root ? s->count * n : 0;
            *recv = s->count;
            return;
    }
    *send = *recv = 0;
}

int
shi_op_in_place(
    const shi_op_shape *s, size_t esize, const void *send, const void *recv)
{
    const unsigned char *snd = send, *rcv = recv;
    const shi_op_props  *p  = shi_op_props_of(s->kind);
    int                  me = s->rank, root = s->root;

    if (snd == NULL || rcv == NULL || (p->rooted && me != root)) {
        return 0;
    }
    switch (p->in_place) {
        case SHI_IN_PLACE_NONE:
            return 0;
        case SHI_IN_PLACE_SAME:
            return snd == rcv;
        case SHI_IN_PLACE_SEND_AT_MY_BLOCK:
            return snd == rcv + shi_op_block_displ(s, me) * esize;
        case SHI_IN_PLACE_RECV_AT_MY_BLOCK:
            return rcv == snd + shi_op_block_displ(s, me) * esize;
        case SHI_IN_PLACE_ROOT_SEND_AT_ITS_BLOCK:
            return snd == rcv + shi_op_block_displ(s, root) * esize;
        case SHI_IN_PLACE_ROOT_RECV_AT_ITS_BLOCK:
            return rcv == snd + shi_op_block_displ(s, root) * esize;
    }
    return 0;
}

// The first row selected as `coll`: its plain form, which comes first.
static const shi_op_props *
coll_row(int coll)
{
    for (int k = 1; coll >= 0 && coll < SHI_COLL_COUNT && k < SHI_OP_KINDS;
         k++) {
        if (shi_op_props_table[k].name != NULL
            && shi_op_props_table[k].coll == (shi_coll) coll) {
            return &shi_op_props_table[k];
        }
    }
    return NULL;
}

const char *
shi_coll_name(int coll)
{
    const shi_op_props *p = coll_row(coll);

    return p != NULL ? p->select_name : NULL;
}

const char *
shi_coll_api_name(int coll)
{
    const shi_op_props *p = coll_row(coll);

    return p != NULL ? p->name : NULL;
}

void
shi_coll_list(char *buf, size_t len, int api_names)
{
    size_t pos = 0;

    buf[0] = '\0';
    for (int c = 0; c < SHI_COLL_COUNT && pos < len; c++) {
        int n = snprintf(buf + pos, len - pos, "%s%s", c > 0 ? ", " : "",
            api_names ? shi_coll_api_name(c) : shi_coll_name(c));
        pos += n > 0 ? (size_t) n : 0;
    }
}
