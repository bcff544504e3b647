// Window: a shoal_window as seen from Python (shoal.Window wraps it).
//
// register() keeps the registered Buffer alive until deregister() or the
// window's end, whatever the Python layer does with its tensor: peers may
// write into that memory at any time while it is registered. put(),
// signal() and wait_signal() return Works (the put's keeps its source
// alive). peer_dlpack() views a peer's registered memory where the
// transport maps it; the view keeps the window (and so the communicator's
// mapping) alive, but after deregister() its contents are no longer the
// peer's: the Python layer empties the tensors it made.
#include "ext.h"

#include <stdlib.h>

typedef struct {
    PyObject_HEAD ext_comm *comm; // strong reference
    shoal_window           *win;
    ext_buffer             *registered; // NULL when none
} ext_window;

static int
window_usable(ext_window *self)
{
    if (ext_comm_check_open(self->comm) < 0) {
        return -1;
    }
    if (self->win == NULL) {
        ext_invalid("the window was closed");
        return -1;
    }
    return 0;
}

static PyObject *
window_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = { "comm", NULL };
    PyObject    *comm;
    ext_window  *self;
    int          st;

    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "O!:Window", names, &ext_comm_type, &comm)
        || ext_comm_check_open((ext_comm *) comm) < 0) {
        return NULL;
    }
    self = (ext_window *) type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->comm = (ext_comm *) Py_NewRef(comm);
    st         = shoal_window_create(self->comm->comm, &self->win);
    if (st != SHOAL_OK) {
        Py_DECREF(self);
        return ext_raise_status(st, NULL);
    }
    return (PyObject *) self;
}

// Frees the native window (local; a registered one keeps its counters
// reserved until the communicator ends, see shoal.h).
static void
window_close_native(ext_window *self)
{
    ext_peer_views_retire((PyObject *) self, NULL);
    if (self->win != NULL) {
        shoal_window_free(self->win);
        self->win = NULL;
    }
    Py_CLEAR(self->registered);
}

static void
window_dealloc(ext_window *self)
{
    window_close_native(self);
    Py_XDECREF(self->comm);
    Py_TYPE(self)->tp_free((PyObject *) self);
}

// Runs a collective window call without the GIL.
static PyObject *
window_collective(ext_window *self, int reg, ext_buffer *b, long long timeout)
{
    int st;

    ext_call_deadline(self->comm, timeout);
    Py_BEGIN_ALLOW_THREADS st = reg
        ? shoal_window_register(self->win, b->data, b->count, b->dtype)
        : shoal_window_deregister(self->win);
    Py_END_ALLOW_THREADS if (st != SHOAL_OK)
    {
        ext_abort_if_asked(self->comm, st, shoal_last_error());
        return ext_raise_status(st, self->comm->comm);
    }
    Py_RETURN_NONE;
}

static PyObject *
window_register(ext_window *self, PyObject *args)
{
    PyObject   *obj, *res;
    long long   timeout;
    ext_buffer *b;

    if (!PyArg_ParseTuple(args, "OL", &obj, &timeout)
        || window_usable(self) < 0) {
        return NULL;
    }
    if ((b = ext_buffer_arg(obj, 1, "tensor_register: the tensor")) == NULL) {
        return NULL;
    }
    res = window_collective(self, 1, b, timeout);
    if (res == NULL) {
        Py_DECREF(b);
        return NULL;
    }
    Py_XSETREF(self->registered, b);
    return res;
}

static PyObject *
window_deregister(ext_window *self, PyObject *args)
{
    long long timeout;
    PyObject *res;

    if (!PyArg_ParseTuple(args, "L", &timeout) || window_usable(self) < 0) {
        return NULL;
    }
    res = window_collective(self, 0, NULL, timeout);
    // Deregistered whether or not the fence succeeded (see shoal.h).
    if (shoal_window_bytes(self->win) == 0) {
        ext_peer_views_retire((PyObject *) self, NULL);
        Py_CLEAR(self->registered);
    }
    return res;
}

// Wraps a request just issued (status st) in a Work keeping `keep`.
static PyObject *
window_work(ext_window *self, int st, shoal_request *req, PyObject *keep)
{
    if (st < 0) {
        ext_abort_if_asked(self->comm, st, shoal_last_error());
        return ext_raise_status(st, self->comm->comm);
    }
    return ext_work_new(self->comm, req, keep);
}

// A blocking call just made (status st): None, or the error raised.
static PyObject *
window_done(ext_window *self, int st)
{
    if (st != SHOAL_OK) {
        ext_abort_if_asked(self->comm, st, shoal_last_error());
        return ext_raise_status(st, self->comm->comm);
    }
    Py_RETURN_NONE;
}

// put(src, dst, offset_elems, timeout_ms, blocking) -> Work, or None when
// blocking (the put is done: src may be reused)
static PyObject *
window_put(ext_window *self, PyObject *args)
{
    PyObject      *obj, *work;
    int            dst, blocking;
    Py_ssize_t     offset;
    long long      timeout;
    ext_buffer    *b;
    shoal_request *req = NULL;
    int            st;

    if (!PyArg_ParseTuple(
            args, "OinLp", &obj, &dst, &offset, &timeout, &blocking)
        || window_usable(self) < 0) {
        return NULL;
    }
    if (offset < 0) {
        return ext_invalid(
            "put: target_offset_nelems %zd is negative", offset);
    }
    if ((b = ext_buffer_arg(obj, 0, "put: the tensor")) == NULL) {
        return NULL;
    }
    ext_call_deadline(self->comm, timeout);
    if (blocking) {
        Py_BEGIN_ALLOW_THREADS st = shoal_window_put(
            self->win, b->data, b->count, b->dtype, dst, (size_t) offset);
        Py_END_ALLOW_THREADS Py_DECREF(b);
        return window_done(self, st);
    }
    st = shoal_window_iput(
        self->win, b->data, b->count, b->dtype, dst, (size_t) offset, &req);
    work = window_work(self, st, req, (PyObject *) b);
    Py_DECREF(b);
    return work;
}

