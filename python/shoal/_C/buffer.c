// Buffer: caller memory seen as (pointer, element count, shoal dtype,
// shape, strides), from any __dlpack__ exporter (torch, numpy, jax, ...)
// or, failing that, the buffer protocol (array.array, bytearray, memoryview).
//
// The buffer owns what it took from the exporter: the DLPack managed tensor
// (released through its deleter) or the Py_buffer view. Holding a Buffer
// therefore keeps the memory alive, which is what a Work needs until its
// operation completes.
#include "ext.h"

#include <stdlib.h>
#include <string.h>
#include <structmember.h>

#include "dlpack.h"

static PyObject *buffer_dlpack_kwargs; // {"max_version": (1, 0)}
static PyObject *buffer_no_args; // ()

static int
buffer_dtype_from_dl(ext_dl_dtype t, int *out)
{
    int bits = t.bits;

    if (t.lanes != 1) {
        return -1;
    }
    switch (t.code) {
        case EXT_DL_INT:
            *out = bits == 8 ? SHOAL_INT8
                : bits == 16 ? SHOAL_INT16
                : bits == 32 ? SHOAL_INT32
                : bits == 64 ? SHOAL_INT64
                             : -1;
            break;
        case EXT_DL_UINT:
            *out = bits == 8 ? SHOAL_UINT8 : -1;
            break;
        case EXT_DL_FLOAT:
            *out = bits == 16 ? SHOAL_FLOAT16
                : bits == 32  ? SHOAL_FLOAT32
                : bits == 64  ? SHOAL_FLOAT64
                              : -1;
            break;
        case EXT_DL_BFLOAT:
            *out = bits == 16 ? SHOAL_BFLOAT16 : -1;
            break;
        case EXT_DL_BOOL:
            *out = bits == 8 ? SHOAL_BOOL : -1;
            break;
        default:
            *out = -1;
    }
    return *out < 0 ? -1 : 0;
}

static const char *
buffer_dl_code_name(int code)
{
    static const char *names[]
        = { "int", "uint", "float", "opaque", "bfloat", "complex", "bool" };

    return code >= 0 && code < 7 ? names[code] : "unknown";
}

// struct-module format character (with its byte-order prefix) to a dtype.
static int
buffer_dtype_from_format(const char *fmt, Py_ssize_t itemsize, int *out)
{
    *out = -1;
    if (fmt == NULL) {
        fmt = "B";
    }
    if (*fmt == '@' || *fmt == '=' || *fmt == '<') {
        fmt++;
    }
    if (fmt[0] == '\0' || fmt[1] != '\0') {
        return -1; // big-endian, structs, repeat counts: not an array dtype
    }
    switch (fmt[0]) {
        case '?':
            *out = SHOAL_BOOL;
            break;
        case 'b':
            *out = SHOAL_INT8;
            break;
        case 'B':
        case 'c':
            *out = SHOAL_UINT8;
            break;
        case 'h':
        case 'i':
        case 'l':
        case 'q':
        case 'n':
            *out = itemsize == 2 ? SHOAL_INT16
                : itemsize == 4  ? SHOAL_INT32
                : itemsize == 8  ? SHOAL_INT64
                                 : -1;
            break;
        case 'e':
            *out = SHOAL_FLOAT16;
            break;
        case 'f':
            *out = SHOAL_FLOAT32;
            break;
        case 'd':
            *out = SHOAL_FLOAT64;
            break;
    }
    return *out >= 0 && shoal_dtype_size(*out) == (size_t) itemsize ? 0 : -1;
}

// Copies shape and strides, counts elements and decides contiguity.
static int
buffer_set_layout(
    ext_buffer *b, int ndim, const int64_t *shape, const int64_t *strides)
{
    int64_t expect = 1;

    b->ndim = ndim;
    if (ndim <= EXT_SMALL_DIMS) {
        b->shape   = b->small;
        b->strides = b->small + EXT_SMALL_DIMS;
    } else {
        b->shape   = calloc((size_t) ndim, sizeof(int64_t));
        b->strides = calloc((size_t) ndim, sizeof(int64_t));
    }
    if (b->shape == NULL || b->strides == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->count      = 1;
    b->contiguous = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        if (shape[i] < 0) {
            ext_invalid("buffer has a negative extent in dimension %d", i);
            return -1;
        }
        b->shape[i]   = shape[i];
        b->strides[i] = strides != NULL ? strides[i] : expect;
        // A dimension of extent 1 may carry any stride.
        if (shape[i] != 1 && b->strides[i] != expect) {
            b->contiguous = 0;
        }
        expect *= shape[i];
        b->count *= (size_t) shape[i];
    }
    if (b->count == 0) {
        b->contiguous = 1;
    }
    return 0;
}

