// shoal._C: quick measurements of this machine, for the cost model's
// built-in constants (shoal.sharding before any calibration): the time of
// a memcpy, of a float32 sum of two arrays, and of a cache-line round trip
// between two threads. No communicator is involved, so any rank can run
// them alone. Each returns the best of its repetitions: on a shared
// machine the slow ones measure the neighbours, not the memory.
#include "ext.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// Spins on a flag this many times before yielding the CPU, so that two
// threads on one CPU still take turns.
#define PROBE_SPINS 256

static double
probe_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static volatile unsigned char probe_sink; // keeps results observable

static void
add_floats(float *restrict out, const float *restrict a,
    const float *restrict b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        out[i] = a[i] + b[i];
    }
}

// The fastest of `reps` memcpys of n bytes from src to dst.
static double
copy_best(unsigned char *dst, const unsigned char *src, size_t n, int reps)
{
    double best = INFINITY;

    for (int i = 0; i < reps; i++) {
        double t0 = probe_now();
        memcpy(dst, src, n);
        double t = probe_now() - t0;
        probe_sink ^= dst[(size_t) i % n];
        best = t < best ? t : best;
    }
    return best;
}

// The fastest of `reps` float32 sums of the two halves of src's first n
// bytes into dst.
static double
reduce_best(unsigned char *dst, unsigned char *src, size_t n, int reps)
{
    size_t count = n / 2 / sizeof(float);
    float *a = (float *) src, *b = a + count, *out = (float *) dst;
    double best = INFINITY;

    for (int i = 0; i < reps; i++) {
        double t0 = probe_now();
        add_floats(out, a, b, count);
        double t = probe_now() - t0;
        probe_sink ^= (unsigned char) out[(size_t) i % count];
        best = t < best ? t : best;
    }
    return best;
}

typedef struct probe_size {
    size_t bytes;
    int    reps;
    double copy, reduce; // seconds
} probe_size;

// Measures every size on two buffers of the largest, touched once (their
// page faults would otherwise cost more than the copies); -1 when out of
// memory.
static int
memory_probe(probe_size *sizes, Py_ssize_t n)
{
    size_t most = 0;

    for (Py_ssize_t i = 0; i < n; i++) {
        most = sizes[i].bytes > most ? sizes[i].bytes : most;
    }
    unsigned char *src = malloc(most), *dst = malloc(most);
    if (src == NULL || dst == NULL) {
        free(src);
        free(dst);
        return -1;
    }
    for (size_t i = 0; i < most / sizeof(float); i++) {
        ((float *) src)[i] = 1.0f;
    }
    memset(dst, 0, most);
    for (Py_ssize_t i = 0; i < n; i++) {
        sizes[i].copy   = copy_best(dst, src, sizes[i].bytes, sizes[i].reps);
        sizes[i].reduce = reduce_best(dst, src, sizes[i].bytes, sizes[i].reps);
    }
    free(src);
    free(dst);
    return 0;
}

// The (bytes, reps) pairs of `arg` into a new array; NULL with an
// exception when malformed.
static probe_size *
probe_sizes(PyObject *arg, Py_ssize_t *n)
{
    PyObject   *seq   = PySequence_Fast(arg, "probe_memory: a list of pairs");
    probe_size *sizes = NULL;

    if (seq == NULL) {
        return NULL;
    }
    *n    = PySequence_Fast_GET_SIZE(seq);
    sizes = PyMem_Calloc(*n > 0 ? (size_t) *n : 1, sizeof(*sizes));
    for (Py_ssize_t i = 0; sizes != NULL && i < *n; i++) {
        unsigned long long bytes;
        int                reps;
        PyObject          *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyArg_ParseTuple(item, "Ki", &bytes, &reps) || bytes < 64
            || bytes > (1ull << 32) || reps < 1 || reps > 1000) {
            PyErr_Clear();
            ext_invalid("probe_memory: each size is (bytes 64 .. 4 GiB, "
                        "reps 1 .. 1000)");
            PyMem_Free(sizes);
            sizes = NULL;
            break;
        }
        sizes[i] = (probe_size) { .bytes = bytes, .reps = reps };
    }
    Py_DECREF(seq);
    return sizes;
}

// probe_memory([(bytes, reps), ...]): per size, (seconds of the fastest
// memcpy of bytes, seconds of the fastest float32 sum of two arrays of
// bytes / 2 each into a third).
static PyObject *
probe_memory(PyObject *mod, PyObject *arg)
{
    Py_ssize_t  n;
    probe_size *sizes = probe_sizes(arg, &n);
    int         st;
    PyObject   *out;

    (void) mod;
    if (sizes == NULL) {
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS st  = memory_probe(sizes, n);
    Py_END_ALLOW_THREADS   out = st < 0 ? PyErr_NoMemory() : PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *pair = Py_BuildValue("(dd)", sizes[i].copy, sizes[i].reduce);
        if (pair == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, pair);
    }
    PyMem_Free(sizes);
    return out;
}

