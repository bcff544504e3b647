// Queues: a shoal_queue and the items taken from it, as seen from Python
// (shoal.Queue, python/shoal/queue.py, wraps them).
//
// Module functions over two types. A Queue owns this rank's handle and
// keeps its Comm alive (a handle outlives its communicator's end safely:
// later calls raise). An Item owns one taken item and exports its bytes
// without a copy, keeping itself alive while they are in use: as a DLPack
// tensor of its dtype and shape (dlpack(), what shoal.Queue uses), and
// through the buffer protocol, writable, for torch.frombuffer and
// numpy.frombuffer.
//
// Blocking calls run without the GIL. Those that wait (put, get, wait) wait
// in slices, as Work.wait() does, so that a signal handler (Ctrl-C) can
// stop them: a slice that runs out returns SHOAL_EAGAIN, which leaves
// nothing half done (a put sent nothing, a get took nothing), so the next
// slice simply asks again. SHOAL_EAGAIN at the end of the caller's time is
// an answer here (False, None), not an error; where a call has no such
// answer it maps to a plain ShoalError like any other status.
#include "ext.h"

#include <limits.h>
#include <stdlib.h>
#include <time.h>

#include "dlpack.h"

typedef struct {
    PyObject_HEAD ext_comm *comm; // strong: the handle lives on its comm
    shoal_queue            *q;
} ext_queue;

typedef struct {
    PyObject_HEAD shoal_queue_item *it;
} ext_queue_item;

static PyTypeObject ext_queue_type;
static PyTypeObject ext_queue_item_type;

// How long one slice of a wait lasts before the thread looks for signals
// (work.c's WAIT_SLICE_MS, for the same reason).
#define QUEUE_SLICE_MS 50
// A slice ended by a signal handler that raised (the exception is set).
#define QUEUE_INTERRUPTED INT_MIN

static int64_t
queue_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// ---- arguments ------------------------------------------------------------

// The Queue argument of a module function, checked.
static ext_queue *
queue_arg(PyObject *obj)
{
    if (!PyObject_TypeCheck(obj, &ext_queue_type)) {
        PyErr_Format(PyExc_TypeError, "expected a shoal._C.Queue, not %s",
            Py_TYPE(obj)->tp_name);
        return NULL;
    }
    // A finalized communicator (or a failed dropped operation) raises.
    return ext_comm_check_open(((ext_queue *) obj)->comm) < 0
        ? NULL
        : (ext_queue *) obj;
}