// Takes a DLPack capsule's tensor into `b`: from here on `b` releases it.
static int
buffer_take_capsule(ext_buffer *b, PyObject *cap, ext_dl_tensor **out)
{
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        ext_dl_managed_v *m = PyCapsule_GetPointer(cap, "dltensor_versioned");

        if (PyCapsule_SetName(cap, "used_dltensor_versioned") < 0) {
            return -1;
        }
        b->managed   = m;
        b->versioned = 1;
        b->readonly  = (m->flags & EXT_DL_FLAG_READ_ONLY) != 0;
        *out         = &m->dl_tensor;
        return 0;
    }
    if (PyCapsule_IsValid(cap, "dltensor")) {
        ext_dl_managed *m = PyCapsule_GetPointer(cap, "dltensor");

        if (PyCapsule_SetName(cap, "used_dltensor") < 0) {
            return -1;
        }
        b->managed = m;
        *out       = &m->dl_tensor;
        return 0;
    }
    ext_invalid("__dlpack__() of %s returned no unused DLPack capsule",
        Py_TYPE(b->obj)->tp_name);
    return -1;
}

// Asks for a DLPack 1.0 capsule (which says whether memory is read-only),
// falling back to the older protocol for exporters that predate it.
static PyObject *
buffer_call_dlpack(PyObject *obj)
{
    PyObject *meth = PyObject_GetAttrString(obj, "__dlpack__");
    PyObject *cap  = NULL;

    if (meth == NULL) {
        return NULL;
    }
    cap = PyObject_Call(meth, buffer_no_args, buffer_dlpack_kwargs);
    if (cap == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        cap = PyObject_CallNoArgs(meth);
    }
    Py_DECREF(meth);
    return cap;
}

// Describes a DLPack capsule's tensor into `b` (which releases it).
static int
buffer_from_capsule(ext_buffer *b, PyObject *cap)
{
    ext_dl_tensor *t;

    if (buffer_take_capsule(b, cap, &t) < 0) {
        return -1;
    }
    if (t->device.device_type != EXT_DL_CPU
        && t->device.device_type != EXT_DL_CUDA_HOST) {
        ext_invalid("%s lives on DLPack device type %d: shoal moves CPU "
                    "memory only (copy it to the CPU first)",
            Py_TYPE(b->obj)->tp_name, (int) t->device.device_type);
        return -1;
    }
    if (buffer_dtype_from_dl(t->dtype, &b->dtype) < 0) {
        ext_invalid("%s has element type %s%d (x%d lanes), which shoal does "
                    "not support",
            Py_TYPE(b->obj)->tp_name, buffer_dl_code_name(t->dtype.code),
            (int) t->dtype.bits, (int) t->dtype.lanes);
        return -1;
    }
    b->itemsize = shoal_dtype_size(b->dtype);
    b->data     = (char *) t->data + t->byte_offset;
    return buffer_set_layout(b, t->ndim, t->shape, t->strides);
}

static int
buffer_from_dlpack(ext_buffer *b)
{
    PyObject *cap = buffer_call_dlpack(b->obj);
    int       rc;

    if (cap == NULL) {
        return -1;
    }
    rc = buffer_from_capsule(b, cap);
    Py_DECREF(cap);
    return rc;
}