// signal / wait_signal(rank, timeout_ms, blocking) -> Work, or None when
// blocking
static PyObject *
window_signal_like(ext_window *self, PyObject *args, int wait)
{
    int            rank, blocking;
    long long      timeout;
    shoal_request *req = NULL;
    int            st;

    if (!PyArg_ParseTuple(args, "iLp", &rank, &timeout, &blocking)
        || window_usable(self) < 0) {
        return NULL;
    }
    ext_call_deadline(self->comm, timeout);
    if (blocking) {
        Py_BEGIN_ALLOW_THREADS st = wait
            ? shoal_window_wait_signal(self->win, rank)
            : shoal_window_signal(self->win, rank);
        Py_END_ALLOW_THREADS return window_done(self, st);
    }
    st = wait ? shoal_window_iwait_signal(self->win, rank, &req)
              : shoal_window_isignal(self->win, rank, &req);
    return window_work(self, st, req, Py_None);
}

static PyObject *
window_signal(ext_window *self, PyObject *args)
{
    return window_signal_like(self, args, 0);
}

static PyObject *
window_wait_signal(ext_window *self, PyObject *args)
{
    return window_signal_like(self, args, 1);
}

static PyObject *
window_access(ext_window *self, PyObject *args)
{
    int peer, st;

    if (!PyArg_ParseTuple(args, "i", &peer) || window_usable(self) < 0) {
        return NULL;
    }
    st = shoal_window_access_of(self->win, peer);
    return st < 0 ? ext_raise_status(st, NULL) : PyLong_FromLong(st);
}

// ---- peer views
// -------------------------------------------------------------

// peer_dlpack(peer, shape, code, bits) -> a DLPack capsule over peer's
// registered memory
static PyObject *
window_peer_dlpack(ext_window *self, PyObject *args)
{
    int       peer, code, bits, st;
    PyObject *shape;
    void     *ptr = NULL;

    if (!PyArg_ParseTuple(args, "iOii", &peer, &shape, &code, &bits)
        || window_usable(self) < 0) {
        return NULL;
    }
    st = shoal_window_peer_ptr(self->win, peer, &ptr);
    if (st != SHOAL_OK) {
        return ext_raise_status(st, NULL);
    }
    return ext_peer_view_export((PyObject *) self, self->comm, ptr,
        shoal_window_bytes(self->win), shape, code, bits);
}

static PyObject *
window_views_left(ext_window *self, PyObject *unused)
{
    (void) unused;
    return PyLong_FromSsize_t(ext_peer_views_alive((PyObject *) self));
}

static PyObject *
window_close(ext_window *self, PyObject *unused)
{
    (void) unused;
    window_close_native(self);
    Py_RETURN_NONE;
}

static PyObject *
window_get_nbytes(ext_window *self, void *closure)
{
    (void) closure;
    return PyLong_FromSize_t(
        self->win != NULL ? shoal_window_bytes(self->win) : 0);
}

static PyMethodDef window_methods[] = {
    { "register", (PyCFunction) window_register, METH_VARARGS,
        "register(buffer, timeout_ms): collective; registers the buffer" },
    { "deregister", (PyCFunction) window_deregister, METH_VARARGS,
        "deregister(timeout_ms): collective; waits for peers' puts" },
    { "put", (PyCFunction) window_put, METH_VARARGS,
        "put(src, dst, offset_elems, timeout_ms, blocking) -> Work or None" },
    { "signal", (PyCFunction) window_signal, METH_VARARGS,
        "signal(dst, timeout_ms, blocking) -> Work or None" },
    { "wait_signal", (PyCFunction) window_wait_signal, METH_VARARGS,
        "wait_signal(peer, timeout_ms, blocking) -> Work or None" },
    { "access", (PyCFunction) window_access, METH_VARARGS,
        "access(peer) -> 0 (UNIFIED: mapped) or 1 (SEPARATE)" },
    { "peer_dlpack", (PyCFunction) window_peer_dlpack, METH_VARARGS,
        "peer_dlpack(peer, shape, code, bits) -> DLPack capsule over peer's "
        "registered memory" },
    { "close", (PyCFunction) window_close, METH_NOARGS,
        "frees the native window (local)" },
    { "views_left", (PyCFunction) window_views_left, METH_NOARGS,
        "views of peers' memory still alive (after deregister: left "
        "behind, over private pages)" },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef window_getset[] = {
    { "nbytes", (getter) window_get_nbytes, NULL, "registered bytes", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject ext_window_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shoal._C.Window",
    .tp_basicsize                          = sizeof(ext_window),
    .tp_dealloc                            = (destructor) window_dealloc,
    .tp_flags                              = Py_TPFLAGS_DEFAULT,
    .tp_doc     = "Window(comm): a shoal_window (one-sided put and signal)",
    .tp_new     = window_new,
    .tp_methods = window_methods,
    .tp_getset  = window_getset,
};
