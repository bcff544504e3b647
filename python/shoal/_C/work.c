// Work: one non-blocking shoal operation as seen from Python.
//
// A work owns its shoal_request until the operation finishes, and keeps the
// buffers it reads or writes (and its communicator) alive until then. It is
// finished by wait(), by an is_completed() that finds it done, by the
// communicator's finalize, or by its own deallocation, which waits: a work
// dropped without wait() never leaves the library writing into freed memory.
#include "ext.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void
work_link(ext_work *w)
{
    ext_comm *c = w->comm;

    w->prev = NULL;
    w->next = c->works;
    if (c->works != NULL) {
        c->works->prev = w;
    }
    c->works = w;
}

static void
work_unlink(ext_work *w)
{
    if (w->prev != NULL) {
        w->prev->next = w->next;
    } else {
        w->comm->works = w->next;
    }
    if (w->next != NULL) {
        w->next->prev = w->prev;
    }
    w->prev = w->next = NULL;
}

void
ext_abort_if_asked(const ext_comm *comm, int status, const char *text)
{
    if (!comm->abort_on_error || !ext_is_outside_fault(status)) {
        return;
    }
    fprintf(stderr,
        "shoal: %s (%s); aborting the process because "
        "abort_process_on_timeout_or_error is set "
        "(TORCHCOMM_ABORT_ON_ERROR)\n",
        text != NULL ? text : "", shoal_status_name(status));
    fflush(stderr);
    abort();
}

// Records the final status `st` of the request (right after the shoal call
// that returned it, so this thread's last error is its message), then
// releases the request and the buffers.
static void
work_finish_as(ext_work *w, int st, int may_abort_process)
{
    shoal_request *req = w->req;

    w->status = st;
    if (w->recv && st == SHOAL_OK) {
        w->source = shoal_request_source(req); // before req is freed
    }
    if (st < 0) {
        const char *text = ext_error_text(w->comm->comm);

        w->error = PyUnicode_FromString(text != NULL ? text : "");
        if (w->error == NULL) {
            PyErr_Clear(); // the status alone still says what failed
        }
    }
    w->req = NULL;
    work_unlink(w);
    shoal_request_free(req); // complete: returns at once
    Py_CLEAR(w->keep);
    if (may_abort_process) {
        ext_abort_if_asked(
            w->comm, st, w->error != NULL ? PyUnicode_AsUTF8(w->error) : NULL);
    }
}

static void
work_finish(ext_work *w, int st)
{
    work_finish_as(w, st, 1);
}

// Blocks in shoal_wait without the GIL, then finishes the work.
static void
work_block(ext_work *w, int64_t timeout_ms)
{
    shoal_request *req = w->req;
    int            st;

    w->waiting                        = 1;
    Py_BEGIN_ALLOW_THREADS st         = shoal_wait(req, timeout_ms);
    Py_END_ALLOW_THREADS   w->waiting = 0;
    work_finish(w, st);
}

// How often a waiting thread looks for signals. CPython runs a signal's
// handler (Ctrl-C: KeyboardInterrupt) only when the main thread holds the
// GIL and asks, so a wait without the GIL must come up for air.
#define WAIT_SLICE_MS 50

static int64_t
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// shoal_wait (bounded: shoal_wait_for, which leaves the operation running
// when the time is up) without the GIL.
static int
wait_without_gil(shoal_request *req, int64_t ms, int bounded)
{
    int st;

    Py_BEGIN_ALLOW_THREADS st
        = bounded ? shoal_wait_for(req, ms) : shoal_wait(req, ms);
    Py_END_ALLOW_THREADS return st;
}

// A signal's handler raised while we waited: the rank stops halfway
// through an operation its peers are in, which only an abort can tell
// them. The request fails with that cause (never aborting the process:
// the user asked to stop), and the handler's exception stays set.
static int
wait_interrupted(ext_comm *comm, shoal_request *req)
{
    PyObject *type, *value, *trace;
    char      why[256];
    int       st;

    PyErr_Fetch(&type, &value, &trace);
    snprintf(why, sizeof(why),
        "interrupted by a signal (%s) while waiting for an operation",
        type != NULL ? ((PyTypeObject *) type)->tp_name : "?");
    shoal_comm_abort(comm->comm, why);
    st = wait_without_gil(req, -1, 0); // fails at once
    PyErr_Restore(type, value, trace);
    return st;
}

