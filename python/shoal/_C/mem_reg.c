// MemReg: a shoal_mem_register registration as seen from Python
// (Comm.register_memory). It keeps the registered Buffer, and so the
// memory, alive until deregister() or its own end.
#include "ext.h"

typedef struct {
    PyObject_HEAD ext_comm *comm; // strong
    ext_buffer             *buffer; // strong; NULL once deregistered
    shoal_mem_reg          *reg;
} ext_mem_reg;

static void
mem_reg_release(ext_mem_reg *m)
{
    if (m->reg != NULL) {
        shoal_mem_deregister(m->reg);
        m->reg = NULL;
    }
    Py_CLEAR(m->buffer);
}

static PyObject *
mem_reg_deregister(ext_mem_reg *m, PyObject *unused)
{
    (void) unused;
    mem_reg_release(m);
    Py_RETURN_NONE;
}

static PyObject *
mem_reg_get_kind(ext_mem_reg *m, void *closure)
{
    static const char *names[] = { "plain", "shared", "pinned" };
    int                kind = m->reg != NULL ? shoal_mem_reg_kind(m->reg) : 0;

    (void) closure;
    if (m->reg == NULL) {
        Py_RETURN_NONE;
    }
    return PyUnicode_FromString(kind >= 0 && kind <= 2 ? names[kind] : "?");
}

static PyObject *
mem_reg_get_address(ext_mem_reg *m, void *closure)
{
    (void) closure;
    return PyLong_FromVoidPtr(m->buffer != NULL ? m->buffer->data : NULL);
}

static void
mem_reg_dealloc(ext_mem_reg *m)
{
    mem_reg_release(m);
    Py_XDECREF(m->comm);
    PyObject_Free(m);
}

static PyMethodDef mem_reg_methods[] = {
    { "deregister", (PyCFunction) mem_reg_deregister, METH_NOARGS,
        "releases the registration (local; idempotent)" },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef mem_reg_getset[] = {
    { "kind", (getter) mem_reg_get_kind, NULL,
        "'shared' (the shared heap: zero copy), 'pinned' (locked in RAM "
        "for peers' single copies) or 'plain'; None once deregistered",
        NULL },
    { "address", (getter) mem_reg_get_address, NULL,
        "address of the registered memory (0 once deregistered)", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject mem_reg_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shoal._C.MemReg",
    .tp_basicsize                          = sizeof(ext_mem_reg),
    .tp_dealloc                            = (destructor) mem_reg_dealloc,
    .tp_flags                              = Py_TPFLAGS_DEFAULT,
    .tp_doc     = "A memory registration (Comm.register_memory).",
    .tp_methods = mem_reg_methods,
    .tp_getset  = mem_reg_getset,
};

int
ext_mem_reg_init(void)
{
    return PyType_Ready(&mem_reg_type);
}

// Comm.register_memory(buffer) -> MemReg
PyObject *
ext_comm_register_memory(ext_comm *self, PyObject *arg)
{
    ext_buffer  *b;
    ext_mem_reg *m;
    int          st;

    if (ext_comm_check_open(self) < 0
        || (b = ext_buffer_arg(arg, 1, "register_memory: the tensor"))
            == NULL) {
        return NULL;
    }
    if ((m = PyObject_New(ext_mem_reg, &mem_reg_type)) == NULL) {
        Py_DECREF(b);
        return NULL;
    }
    m->comm   = (ext_comm *) Py_NewRef(self);
    m->buffer = b;
    m->reg    = NULL;
    st        = shoal_mem_register(
               self->comm, b->data, b->count * b->itemsize, &m->reg);
    if (st != SHOAL_OK) {
        Py_DECREF(m);
        return ext_raise_status(st, self->comm);
    }
    return (PyObject *) m;
}
