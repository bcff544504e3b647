// Compiled custom collectives (shoal_plan_*): the spec's examples, a
// randomized property test, aliasing, and bad specs and arguments.
//
// Every rank knows every rank's boxes (they come from the seed or from the
// example), and input element g of rank r's input i is element lin(g) of
// the reference stream keyed by (seed, run, r, i); so each rank computes
// what each of its output elements must be, element by element, with no
// communication: the last covering input (rank, then list order) without
// a reduction, ref_reduce over the covering inputs in that order with one.
#include <stdint.h>
#include <string.h>

#include "mptest.h"
#include "ref.h"

#define PT_MAX_DIMS  4
#define PT_MAX_BOXES 4
#define PT_MAX_RANKS 16

typedef struct pt_box {
    int64_t off[PT_MAX_DIMS], ext[PT_MAX_DIMS];
} pt_box;

typedef struct pt_rank {
    int    ninputs, noutputs;
    pt_box in[PT_MAX_BOXES], out[PT_MAX_BOXES];
} pt_rank;

typedef struct pt_job {
    int         ndim;
    int64_t     shape[PT_MAX_DIMS];
    shoal_dtype dtype;
    int         reduction; // SHOAL_PLAN_COPY or an op kind
    pt_rank     ranks[PT_MAX_RANKS];
    uint64_t    seed;
} pt_job;

// A local tensor: its box's elements at `base` with element strides.
typedef struct pt_tensor {
    unsigned char *mem;
    unsigned char *base;
    int64_t        strides[PT_MAX_DIMS];
} pt_tensor;

static uint64_t
pt_rand(uint64_t *state)
{
    *state = ref_mix(*state + 0x9e3779b97f4a7c15ULL);
    return *state;
}

static ref_class
pt_class(const pt_job *j)
{
    return j->reduction == SHOAL_PLAN_COPY ? REF_MOVE
                                           : ref_class_of(j->reduction);
}

static uint64_t
pt_key(const pt_job *j, int run, int r, int i)
{
    return ref_key(j->seed * 1000 + (uint64_t) run, pt_class(j), r * 16 + i);
}

static int64_t
pt_linear(const pt_job *j, const int64_t *g)
{
    int64_t lin = 0;

    for (int d = 0; d < j->ndim; d++) {
        lin = lin * j->shape[d] + g[d];
    }
    return lin;
}

static int
pt_contains(const pt_job *j, const pt_box *b, const int64_t *g)
{
    for (int d = 0; d < j->ndim; d++) {
        if (g[d] < b->off[d] || g[d] >= b->off[d] + b->ext[d]) {
            return 0;
        }
    }
    return 1;
}

static int64_t
pt_volume(const pt_job *j, const pt_box *b)
{
    int64_t n = 1;

    for (int d = 0; d < j->ndim; d++) {
        n *= b->ext[d];
    }
    return n;
}

// Where tensors come from: NULL, malloc; else shoal_alloc on this
// communicator (its shared heap, read in place by peers).
static shoal_comm *pt_heap_comm;

// Layout 0: row-major; 1: rows padded (outer strides grown); 2: reversed
// dimension order (column-major).
static int
pt_alloc(const pt_job *j, const pt_box *b, int layout, pt_tensor *t)
{
    int64_t span = 1, esize = (int64_t) shoal_dtype_size(j->dtype);

    if (layout == 2) {
        for (int d = 0; d < j->ndim; d++) {
            t->strides[d] = span;
            span *= b->ext[d] > 0 ? b->ext[d] : 1;
        }
    } else {
        for (int d = j->ndim - 1; d >= 0; d--) {
            t->strides[d] = span;
            span *= (b->ext[d] > 0 ? b->ext[d] : 1) + (layout == 1 ? 3 : 0);
        }
    }
    if (pt_heap_comm != NULL) {
        size_t bytes = (size_t) (span + 16) * (size_t) esize;
        if (shoal_alloc(pt_heap_comm, bytes, (void **) &t->mem) != SHOAL_OK) {
            return -1;
        }
        memset(t->mem, 0, bytes);
    } else {
        t->mem = calloc((size_t) (span + 16), (size_t) esize);
    }
    t->base = t->mem + 8 * esize; // not 64-byte aligned on purpose
    return t->mem != NULL ? 0 : -1;
}

