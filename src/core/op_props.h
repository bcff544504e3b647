// One table of the operations' properties: name, whether a root takes
// part, whether it reduces, which per-rank count arrays it takes, its
// in-place form, the collective its algorithms are selected as, and the
// elements of each buffer on a rank. The argument
// checks (coll/api.c), the messages (request.c) and every
// transport's algorithms (the schedule executor's in-place rule) read it,
// so a rule is written once.
#ifndef SHI_OP_PROPS_H
#define SHI_OP_PROPS_H

#include <stddef.h>

// How the send buffer may lie inside the receive buffer (or the reverse)
// for the collective to run in place (include/shoal.h documents each).
enum shi_in_place {
    SHI_IN_PLACE_NONE = 0, // no in-place form (all_to_all, all_to_all_v)
    SHI_IN_PLACE_SAME, // send == recv (on the root only, when rooted)
    SHI_IN_PLACE_SEND_AT_MY_BLOCK, // send == recv + my block (all_gather)
    SHI_IN_PLACE_RECV_AT_MY_BLOCK, // recv == send + my block (reduce_scatter)
    SHI_IN_PLACE_ROOT_SEND_AT_ITS_BLOCK, // root: send == recv + root's block
    SHI_IN_PLACE_ROOT_RECV_AT_ITS_BLOCK, // root: recv == send + root's block
};

// The collectives as the algorithm registry and the selection rules know
// them: a v-form is selected as its plain form (all_gather_v as
// all_gather). SHI_COLL_COUNT: not a collective (send, recv, windows).
typedef enum shi_coll {
    SHI_COLL_ALLREDUCE = 0,
    SHI_COLL_REDUCE,
    SHI_COLL_ALLGATHER,
    SHI_COLL_REDUCE_SCATTER,
    SHI_COLL_ALLTOALL,
    SHI_COLL_GATHER,
    SHI_COLL_SCATTER,
    SHI_COLL_BROADCAST,
    SHI_COLL_BARRIER,
    SHI_COLL_COUNT
} shi_coll;

typedef struct shi_op_props {
    const char       *name; // "all_reduce"
    int               collective; // not point to point
    int               rooted; // a root rank takes part
    int               reduces; // has a reduction op
    int               counts; // takes per-rank counts (v-forms)
    int               rcounts; // takes per-rank receive counts too
    enum shi_in_place in_place;
    shi_coll          coll; // selected as; SHI_COLL_COUNT: none
    const char       *select_name; // coll's name in SHOAL_ALGO: "allreduce"
} shi_op_props;

// The table, by operation kind (enum shi_op_kind), and the row of an
// unknown kind (zeros, named "operation").
#define SHI_OP_KINDS 18
extern const shi_op_props shi_op_props_table[SHI_OP_KINDS];
extern const shi_op_props shi_op_props_unknown;

// The properties of operation kind `kind` (asked on every call's path).
static inline const shi_op_props *
shi_op_props_of(int kind)
{
    if (kind <= 0 || kind >= SHI_OP_KINDS
        || shi_op_props_table[kind].name == NULL) {
        return &shi_op_props_unknown;
    }
    return &shi_op_props_table[kind];
}

// The collective whose rules select the algorithm of operation kind
// `kind` (SHI_COLL_COUNT for send, recv and the windows' operations).
static inline shi_coll
shi_coll_of_op(int kind)
{
    return shi_op_props_of(kind)->coll;
}

// Collective `coll`'s name in SHOAL_ALGO and tuning files ("allreduce")
// and in the API ("all_reduce"); NULL for out-of-range values.
const char *shi_coll_name(int coll);
const char *shi_coll_api_name(int coll);
// Every collective's name, ", "-separated, into buf (api_names: "all_reduce",
// else "allreduce").
void shi_coll_list(char *buf, size_t len, int api_names);

// The shape of one call as every rule below needs it.
typedef struct shi_op_shape {
    int           kind;
    int           rank, nranks, root; // root: -1 if not rooted
    size_t        count; // per-rank count (v-forms: unused)
    const size_t *counts, *rcounts; // v-forms: per-rank counts
} shi_op_shape;

// Elements of this rank's send and receive buffers.
void shi_op_buffer_elems(const shi_op_shape *s, size_t *send, size_t *recv);

// The sum of counts[0 .. n-1] (0 for NULL counts).
size_t shi_counts_sum(const size_t *counts, int n);

// Elements before rank `r`'s block (all_gather, reduce_scatter and their
// v-forms, gather, scatter).
size_t shi_op_block_displ(const shi_op_shape *s, int r);

// Whether buffers `send` and `recv` (elements of `esize` bytes) are the
// collective's in-place form on this rank.
int shi_op_in_place(
    const shi_op_shape *s, size_t esize, const void *send, const void *recv);

#endif
