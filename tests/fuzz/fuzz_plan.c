// compile_op's spec exchange as a rank receives it: every rank's blob of
// int64s decoded (plan/plan_spec.c), checked (plan_check.c) and planned
// for one rank (plan_build.c), as shi_plan_exchange and compile_op do.
// No communicator is needed: the planner works on the decoded specs.
//
// Input: one byte (bits 0-1: ranks - 1; bits 2-7: which rank plans, modulo
// the ranks), then per rank a u16 count of values (little-endian) and that
// many int64s in host order; a short input cuts the last blob short.
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "plan/plan_impl.h"
#include "plan/plan_obj.h"
#include "shoal.h"

// Most grid cells a fuzz input may ask the planner for, summed over the
// outputs: the planner's own limit (1 << 24 per output) costs seconds and
// gigabytes, which only slows the fuzzer down.
#define FUZZ_MAX_CELLS (1 << 18)

// The next rank's blob, copied out so that it is aligned and ASan sees
// reads past its end.
static int64_t *
next_blob(const uint8_t **data, size_t *size, size_t *n)
{
    size_t   want = 0;
    int64_t *v;

    if (*size >= 2) {
        want = (size_t) (*data)[0] | (size_t) (*data)[1] << 8;
        *data += 2;
        *size -= 2;
    }
    *n = want < *size / 8 ? want : *size / 8;
    v  = malloc(*n * 8 + 1);
    FUZZ_CHECK(v != NULL);
    memcpy(v, *data, *n * 8);
    *data += *n * 8;
    *size -= *n * 8;
    return v;
}

// An upper bound of the grid cells planning takes: an output meeting k
// inputs is cut along at most 2k + 1 bounds in each dimension.
static int
plan_too_big(const shi_plan_spec *specs, int size)
{
    int64_t k = 0, outputs = 0, cells = 1;
    int     ndim = 0;

    for (int r = 0; r < size; r++) {
        k += specs[r].ninputs;
        outputs += specs[r].noutputs;
        ndim = specs[r].ndim > ndim ? specs[r].ndim : ndim;
        for (int t = 0; t < specs[r].ntensors; t++) {
            ndim = specs[r].tensors[t].ndim > ndim ? specs[r].tensors[t].ndim
                                                   : ndim;
        }
    }
    for (int d = 0; d < ndim; d++) {
        cells *= 2 * k + 1;
        if (cells > FUZZ_MAX_CELLS) {
            return 1;
        }
    }
    return outputs > FUZZ_MAX_CELLS || cells * outputs > FUZZ_MAX_CELLS;
}

static void
check_msgs(
    const shi_plan_layout *l, const shi_plan_msg *m, int n, size_t total)
{
    size_t sum = 0;

    for (int i = 0; i < n; i++) {
        FUZZ_CHECK(m[i].peer >= 0 && m[i].peer < l->size);
        FUZZ_CHECK(m[i].peer != l->rank && m[i].npieces > 0);
        FUZZ_CHECK(i == 0 || m[i - 1].peer < m[i].peer);
        for (int j = 0; j < m[i].npieces; j++) {
            FUZZ_CHECK(m[i].pieces[j].offset < m[i].bytes
                || shi_box_volume(&m[i].pieces[j].box, l->ndim) == 0);
        }
        sum += m[i].bytes;
    }
    FUZZ_CHECK(sum == total);
}

// What the runs rely on: every source names a message there is, at an
// offset inside it, and every cell lies in one of this rank's outputs.
static void
check_layout(const shi_plan_layout *l)
{
    check_msgs(l, l->sends, l->nsends, l->send_bytes);
    check_msgs(l, l->recvs, l->nrecvs, l->recv_bytes);
    for (int i = 0; i < l->ncells; i++) {
        const shi_plan_cell *c = &l->cells[i];

        FUZZ_CHECK(c->output >= 0 && c->output < l->noutputs);
        FUZZ_CHECK(l->output_local[c->output] >= 0
            && l->output_local[c->output] < l->nlocal_out);
        FUZZ_CHECK(shi_box_contains(&l->outputs[c->output], &c->box, l->ndim));
        FUZZ_CHECK(c->nsources > 0);
        for (int j = 0; j < c->nsources; j++) {
            const shi_plan_source *s = &c->sources[j];
            FUZZ_CHECK(s->msg < l->nrecvs);
            FUZZ_CHECK(
                s->msg >= 0 || (s->rank == l->rank && s->input < l->ninputs));
            FUZZ_CHECK(s->msg >= 0
                || l->input_tensor[s->input] == l->output_tensor[c->output]);
            FUZZ_CHECK(s->msg < 0 || s->offset < l->recvs[s->msg].bytes);
        }
    }
}

static void
plan_one(const shi_plan_spec *specs, int size, int rank)
{
    shi_plan_layout l;
    size_t          n;
    char           *text;

    if (shi_plan_check_specs(specs, size) != SHOAL_OK
        || plan_too_big(specs, size)) {
        return;
    }
    if (shi_plan_build(&l, specs, size, rank) != SHOAL_OK) {
        return;
    }
    check_layout(&l);
    n    = shi_plan_format(&l, "fuzz", NULL, 0);
    text = malloc(n + 1);
    FUZZ_CHECK(text != NULL);
    FUZZ_CHECK(shi_plan_format(&l, "fuzz", text, n + 1) == n);
    free(text);
    shi_plan_layout_free(&l);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    shi_plan_spec *specs;
    int            nranks, rank, st = SHOAL_OK;

    if (size == 0) {
        return 0;
    }
    nranks = 1 + (data[0] & 3);
    rank   = (data[0] >> 2) % nranks;
    data++, size--;
    specs = calloc((size_t) nranks, sizeof(*specs));
    FUZZ_CHECK(specs != NULL);
    for (int r = 0; r < nranks; r++) {
        size_t   n;
        int64_t *v = next_blob(&data, &size, &n);

        if (st == SHOAL_OK) {
            st = shi_plan_spec_decode(&specs[r], v, n);
        }
        free(v);
    }
    // Decoding never fails for a bad blob: it becomes the rank's error.
    FUZZ_CHECK(st == SHOAL_OK);
    plan_one(specs, nranks, rank);
    shi_plan_specs_free(specs, nranks);
    return 0;
}
