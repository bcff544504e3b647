// DLPack export of memory a Python object owns (a Block's, a peer's
// registered window memory): the "dltensor" capsule torch.from_dlpack
// takes, keeping the owner alive until the consumer's tensor dies.
#include "ext.h"

#include <stdint.h>

#include "dlpack.h"

// A capsule's payload: the managed tensor and its shape.
typedef struct {
    ext_dl_managed managed;
    int64_t        shape[]; // ndim entries
} dl_export;

// The consumer (torch) calls this when its tensor's storage dies, from
// whatever thread drops it last, with or without the GIL.
static void
export_deleter(ext_dl_managed *managed)
{
    PyGILState_STATE gil;

    if (!Py_IsInitialized()) {
        return; // the interpreter is gone; the process is ending
    }
    gil = PyGILState_Ensure();
    Py_XDECREF((PyObject *) managed->manager_ctx);
    PyMem_RawFree(managed);
    PyGILState_Release(gil);
}

// A capsule nobody consumed still owns its tensor.
static void
capsule_destructor(PyObject *capsule)
{
    ext_dl_managed *managed;

    if (!PyCapsule_IsValid(capsule, "dltensor")) {
        return; // renamed "used_dltensor": the consumer owns it now
    }
    managed = PyCapsule_GetPointer(capsule, "dltensor");
    if (managed != NULL && managed->deleter != NULL) {
        managed->deleter(managed);
    }
}

// Reads the shape sequence into `shape`; returns the element count or -1.
static int64_t
parse_shape(PyObject *seq, int ndim, int64_t *shape, const char *what)
{
    int64_t count = 1;

    for (int i = 0; i < ndim; i++) {
        long long d = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));

        if (d == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (d < 0) {
            ext_invalid("%s: shape[%d] = %lld is negative", what, i, d);
            return -1;
        }
        shape[i] = d;
        if (d != 0 && count > INT64_MAX / d) {
            ext_invalid("%s: shape is too large", what);
            return -1;
        }
        count *= d;
    }
    return count;
}

PyObject *
ext_dlpack_export(unsigned char *base, size_t nbytes, size_t offset,
    PyObject *shape_obj, int code, int bits, PyObject *owner, const char *what)
{
    PyObject  *seq, *capsule;
    dl_export *ex;
    int64_t    count;
    int        ndim;

    if (bits <= 0 || bits % 8 != 0 || bits > 128 || code < 0 || code > 255) {
        return ext_invalid(
            "%s: bad dtype (code %d, %d bits)", what, code, bits);
    }
    seq = PySequence_Fast(shape_obj, "shape must be a sequence");
    if (seq == NULL) {
        return NULL;
    }
    ndim = (int) PySequence_Fast_GET_SIZE(seq);
    ex   = PyMem_RawCalloc(1, sizeof(*ex) + (size_t) ndim * sizeof(int64_t));
    if (ex == NULL) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    count = parse_shape(seq, ndim, ex->shape, what);
    Py_DECREF(seq);
    if (count >= 0
        && (offset > nbytes
            || (uint64_t) count > (nbytes - offset) / (uint64_t) (bits / 8))) {
        ext_invalid("%s: %lld elements of %d bits at offset %zu do not fit "
                    "%zu bytes",
            what, (long long) count, bits, offset, nbytes);
        count = -1;
    }
    if (count < 0) {
        PyMem_RawFree(ex);
        return NULL;
    }
    ex->managed.dl_tensor = (ext_dl_tensor) {
        .data   = base + offset,
        .device = { .device_type = EXT_DL_CPU, .device_id = 0 },
        .ndim   = ndim,
        .dtype
        = { .code = (uint8_t) code, .bits = (uint8_t) bits, .lanes = 1 },
        .shape       = ex->shape,
        .strides     = NULL,
        .byte_offset = 0,
    };
    ex->managed.manager_ctx = Py_NewRef(owner);
    ex->managed.deleter     = export_deleter;
    capsule = PyCapsule_New(&ex->managed, "dltensor", capsule_destructor);
    if (capsule == NULL) {
        Py_DECREF(owner);
        PyMem_RawFree(ex);
    }
    return capsule;
}