static void
pt_free(pt_tensor *t)
{
    if (pt_heap_comm != NULL) {
        shoal_free(pt_heap_comm, t->mem);
    } else {
        free(t->mem);
    }
}

static size_t
pt_index(
    const pt_job *j, const pt_box *b, const pt_tensor *t, const int64_t *g)
{
    int64_t off = 0;

    for (int d = 0; d < j->ndim; d++) {
        off += (g[d] - b->off[d]) * t->strides[d];
    }
    return (size_t) off;
}

// Iterates over the global indexes of a box, row-major.
typedef struct pt_iter {
    int64_t g[PT_MAX_DIMS];
    int     done;
} pt_iter;

static pt_iter
pt_begin(const pt_job *j, const pt_box *b)
{
    pt_iter it = { { 0 }, pt_volume(j, b) == 0 };

    for (int d = 0; d < j->ndim; d++) {
        it.g[d] = b->off[d];
    }
    return it;
}

static void
pt_next(pt_iter *it, const pt_job *j, const pt_box *b)
{
    for (int d = j->ndim - 1; d >= 0; d--) {
        if (++it->g[d] < b->off[d] + b->ext[d]) {
            return;
        }
        it->g[d] = b->off[d];
    }
    it->done = 1;
}

static void
pt_fill_input(const pt_job *j, int run, int r, int i, const pt_tensor *t)
{
    const pt_box *b   = &j->ranks[r].in[i];
    uint64_t      key = pt_key(j, run, r, i);

    for (pt_iter it = pt_begin(j, b); !it.done; pt_next(&it, j, b)) {
        const int64_t *g = it.g;

        ref_put(j->dtype, t->base, pt_index(j, b, t, g),
            ref_gen(j->dtype, pt_class(j), key, (size_t) pt_linear(j, g)));
    }
}

// What element g of the output must be.
static void
pt_expect(const pt_job *j, int run, int nranks, const int64_t *g,
    ref_expect *e, int *covered)
{
    uint64_t keys[PT_MAX_RANKS * PT_MAX_BOXES];
    int      n = 0;

    for (int r = 0; r < nranks; r++) {
        for (int i = 0; i < j->ranks[r].ninputs; i++) {
            if (pt_contains(j, &j->ranks[r].in[i], g)) {
                keys[n++] = pt_key(j, run, r, i);
            }
        }
    }
    *covered = n > 0;
    if (n == 0) {
        return;
    }
    if (j->reduction == SHOAL_PLAN_COPY) {
        memset(e, 0, sizeof(*e));
        e->bits = ref_gen(
            j->dtype, REF_MOVE, keys[n - 1], (size_t) pt_linear(j, g));
        e->exact = 1;
        e->value
            = ref_is_float(j->dtype) ? ref_to_double(j->dtype, e->bits) : 0;
        return;
    }
    ref_reduce(j->dtype, SHOAL_REDUCE_OP(j->reduction), pt_class(j), n, keys,
        (size_t) pt_linear(j, g), e);
}

static int
pt_check_output(
    const pt_job *j, int run, int nranks, int me, int o, const pt_tensor *t)
{
    const pt_box *b = &j->ranks[me].out[o];

    for (pt_iter it = pt_begin(j, b); !it.done; pt_next(&it, j, b)) {
        const int64_t *g = it.g;
        ref_expect     e;
        int            covered;
        uint64_t       got = ref_get(j->dtype, t->base, pt_index(j, b, t, g));

        pt_expect(j, run, nranks, g, &e, &covered);
        if (covered && !ref_check(j->dtype, got, &e)) {
            char a[64], w[64];
            ref_format(j->dtype, got, a, sizeof(a));
            ref_format(j->dtype, e.bits, w, sizeof(w));
            fprintf(stderr,
                "rank %d outputs[%d] element (%lld, %lld, %lld, %lld) "
                "run %d: got %s, want %s (%s, reduction %d, seed %llu)\n",
                me, o, (long long) g[0], (long long) g[1], (long long) g[2],
                (long long) g[3], run, a, w, shoal_dtype_name(j->dtype),
                j->reduction, (unsigned long long) j->seed);
            return 1;
        }
    }
    return 0;
}

