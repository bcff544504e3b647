// The shoal_plan object: a layout (plan.h) plus what its runs need.
#ifndef SHI_PLAN_OBJ_H
#define SHI_PLAN_OBJ_H

#include "core/comm.h"
#include "plan/plan.h"

struct shoal_plan {
    shoal_comm     *comm;
    int             id; // compiled on comm in this order (same on all ranks)
    int             tag; // negative: apart from user tags
    shi_plan_layout l;
    int             max_sources; // most sources of one cell
    size_t          local_bytes; // local sources packed (aliasing runs)
    int            *recv_cell; // per recv: the one-source cell it fills, or -1
    // Staging, allocated at the first run that needs it and kept.
    unsigned char **send_stage, **recv_stage;
    unsigned char  *local_stage;
    unsigned char  *scratch; // packed local sources and a cell's result
    size_t          scratch_bytes;
    const void    **reduce_in; // max_sources pointers
    // The run in flight.
    int             running;
    int             alias; // inputs and outputs share memory
    shoal_request **sreq, **rreq;
    int            *recv_direct; // per recv: landed in the output itself
    // Per message: the layout of a transfer straight from a strided input
    // or into a strided output, where the transport moves such data.
    shi_strided *send_layout, *recv_layout;
    // Per local tensor (l.local_in / l.local_out): its memory and its
    // element strides, padded to l.ndim.
    unsigned char **in_base, **out_base;
    int64_t        *in_strides, *out_strides; // nlocal_in / _out x ndim
};

// Runs (plan_run.c): release what a run keeps.
void shi_plan_run_free(shoal_plan *plan);

// Spec exchange (plan_spec.c): sends this rank's spec to every rank and
// decodes all of them into specs[size] (freed with shi_plan_specs_free).
int shi_plan_exchange(
    shoal_comm *comm, const shoal_plan_spec *mine, shi_plan_spec **specs);
void shi_plan_specs_free(shi_plan_spec *specs, int size);

// A spec blob of one tensor (and of every rank's complaint):
// SHI_PLAN_SPEC_MAGIC ndim dtype reduction ninputs noutputs errlen, the
// shape, each input's then each output's offsets and sizes, then the error
// text (errlen bytes in int64s).
#define SHI_PLAN_SPEC_MAGIC 0x53504c414e000001LL // "SPLAN", version 1
// A spec blob of several tensors: SHI_PLAN_SPEC_MAGIC_TENSORS dtype
// reduction ntensors ninputs noutputs; per tensor its ndim, whether it has
// a shape, its name's length, the shape (when it has one) and the name (in
// int64s); per input then per output box its tensor, offsets and sizes.
#define SHI_PLAN_SPEC_MAGIC_TENSORS 0x53504c414e000102LL

// Decodes one rank's n values into *s (free it with shi_plan_spec_free).
// A blob that does not parse, or whose values are out of range, becomes
// that rank's error text, never a large allocation: SHOAL_OK either way,
// SHOAL_ENOMEM only when memory runs out. Untrusted input.
int  shi_plan_spec_decode(shi_plan_spec *s, const int64_t *v, size_t n);
void shi_plan_spec_free(shi_plan_spec *s);

#endif