// Asks for a read-only view even for writes, so that read-only memory gets
// the same message as through DLPack (ext_buffer_from checks it).
static int
buffer_from_protocol(ext_buffer *b)
{
    Py_buffer *v = &b->view;
    int64_t    shape[64], strides[64];

    if (PyObject_GetBuffer(b->obj, v, PyBUF_RECORDS_RO) < 0) {
        return -1;
    }
    b->has_view = 1;
    b->readonly = v->readonly;
    if (buffer_dtype_from_format(v->format, v->itemsize, &b->dtype) < 0) {
        ext_invalid("%s has element format '%s', which shoal does not "
                    "support",
            Py_TYPE(b->obj)->tp_name, v->format ? v->format : "B");
        return -1;
    }
    if (v->ndim > 64) {
        ext_invalid("buffer has %d dimensions (at most 64)", v->ndim);
        return -1;
    }
    for (int i = 0; i < v->ndim; i++) {
        shape[i] = v->shape != NULL ? v->shape[i] : v->len / v->itemsize;
        // Strides that are not whole elements can never be contiguous.
        strides[i] = v->strides == NULL        ? 0
            : v->strides[i] % v->itemsize == 0 ? v->strides[i] / v->itemsize
                                               : INT64_MIN;
    }
    b->itemsize = (size_t) v->itemsize;
    b->data     = v->buf;
    return buffer_set_layout(
        b, v->ndim, shape, v->strides != NULL ? strides : NULL);
}

ext_buffer *
ext_buffer_from(PyObject *obj, int writable)
{
    return ext_buffer_with(obj, writable, NULL);
}

ext_buffer *
ext_buffer_with(PyObject *obj, int writable, PyObject *capsule)
{
    ext_buffer *b = PyObject_New(ext_buffer, &ext_buffer_type);
    int         rc;

    if (b == NULL) {
        return NULL;
    }
    memset((char *) b + sizeof(PyObject), 0, sizeof(*b) - sizeof(PyObject));
    b->obj = Py_NewRef(obj);
    // A capsule of obj made by the caller: torch.utils.dlpack.to_dlpack is
    // a C call, torch's __dlpack__ method costs microseconds of Python.
    if (capsule != NULL && capsule != Py_None) {
        rc = buffer_from_capsule(b, capsule);
    } else if (PyObject_HasAttrString(obj, "__dlpack__")) {
        rc = buffer_from_dlpack(b);
    } else if (PyObject_CheckBuffer(obj)) {
        rc = buffer_from_protocol(b);
    } else {
        ext_invalid("%s is not an array: shoal takes objects with "
                    "__dlpack__ (torch tensors, numpy arrays) or the buffer "
                    "protocol",
            Py_TYPE(obj)->tp_name);
        rc = -1;
    }
    if (rc == 0 && writable && b->readonly) {
        ext_invalid("%s is read-only but the operation writes into it",
            Py_TYPE(obj)->tp_name);
        rc = -1;
    }
    if (rc < 0) {
        Py_DECREF(b);
        return NULL;
    }
    return b;
}

static void
buffer_dealloc(ext_buffer *b)
{
    if (b->managed != NULL && b->versioned) {
        ext_dl_managed_v *m = b->managed;

        if (m->deleter != NULL) {
            m->deleter(m);
        }
    } else if (b->managed != NULL) {
        ext_dl_managed *m = b->managed;

        if (m->deleter != NULL) {
            m->deleter(m);
        }
    }
    if (b->has_view) {
        PyBuffer_Release(&b->view);
    }
    if (b->shape != b->small) {
        free(b->shape);
        free(b->strides);
    }
    Py_XDECREF(b->obj);
    PyObject_Free(b);
}

static PyObject *
buffer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = { "obj", "writable", "capsule", NULL };
    PyObject    *obj, *capsule = NULL;
    int          writable = 0;

    (void) type;
    // Every blocking call on a tensor makes one, with three positional
    // arguments (shoal._arrays.direct): taken as they are, they skip
    // PyArg_ParseTupleAndKeywords, a sixth of such a call's instructions
    // in this extension.
    if (kwargs == NULL && PyTuple_GET_SIZE(args) == 3) {
        obj      = PyTuple_GET_ITEM(args, 0);
        writable = PyObject_IsTrue(PyTuple_GET_ITEM(args, 1));
        capsule  = PyTuple_GET_ITEM(args, 2);
        if (writable < 0) {
            return NULL;
        }
    } else if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|pO:Buffer", names,
                   &obj, &writable, &capsule)) {
        return NULL;
    }
    return (PyObject *) ext_buffer_with(obj, writable, capsule);
}

