// Surviving a lost rank: Comm.revoke, shrink, agree, failed_ranks and
// async_error over shoal_comm_revoke, _shrink, _agree, _get_failed and
// _get_async_error. The blocking ones release the GIL.
#include "ext.h"

#include <stdlib.h>

PyObject *
ext_comm_revoke(ext_comm *self, PyObject *arg)
{
    const char *reason = arg == Py_None ? NULL : PyUnicode_AsUTF8(arg);

    if ((arg != Py_None && reason == NULL) || ext_comm_check_open(self) < 0) {
        return NULL;
    }
    shoal_comm_revoke(self->comm, reason);
    Py_RETURN_NONE;
}

PyObject *
ext_comm_shrink(ext_comm *self, PyObject *unused)
{
    shoal_comm *child = NULL;
    int         st;

    (void) unused;
    if (ext_comm_check_open(self) < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS st = shoal_comm_shrink(self->comm, &child);
    Py_END_ALLOW_THREADS if (st != SHOAL_OK)
    {
        return ext_raise_status(st, self->comm);
    }
    return ext_comm_child(self, child);
}

// A list of the first n ranks.
static PyObject *
rank_list(const int *ranks, int n)
{
    PyObject *list = PyList_New(n);

    for (int i = 0; list != NULL && i < n; i++) {
        PyList_SET_ITEM(list, i, PyLong_FromLong(ranks[i]));
    }
    return list;
}

PyObject *
ext_comm_agree(ext_comm *self, PyObject *arg)
{
    int flag = PyObject_IsTrue(arg), n = 0, st;

    if (flag < 0 || ext_comm_check_open(self) < 0) {
        return NULL;
    }
    int  size   = shoal_comm_size(self->comm);
    int *failed = malloc((size_t) size * sizeof(int));
    if (failed == NULL) {
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS st
        = shoal_comm_agree(self->comm, &flag, failed, size, &n);
    Py_END_ALLOW_THREADS PyObject *out = NULL;
    if (st != SHOAL_OK) {
        ext_raise_status(st, self->comm);
    } else {
        out = Py_BuildValue(
            "(ON)", flag ? Py_True : Py_False, rank_list(failed, n));
    }
    free(failed);
    return out;
}

PyObject *
ext_comm_failed_ranks(ext_comm *self, PyObject *unused)
{
    (void) unused;
    if (ext_comm_check_open(self) < 0) {
        return NULL;
    }
    int  size  = shoal_comm_size(self->comm), n;
    int *ranks = malloc((size_t) size * sizeof(int));
    if (ranks == NULL) {
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS n = shoal_comm_get_failed(self->comm, ranks, size);
    Py_END_ALLOW_THREADS PyObject *out
        = n < 0 ? ext_raise_status(n, self->comm) : rank_list(ranks, n);
    free(ranks);
    return out;
}

PyObject *
ext_comm_async_error(ext_comm *self, PyObject *unused)
{
    PyObject *type, *value, *tb;

    (void) unused;
    if (ext_comm_check_open(self) < 0) {
        return NULL;
    }
    int st = shoal_comm_get_async_error(self->comm);
    if (st == SHOAL_OK) {
        Py_RETURN_NONE;
    }
    ext_raise(st, shoal_last_error()); // built as a raise would, then kept
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
}
