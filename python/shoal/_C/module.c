// shoal._C: module initialisation. Registers the Buffer, Comm and Work
// types, the exception classes and the library's constants.
#include "ext.h"

PyMODINIT_FUNC PyInit__C(void);

static PyObject *
module_version(PyObject *mod, PyObject *unused)
{
    (void) mod;
    (void) unused;
    return PyLong_FromLong(shoal_version());
}

static PyObject *
module_strerror(PyObject *mod, PyObject *arg)
{
    long status = PyLong_AsLong(arg);

    (void) mod;
    if (status == -1 && PyErr_Occurred()) {
        return NULL;
    }
    return PyUnicode_FromString(shoal_strerror((int) status));
}

static PyObject *
module_tuning_file_path(PyObject *mod, PyObject *unused)
{
    char buf[4096];

    (void) mod;
    (void) unused;
    if (shoal_tuning_file_path(buf, sizeof(buf)) == NULL) {
        Py_RETURN_NONE;
    }
    return PyUnicode_DecodeFSDefault(buf);
}

static PyMethodDef module_methods[] = {
    { "version", module_version, METH_NOARGS,
        "libshoal's version as MAJOR * 10000 + MINOR * 100 + PATCH." },
    { "strerror", module_strerror, METH_O,
        "strerror(status): the sentence describing a shoal status." },
    { "tuning_file_path", module_tuning_file_path, METH_NOARGS,
        "The tuning file communicators read (SHOAL_TUNING_FILE or the "
        "per-user default), or None when no path can be formed." },
    { "next_call_algorithm", ext_next_call_algorithm, METH_O,
        "next_call_algorithm(name): the next operation this thread issues "
        "runs that algorithm (the hint shoal::algorithm)." },
    { "deadline_enter", ext_deadline_enter, METH_O,
        "deadline_enter(seconds) -> saved: this thread's shoal.deadline "
        "becomes the earlier of its own and `seconds` from now; pass "
        "`saved` to deadline_restore on leaving." },
    { "deadline_restore", ext_deadline_restore, METH_O,
        "deadline_restore(saved): this thread's shoal.deadline as it was "
        "before the deadline_enter that returned `saved`." },
    { "dump_flight_records", ext_dump_flight_records, METH_O,
        "dump_flight_records(dir or None): every communicator's flight "
        "record into dir (None: SHOAL_FR_DUMP_DIR)." },
    { "deadline_left", ext_deadline_left, METH_NOARGS,
        "(seconds left, the context's seconds) of this thread's "
        "shoal.deadline, or None without one." },
    { NULL, NULL, 0, NULL },
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name    = "shoal._C",
    .m_doc     = "The C core of shoal's Python front end.",
    .m_size    = -1,
    .m_methods = module_methods,
};

static int
module_add_type(PyObject *m, const char *name, PyTypeObject *type)
{
    Py_INCREF(type);
    if (PyModule_AddObject(m, name, (PyObject *) type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

// {name: value} for dtypes ("float32": SHOAL_FLOAT32) and reduce ops.
static int
module_add_names(
    PyObject *m, const char *attr, int n, const char *(*name_of)(int) )
{
    PyObject *d = PyDict_New();

    for (int i = 0; d != NULL && i < n; i++) {
        PyObject *v = PyLong_FromLong(i);

        if (v == NULL || PyDict_SetItemString(d, name_of(i), v) < 0) {
            Py_XDECREF(v);
            Py_CLEAR(d);
            break;
        }
        Py_DECREF(v);
    }
    if (d == NULL || PyModule_AddObject(m, attr, d) < 0) {
        Py_XDECREF(d);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC
PyInit__C(void)
{
    PyObject *m;

    if (ext_buffer_init() < 0 || ext_comm_init() < 0
        || PyType_Ready(&ext_work_type) < 0
        || PyType_Ready(&ext_block_type) < 0
        || PyType_Ready(&ext_plan_type) < 0
        || PyType_Ready(&ext_window_type) < 0 || ext_peer_view_init() < 0
        || ext_mem_reg_init() < 0) {
        return NULL;
    }
    m = PyModule_Create(&module_def);
    if (m == NULL) {
        return NULL;
    }
    if (module_add_type(m, "Buffer", &ext_buffer_type) < 0
        || module_add_type(m, "Comm", &ext_comm_type) < 0
        || module_add_type(m, "Work", &ext_work_type) < 0
        || module_add_type(m, "Block", &ext_block_type) < 0
        || module_add_type(m, "Plan", &ext_plan_type) < 0
        || module_add_type(m, "Window", &ext_window_type) < 0
        || PyModule_AddFunctions(m, ext_probe_methods) < 0
        || ext_queue_init(m) < 0 || ext_errors_init(m) < 0
        || module_add_names(m, "DTYPES", SHOAL_DTYPE_COUNT, shoal_dtype_name)
            < 0
        || module_add_names(m, "OPS", SHOAL_OP_COUNT, shoal_op_name) < 0
        || PyModule_AddIntConstant(m, "ANY_SOURCE", SHOAL_ANY_SOURCE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