// shoal_wait without the GIL, but a signal handler that raises (Ctrl-C)
// ends the wait within WAIT_SLICE_MS: then *interrupted is 1, the
// handler's exception is set and the request has failed. Returns the
// request's final status.
static int
wait_interruptible(
    ext_comm *comm, shoal_request *req, int64_t timeout_ms, int *interrupted)
{
    int64_t until = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    int     st;

    *interrupted = 0;
    for (;;) {
        int64_t left = until < 0 ? WAIT_SLICE_MS + 1 : until - now_ms();
        if (left <= WAIT_SLICE_MS) { // the last slice: its end fails it
            return wait_without_gil(req, left > 0 ? left : 0, 0);
        }
        st = wait_without_gil(req, WAIT_SLICE_MS, 1);
        if (st != SHOAL_INPROGRESS) {
            return st;
        }
        if (PyErr_CheckSignals() < 0) {
            *interrupted = 1;
            return wait_interrupted(comm, req);
        }
    }
}

// As work_block, but interruptible (wait_interruptible): returns -1 with
// the handler's exception set when a signal ended the wait.
static int
work_block_interruptible(ext_work *w, int64_t timeout_ms)
{
    PyObject *type, *value, *trace;
    int       interrupted, st;

    w->waiting = 1;
    st         = wait_interruptible(w->comm, w->req, timeout_ms, &interrupted);
    w->waiting = 0;
    if (!interrupted) {
        work_finish(w, st);
        return 0;
    }
    // The work records its failure with no exception pending (it makes
    // a string), then the handler's propagates.
    PyErr_Fetch(&type, &value, &trace);
    work_finish_as(w, st, 0);
    PyErr_Restore(type, value, trace);
    return -1;
}

PyObject *
ext_wait_now(ext_comm *comm, shoal_request *req)
{
    int interrupted, st;

    comm->waiting_now++; // finalize refuses meanwhile, as for a Work's wait
    st = wait_interruptible(comm, req, -1, &interrupted);
    comm->waiting_now--;
    if (st < 0 && !interrupted) {
        // The thread's message, set by the wait.
        const char *text = ext_error_text(comm->comm);

        ext_abort_if_asked(comm, st, text);
        ext_raise(st, text); // before the free: the text is the thread's
    }
    shoal_request_free(req); // final: returns at once
    if (interrupted || st < 0) {
        return NULL;
    }
    Py_RETURN_TRUE;
}

static PyObject *
work_result(ext_work *w)
{
    if (w->status >= 0) {
        Py_RETURN_TRUE;
    }
    w->told = 1;
    return ext_raise(
        w->status, w->error != NULL ? PyUnicode_AsUTF8(w->error) : NULL);
}

PyObject *
ext_work_new(ext_comm *comm, shoal_request *req, PyObject *keep)
{
    ext_work *w = PyObject_New(ext_work, &ext_work_type);

    if (w == NULL) {
        Py_BEGIN_ALLOW_THREADS shoal_request_free(req);
        Py_END_ALLOW_THREADS return NULL;
    }
    w->req     = req;
    w->status  = SHOAL_INPROGRESS;
    w->error   = NULL;
    w->comm    = (ext_comm *) Py_NewRef(comm);
    w->keep    = Py_XNewRef(keep);
    w->waiting = 0;
    w->recv    = 0;
    w->told    = 0;
    w->source  = SHOAL_ANY_SOURCE;
    work_link(w);
    return (PyObject *) w;
}

void
ext_work_mark_recv(PyObject *work)
{
    ((ext_work *) work)->recv = 1;
}

int
ext_work_drain(ext_comm *comm)
{
    if (comm->waiting_now > 0) {
        PyErr_SetString(PyExc_RuntimeError,
            "finalize: another thread is waiting on this communicator's "
            "operation");
        return -1;
    }
    while (comm->works != NULL) {
        ext_work *w = comm->works;

        if (w->waiting) {
            PyErr_SetString(PyExc_RuntimeError,
                "finalize: another thread is waiting on this "
                "communicator's work");
            return -1;
        }
        Py_INCREF(w); // finishing may drop the last other reference
        work_block(w, -1);
        Py_DECREF(w);
    }
    return 0;
}