// Two flags on their own cache lines: the main thread writes `ping`, the
// peer answers on `pong`.
typedef struct probe_pair {
    _Alignas(64) atomic_long ping;
    _Alignas(64) atomic_long pong;
    long total; // round trips in all
} probe_pair;

static void
wait_for(atomic_long *flag, long value)
{
    int spins = 0;

    while (atomic_load_explicit(flag, memory_order_acquire) != value) {
        if (++spins == PROBE_SPINS) {
            sched_yield();
            spins = 0;
        }
    }
}

static void *
probe_peer(void *arg)
{
    probe_pair *p = arg;

    for (long i = 1; i <= p->total; i++) {
        wait_for(&p->ping, i);
        atomic_store_explicit(&p->pong, i, memory_order_release);
    }
    return NULL;
}

// One batch of `iters` round trips with a peer thread of its own: seconds
// per round trip, or -1 when the thread could not be started.
static double
round_trip_batch(probe_pair *p, int iters)
{
    pthread_t peer;

    atomic_store(&p->ping, 0);
    atomic_store(&p->pong, 0);
    p->total = iters;
    if (pthread_create(&peer, NULL, probe_peer, p) != 0) {
        return -1;
    }
    double t0 = probe_now();
    for (long k = 1; k <= iters; k++) {
        atomic_store_explicit(&p->ping, k, memory_order_release);
        wait_for(&p->pong, k);
    }
    double t = (probe_now() - t0) / iters;
    pthread_join(peer, NULL);
    return t;
}

// Sleeps 0.2-2 ms, a length of its own per process and batch.
static void
nap_between_batches(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    struct timespec ts
        = { .tv_sec = 0, .tv_nsec = 200000 + (long) (*seed >> 8) % 1800000 };
    nanosleep(&ts, NULL);
}

// The fastest batch of `iters` round trips, per round trip; -1 when no
// thread could be started. Every rank of a job probes at about the same
// time, and two pairs of spinning threads on two CPUs measure each other
// (2.7-3.5 us a round trip instead of 0.11 when 2 ranks probed at once
// on this 2-CPU machine, up to 1 ms seen): each batch has a thread of its
// own and batches lie a random 0.2-2 ms apart, so that most batches find
// no other probe running, and the fastest is kept.
static double
round_trip_best(int iters, int batches)
{
    probe_pair *p    = aligned_alloc(64, sizeof(probe_pair));
    double      best = INFINITY;
    unsigned    seed = (unsigned) getpid() ^ (unsigned) (probe_now() * 1e9);

    if (p == NULL) {
        return -1;
    }
    for (int b = 0; b < batches; b++) {
        if (b > 0) {
            nap_between_batches(&seed);
        }
        double t = round_trip_batch(p, iters);
        if (t < 0) {
            free(p);
            return -1;
        }
        best = t < best ? t : best;
    }
    free(p);
    return best;
}

// probe_round_trip(iters, batches): seconds of one round trip of a cache
// line between two threads (one writes a flag, the other sees it and
// answers), the fastest of `batches` batches of `iters`.
static PyObject *
probe_round_trip(PyObject *mod, PyObject *args)
{
    int    iters, batches;
    double best;

    (void) mod;
    if (!PyArg_ParseTuple(args, "ii", &iters, &batches)) {
        return NULL;
    }
    if (iters < 1 || iters > 1000000 || batches < 1 || batches > 1000) {
        return ext_invalid("probe_round_trip: iters must be 1 .. 1000000 "
                           "and batches 1 .. 1000, not %d and %d",
            iters, batches);
    }
    Py_BEGIN_ALLOW_THREADS best = round_trip_best(iters, batches);
    Py_END_ALLOW_THREADS return best < 0 ? PyErr_NoMemory()
                                         : PyFloat_FromDouble(best);
}

PyMethodDef ext_probe_methods[] = {
    { "probe_memory", probe_memory, METH_O,
        "probe_memory([(bytes, reps), ...]): per size, the seconds of the "
        "fastest memcpy of bytes and of the fastest float32 sum of two "
        "arrays of bytes / 2 each into a third." },
    { "probe_round_trip", probe_round_trip, METH_VARARGS,
        "probe_round_trip(iters, batches): seconds of one cache-line round "
        "trip between two threads (the fastest batch)." },
    { NULL, NULL, 0, NULL },
};
