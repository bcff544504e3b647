// The flight recorder: Comm.dump_flight_record and dump_flight_records
// over shoal_comm_dump_flight_record and shoal_dump_flight_records.
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