static PyObject *
work_wait(ext_work *w, PyObject *args, PyObject *kwargs)
{
    static char *names[] = { "timeout", NULL };
    PyObject    *timeout = Py_None;
    int64_t      ms      = -1;

    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "|O:wait", names, &timeout)) {
        return NULL;
    }
    if (timeout != Py_None) {
        double s = PyFloat_AsDouble(timeout);

        if (s == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
        ms = s <= 0 ? 0 : (int64_t) (s * 1000.0 + 0.5);
    }
    if (w->req != NULL && w->waiting) {
        PyErr_SetString(
            PyExc_RuntimeError, "another thread is waiting on this work");
        return NULL;
    }
    if (w->req != NULL
        && work_block_interruptible(w, ext_wait_timeout_ms(ms)) < 0) {
        return NULL;
    }
    return work_result(w);
}

static PyObject *
work_is_completed(ext_work *w, PyObject *unused)
{
    int st;

    (void) unused;
    if (w->req == NULL) {
        Py_RETURN_TRUE;
    }
    if (w->waiting) {
        Py_RETURN_FALSE; // the waiting thread finishes it
    }
    st = shoal_test(w->req);
    if (st == SHOAL_INPROGRESS) {
        Py_RETURN_FALSE;
    }
    work_finish(w, st);
    Py_RETURN_TRUE;
}

// The rank whose message a completed receive got (its src, or the sender
// an any-source receive matched). Finishes a receive found complete, as
// is_completed() does; raises the receive's error if it failed.
static PyObject *
work_source(ext_work *w, PyObject *unused)
{
    (void) unused;
    if (!w->recv) {
        PyErr_SetString(PyExc_RuntimeError,
            "source: this work is not a receive; only a recv's work has a "
            "source");
        return NULL;
    }
    if (w->req != NULL && !w->waiting) {
        int st = shoal_test(w->req);
        if (st != SHOAL_INPROGRESS) {
            work_finish(w, st);
        }
    }
    if (w->req != NULL) {
        PyErr_SetString(PyExc_RuntimeError,
            "source: the receive has not completed yet; call wait() first "
            "(or poll is_completed())");
        return NULL;
    }
    if (w->status < 0) {
        return work_result(w);
    }
    return PyLong_FromLong(w->source);
}

static PyObject *
work_get_status(ext_work *w, void *closure)
{
    (void) closure;
    return PyLong_FromLong(w->req != NULL ? SHOAL_INPROGRESS : w->status);
}

static void
work_dealloc(ext_work *w)
{
    if (w->req != NULL) {
        work_block(w, -1);
    }
    if (w->status < 0 && !w->told) { // dropped before its error was raised
        ext_comm_note_dropped(w->comm, w->status,
            w->error != NULL ? PyUnicode_AsUTF8(w->error) : NULL,
            (PyObject *) w->comm); // w itself is past repr()
    }
    Py_XDECREF(w->error);
    Py_XDECREF(w->keep);
    Py_DECREF(w->comm);
    PyObject_Free(w);
}

static PyMethodDef work_methods[] = {
    { "wait", (PyCFunction) (void (*)(void)) work_wait,
        METH_VARARGS | METH_KEYWORDS,
        "wait(timeout=None): block (without the GIL) until the operation "
        "completes; True, or raises its error. A timeout in seconds "
        "shorter than the operation's deadline fails and aborts it; so "
        "does the end of this thread's shoal.deadline." },
    { "is_completed", (PyCFunction) work_is_completed, METH_NOARGS,
        "True once the operation has finished (wait() raises if it "
        "failed)." },
    { "source", (PyCFunction) work_source, METH_NOARGS,
        "source(): the rank whose message a completed receive got (its "
        "src, or the sender when src was any). Raises RuntimeError before "
        "completion or for a work that is not a receive, and the "
        "receive's error if it failed." },
    { NULL, NULL, 0, NULL },
};

static PyObject *
work_get_comm(ext_work *w, void *closure)
{
    (void) closure;
    return Py_NewRef(w->comm);
}

static PyGetSetDef work_getset[] = {
    { "status", (getter) work_get_status, NULL,
        "shoal status: 1 in progress, 0 done, negative failed", NULL },
    { "comm", (getter) work_get_comm, NULL, "the communicator it runs on",
        NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject ext_work_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shoal._C.Work",
    .tp_basicsize                          = sizeof(ext_work),
    .tp_dealloc                            = (destructor) work_dealloc,
    .tp_flags                              = Py_TPFLAGS_DEFAULT,
    .tp_doc     = "A non-blocking shoal operation (made by Comm methods).",
    .tp_methods = work_methods,
    .tp_getset  = work_getset,
};