static void
pt_boxes(const pt_job *j, const pt_box *b, int n, int64_t *out)
{
    for (int i = 0; i < n; i++) {
        for (int d = 0; d < j->ndim; d++) {
            out[2 * j->ndim * i + d]           = b[i].off[d];
            out[2 * j->ndim * i + j->ndim + d] = b[i].ext[d];
        }
    }
}

static int
pt_compile(shoal_comm *comm, const pt_job *j, shoal_plan **plan)
{
    const pt_rank  *me = &j->ranks[shoal_comm_rank(comm)];
    int64_t         in[PT_MAX_BOXES * 2 * PT_MAX_DIMS];
    int64_t         out[PT_MAX_BOXES * 2 * PT_MAX_DIMS];
    shoal_plan_spec s = SHOAL_PLAN_SPEC_INIT;

    pt_boxes(j, me->in, me->ninputs, in);
    pt_boxes(j, me->out, me->noutputs, out);
    s.ndim      = j->ndim;
    s.shape     = j->shape;
    s.dtype     = j->dtype;
    s.reduction = j->reduction;
    s.ninputs   = me->ninputs;
    s.inputs    = in;
    s.noutputs  = me->noutputs;
    s.outputs   = out;
    return shoal_plan_create(comm, &s, plan);
}

// Compiles j, runs it `runs` times with fresh data and the given layouts,
// checks every output element each time.
static int
pt_run(shoal_comm *comm, const pt_job *j, int runs, uint64_t layout_seed)
{
    int            me = shoal_comm_rank(comm), n = shoal_comm_size(comm);
    const pt_rank *R = &j->ranks[me];
    pt_tensor      ins[PT_MAX_BOXES], outs[PT_MAX_BOXES];
    const void    *in_ptr[PT_MAX_BOXES];
    void          *out_ptr[PT_MAX_BOXES];
    const int64_t *in_str[PT_MAX_BOXES], *out_str[PT_MAX_BOXES];
    shoal_plan    *plan;
    int            bad = 0;
    uint64_t       rs  = layout_seed * 7919 + (uint64_t) me;

    MP_OK(pt_compile(comm, j, &plan));
    for (int i = 0; i < R->ninputs; i++) {
        MP_CHECK(
            pt_alloc(j, &R->in[i], (int) (pt_rand(&rs) % 3), &ins[i]) == 0);
        in_ptr[i] = ins[i].base;
        in_str[i] = ins[i].strides;
    }
    for (int o = 0; o < R->noutputs; o++) {
        MP_CHECK(
            pt_alloc(j, &R->out[o], (int) (pt_rand(&rs) % 3), &outs[o]) == 0);
        out_ptr[o] = outs[o].base;
        out_str[o] = outs[o].strides;
    }
    for (int run = 0; run < runs && !bad; run++) {
        for (int i = 0; i < R->ninputs; i++) {
            pt_fill_input(j, run, me, i, &ins[i]);
        }
        MP_OK(shoal_plan_start(plan, R->ninputs, in_ptr, in_str, R->noutputs,
            out_ptr, out_str, NULL));
        if (run % 2 == 1) {
            int st;
            while ((st = shoal_plan_test(plan)) == SHOAL_INPROGRESS) { }
            MP_OK(st);
        } else {
            MP_OK(shoal_plan_wait(plan));
        }
        for (int o = 0; o < R->noutputs && !bad; o++) {
            bad = pt_check_output(j, run, n, me, o, &outs[o]);
        }
    }
    shoal_plan_free(plan);
    for (int i = 0; i < R->ninputs; i++) {
        pt_free(&ins[i]);
    }
    for (int o = 0; o < R->noutputs; o++) {
        pt_free(&outs[o]);
    }
    return bad;
}

