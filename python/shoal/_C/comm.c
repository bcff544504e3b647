// Comm: a shoal communicator's life from Python: creation (from the
// environment or explicit rank, size, store and secret), identity, default
// deadline, split and finalize. The operations are in comm_ops.c.
#include "ext.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

int
ext_comm_check_open(ext_comm *self)
{
    if (self->comm == NULL) {
        PyErr_SetString(ext_exc_base, "communicator was finalized");
        return -1;
    }
    return ext_comm_raise_dropped(self);
}

static ext_comm *
comm_wrap(PyTypeObject *type, shoal_comm *comm, int64_t timeout_ms,
    int abort_on_error)
{
    ext_comm *self = (ext_comm *) type->tp_alloc(type, 0);

    if (self == NULL) {
        Py_BEGIN_ALLOW_THREADS shoal_comm_destroy(comm);
        Py_END_ALLOW_THREADS return NULL;
    }
    self->comm           = comm;
    self->timeout_ms     = timeout_ms;
    self->abort_on_error = abort_on_error;
    self->works          = NULL;
    self->blocks         = 0;
    self->retired        = NULL;
    self->plans          = NULL;
    self->dropped_status = 0;
    self->dropped_text   = NULL;
    return self;
}

static PyObject *
comm_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = { "rank", "size", "store", "secret", "timeout_ms",
        "name", "abort_on_error", NULL };
    shoal_config cfg     = SHOAL_CONFIG_INIT;
    long long    timeout = -1;
    int          abort_on_error = 0, st;
    shoal_comm  *comm;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|iizzLzp:Comm", names,
            &cfg.rank, &cfg.nranks, &cfg.store, &cfg.secret, &timeout,
            &cfg.name, &abort_on_error)) {
        return NULL;
    }
    if (timeout > 0) { // else libshoal's own rule (SHOAL_TIMEOUT_SECONDS)
        cfg.timeout_ms = timeout;
    }
    // Creation is a rendezvous: other threads run while this one waits.
    Py_BEGIN_ALLOW_THREADS st = shoal_comm_create(&comm, &cfg);
    Py_END_ALLOW_THREADS if (st != SHOAL_OK)
    {
        return ext_raise_status(st, NULL);
    }
    return (PyObject *) comm_wrap(
        type, comm, shoal_comm_timeout(comm), abort_on_error);
}

// Waits for this rank's pending works, then destroys the communicator.
// Returns 0, or -1 with a Python exception when pending work could not be
// finished. The library's own status is not reported: the works already
// reported their errors, and a failed communicator is released all the same.
static int
comm_close(ext_comm *self)
{
    shoal_comm *comm = self->comm;

    if (comm == NULL) {
        return 0;
    }
    if (ext_work_drain(self) < 0 || ext_plan_drain(self) < 0) {
        return -1;
    }
    ext_peer_views_retire(NULL, self); // the peers' memory is no more ours
    self->comm = NULL;
    if (ext_block_defer_destroy(self, comm)) {
        return 0; // arrays still use its shared heap (alloc.c)
    }
    Py_BEGIN_ALLOW_THREADS shoal_comm_destroy(comm);
    Py_END_ALLOW_THREADS return 0;
}

