// Plans: what one rank does in a compiled custom collective (compile_op).
//
// Every rank's spec (global shape, dtype, reduction, input and output
// boxes) is exchanged at compile time, and every rank runs the same
// deterministic planner over all of them, so all ranks agree on every
// message without further talk and report the same errors.
//
// Each output box is cut into cells: disjoint boxes, each covered by the
// same set of input boxes (its contributors, in canonical order: rank
// ascending, then input index ascending). Without a reduction a cell keeps
// one contributor, the last in canonical order ("last written wins": the
// highest rank, then its last listed input); with one, a cell combines all
// of them in canonical order, so every rank computing the same cell gets
// bitwise the same result.
//
// Data moves as one message per (sender, receiver) pair per run: the
// pieces (contributor's box of one cell) in planner order, packed densely.
// The plan keeps, for this rank, the messages it sends and receives and the
// cells of its outputs with where each contributor's data comes from.
//
// Several tensors: every box belongs to a tensor, named by the specs and
// matched by name across ranks; only boxes of one tensor meet. Tensors of
// fewer dimensions than the plan's most are planned with leading
// dimensions of extent 1 (the "padded" boxes below), so one grid, one
// message format and one executor serve them all. A rank's local tensors
// (what a run takes) hold one box each (one tensor, the spec's form) or one
// whole tensor each (several tensors).
#ifndef SHI_PLAN_H
#define SHI_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "plan/box.h"
#include "shoal.h"

// reduction value meaning "copy: the last contributor wins".
#define SHI_PLAN_COPY (-1)

// A tensor as one rank's spec names it (several tensors).
typedef struct shi_plan_tensor {
    char   *name;
    int     ndim;
    int     has_shape; // else the boxes define its extents
    int64_t shape[SHI_BOX_MAX_DIMS];
} shi_plan_tensor;

// One rank's spec, as exchanged. One tensor (several 0): ndim and shape
// are the global tensor's. Several: ndim and shape are unused, and box i
// belongs to tensors[input_tensor[i]] (output_tensor for outputs), its
// bounds in that tensor's own dimensions.
typedef struct shi_plan_spec {
    int              several; // the several-tensors form (may name none)
    int              ndim;
    int64_t          shape[SHI_BOX_MAX_DIMS];
    int              dtype;
    int              reduction; // SHI_PLAN_COPY or a shoal_op_kind
    int              ninputs, noutputs;
    shi_box         *inputs, *outputs; // global boxes
    int              ntensors;
    shi_plan_tensor *tensors;
    int             *input_tensor, *output_tensor;
    char *error; // the rank's own complaint about its arguments, or NULL
} shi_plan_spec;

// A tensor of the plan, as all ranks agreed on it.
typedef struct shi_plan_gtensor {
    char   *name; // "" for the one tensor of the spec's form
    int     ndim; // its own
    int64_t shape[SHI_BOX_MAX_DIMS];
} shi_plan_gtensor;

// A local tensor of this rank: the global box it holds (padded), of tensor
// `tensor`.
typedef struct shi_plan_local {
    int     tensor;
    shi_box owner;
} shi_plan_local;

// A piece of a message: a box of the sender's input `input`.
typedef struct shi_plan_piece {
    int     input; // index among the sender's inputs
    int     tensor; // the plan's tensor it belongs to
    shi_box box; // global, padded
    size_t  offset; // bytes into the message
} shi_plan_piece;

typedef struct shi_plan_msg {
    int             peer;
    size_t          bytes;
    int             npieces, cap;
    shi_plan_piece *pieces;
} shi_plan_msg;

// Where a cell's contributor comes from: this rank's input (msg < 0) or
// bytes at `offset` of the message from `rank` (plan->recvs[msg]).
typedef struct shi_plan_source {
    int    rank, input;
    int    msg;
    size_t offset;
} shi_plan_source;

typedef struct shi_plan_cell {
    int              output; // index among this rank's outputs
    shi_box          box; // global
    int              nsources;
    shi_plan_source *sources; // canonical order
} shi_plan_cell;

typedef struct shi_plan_layout {
    int               rank, size;
    int               ndim; // the most of any tensor: boxes are padded to it
    int               ntensors;
    shi_plan_gtensor *tensors;
    int               dtype;
    size_t            esize;
    int               reduction;
    int               ninputs, noutputs;
    shi_box          *inputs, *outputs; // this rank's, padded
    int              *input_tensor, *output_tensor; // their tensors
    // This rank's local tensors, and which of them holds each box.
    int             nlocal_in, nlocal_out;
    shi_plan_local *local_in, *local_out;
    int            *input_local, *output_local;
    int             nsends, nrecvs, ncells;
    shi_plan_msg   *sends, *recvs; // peer ascending
    shi_plan_cell  *cells;
    size_t          send_bytes, recv_bytes; // totals
} shi_plan_layout;

// Checks every rank's spec (agreement on dtype, reduction, and each
// tensor's ndim and shape; boxes inside their tensor's shape; reduction
// valid for the dtype; every output element covered by some input of its
// tensor) and plans rank `rank`'s part. The same inputs give the same
// error text on every rank. Returns SHOAL_OK, SHOAL_EINVAL (bad specs: the
// message names the rank, box and elements) or SHOAL_ENOMEM.
int shi_plan_build(
    shi_plan_layout *out, const shi_plan_spec *specs, int size, int rank);

// Releases what shi_plan_build allocated.
void shi_plan_layout_free(shi_plan_layout *l);

// Human-readable listing of the layout into buf; returns the length it
// needs (as snprintf).
size_t shi_plan_format(
    const shi_plan_layout *l, const char *title, char *buf, size_t len);

#endif