// ---- the spec's examples
// ----------------------------------------------------

static void
pt_set(pt_box *b, int64_t o0, int64_t o1, int64_t e0, int64_t e1)
{
    b->off[0] = o0;
    b->off[1] = o1;
    b->ext[0] = e0;
    b->ext[1] = e1;
}

static void
pt_job_2d(pt_job *j, int64_t s0, int64_t s1, int reduction, uint64_t seed)
{
    memset(j, 0, sizeof(*j));
    j->ndim      = 2;
    j->shape[0]  = s0;
    j->shape[1]  = s1;
    j->dtype     = SHOAL_FLOAT32;
    j->reduction = reduction;
    j->seed      = seed;
}

// Example k (1-8) of compile_op.md on n ranks (2-6 need n >= 2).
static void
pt_example(pt_job *j, int k, int n)
{
    int last = n - 1;

    switch (k) {
        case 1: // point to point: rank 0 -> rank last
            pt_job_2d(j, 2, 4, SHOAL_PLAN_COPY, 1);
            j->ranks[0].ninputs = 1;
            pt_set(&j->ranks[0].in[0], 0, 0, 2, 4);
            j->ranks[last].noutputs = 1;
            pt_set(&j->ranks[last].out[0], 0, 0, 2, 4);
            break;
        case 2: // scatter from rank 0 to the others
        case 3: // gather into rank 0 from the others
            pt_job_2d(j, 2 * (n > 1 ? n - 1 : 1), 4, SHOAL_PLAN_COPY, 2);
            for (int r = 1; r < n; r++) {
                pt_rank *R = &j->ranks[r];
                if (k == 2) {
                    R->noutputs = 1;
                    pt_set(&R->out[0], (r - 1) * 2, 0, 2, 4);
                } else {
                    R->ninputs = 1;
                    pt_set(&R->in[0], (r - 1) * 2, 0, 2, 4);
                }
            }
            if (k == 2) {
                j->ranks[0].ninputs = 1;
                pt_set(&j->ranks[0].in[0], 0, 0, j->shape[0], 4);
            } else if (n > 1) {
                j->ranks[0].noutputs = 1;
                pt_set(&j->ranks[0].out[0], 0, 0, j->shape[0], 4);
            }
            break;
        case 4: // all-gather
        case 6: // ring: send to the next rank, receive from the previous
            pt_job_2d(j, 2 * n, 4, SHOAL_PLAN_COPY, (uint64_t) k);
            for (int r = 0; r < n; r++) {
                j->ranks[r].ninputs  = 1;
                j->ranks[r].noutputs = 1;
                if (k == 4) {
                    pt_set(&j->ranks[r].in[0], r * 2, 0, 2, 4);
                    pt_set(&j->ranks[r].out[0], 0, 0, 2 * n, 4);
                } else {
                    pt_set(&j->ranks[r].in[0], (r + 1) % n * 2, 0, 2, 4);
                    pt_set(&j->ranks[r].out[0], r * 2, 0, 2, 4);
                }
            }
            break;
        case 5: // reduce-scatter (sum)
        case 7: // all-reduce (sum)
            pt_job_2d(j, k == 5 ? 2 * n : 4, k == 5 ? 4 : 8, SHOAL_SUM,
                (uint64_t) k);
            for (int r = 0; r < n; r++) {
                j->ranks[r].ninputs  = 1;
                j->ranks[r].noutputs = 1;
                pt_set(&j->ranks[r].in[0], 0, 0, j->shape[0], j->shape[1]);
                if (k == 5) {
                    pt_set(&j->ranks[r].out[0], r * 2, 0, 2, 4);
                } else {
                    pt_set(&j->ranks[r].out[0], 0, 0, 4, 8);
                }
            }
            break;
        default: // 8: Shard(0) -> Shard(1) of an (2n) x (4n) tensor
            pt_job_2d(j, 2 * n, 4 * n, SHOAL_PLAN_COPY, 8);
            for (int r = 0; r < n; r++) {
                j->ranks[r].ninputs  = 1;
                j->ranks[r].noutputs = 1;
                pt_set(&j->ranks[r].in[0], 2 * r, 0, 2, 4 * n);
                pt_set(&j->ranks[r].out[0], 0, 4 * r, 2 * n, 4);
            }
    }
}