static PyObject *
comm_finalize(ext_comm *self, PyObject *unused)
{
    (void) unused;
    if (comm_close(self) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static void
comm_dealloc(ext_comm *self)
{
    // Works hold a reference to their communicator, so none is live here.
    if (comm_close(self) < 0) {
        PyErr_WriteUnraisable((PyObject *) self);
    }
    Py_CLEAR(self->dropped_text);
    Py_TYPE(self)->tp_free((PyObject *) self);
}

int
ext_rank_list(PyObject *list, const char *type_error, int **out, int *n)
{
    PyObject *seq = PySequence_Fast(list, type_error);
    int      *ranks;

    if (seq == NULL) {
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(seq) > INT_MAX) {
        Py_DECREF(seq);
        ext_invalid("more ranks than a communicator can have");
        return -1;
    }
    *n    = (int) PySequence_Fast_GET_SIZE(seq);
    ranks = calloc((size_t) *n + 1, sizeof(int));
    if (ranks == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < *n; i++) {
        long r = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));

        // Out of int's range: a rank no communicator has.
        ranks[i] = r < INT_MIN || r > INT_MAX ? INT_MIN : (int) r;
        if (r == -1 && PyErr_Occurred()) {
            free(ranks);
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    *out = ranks;
    return 0;
}

static PyObject *
comm_split(ext_comm *self, PyObject *list)
{
    shoal_comm *child = NULL;
    int        *ranks, n, st;

    if (ext_comm_check_open(self) < 0
        || ext_rank_list(list, "split: ranks must be a list", &ranks, &n)
            < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS st
        = shoal_comm_split_ranks(self->comm, ranks, n, &child);
    Py_END_ALLOW_THREADS free(ranks);
    if (st != SHOAL_OK) {
        return ext_raise_status(st, self->comm);
    }
    if (child == NULL) {
        Py_RETURN_NONE;
    }
    return ext_comm_child(self, child);
}

PyObject *
ext_comm_child(ext_comm *self, shoal_comm *child)
{
    // The child starts with its parent's default deadline.
    shoal_comm_set_timeout(child, self->timeout_ms);
    return (PyObject *) comm_wrap(
        Py_TYPE(self), child, self->timeout_ms, self->abort_on_error);
}

static PyObject *
comm_set_timeout(ext_comm *self, PyObject *arg)
{
    long long ms = PyLong_AsLongLong(arg);
    int       st;

    if (ms == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (ext_comm_check_open(self) < 0) {
        return NULL;
    }
    st = shoal_comm_set_timeout(self->comm, ms);
    if (st != SHOAL_OK) {
        return ext_raise_status(st, self->comm);
    }
    self->timeout_ms = ms;
    Py_RETURN_NONE;
}

static PyObject *
comm_abort(ext_comm *self, PyObject *arg)
{
    const char *reason = arg == Py_None ? NULL : PyUnicode_AsUTF8(arg);

    if (arg != Py_None && reason == NULL) {
        return NULL;
    }
    if (ext_comm_check_open(self) < 0) {
        return NULL;
    }
    shoal_comm_abort(self->comm, reason);
    Py_RETURN_NONE;
}

static PyObject *
comm_get_rank(ext_comm *self, void *closure)
{
    (void) closure;
    return ext_comm_check_open(self) < 0
        ? NULL
        : PyLong_FromLong(shoal_comm_rank(self->comm));
}

static PyObject *
comm_get_size(ext_comm *self, void *closure)
{
    (void) closure;
    return ext_comm_check_open(self) < 0
        ? NULL
        : PyLong_FromLong(shoal_comm_size(self->comm));
}

static PyObject *
comm_get_name(ext_comm *self, void *closure)
{
    (void) closure;
    return ext_comm_check_open(self) < 0
        ? NULL
        : PyUnicode_FromString(shoal_comm_name(self->comm));
}

static PyObject *
comm_get_last_error(ext_comm *self, void *closure)
{
    (void) closure;
    return PyUnicode_FromString(
        self->comm != NULL ? shoal_comm_last_error(self->comm) : "");
}

static PyObject *
comm_get_finalized(ext_comm *self, void *closure)
{
    (void) closure;
    return PyBool_FromLong(self->comm == NULL);
}

static PyObject *
comm_get_timeout(ext_comm *self, void *closure)
{
    (void) closure;
    return PyLong_FromLongLong(self->timeout_ms);
}

static PyMethodDef comm_methods[] = {
    { "finalize", (PyCFunction) comm_finalize, METH_NOARGS,
        "Wait for this rank's pending work, then release the "
        "communicator. Local; idempotent." },
    { "split", (PyCFunction) comm_split, METH_O,
        "split(ranks): collective; the listed ranks form a new "
        "communicator in list order; [] returns None." },
    { "abort", (PyCFunction) comm_abort, METH_O,
        "abort(reason): fail every operation of the communicator, on "
        "every rank, naming this rank and reason (None: a default)" },
    { "revoke", (PyCFunction) ext_comm_revoke, METH_O,
        "revoke(reason): fail every operation of the communicator with "
        "RevokedError on every rank it reaches; it stays usable for "
        "shrink() and agree(). Not collective." },
    { "shrink", (PyCFunction) ext_comm_shrink, METH_NOARGS,
        "shrink() -> Comm: the live ranks agree who they are and form a "
        "new communicator, in the same order (collective over the live "
        "ranks; works on a failed communicator)." },
    { "agree", (PyCFunction) ext_comm_agree, METH_O,
        "agree(flag) -> (flag, failed): a fault-tolerant AND of the live "
        "ranks' flags, and the agreed list of ranks that did not join." },
    { "failed_ranks", (PyCFunction) ext_comm_failed_ranks, METH_NOARGS,
        "failed_ranks() -> list: the ranks this rank knows to have died." },
    { "async_error", (PyCFunction) ext_comm_async_error, METH_NOARGS,
        "async_error() -> ShoalError or None: the communicator's failure, "
        "without blocking." },
    { "dump_flight_record", (PyCFunction) ext_comm_dump_flight_record, METH_O,
        "dump_flight_record(dir or None): this communicator's flight "
        "record into dir (None: SHOAL_FR_DUMP_DIR), in torch's format." },
    { "stats", (PyCFunction) ext_comm_stats, METH_NOARGS,
        "stats() -> per rank {collectives, last, late[8], late_ns_total, "
        "late_ns_max}: who arrives last at collectives (shared memory)." },
    { "set_timeout", (PyCFunction) comm_set_timeout, METH_O,
        "set_timeout(ms): default deadline of later operations." },
    { "register_memory", (PyCFunction) ext_comm_register_memory, METH_O,
        "register_memory(buffer) -> MemReg (shoal_mem_register): local" },
    { "_note_dropped", (PyCFunction) ext_comm_note_dropped_py, METH_VARARGS,
        "_note_dropped(exc, where): an operation whose handle `where` was "
        "dropped without wait() failed with exc: report it to "
        "sys.unraisablehook and raise it from the next call." },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef comm_getset[] = {
    { "rank", (getter) comm_get_rank, NULL, "rank of this process", NULL },
    { "size", (getter) comm_get_size, NULL, "number of ranks", NULL },
    { "name", (getter) comm_get_name, NULL, "name in logs and errors", NULL },
    { "last_error", (getter) comm_get_last_error, NULL,
        "the communicator's last error message", NULL },
    { "finalized", (getter) comm_get_finalized, NULL, "finalize() was called",
        NULL },
    { "timeout_ms", (getter) comm_get_timeout, NULL,
        "default deadline of operations, in milliseconds", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject ext_comm_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shoal._C.Comm",
    .tp_basicsize                          = sizeof(ext_comm),
    .tp_dealloc                            = (destructor) comm_dealloc,
    .tp_flags                              = Py_TPFLAGS_DEFAULT,
    .tp_doc    = "Comm(rank=-1, size=-1, store=None, secret=None, "
                 "timeout_ms=-1, name=None, abort_on_error=False): a shoal "
                 "communicator; -1 and None take the launch environment.",
    .tp_new    = comm_new,
    .tp_getset = comm_getset,
};

static size_t
method_count(const PyMethodDef *m)
{
    size_t n = 0;

    while (m[n].ml_name != NULL) {
        n++;
    }
    return n;
}

// The method tables in one, as a type has only one.
int
ext_comm_init(void)
{
    const PyMethodDef *tables[]
        = { comm_methods, ext_comm_op_methods, ext_comm_algo_methods };
    size_t       total = 0, at = 0;
    PyMethodDef *all;

    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        total += method_count(tables[i]);
    }
    all = PyMem_Calloc(total + 1, sizeof(PyMethodDef));
    if (all == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        size_t n = method_count(tables[i]);
        memcpy(all + at, tables[i], n * sizeof(PyMethodDef));
        at += n;
    }
    ext_comm_type.tp_methods = all;
    return PyType_Ready(&ext_comm_type);
}
