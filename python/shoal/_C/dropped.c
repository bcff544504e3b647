// Failures of operations nobody waits for.
//
// A Work (or a compiled op's Future) dropped without wait() is waited for
// when it is collected, so no memory is written after it is freed. If that
// operation failed, its outputs are undefined and nobody is left to raise
// the error to. It must not vanish: it goes to sys.unraisablehook at once
// (printed by default), and the next call on the communicator raises it.
// The communicator is aborted with it, so that its peers' next calls fail
// too, naming it, instead of waiting for this rank.
#include "ext.h"

void
ext_comm_note_dropped(
    ext_comm *comm, int status, const char *text, PyObject *where)
{
    PyObject *type, *value, *trace;
    char      line[1024];

    if (status >= 0) {
        return;
    }
    PyErr_Fetch(&type, &value, &trace); // a dealloc may run mid-exception
    snprintf(line, sizeof(line),
        "an operation whose Work was dropped without wait() failed; its "
        "outputs are undefined: %s",
        text != NULL && *text != '\0' ? text : shoal_strerror(status));
    if (comm->dropped_status >= 0) { // the first one explains the rest
        PyObject *kept = PyUnicode_FromString(line);
        if (kept != NULL) {
            comm->dropped_status = status;
            comm->dropped_text   = kept;
        }
    }
    // The next call raises here before it starts; the peers must not wait
    // for it. Such a failure has mostly aborted the communicator already
    // (a dead peer, a deadline); if not, this abort tells every rank why.
    if (comm->comm != NULL) {
        shoal_comm_abort(comm->comm, line);
    }
    ext_raise(status, line);
    PyErr_WriteUnraisable(where);
    PyErr_Restore(type, value, trace);
}

int
ext_comm_raise_dropped(ext_comm *comm)
{
    if (comm->dropped_status >= 0) {
        return 0;
    }
    int       status = comm->dropped_status;
    PyObject *text   = comm->dropped_text;

    comm->dropped_status = 0;
    comm->dropped_text   = NULL;
    ext_raise(status, text != NULL ? PyUnicode_AsUTF8(text) : NULL);
    Py_XDECREF(text);
    return -1;
}

// Comm._note_dropped(exc, where): the same for a Python object whose
// destructor waited (shoal.Work with staged results, compile_op's Future):
// exc is the error its wait raised.
PyObject *
ext_comm_note_dropped_py(ext_comm *self, PyObject *args)
{
    PyObject *exc, *where, *status_obj, *text_obj;
    long      status = SHOAL_EABORTED;

    if (!PyArg_ParseTuple(args, "OO:_note_dropped", &exc, &where)) {
        return NULL;
    }
    status_obj = PyObject_GetAttrString(exc, "status");
    if (status_obj != NULL) {
        status = PyLong_AsLong(status_obj);
        Py_DECREF(status_obj);
    }
    if (status_obj == NULL || status >= 0 || PyErr_Occurred()) {
        PyErr_Clear(); // not a shoal error: its text says what it was
        status = SHOAL_EABORTED;
    }
    text_obj = PyObject_Str(exc);
    if (text_obj == NULL) {
        return NULL;
    }
    ext_comm_note_dropped(
        self, (int) status, PyUnicode_AsUTF8(text_obj), where);
    Py_DECREF(text_obj);
    Py_RETURN_NONE;
}