int
mp_case_plan_examples(shoal_comm *comm, int argc, char **argv)
{
    int    n = shoal_comm_size(comm);
    pt_job j;

    (void) argc;
    (void) argv;
    for (int k = 1; k <= 8; k++) {
        if (n == 1 && (k == 2 || k == 3)) {
            continue; // nobody to scatter to
        }
        pt_example(&j, k, n);
        for (int layouts = 0; layouts < 2; layouts++) {
            if (pt_run(comm, &j, 2, (uint64_t) (k * 10 + layouts)) != 0) {
                fprintf(stderr, "example %d failed\n", k);
                return 1;
            }
        }
    }
    return 0;
}

// Examples 6 (ring) and 8 (Shard(0) -> Shard(1)) scaled up so that the
// pieces moved are rows of at least 1 KiB: messages through the channel's
// slots (128 KiB) and read from the sender's memory (2 MiB), straight
// from strided inputs into strided outputs. Layouts: row-major and padded
// rows (strided transfers), column-major (packed). argv[0] "heap": the
// tensors come from shoal_alloc.
int
mp_case_plan_large(shoal_comm *comm, int argc, char **argv)
{
    int    n = shoal_comm_size(comm);
    pt_job j;

    pt_heap_comm = argc > 0 && strcmp(argv[0], "heap") == 0 ? comm : NULL;
    for (int64_t scale = 64; scale <= 256; scale *= 4) {
        for (int k = 6; k <= 8; k += 2) {
            pt_example(&j, k, n);
            j.shape[0] *= scale;
            j.shape[1] *= scale;
            for (int r = 0; r < n; r++) {
                for (int d = 0; d < 2; d++) {
                    j.ranks[r].in[0].off[d] *= scale;
                    j.ranks[r].in[0].ext[d] *= scale;
                    j.ranks[r].out[0].off[d] *= scale;
                    j.ranks[r].out[0].ext[d] *= scale;
                }
            }
            for (uint64_t seed = 0; seed < 3; seed++) {
                if (pt_run(comm, &j, 2, (uint64_t) (k * 100 + scale) + seed)
                    != 0) {
                    fprintf(stderr, "example %d x %lld failed\n", k,
                        (long long) scale);
                    pt_heap_comm = NULL;
                    return 1;
                }
            }
        }
    }
    pt_heap_comm = NULL;
    return 0;
}

// ---- randomized
// ---------------------------------------------------------------

static void
pt_random_box(const pt_job *j, uint64_t *rs, const pt_box *inside, pt_box *b)
{
    for (int d = 0; d < j->ndim; d++) {
        int64_t lo0 = inside ? inside->off[d] : 0;
        int64_t len = inside ? inside->ext[d] : j->shape[d];
        int64_t lo
            = len > 0 ? lo0 + (int64_t) (pt_rand(rs) % (uint64_t) len) : lo0;
        int64_t max = lo0 + len - lo;

        b->off[d] = lo;
        b->ext[d] = max > 0 ? 1 + (int64_t) (pt_rand(rs) % (uint64_t) max) : 0;
    }
}

static const int pt_reductions[] = { SHOAL_PLAN_COPY, SHOAL_SUM, SHOAL_PROD,
    SHOAL_MIN, SHOAL_MAX, SHOAL_AVG };
static const shoal_dtype pt_dtypes[] = { SHOAL_BOOL, SHOAL_UINT8, SHOAL_INT8,
    SHOAL_INT16, SHOAL_INT32, SHOAL_INT64, SHOAL_FLOAT16, SHOAL_BFLOAT16,
    SHOAL_FLOAT32, SHOAL_FLOAT64 };

