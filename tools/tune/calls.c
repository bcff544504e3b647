// shoal-tune: one call of a collective at a size. Reductions sum float32;
// data movement moves bytes. `bytes` counts as the rules do: the buffer of
// all_reduce, reduce and broadcast, every rank's blocks together for the
// others.
#include "tune.h"

static int
reduces(int coll)
{
    return coll == TUNE_ALLREDUCE || coll == TUNE_REDUCE
        || coll == TUNE_REDUCESCATTER;
}

// Whether the call's buffer is the whole size (else one rank's block).
static int
whole_buffer(int coll)
{
    return coll == TUNE_ALLREDUCE || coll == TUNE_REDUCE
        || coll == TUNE_BROADCAST;
}

// Elements per call argument: the whole buffer for all_reduce, reduce and
// broadcast, one rank's block for the others.
static size_t
call_count(int coll, size_t bytes, int nranks)
{
    size_t es = reduces(coll) ? 4 : 1;

    if (whole_buffer(coll)) {
        return bytes / es;
    }
    return bytes / es / (size_t) nranks;
}

size_t
tune_call_bytes(int coll, size_t bytes, int nranks)
{
    size_t count = call_count(coll, bytes, nranks);
    size_t es    = reduces(coll) ? 4 : 1;

    if (whole_buffer(coll)) {
        return count * es;
    }
    return count * es * (size_t) nranks;
}

int
tune_call(tune_ctx *t, int coll, size_t bytes, const char *algo)
{
    shoal_call_opts opts = {
        .timeout_ms = (int64_t) (t->o->timeout_s * 1000),
        .algo       = algo,
    };
    size_t n = call_count(coll, bytes, t->nranks);
    int    st;

    if ((st = shoal_next_call_opts(&opts)) != SHOAL_OK) {
        return st;
    }
    switch (coll) {
        case TUNE_ALLREDUCE:
            return shoal_all_reduce(t->work, t->sbuf, t->rbuf, n,
                SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_SUM));
        case TUNE_REDUCE:
            return shoal_reduce(t->work, t->sbuf, t->rbuf, n, SHOAL_FLOAT32,
                SHOAL_REDUCE_OP(SHOAL_SUM), 0);
        case TUNE_ALLGATHER:
            return shoal_all_gather(t->work, t->sbuf, t->rbuf, n, SHOAL_UINT8);
        case TUNE_REDUCESCATTER:
            return shoal_reduce_scatter(t->work, t->sbuf, t->rbuf, n,
                SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_SUM));
        case TUNE_ALLTOALL:
            return shoal_all_to_all(t->work, t->sbuf, t->rbuf, n, SHOAL_UINT8);
        case TUNE_GATHER:
            return shoal_gather(t->work, t->sbuf, t->rbuf, n, SHOAL_UINT8, 0);
        case TUNE_SCATTER:
            return shoal_scatter(t->work, t->sbuf, t->rbuf, n, SHOAL_UINT8, 0);
        case TUNE_BROADCAST: // in place, shoal's only form
            return shoal_broadcast(t->work, t->rbuf, n, SHOAL_UINT8, 0);
    }
    shoal_next_call_opts(NULL);
    return SHOAL_EINVAL;
}