// A tuple or list of ints as an item's shape.
static int
queue_shape(PyObject *obj, int64_t *shape, int *ndim)
{
    PyObject *seq = PySequence_Fast(obj, "shape must be a tuple of ints");

    if (seq == NULL) {
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(seq) > SHOAL_QUEUE_MAX_DIMS) {
        ext_invalid("put: a tensor of %zd dimensions; a queue carries at "
                    "most %d",
            PySequence_Fast_GET_SIZE(seq), SHOAL_QUEUE_MAX_DIMS);
        Py_DECREF(seq);
        return -1;
    }
    *ndim = (int) PySequence_Fast_GET_SIZE(seq);
    for (int i = 0; i < *ndim; i++) {
        shape[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (shape[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

// A failed call's exception (after the process abort the communicator may
// ask for). Returns NULL.
static PyObject *
queue_fail(ext_comm *comm, int st)
{
    ext_abort_if_asked(comm, st, shoal_last_error());
    return ext_raise_status(st, comm->comm);
}

// ---- blocking without the GIL, in slices ----------------------------------

// One slice of a waiting call: `ms` as the library's timeout_ms. Runs
// without the GIL: it must not touch Python objects.
typedef int (*queue_slice_fn)(ext_queue *self, int64_t ms, void *arg);

// Calls fn until it returns something else than SHOAL_EAGAIN or
// `timeout_ms` (< 0: no limit; capped by this thread's shoal.deadline) is
// spent, slice by slice. Returns its status, or QUEUE_INTERRUPTED with the
// signal handler's exception set.
static int
queue_block(ext_queue *self, int64_t timeout_ms, queue_slice_fn fn, void *arg)
{
    int64_t until;
    int     st;

    timeout_ms = ext_wait_timeout_ms(timeout_ms);
    until      = timeout_ms < 0 ? -1 : queue_now_ms() + timeout_ms;
    for (;;) {
        int64_t left = until < 0 ? -1 : until - queue_now_ms();
        int     last = until >= 0 && left <= QUEUE_SLICE_MS;
        int64_t ms   = last ? (left > 0 ? left : 0) : QUEUE_SLICE_MS;

        Py_BEGIN_ALLOW_THREADS st = fn(self, ms, arg);
        Py_END_ALLOW_THREADS if (st != SHOAL_EAGAIN || last)
        {
            return st;
        }
        if (PyErr_CheckSignals() < 0) {
            return QUEUE_INTERRUPTED;
        }
    }
}

// ---- Item -----------------------------------------------------------------

static void
item_dealloc(ext_queue_item *self)
{
    shoal_queue_item_free(self->it);
    Py_TYPE(self)->tp_free((PyObject *) self);
}

// The item's first byte: an empty item's may be NULL, which no consumer
// of a buffer or a DLPack tensor expects.
static unsigned char *
item_bytes(ext_queue_item *self)
{
    static unsigned char none[1];
    unsigned char       *data = shoal_queue_item_data(self->it);

    return data != NULL ? data : none;
}

static int
item_getbuffer(ext_queue_item *self, Py_buffer *view, int flags)
{
    size_t n = shoal_queue_item_bytes(self->it);

    if (n > PY_SSIZE_T_MAX) {
        PyErr_SetString(PyExc_OverflowError, "item too large for a buffer");
        view->obj = NULL;
        return -1;
    }
    // Writable: the data is the taker's (shoal.h), and a tensor made over
    // it is an ordinary, writable tensor.
    return PyBuffer_FillInfo(
        view, (PyObject *) self, item_bytes(self), (Py_ssize_t) n, 0, flags);
}

static PyObject *
item_get_kind(ext_queue_item *self, void *closure)
{
    (void) closure;
    return PyLong_FromLong((long) shoal_queue_item_kind(self->it));
}

static PyObject *
item_get_dtype(ext_queue_item *self, void *closure)
{
    (void) closure;
    return PyLong_FromLong((long) shoal_queue_item_dtype(self->it));
}

static PyObject *
item_get_shape(ext_queue_item *self, void *closure)
{
    int            ndim  = shoal_queue_item_ndim(self->it);
    const int64_t *shape = shoal_queue_item_shape(self->it);
    PyObject      *t     = PyTuple_New(ndim > 0 ? ndim : 0);

    (void) closure;
    for (int i = 0; t != NULL && i < ndim; i++) {
        PyObject *d = PyLong_FromLongLong(shape[i]);

        if (d == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, d);
    }
    return t;
}

static PyObject *
item_get_sender(ext_queue_item *self, void *closure)
{
    (void) closure;
    return PyLong_FromLong(shoal_queue_item_sender(self->it));
}

static PyObject *
item_get_nbytes(ext_queue_item *self, void *closure)
{
    (void) closure;
    return PyLong_FromSize_t(shoal_queue_item_bytes(self->it));
}

// The DLPack type of a shoal dtype: (code, bits), or -1 when unknown.
static int
item_dl_type(int dtype, int *code, int *bits)
{
    switch (dtype) {
        case SHOAL_BOOL:
            *code = EXT_DL_BOOL, *bits = 8;
            return 0;
        case SHOAL_UINT8:
            *code = EXT_DL_UINT, *bits = 8;
            return 0;
        case SHOAL_INT8:
        case SHOAL_INT16:
        case SHOAL_INT32:
        case SHOAL_INT64:
            *code = EXT_DL_INT;
            *bits = 8 << (dtype - SHOAL_INT8);
            return 0;
        case SHOAL_FLOAT16:
            *code = EXT_DL_FLOAT, *bits = 16;
            return 0;
        case SHOAL_BFLOAT16:
            *code = EXT_DL_BFLOAT, *bits = 16;
            return 0;
        case SHOAL_FLOAT32:
            *code = EXT_DL_FLOAT, *bits = 32;
            return 0;
        case SHOAL_FLOAT64:
            *code = EXT_DL_FLOAT, *bits = 64;
            return 0;
        default:
            return -1;
    }
}

// dlpack() -> a DLPack capsule viewing a tensor item as its dtype and
// shape, which keeps the item alive: torch.from_dlpack takes it without a
// copy, in less time than torch.frombuffer and a view.
static PyObject *
item_dlpack(ext_queue_item *self, PyObject *unused)
{
    int       dtype = (int) shoal_queue_item_dtype(self->it), code, bits;
    PyObject *shape, *capsule;

    (void) unused;
    if (shoal_queue_item_kind(self->it) != SHOAL_QUEUE_TENSOR
        || item_dl_type(dtype, &code, &bits) < 0) {
        return ext_invalid("get_tensor: the item is not a tensor of a dtype "
                           "shoal knows (%d)",
            dtype);
    }
    if ((shape = item_get_shape(self, NULL)) == NULL) {
        return NULL;
    }
    capsule
        = ext_dlpack_export(item_bytes(self), shoal_queue_item_bytes(self->it),
            0, shape, code, bits, (PyObject *) self, "get_tensor");
    Py_DECREF(shape);
    return capsule;
}

static PyMethodDef item_methods[] = {
    { "dlpack", (PyCFunction) item_dlpack, METH_NOARGS,
        "dlpack() -> a DLPack capsule of a tensor item (its dtype and "
        "shape), keeping the item alive" },
    { NULL, NULL, 0, NULL },
};

static PyBufferProcs item_as_buffer = {
    .bf_getbuffer = (getbufferproc) item_getbuffer,
};

static PyGetSetDef item_getset[] = {
    { "kind", (getter) item_get_kind, NULL, "QUEUE_TENSOR or QUEUE_OBJECT",
        NULL },
    { "dtype", (getter) item_get_dtype, NULL,
        "a tensor's shoal dtype (a value of DTYPES)", NULL },
    { "shape", (getter) item_get_shape, NULL, "a tensor's shape", NULL },
    { "sender", (getter) item_get_sender, NULL, "the rank that put it", NULL },
    { "nbytes", (getter) item_get_nbytes, NULL, "its size in bytes", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject ext_queue_item_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shoal._C.QueueItem",
    .tp_basicsize                          = sizeof(ext_queue_item),
    .tp_dealloc                            = (destructor) item_dealloc,
    .tp_as_buffer                          = &item_as_buffer,
    .tp_flags                              = Py_TPFLAGS_DEFAULT,
    .tp_doc     = "An item taken from a queue: its kind, dtype, shape and "
                  "sender, and its bytes as a writable buffer (freed when "
                  "the item and every view of it are gone).",
    .tp_getset  = item_getset,
    .tp_methods = item_methods,
};

// ---- Queue ----------------------------------------------------------------

static void
queue_dealloc(ext_queue *self)
{
    // The handle only: the items stay in the queue (shoal.h).
    shoal_queue_free(self->q);
    Py_XDECREF(self->comm);
    Py_TYPE(self)->tp_free((PyObject *) self);
}

static PyObject *
queue_get_id(ext_queue *self, void *closure)
{
    (void) closure;
    return PyLong_FromUnsignedLongLong(shoal_queue_id(self->q));
}

static PyObject *
queue_get_comm(ext_queue *self, void *closure)
{
    (void) closure;
    return Py_NewRef((PyObject *) self->comm);
}

static PyGetSetDef queue_getset[] = {
    { "id", (getter) queue_get_id, NULL, "the queue's id, equal on every rank",
        NULL },
    { "comm", (getter) queue_get_comm, NULL, "the Comm it lives on", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject ext_queue_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shoal._C.Queue",
    .tp_basicsize                          = sizeof(ext_queue),
    .tp_dealloc                            = (destructor) queue_dealloc,
    .tp_flags                              = Py_TPFLAGS_DEFAULT,
    .tp_doc    = "This rank's handle of a shoal_queue (queue_create, "
                 "queue_open); released when collected.",
    .tp_getset = queue_getset,
};

static PyObject *
queue_wrap(ext_comm *comm, shoal_queue *q)
{
    ext_queue *self = PyObject_New(ext_queue, &ext_queue_type);

    if (self == NULL) {
        shoal_queue_free(q);
        return NULL;
    }
    self->comm = (ext_comm *) Py_NewRef((PyObject *) comm);
    self->q    = q;
    return (PyObject *) self;
}

// ---- the module functions -------------------------------------------------

// queue_channel_open(comm): collective
static PyObject *
queue_channel_open(PyObject *mod, PyObject *arg)
{
    ext_comm *comm = (ext_comm *) arg;
    int       st;

    (void) mod;
    if (!PyObject_TypeCheck(arg, &ext_comm_type)) {
        PyErr_SetString(PyExc_TypeError, "expected a shoal._C.Comm");
        return NULL;
    }
    if (ext_comm_check_open(comm) < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS st = shoal_queue_channel_open(comm->comm);
    Py_END_ALLOW_THREADS if (st != SHOAL_OK)
    {
        return queue_fail(comm, st);
    }
    Py_RETURN_NONE;
}

// queue_create(comm, locations, streaming) -> Queue: collective
static PyObject *
queue_create(PyObject *mod, PyObject *args)
{
    PyObject    *comm, *list;
    int          streaming, n, st, *ranks;
    shoal_queue *q = NULL;
    ext_comm    *c;

    (void) mod;
    if (!PyArg_ParseTuple(args, "O!Op:queue_create", &ext_comm_type, &comm,
            &list, &streaming)
        || ext_comm_check_open((ext_comm *) comm) < 0
        || ext_rank_list(list, "locations must be a list of ranks", &ranks, &n)
            < 0) {
        return NULL;
    }
    c = (ext_comm *) comm;
    // A rendezvous with the other ranks: they run while this one waits.
    Py_BEGIN_ALLOW_THREADS st
        = shoal_queue_create(c->comm, ranks, n, streaming, &q);
    Py_END_ALLOW_THREADS free(ranks);
    if (st != SHOAL_OK) {
        return queue_fail(c, st);
    }
    return queue_wrap(c, q);
}

// queue_open(comm, name, locations, streaming) -> Queue: this rank alone
static PyObject *
queue_open(PyObject *mod, PyObject *args)
{
    PyObject    *comm, *list;
    const char  *name;
    int          streaming, n, st, *ranks;
    shoal_queue *q = NULL;
    ext_comm    *c;

    (void) mod;
    if (!PyArg_ParseTuple(args, "O!sOp:queue_open", &ext_comm_type, &comm,
            &name, &list, &streaming)
        || ext_comm_check_open((ext_comm *) comm) < 0
        || ext_rank_list(list, "locations must be a list of ranks", &ranks, &n)
            < 0) {
        return NULL;
    }
    c = (ext_comm *) comm;
    Py_BEGIN_ALLOW_THREADS st
        = shoal_queue_open(c->comm, name, ranks, n, streaming, &q);
    Py_END_ALLOW_THREADS free(ranks);
    if (st != SHOAL_OK) {
        return queue_fail(c, st);
    }
    return queue_wrap(c, q);
}

struct queue_put_args {
    int             kind;
    const void     *data;
    size_t          bytes;
    int             dtype;
    int             ndim;
    const int64_t  *shape;
    unsigned        flags;
    shoal_request **req; // NULL: a blocking put; else shoal_queue_iput's
};

static int
queue_put_slice(ext_queue *self, int64_t ms, void *arg)
{
    const struct queue_put_args *a = arg;

    if (a->req != NULL) {
        return shoal_queue_iput(self->q, (shoal_queue_kind) a->kind, a->data,
            a->bytes, (shoal_dtype) a->dtype, a->ndim, a->shape, a->flags, ms,
            a->req);
    }
    return shoal_queue_put(self->q, (shoal_queue_kind) a->kind, a->data,
        a->bytes, (shoal_dtype) a->dtype, a->ndim, a->shape, a->flags, ms);
}

// queue_put(q, kind, buffer, dtype, shape, flags, timeout_ms[, start])
// -> True, or False when no room came in time (nothing was sent). With
// `start` true: a Work instead of True, which keeps the buffer until the
// location has read it (shoal_queue_iput; done at once for items that went
// through the ring).
static PyObject *
queue_put(PyObject *mod, PyObject *args)
{
    PyObject             *qobj, *obj, *shape_obj, *work;
    ext_queue            *self;
    ext_buffer           *b;
    int64_t               shape[SHOAL_QUEUE_MAX_DIMS];
    shoal_request        *req   = NULL;
    int                   start = 0;
    struct queue_put_args a     = { .shape = shape };
    long long             timeout;
    int                   st;

    (void) mod;
    if (!PyArg_ParseTuple(args, "OiOiOIL|p:queue_put", &qobj, &a.kind, &obj,
            &a.dtype, &shape_obj, &a.flags, &timeout, &start)
        || (self = queue_arg(qobj)) == NULL
        || queue_shape(shape_obj, shape, &a.ndim) < 0) {
        return NULL;
    }
    if ((b = ext_buffer_arg(obj, 0, "put: the data")) == NULL) {
        return NULL;
    }
    a.data  = b->data;
    a.bytes = b->count * b->itemsize;
    a.req   = start ? &req : NULL;
    st      = queue_block(self, timeout, queue_put_slice, &a);
    if (st == SHOAL_OK && start) {
        work = ext_work_new(self->comm, req, (PyObject *) b);
        Py_DECREF(b);
        return work;
    }
    Py_DECREF(b); // the library copied the bytes, or sent none
    if (st == SHOAL_OK) {
        Py_RETURN_TRUE;
    }
    if (st == SHOAL_EAGAIN) {
        Py_RETURN_FALSE;
    }
    return st == QUEUE_INTERRUPTED ? NULL : queue_fail(self->comm, st);
}

static int
queue_get_slice(ext_queue *self, int64_t ms, void *arg)
{
    return shoal_queue_get(self->q, ms, (shoal_queue_item **) arg);
}

// queue_get(q, timeout_ms) -> Item, or None when the queue stayed empty
static PyObject *
queue_get(PyObject *mod, PyObject *args)
{
    PyObject         *qobj;
    ext_queue        *self;
    ext_queue_item   *item;
    shoal_queue_item *it = NULL;
    long long         timeout;
    int               st;

    (void) mod;
    if (!PyArg_ParseTuple(args, "OL:queue_get", &qobj, &timeout)
        || (self = queue_arg(qobj)) == NULL) {
        return NULL;
    }
    st = queue_block(self, timeout, queue_get_slice, &it);
    if (st == SHOAL_EAGAIN) {
        Py_RETURN_NONE;
    }
    if (st != SHOAL_OK) {
        return st == QUEUE_INTERRUPTED ? NULL : queue_fail(self->comm, st);
    }
    item = PyObject_New(ext_queue_item, &ext_queue_item_type);
    if (item == NULL) {
        shoal_queue_item_free(it); // taken and lost: memory ran out
        return NULL;
    }
    item->it = it;
    return (PyObject *) item;
}

// queue_size(q) -> the number of items now (a round trip to a remote
// location)
static PyObject *
queue_size(PyObject *mod, PyObject *qobj)
{
    ext_queue *self;
    size_t     n = 0;
    int        st;

    (void) mod;
    if ((self = queue_arg(qobj)) == NULL) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS st = shoal_queue_size(self->q, &n);
    Py_END_ALLOW_THREADS if (st != SHOAL_OK)
    {
        return queue_fail(self->comm, st);
    }
    return PyLong_FromSize_t(n);
}

static int
queue_wait_slice(ext_queue *self, int64_t ms, void *arg)
{
    (void) arg;
    return shoal_queue_wait(self->q, ms);
}

// queue_wait(q, timeout_ms) -> whether the queue holds an item
static PyObject *
queue_wait(PyObject *mod, PyObject *args)
{
    PyObject  *qobj;
    ext_queue *self;
    long long  timeout;
    int        st;

    (void) mod;
    if (!PyArg_ParseTuple(args, "OL:queue_wait", &qobj, &timeout)
        || (self = queue_arg(qobj)) == NULL) {
        return NULL;
    }
    st = queue_block(self, timeout, queue_wait_slice, NULL);
    if (st == SHOAL_OK) {
        Py_RETURN_TRUE;
    }
    if (st == SHOAL_EAGAIN) {
        Py_RETURN_FALSE;
    }
    return st == QUEUE_INTERRUPTED ? NULL : queue_fail(self->comm, st);
}

// queue_id(q) -> the id, equal on every rank for the same queue
static PyObject *
queue_id(PyObject *mod, PyObject *qobj)
{
    ext_queue *self;

    (void) mod;
    if ((self = queue_arg(qobj)) == NULL) {
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(shoal_queue_id(self->q));
}

static PyMethodDef queue_functions[] = {
    { "queue_channel_open", queue_channel_open, METH_O,
        "queue_channel_open(comm): collective; opens the communicator's "
        "queue channel (a no-op when open)" },
    { "queue_create", queue_create, METH_VARARGS,
        "queue_create(comm, locations, streaming) -> Queue: collective; "
        "an unnamed queue on the listed ranks" },
    { "queue_open", queue_open, METH_VARARGS,
        "queue_open(comm, name, locations, streaming) -> Queue: this rank "
        "alone; the named queue (the channel must be open)" },
    { "queue_put", queue_put, METH_VARARGS,
        "queue_put(q, kind, buffer, dtype, shape, flags, timeout_ms[, "
        "start]) -> True (with start: a Work, done when the location has "
        "the bytes), or False when no room came before the time ran out" },
    { "queue_get", queue_get, METH_VARARGS,
        "queue_get(q, timeout_ms) -> QueueItem, or None when the queue "
        "stayed empty" },
    { "queue_size", queue_size, METH_O,
        "queue_size(q) -> the number of items in the queue now" },
    { "queue_wait", queue_wait, METH_VARARGS,
        "queue_wait(q, timeout_ms) -> True once the queue holds an item, "
        "False when the time ran out first" },
    { "queue_id", queue_id, METH_O,
        "queue_id(q) -> the queue's id, equal on every rank" },
    { NULL, NULL, 0, NULL },
};

int
ext_queue_init(PyObject *module)
{
    if (PyType_Ready(&ext_queue_type) < 0
        || PyType_Ready(&ext_queue_item_type) < 0) {
        return -1;
    }
    Py_INCREF(&ext_queue_type);
    if (PyModule_AddObject(module, "Queue", (PyObject *) &ext_queue_type)
        < 0) {
        Py_DECREF(&ext_queue_type);
        return -1;
    }
    Py_INCREF(&ext_queue_item_type);
    if (PyModule_AddObject(
            module, "QueueItem", (PyObject *) &ext_queue_item_type)
        < 0) {
        Py_DECREF(&ext_queue_item_type);
        return -1;
    }
    return PyModule_AddFunctions(module, queue_functions) < 0
            || PyModule_AddIntConstant(
                   module, "QUEUE_TENSOR", SHOAL_QUEUE_TENSOR)
                < 0
            || PyModule_AddIntConstant(
                   module, "QUEUE_OBJECT", SHOAL_QUEUE_OBJECT)
                < 0
            || PyModule_AddIntConstant(module, "QUEUE_MORE", SHOAL_QUEUE_MORE)
                < 0
            || PyModule_AddIntConstant(
                   module, "QUEUE_MAX_DIMS", SHOAL_QUEUE_MAX_DIMS)
                < 0
        ? -1
        : 0;
}