static PyObject *
buffer_int_tuple(const int64_t *values, int n)
{
    PyObject *t = PyTuple_New(n);

    for (int i = 0; t != NULL && i < n; i++) {
        PyObject *v = PyLong_FromLongLong(values[i]);

        if (v == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static PyObject *
buffer_get_shape(ext_buffer *b, void *closure)
{
    (void) closure;
    return buffer_int_tuple(b->shape, b->ndim);
}

static PyObject *
buffer_get_strides(ext_buffer *b, void *closure)
{
    (void) closure;
    return buffer_int_tuple(b->strides, b->ndim);
}

static PyObject *
buffer_get_dtype(ext_buffer *b, void *closure)
{
    (void) closure;
    return PyUnicode_FromString(shoal_dtype_name(b->dtype));
}

static PyObject *
buffer_get_nbytes(ext_buffer *b, void *closure)
{
    (void) closure;
    return PyLong_FromSize_t(b->count * b->itemsize);
}

static PyObject *
buffer_get_ptr(ext_buffer *b, void *closure)
{
    (void) closure;
    return PyLong_FromVoidPtr(b->data);
}

static PyGetSetDef buffer_getset[] = {
    { "shape", (getter) buffer_get_shape, NULL, "extent of each dimension",
        NULL },
    { "strides", (getter) buffer_get_strides, NULL,
        "step of each dimension, in elements", NULL },
    { "dtype", (getter) buffer_get_dtype, NULL, "element type name", NULL },
    { "nbytes", (getter) buffer_get_nbytes, NULL, "size in bytes", NULL },
    { "ptr", (getter) buffer_get_ptr, NULL, "address of the first element",
        NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyMemberDef buffer_members[] = {
    { "obj", T_OBJECT, offsetof(ext_buffer, obj), READONLY,
        "the exporting object" },
    { "count", T_PYSSIZET, offsetof(ext_buffer, count), READONLY,
        "number of elements" },
    { "itemsize", T_PYSSIZET, offsetof(ext_buffer, itemsize), READONLY,
        "bytes per element" },
    { "dtype_code", T_INT, offsetof(ext_buffer, dtype), READONLY,
        "shoal_dtype value" },
    { "ndim", T_INT, offsetof(ext_buffer, ndim), READONLY,
        "number of dimensions" },
    { "contiguous", T_BOOL, offsetof(ext_buffer, contiguous), READONLY,
        "C order without gaps" },
    { "readonly", T_BOOL, offsetof(ext_buffer, readonly), READONLY,
        "the exporter forbids writes" },
    { NULL, 0, 0, 0, NULL },
};

PyTypeObject ext_buffer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shoal._C.Buffer",
    .tp_basicsize                          = sizeof(ext_buffer),
    .tp_dealloc                            = (destructor) buffer_dealloc,
    .tp_flags                              = Py_TPFLAGS_DEFAULT,
    .tp_doc
    = "Buffer(obj, writable=False, capsule=None): a view of an array's memory "
      "through DLPack or the buffer protocol.",
    .tp_new     = buffer_new,
    .tp_getset  = buffer_getset,
    .tp_members = buffer_members,
};

int
ext_buffer_init(void)
{
    buffer_dlpack_kwargs = Py_BuildValue("{s:(ii)}", "max_version", 1, 0);
    buffer_no_args       = PyTuple_New(0);
    if (buffer_dlpack_kwargs == NULL || buffer_no_args == NULL) {
        return -1;
    }
    return PyType_Ready(&ext_buffer_type);
}

// A new reference to a contiguous Buffer viewing `obj`, or NULL.
ext_buffer *
ext_buffer_arg(PyObject *obj, int writable, const char *what)
{
    ext_buffer *b;

    if (Py_IS_TYPE(obj, &ext_buffer_type)) {
        b = (ext_buffer *) Py_NewRef(obj);
        if (writable && b->readonly) {
            Py_DECREF(b);
            return (ext_buffer *) ext_invalid(
                "%s is read-only but the operation writes into it", what);
        }
    } else if ((b = ext_buffer_from(obj, writable)) == NULL) {
        return NULL;
    }
    if (!b->contiguous) {
        Py_DECREF(b);
        return (ext_buffer *) ext_invalid("%s is not contiguous", what);
    }
    return b;
}
