// Reference for the collective tests, and the harness that runs one checked
// collective call.
//
// Every rank generates every rank's input from (seed, input class, rank,
// element index), so the expected result of any collective is computed
// locally, element by element, with no communication: reductions in double
// (floating types) or in wrapped 64-bit integer arithmetic truncated to the
// type's width (integer types), following shoal.h:
//   bool: SUM = or, PROD = and, MIN = and, MAX = or, BAND/BOR/BXOR bitwise;
//   integers: SUM and PROD wrap, AVG = wrapped sum / nranks rounded toward
//   zero; PREMUL_SUM multiplies every input by the scalar, then sums;
//   MIN/MAX propagate NaN; float16/bfloat16 accumulate in float32 and are
//   rounded once.
//
// Float tolerance. With n ranks, eps_out the machine epsilon of the dtype
// (2^-10 float16, 2^-7 bfloat16, 2^-23 float32, 2^-52 float64) and eps_acc
// that of the accumulation type (float32 for float16/bfloat16/float32,
// float64 for float64), a result passes when
//     |got - ref| <= (n + 2) * eps_acc * S + eps_out * |ref|
// where ref is the exact result (double) and S = sum |x_r * scalar| (SUM,
// PREMUL_SUM), sum |x_r| / n (AVG), |ref| (PROD). Recursive summation of n
// terms errs by at most (n - 1) * eps_acc / 2 * S; the scalar multiply and
// the AVG division add one rounding each; the final rounding to the dtype
// adds at most half an ulp, and eps_out * |ref| allows a full ulp. MIN/MAX
// must be bitwise exact; so must float16/bfloat16 SUM and PREMUL_SUM with a
// dyadic scalar, whose inputs (multiples of 1/64) sum exactly in float32, so
// "accumulate in float32, round once" has exactly one right answer. A NaN
// reference accepts any NaN; an infinite one must match exactly. Integers
// and bool are exact.
#ifndef SHOAL_MP_REF_H
#define SHOAL_MP_REF_H

#include <stddef.h>
#include <stdint.h>

#include "shoal.h"

// ---------------------------------------------------------------------------
// Element types
// ---------------------------------------------------------------------------

int      ref_is_float(shoal_dtype dt);
int      ref_is_signed(shoal_dtype dt); // signed integer types
uint64_t ref_mask(shoal_dtype dt); // all bits of one element

// Round-to-nearest-even conversions of the half types from double (one
// rounding, subnormals and overflow to infinity included) and exact
// conversions back.
uint16_t ref_d_to_f16(double x);
// The generic (slow) rounding behind both, for the self-test.
uint16_t ref_round_half(double x, int bf16);
double   ref_f16_to_d(uint16_t h);
uint16_t ref_d_to_bf16(double x);
double   ref_bf16_to_d(uint16_t h);

// Bit pattern of element i of buf (zero-extended), and the reverse.
uint64_t ref_get(shoal_dtype dt, const void *buf, size_t i);
void     ref_put(shoal_dtype dt, void *buf, size_t i, uint64_t bits);

// Value of a floating element's bits, and bits of a double rounded to dt.
double   ref_to_double(shoal_dtype dt, uint64_t bits);
uint64_t ref_from_double(shoal_dtype dt, double x);

// "1.5 (0x3e00)" or "-3 (0xfd)" for messages.
void ref_format(shoal_dtype dt, uint64_t bits, char *buf, size_t len);

// Whether shoal.h allows the (dtype, op) pair.
int ref_pair_valid(shoal_dtype dt, shoal_op_kind op);

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------

// Which values a generator produces, chosen so that results stay finite
// and meaningful for the op they feed.
typedef enum ref_class {
    REF_MOVE = 0, // data movement: arbitrary bit patterns (bool: 0 or 1)
    REF_SUM, // SUM/AVG/PREMUL_SUM: floats multiples of 1/8 in [-8, 8]
             // (float16: of 1/64 in [-16, 16]; float32/64: also
             // full-mantissa values in [-4, 4)); integers half full-range
             // (wrapping), half in [-100, 100]
    REF_PROD, // +-(1 + k/64) near 1 (floats); integers half full-range,
              // half in [-3, 3]
    REF_MINMAX, // distinct non-zero values (floats), any bits (integers)
    REF_BITS, // any bits
    REF_SPECIAL, // floats: MINMAX values with NaN, +inf, -inf mixed in
    REF_CLASS_COUNT
} ref_class;

// The input class for an op (REF_MOVE for data movement: kind < 0).
ref_class ref_class_of(int op_kind);

// Per-rank stream key: element idx of rank r's input is
// ref_gen(dt, cls, ref_key(seed, cls, r), idx).
uint64_t ref_key(uint64_t seed, ref_class cls, int rank);
uint64_t ref_gen(shoal_dtype dt, ref_class cls, uint64_t key, size_t idx);

// buf[i] = element idx0 + i of the stream, for i < n.
void ref_fill(shoal_dtype dt, ref_class cls, uint64_t key, size_t idx0,
    void *buf, size_t n);

// What an output element must be.
typedef struct ref_expect {
    uint64_t bits; // integers, bool; floats: value rounded to the dtype
    double   value; // floats: the exact result
    double   tol; // floats: allowed |got - value|
    int      exact; // floats: got must equal bits (any NaN if value is)
} ref_expect;