static void
pt_random_job(pt_job *j, uint64_t seed, int n)
{
    uint64_t rs       = seed;
    int      total_in = 0;

    memset(j, 0, sizeof(*j));
    j->seed      = seed;
    j->ndim      = 1 + (int) (pt_rand(&rs) % 4);
    j->reduction = pt_reductions[pt_rand(&rs) % 6];
    do {
        j->dtype = pt_dtypes[pt_rand(&rs) % 10];
    } while (j->reduction != SHOAL_PLAN_COPY
        && !ref_pair_valid(j->dtype, (shoal_op_kind) j->reduction));
    for (int d = 0; d < j->ndim; d++) {
        j->shape[d] = 1 + (int64_t) (pt_rand(&rs) % (j->ndim <= 2 ? 9 : 5));
    }
    for (int r = 0; r < n; r++) {
        j->ranks[r].ninputs = (int) (pt_rand(&rs) % 3);
        for (int i = 0; i < j->ranks[r].ninputs; i++) {
            pt_random_box(j, &rs, NULL, &j->ranks[r].in[i]);
        }
        total_in += j->ranks[r].ninputs;
    }
    if (total_in == 0) {
        j->ranks[0].ninputs = 1;
        for (int d = 0; d < j->ndim; d++) {
            j->ranks[0].in[0].ext[d] = j->shape[d];
        }
    }
    // Outputs inside some input, so that every element is covered.
    for (int r = 0; r < n; r++) {
        j->ranks[r].noutputs = (int) (pt_rand(&rs) % 3);
        for (int o = 0; o < j->ranks[r].noutputs; o++) {
            int src;
            do {
                src = (int) (pt_rand(&rs) % (uint64_t) n);
            } while (j->ranks[src].ninputs == 0);
            pt_random_box(j, &rs,
                &j->ranks[src]
                     .in[pt_rand(&rs) % (uint64_t) j->ranks[src].ninputs],
                &j->ranks[r].out[o]);
        }
    }
}

// argv[0]: number of random jobs (default 40); argv[1]: first seed.
int
mp_case_plan_random(shoal_comm *comm, int argc, char **argv)
{
    int      jobs  = argc > 0 ? atoi(argv[0]) : 40;
    uint64_t first = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    pt_job   j;

    for (int k = 0; k < jobs; k++) {
        pt_random_job(&j, first + (uint64_t) k, shoal_comm_size(comm));
        if (pt_run(comm, &j, 2, first + (uint64_t) k) != 0) {
            fprintf(stderr, "random job seed %llu failed\n",
                (unsigned long long) (first + (uint64_t) k));
            return 1;
        }
    }
    return 0;
}

// ---- aliasing, errors
// ----------------------------------------------------------

// In-place all-reduce and ring shift: inputs and outputs are one tensor.
int
mp_case_plan_alias(shoal_comm *comm, int argc, char **argv)
{
    int             me = shoal_comm_rank(comm), n = shoal_comm_size(comm);
    int64_t         shape[1] = { 4 * (int64_t) n };
    int64_t         all[2]   = { 0, shape[0] };
    int64_t         mine[2]  = { 4 * (int64_t) me, 4 };
    int64_t         next[2]  = { 4 * (int64_t) ((me + 1) % n), 4 };
    float           t[64];
    void           *out[1] = { t };
    const void     *in[1]  = { t };
    shoal_plan     *plan;
    shoal_plan_spec s = SHOAL_PLAN_SPEC_INIT;

    (void) argc;
    (void) argv;
    s.ndim      = 1;
    s.shape     = shape;
    s.reduction = SHOAL_SUM;
    s.ninputs   = 1;
    s.inputs    = all;
    s.noutputs  = 1;
    s.outputs   = all;
    MP_OK(shoal_plan_create(comm, &s, &plan));
    for (int i = 0; i < shape[0]; i++) {
        t[i] = (float) (i + me);
    }
    MP_OK(shoal_plan_start(plan, 1, in, NULL, 1, out, NULL, NULL));
    MP_OK(shoal_plan_wait(plan));
    for (int i = 0; i < shape[0]; i++) {
        MP_CHECK(t[i] == (float) (n * i + n * (n - 1) / 2));
    }
    shoal_plan_free(plan);
    // Ring shift in place: my tensor holds my block; I send it to the
    // previous rank and receive the next rank's block into the same memory.
    s.reduction = SHOAL_PLAN_COPY;
    s.inputs    = mine;
    s.outputs   = next;
    MP_OK(shoal_plan_create(comm, &s, &plan));
    for (int i = 0; i < 4; i++) {
        t[i] = (float) (100 * me + i);
    }
    MP_OK(shoal_plan_start(plan, 1, in, NULL, 1, out, NULL, NULL));
    MP_OK(shoal_plan_wait(plan));
    for (int i = 0; i < 4; i++) {
        MP_CHECK(t[i] == (float) (100 * ((me + 1) % n) + i));
    }
    shoal_plan_free(plan);
    return 0;
}

