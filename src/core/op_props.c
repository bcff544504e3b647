// The operations' properties (see op_props.h).
#include "core/op_props.h"

#include "core/request.h"

#define COLL(n, r, red, c, rc, ip)                                            \
    {                                                                         \
        n, 1, r, red, c, rc, SHI_IN_PLACE_##ip                                \
    }

const shi_op_props shi_op_props_table[SHI_OP_KINDS] = {
    [SHI_OP_SEND]       = { "send", 0, 0, 0, 0, 0, SHI_IN_PLACE_NONE },
    [SHI_OP_RECV]       = { "recv", 0, 0, 0, 0, 0, SHI_IN_PLACE_NONE },
    [SHI_OP_BARRIER]    = COLL("barrier", 0, 0, 0, 0, NONE),
    [SHI_OP_BCAST]      = COLL("broadcast", 1, 0, 0, 0, NONE),
    [SHI_OP_ALLREDUCE]  = COLL("all_reduce", 0, 1, 0, 0, SAME),
    [SHI_OP_REDUCE]     = COLL("reduce", 1, 1, 0, 0, SAME),
    [SHI_OP_ALLGATHER]  = COLL("all_gather", 0, 0, 0, 0, SEND_AT_MY_BLOCK),
    [SHI_OP_ALLGATHERV] = COLL("all_gather_v", 0, 0, 1, 0, SEND_AT_MY_BLOCK),
    [SHI_OP_REDUCE_SCATTER]
    = COLL("reduce_scatter", 0, 1, 0, 0, RECV_AT_MY_BLOCK),
    [SHI_OP_REDUCE_SCATTERV]
    = COLL("reduce_scatter_v", 0, 1, 1, 0, RECV_AT_MY_BLOCK),
    [SHI_OP_ALLTOALL]    = COLL("all_to_all", 0, 0, 0, 0, NONE),
    [SHI_OP_ALLTOALLV]   = COLL("all_to_all_v", 0, 0, 1, 1, NONE),
    [SHI_OP_GATHER]      = COLL("gather", 1, 0, 0, 0, ROOT_SEND_AT_ITS_BLOCK),
    [SHI_OP_SCATTER]     = COLL("scatter", 1, 0, 0, 0, ROOT_RECV_AT_ITS_BLOCK),
    [SHI_OP_PUT]         = { "put", 0, 0, 0, 0, 0, SHI_IN_PLACE_NONE },
    [SHI_OP_SIGNAL]      = { "signal", 0, 0, 0, 0, 0, SHI_IN_PLACE_NONE },
    [SHI_OP_WAIT_SIGNAL] = { "wait_signal", 0, 0, 0, 0, 0, SHI_IN_PLACE_NONE },
};

const shi_op_props shi_op_props_unknown
    = { "operation", 0, 0, 0, 0, 0, SHI_IN_PLACE_NONE };

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
        case SHI_OP_BCAST:
            *send = *recv = s->count;
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
