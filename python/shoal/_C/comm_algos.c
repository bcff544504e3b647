// shoal._C.Comm: what the algorithm table knows, for tuners and cost
// models: the algorithms of a collective, the table's choice at a size,
// an algorithm's cost terms, the hosts the communicator spans.
#include "ext.h"

static PyObject *
algos_list(ext_comm *self, PyObject *arg)
{
    const char *coll = PyUnicode_AsUTF8(arg), *names[32];
    int         n;

    if (coll == NULL || ext_comm_check_open(self) < 0) {
        return NULL;
    }
    n = shoal_comm_algorithms(self->comm, coll, names, 32);
    if (n < 0) {
        return ext_raise_status(n, self->comm);
    }
    PyObject *list = PyList_New(0);
    for (int i = 0; list != NULL && i < n && i < 32; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (s == NULL || PyList_Append(list, s) < 0) {
            Py_XDECREF(s);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(s);
    }
    return list;
}

static PyObject *
algos_for(ext_comm *self, PyObject *args)
{
    const char        *coll, *name = NULL;
    unsigned long long bytes;
    int                st;

    if (!PyArg_ParseTuple(args, "sK", &coll, &bytes)
        || ext_comm_check_open(self) < 0) {
        return NULL;
    }
    st = shoal_comm_algorithm_for(self->comm, coll, (size_t) bytes, &name);
    if (st != SHOAL_OK) {
        return ext_raise_status(st, self->comm);
    }
    return PyUnicode_FromString(name);
}

static PyObject *
algos_cost(ext_comm *self, PyObject *args)
{
    const char        *coll, *algo;
    unsigned long long bytes;
    double             coef[3];
    int                st;

    if (!PyArg_ParseTuple(args, "ssK", &coll, &algo, &bytes)
        || ext_comm_check_open(self) < 0) {
        return NULL;
    }
    st = shoal_comm_algorithm_cost(
        self->comm, coll, algo, (size_t) bytes, coef);
    if (st != SHOAL_OK) {
        return ext_raise_status(st, self->comm);
    }
    return Py_BuildValue("(ddd)", coef[0], coef[1], coef[2]);
}

static PyObject *
algos_hosts(ext_comm *self, PyObject *unused)
{
    (void) unused;
    if (ext_comm_check_open(self) < 0) {
        return NULL;
    }
    return PyLong_FromLong(shoal_comm_hosts(self->comm));
}

PyMethodDef ext_comm_algo_methods[] = {
    { "algorithms", (PyCFunction) algos_list, METH_O,
        "algorithms(collective): the algorithms that can run it here." },
    { "algorithm_for", (PyCFunction) algos_for, METH_VARARGS,
        "algorithm_for(collective, bytes): the table's choice." },
    { "algorithm_cost", (PyCFunction) algos_cost, METH_VARARGS,
        "algorithm_cost(collective, algorithm, bytes): (latency rounds, "
        "bytes moved, bytes reduced) of its cost formula." },
    { "hosts", (PyCFunction) algos_hosts, METH_NOARGS,
        "hosts(): the number of hosts the communicator spans." },
    { NULL, NULL, 0, NULL },
};