// A bad spec or bad tensors on one rank fail every rank with the same
// message; the communicator and the plan still work afterwards.
int
mp_case_plan_errors(shoal_comm *comm, int argc, char **argv)
{
    int             me = shoal_comm_rank(comm), n = shoal_comm_size(comm);
    int             culprit  = n - 1;
    int64_t         shape[2] = { 4, 4 }, wrong[2] = { 4, 5 };
    int64_t         all[4]  = { 0, 0, 4, 4 };
    int64_t         half[4] = { 0, 0, 2, 4 };
    float           a[16] = { 0 }, b[16] = { 0 }, sum = 0;
    const void     *in[1]  = { a };
    void           *out[1] = { b };
    shoal_plan     *plan;
    shoal_plan_spec s = SHOAL_PLAN_SPEC_INIT;

    (void) argc;
    (void) argv;
    s.ndim     = 2;
    s.shape    = me == culprit && n > 1 ? wrong : shape;
    s.ninputs  = 1;
    s.inputs   = all;
    s.noutputs = 1;
    s.outputs  = all;
    if (n > 1) {
        MP_EXPECT(shoal_plan_create(comm, &s, &plan), SHOAL_EINVAL);
        MP_CHECK(strstr(shoal_last_error(), "disagree on the global shape"));
    }
    // Nobody provides rows 2..3 of the output.
    s.shape  = shape;
    s.inputs = half;
    MP_EXPECT(shoal_plan_create(comm, &s, &plan), SHOAL_EINVAL);
    MP_CHECK(strstr(shoal_last_error(),
        "elements [2:4, 0:4] of rank 0's "
        "outputs[0]"));
    // One rank's own complaint.
    s.inputs = all;
    s.error  = me == culprit ? "inputs[0] is a list of strings" : NULL;
    MP_EXPECT(shoal_plan_create(comm, &s, &plan), SHOAL_EINVAL);
    MP_CHECK(strstr(shoal_last_error(), "is a list of strings"));
    // A good plan; then a run with a NULL tensor on one rank.
    s.error     = NULL;
    s.reduction = SHOAL_SUM;
    MP_OK(shoal_plan_create(comm, &s, &plan));
    if (me == culprit) {
        in[0] = NULL;
    }
    MP_EXPECT(
        shoal_plan_start(plan, 1, in, NULL, 1, out, NULL, NULL), SHOAL_EINVAL);
    MP_EXPECT(
        shoal_plan_start(plan, 2, in, NULL, 1, out, NULL, NULL), SHOAL_EINVAL);
    in[0] = a;
    for (int i = 0; i < 16; i++) {
        a[i] = (float) me;
    }
    MP_OK(shoal_plan_start(plan, 1, in, NULL, 1, out, NULL, NULL));
    MP_OK(shoal_plan_wait(plan));
    for (int r = 0; r < n; r++) {
        sum += (float) r;
    }
    MP_CHECK(b[0] == sum && b[15] == sum);
    shoal_plan_free(plan);
    // The communicator still works.
    MP_OK(shoal_all_reduce(
        comm, a, b, 16, SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_SUM)));
    MP_CHECK(b[3] == sum);
    return 0;
}
