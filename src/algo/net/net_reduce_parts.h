// The pieces shared by the reducing message schedules (net_reduce_parts.c
// says how each works): the ring reduce-scatter, the reduction from raw
// inputs, and the inputs of each reducing collective. Private to the
// schedule builders.
#ifndef SHI_NET_REDUCE_PARTS_H
#define SHI_NET_REDUCE_PARTS_H

#include "algo/net/net_gen.h"

enum ring_mode { RING_DIRECT, RING_POOL, RING_STEP2 };

typedef struct ring_rs {
    // In.
    const net_blocks *b;
    const size_t     *base; // net_piece_base(b)
    const net_inputs *in;
    int               shift;
    int               mode; // ring_mode
    int               fin_to_recv; // step2: last reduction into RECV + 0
    // Out.
    int    *fin; // per piece of the reduced block: the operation making it
    net_loc fin_loc; // where that block starts
    int    *touch; // direct, pool: per block piece, last operation on RECV
} ring_rs;

// Result of one rank alone: its input, scaled for PREMUL_SUM.
int net_reduce_alone(net_gen *g, net_loc dst, net_loc src, uint64_t bytes);

// The ring reduce-scatter: fills rs's outputs (see the file's header).
int ring_rs_run(net_gen *g, ring_rs *rs);

// Where this rank's input is: sendbuf, or recvbuf in place.
net_loc net_input_at(int in_place, uint64_t off);

// all_reduce of float16/bfloat16 from raw inputs (ring and rhd alike).
int net_allreduce_raw(net_gen *g);

// The single-block inputs of reduce (premultiplied into recvbuf on the
// root).
int net_reduce_inputs(net_gen *g, net_inputs *in, net_blocks *b);

// reduce from raw inputs; `split`: one block per rank, else one block.
int net_reduce_raw(net_gen *g, int split);

// reduce_scatter: blocks of sendbuf per rank and this rank's inputs.
int net_rs_inputs(net_gen *g, net_inputs *in, net_blocks *b);

// reduce_scatter on one rank: its own block is the result.
int net_rs_alone(net_gen *g);

// reduce_scatter from raw inputs, in `pieces` or one piece.
int net_rs_raw(net_gen *g, int pieces);

#endif
