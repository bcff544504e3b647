// Diagnosis: the flight recorder (Comm.dump_flight_record,
// dump_flight_records) and who arrives last (Comm.stats).
#include "ext.h"

// dir as a path, or NULL for None (SHOAL_FR_DUMP_DIR); -1 on error.
static int
dir_of(PyObject *dir, PyObject **bytes, const char **path)
{
    *bytes = NULL;
    *path  = NULL;
    if (dir == Py_None) {
        return 0;
    }
    if (!PyUnicode_FSConverter(dir, bytes)) {
        return -1;
    }
    *path = PyBytes_AS_STRING(*bytes);
    return 0;
}

PyObject *
ext_comm_dump_flight_record(ext_comm *self, PyObject *dir)
{
    PyObject   *bytes;
    const char *path;
    int         st;

    if (ext_comm_check_open(self) < 0 || dir_of(dir, &bytes, &path) < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS st
        = shoal_comm_dump_flight_record(self->comm, path);
    Py_END_ALLOW_THREADS Py_XDECREF(bytes);
    if (st != SHOAL_OK) {
        return ext_raise_status(st, self->comm);
    }
    Py_RETURN_NONE;
}

PyObject *
ext_dump_flight_records(PyObject *module, PyObject *dir)
{
    PyObject   *bytes;
    const char *path;
    int         st;

    (void) module;
    if (dir_of(dir, &bytes, &path) < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS st = shoal_dump_flight_records(path);
    Py_END_ALLOW_THREADS   Py_XDECREF(bytes);
    if (st != SHOAL_OK) {
        return ext_raise_status(st, NULL);
    }
    Py_RETURN_NONE;
}

PyObject *
ext_comm_stats(ext_comm *self, PyObject *unused)
{
    (void) unused;
    if (ext_comm_check_open(self) < 0) {
        return NULL;
    }
    int               n = shoal_comm_size(self->comm);
    shoal_peer_stats *s = PyMem_Calloc((size_t) n, sizeof(*s));
    if (s == NULL) {
        return PyErr_NoMemory();
    }
    int       st   = shoal_comm_stats(self->comm, s, n);
    PyObject *list = st == SHOAL_OK ? PyList_New(n) : NULL;
    for (int r = 0; list != NULL && r < n; r++) {
        PyObject *late = PyList_New(SHOAL_LATE_BUCKETS);
        for (int b = 0; late != NULL && b < SHOAL_LATE_BUCKETS; b++) {
            PyList_SET_ITEM(
                late, b, PyLong_FromUnsignedLongLong(s[r].late[b]));
        }
        PyObject *d = late == NULL
            ? NULL
            : Py_BuildValue("{s:K,s:K,s:N,s:L,s:L}", "collectives",
                s[r].collectives, "last", s[r].last, "late", late,
                "late_ns_total", s[r].late_ns_total, "late_ns_max",
                s[r].late_ns_max);
        if (d == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, r, d);
    }
    PyMem_Free(s);
    if (st != SHOAL_OK) {
        return ext_raise_status(st, self->comm);
    }
    return list;
}