// The reduction over ranks 0..n-1 of element idx: keys[r] = ref_key of
// rank r.
void ref_reduce(shoal_dtype dt, shoal_reduce_op op, ref_class cls, int n,
    const uint64_t *keys, size_t idx, ref_expect *out);

// 1 if an element with bit pattern `got` satisfies e.
// True when the ranks talk over TCP (SHOAL_TRANSPORT=tcp, or
// SHOAL_TEST_NET=1 from tests/net): float16/bfloat16 round at every step.
int ref_step_rounding(void);

int ref_check(shoal_dtype dt, uint64_t got, const ref_expect *e);

// ---------------------------------------------------------------------------
// Uneven counts for the v-collectives (deterministic from the seed, so
// every rank computes the same)
// ---------------------------------------------------------------------------

// counts[r] for r < n: uneven around `base`, at least one block empty when
// n > 1, at least one non-empty when base > 0.
void ref_v_counts(uint64_t seed, int n, size_t base, size_t *counts);

// Elements rank r sends to rank p in all_to_all_v: uneven, with zeros,
// sometimes a whole row (a rank sends nothing) or column (receives
// nothing) empty.
size_t ref_a2a_count(uint64_t seed, int r, int p, int n, size_t base);

uint64_t ref_mix(uint64_t x);
uint64_t ref_hash_bytes(const void *buf, size_t bytes);

// ---------------------------------------------------------------------------
// Harness (cases_coll_harness.c): one checked collective call
// ---------------------------------------------------------------------------

typedef enum cc_coll {
    CC_ALL_REDUCE = 0,
    CC_REDUCE,
    CC_ALL_GATHER,
    CC_ALL_GATHER_V,
    CC_REDUCE_SCATTER,
    CC_REDUCE_SCATTER_V,
    CC_ALL_TO_ALL,
    CC_ALL_TO_ALL_V,
    CC_GATHER,
    CC_SCATTER,
    CC_COLL_COUNT
} cc_coll;

const char *cc_coll_name(cc_coll c);
int         cc_is_reduction(cc_coll c);
int         cc_is_rooted(cc_coll c);
int         cc_has_inplace(cc_coll c);

// How a call is issued and completed.
enum {
    CC_BLOCKING = 0,
    CC_WAIT, // i-form, then shoal_wait
    CC_TEST, // i-form, then shoal_test until done
};

// Where buffers come from.
enum {
    CC_MALLOC = 0,
    CC_SHM_EVEN, // shoal_alloc on even ranks, malloc on odd ones
    CC_SHM_ALL, // shoal_alloc on every rank
};

typedef struct cc_spec {
    cc_coll         coll;
    shoal_dtype     dtype;
    shoal_reduce_op op; // reductions only
    ref_class       cls; // input values (set from op by cc_spec_init)
    size_t          count; // count, recvcount, block count; v: base count
    int             root;
    int             inplace;
    int             mode; // CC_BLOCKING, CC_WAIT, CC_TEST
    int             bufs; // CC_MALLOC, CC_SHM_EVEN, CC_SHM_ALL
    int             null_empty; // pass NULL for buffers of zero bytes
    int             misalign; // elements past a 64-byte boundary
    int             scribble; // overwrite sendbuf as soon as it completes
    uint64_t        seed;
} cc_spec;

// Zeroes *s and sets the common fields (cls from op).
void cc_spec_init(cc_spec *s, cc_coll coll, shoal_dtype dt, int op_kind,
    size_t count, uint64_t seed);

// "all_reduce float16 sum count=7 in-place i+wait shm-even misaligned+1
// seed=12".
void cc_describe(const cc_spec *s, char *buf, size_t len);

typedef struct cc_buf {
    unsigned char *raw; // allocation: guard, body, guard
    unsigned char *p; // body, or NULL when no buffer
    size_t         bytes; // body
    size_t         pre; // guard bytes before the body
    int            shm; // from shoal_alloc
} cc_buf;

#define CC_MAX_RANKS 64

typedef struct cc_call {
    cc_spec        s;
    int            rank, size;
    size_t         es;
    cc_buf         send, recv;
    const void    *sendptr;
    void          *recvptr;
    size_t         counts[CC_MAX_RANKS]; // v: recvcounts; a2a_v: sendcounts
    size_t         rcounts[CC_MAX_RANKS]; // a2a_v: recvcounts
    shoal_request *req;
    int            started;
} cc_call;

// Outcome of cc_finish/cc_run: CC_PASS, CC_WRONG (a result or a guard was
// wrong; the communicator is still in step), CC_ERROR (the call failed:
// stop, the ranks may be out of step).
enum { CC_PASS = 0, CC_WRONG = 1, CC_ERROR = 2 };

// Allocates and fills the buffers, then issues the call (blocking calls
// complete here). Returns CC_PASS or CC_ERROR.
int cc_start(shoal_comm *comm, cc_call *c, const cc_spec *s);

// Completes a started call, checks every output element, the guards and
// the inputs, frees the buffers. all_reduce also checks (via a broadcast
// of a hash from rank 0) that every rank got bitwise identical results.
int cc_finish(shoal_comm *comm, cc_call *c);

int cc_run(shoal_comm *comm, const cc_spec *s);

// Calls in which shoal_alloc gave SHOAL_ENOSPACE and malloc stood in.
extern long cc_shm_fallbacks;

#endif
