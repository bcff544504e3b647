// shoal status codes as Python exceptions.
//
// ShoalError (a RuntimeError, what torchcomms raises) is the base; the
// faults a caller may want to tell apart get a subclass. Every instance
// carries `status` (the negative code) and `status_name`.
#include "ext.h"

#include <stdarg.h>
#include <stdio.h>

PyObject        *ext_exc_base;
PyObject        *ext_exc_invalid;
static PyObject *errors_timeout;
static PyObject *errors_peer;
static PyObject *errors_mismatch;
static PyObject *errors_aborted;
static PyObject *errors_revoked;

static int
errors_add(PyObject *module, PyObject **out, const char *name, PyObject *bases,
    const char *doc)
{
    char qualified[96];

    snprintf(qualified, sizeof(qualified), "shoal.%s", name);
    *out = PyErr_NewExceptionWithDoc(qualified, doc, bases, NULL);
    Py_XDECREF(bases);
    if (*out == NULL) {
        return -1;
    }
    Py_INCREF(*out);
    if (PyModule_AddObject(module, name, *out) < 0) {
        Py_DECREF(*out);
        return -1;
    }
    return 0;
}

int
ext_errors_init(PyObject *module)
{
    Py_INCREF(PyExc_RuntimeError);
    if (errors_add(module, &ext_exc_base, "ShoalError", PyExc_RuntimeError,
            "A shoal operation failed; `status` holds shoal's code.")
        < 0) {
        return -1;
    }
    // Argument errors are ValueErrors too, as Python callers expect.
    return errors_add(module, &ext_exc_invalid, "InvalidArgumentError",
               PyTuple_Pack(2, ext_exc_base, PyExc_ValueError),
               "Bad arguments, found before anything was sent: the "
               "communicator stays usable.")
            || errors_add(module, &errors_timeout, "CommTimeoutError",
                Py_NewRef(ext_exc_base),
                "An operation's deadline passed; the communicator is "
                "aborted.")
            || errors_add(module, &errors_peer, "PeerError",
                Py_NewRef(ext_exc_base),
                "A peer rank died or left; the communicator is aborted.")
            || errors_add(module, &errors_mismatch, "MismatchError",
                Py_NewRef(ext_exc_base),
                "Ranks called different operations, counts, dtypes or "
                "roots; the communicator is aborted.")
            || errors_add(module, &errors_aborted, "AbortedError",
                Py_NewRef(ext_exc_base),
                "The communicator was aborted by an earlier error.")
            || errors_add(module, &errors_revoked, "RevokedError",
                Py_NewRef(errors_aborted),
                "A rank revoked the communicator; shrink it to go on "
                "without its lost ranks.")
        ? -1
        : 0;
}

int
ext_is_outside_fault(int status)
{
    return status == SHOAL_ETIMEDOUT || status == SHOAL_EPEER
        || status == SHOAL_EMISMATCH || status == SHOAL_EABORTED
        || status == SHOAL_EREVOKED;
}

static PyObject *
errors_class(int status)
{
    switch (status) {
        case SHOAL_EINVAL:
            return ext_exc_invalid;
        case SHOAL_ETIMEDOUT:
            return errors_timeout;
        case SHOAL_EPEER:
            return errors_peer;
        case SHOAL_EMISMATCH:
            return errors_mismatch;
        case SHOAL_EABORTED:
            return errors_aborted;
        case SHOAL_EREVOKED:
            return errors_revoked;
        default:
            return ext_exc_base;
    }
}

// Sets obj.name = value, taking the reference to value (which may be NULL
// after a failed allocation).
static int
errors_set(PyObject *obj, const char *name, PyObject *value)
{
    int rc = value != NULL ? PyObject_SetAttrString(obj, name, value) : -1;

    Py_XDECREF(value);
    return rc;
}

PyObject *
ext_raise(int status, const char *message)
{
    PyObject *cls      = errors_class(status);
    char      note[96] = "";
    PyObject *exc;

    if (message == NULL || *message == '\0') {
        message = shoal_strerror(status);
    }
    if (status == SHOAL_ETIMEDOUT) { // name the deadline that caused it
        ext_deadline_note(note, sizeof(note));
    }
    exc = PyObject_CallFunction(
        cls, "N", PyUnicode_FromFormat("%s%s", message, note));
    if (exc == NULL) {
        return NULL;
    }
    if (errors_set(exc, "status", PyLong_FromLong(status)) < 0
        || errors_set(exc, "status_name",
               PyUnicode_FromString(shoal_status_name(status)))
            < 0) {
        Py_DECREF(exc);
        return NULL;
    }
    PyErr_SetObject(cls, exc);
    Py_DECREF(exc);
    return NULL;
}

const char *
ext_error_text(const shoal_comm *comm)
{
    const char *text = shoal_last_error();

    if ((text == NULL || *text == '\0') && comm != NULL) {
        text = shoal_comm_last_error(comm);
    }
    return text;
}

PyObject *
ext_raise_status(int status, const shoal_comm *comm)
{
    return ext_raise(status, ext_error_text(comm));
}

PyObject *
ext_invalid(const char *fmt, ...)
{
    char    text[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return ext_raise(SHOAL_EINVAL, text);
}
