// Block: memory from shoal_alloc (the communicator's shared heap, which
// peers read in place) owned by a Python object, so that arrays made over
// it (shoal.empty) free it when the last of them is collected.
//
// Arrays see a block through the buffer protocol (numpy.frombuffer) or a
// DLPack capsule (torch.from_dlpack); either way they hold a reference to
// the block, so the memory outlives every view of it.
//
// Lifetime against the communicator: a block holds a reference to its
// Comm, so the communicator object lives as long as the block. An explicit
// Comm.finalize() while blocks are alive ends the communicator for
// operations at once but leaves its shared memory mapped: comm.c hands the
// shoal_comm to ext_block_defer_destroy, and the last block to go destroys
// it. Arrays over blocks therefore never dangle, and freeing them after
// finalize is safe in any order. torch never frees tensors at interpreter
// exit, so alloc_exit.c ends such communicators then.
#include "ext.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

ext_block *ext_blocks; // every live block

int
ext_block_defer_destroy(ext_comm *comm, shoal_comm *handle)
{
    if (comm->blocks == 0) {
        return 0;
    }
    comm->retired = handle;
    return 1;
}

static PyObject *
block_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = { "comm", "nbytes", NULL };
    PyObject    *comm_obj;
    Py_ssize_t   nbytes;
    ext_comm    *comm;
    ext_block   *self;
    shoal_comm  *handle;
    void        *ptr;
    int          st;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!n:Block", names,
            &ext_comm_type, &comm_obj, &nbytes)) {
        return NULL;
    }
    comm = (ext_comm *) comm_obj;
    if (nbytes < 0) {
        return ext_invalid("Block: nbytes must be >= 0, not %zd", nbytes);
    }
    if (ext_comm_check_open(comm) < 0) {
        return NULL;
    }
    self = (ext_block *) type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    // Counted before the GIL is released, so that a finalize from another
    // thread meanwhile defers the destruction of `handle`.
    handle       = comm->comm;
    self->owner  = (ext_comm *) Py_NewRef(comm);
    self->nbytes = (size_t) nbytes;
    self->next   = ext_blocks;
    if (ext_blocks != NULL) {
        ext_blocks->prev = self;
    }
    ext_blocks = self;
    comm->blocks++;
    // Local, but it faults the pages in (large blocks take a while).
    Py_BEGIN_ALLOW_THREADS st = shoal_alloc(handle, (size_t) nbytes, &ptr);
    Py_END_ALLOW_THREADS if (st != SHOAL_OK)
    {
        ext_raise_status(st, handle);
        Py_DECREF(self); // may destroy a communicator finalized meanwhile
        return NULL;
    }
    self->ptr = ptr;
    return (PyObject *) self;
}

static void
block_unlink(ext_block *self)
{
    if (self->prev != NULL) {
        self->prev->next = self->next;
    } else {
        ext_blocks = self->next;
    }
    if (self->next != NULL) {
        self->next->prev = self->prev;
    }
    self->prev = self->next = NULL;
}

// Frees the memory; the last block of a finalized communicator destroys
// it (its pending work was drained by finalize, so this does not block).
// A detached block's pages stay mapped: its communicator is gone.
static void
block_release(ext_block *self)
{
    ext_comm   *comm = self->owner;
    shoal_comm *handle;

    if (comm == NULL) {
        return; // allocation failed before the block owned anything
    }
    block_unlink(self);
    if (!self->detached) {
        handle = comm->comm != NULL ? comm->comm : comm->retired;
        shoal_free(handle, self->ptr);
    }
    self->ptr = NULL;
    if (--comm->blocks == 0 && comm->retired != NULL) {
        handle        = comm->retired;
        comm->retired = NULL;
        Py_BEGIN_ALLOW_THREADS shoal_comm_destroy(handle);
        Py_END_ALLOW_THREADS
    }
    Py_CLEAR(self->owner);
}

static void
block_dealloc(ext_block *self)
{
    if (self->weakrefs != NULL) {
        PyObject_ClearWeakRefs((PyObject *) self);
    }
    block_release(self);
    Py_TYPE(self)->tp_free((PyObject *) self);
}

static int
block_getbuffer(ext_block *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *) self, self->ptr,
        (Py_ssize_t) self->nbytes, 0, flags);
}

// dlpack(shape, code, bits, offset=0): a "dltensor" capsule over the
// block, C-contiguous, starting `offset` bytes in.
static PyObject *
block_dlpack(ext_block *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = { "shape", "code", "bits", "offset", NULL };
    PyObject    *shape;
    int          code, bits;
    Py_ssize_t   offset = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oii|n:dlpack", names,
            &shape, &code, &bits, &offset)) {
        return NULL;
    }
    if (self->ptr == NULL) {
        return ext_invalid("dlpack: the block was released");
    }
    if (offset < 0) {
        return ext_invalid("dlpack: offset must be >= 0");
    }
    return ext_dlpack_export(self->ptr, self->nbytes, (size_t) offset, shape,
        code, bits, (PyObject *) self, "dlpack");
}

static PyObject *
block_get_nbytes(ext_block *self, void *closure)
{
    (void) closure;
    return PyLong_FromSize_t(self->nbytes);
}

static PyObject *
block_get_address(ext_block *self, void *closure)
{
    (void) closure;
    return PyLong_FromVoidPtr(self->ptr);
}

static PyObject *
block_get_comm(ext_block *self, void *closure)
{
    (void) closure;
    return Py_NewRef(self->owner != NULL ? (PyObject *) self->owner : Py_None);
}

static PyObject *
block_get_detached(ext_block *self, void *closure)
{
    (void) closure;
    return PyBool_FromLong(self->detached);
}

static PyObject *
block_live_on(PyObject *cls, PyObject *comm)
{
    (void) cls;
    if (!PyObject_TypeCheck(comm, &ext_comm_type)) {
        PyErr_SetString(PyExc_TypeError, "live_on: expected a shoal._C.Comm");
        return NULL;
    }
    return PyLong_FromSsize_t(((ext_comm *) comm)->blocks);
}

static PyBufferProcs block_as_buffer = {
    .bf_getbuffer = (getbufferproc) block_getbuffer,
};

static PyMethodDef block_methods[] = {
    { "dlpack", (PyCFunction) (void (*)(void)) block_dlpack,
        METH_VARARGS | METH_KEYWORDS,
        "dlpack(shape, code, bits, offset=0): a DLPack capsule "
        "(\"dltensor\") viewing the block as a C-contiguous array of "
        "DLPack type (code, bits); the array keeps the block alive." },
    { "live_on", (PyCFunction) block_live_on, METH_O | METH_CLASS,
        "live_on(comm): how many blocks of this Comm are alive." },
    { "release_at_exit", (PyCFunction) ext_block_release_at_exit,
        METH_NOARGS | METH_CLASS,
        "For atexit: finalize and destroy the communicators that live "
        "blocks keep alive, keeping the blocks' memory mapped." },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef block_getset[] = {
    { "nbytes", (getter) block_get_nbytes, NULL, "size in bytes", NULL },
    { "address", (getter) block_get_address, NULL,
        "address of the first byte (0 once released)", NULL },
    { "comm", (getter) block_get_comm, NULL,
        "the Comm whose shared heap holds the block", NULL },
    { "detached", (getter) block_get_detached, NULL,
        "its communicator was destroyed at exit; the memory stays", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject ext_block_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shoal._C.Block",
    .tp_basicsize                          = sizeof(ext_block),
    .tp_dealloc                            = (destructor) block_dealloc,
    .tp_as_buffer                          = &block_as_buffer,
    .tp_flags                              = Py_TPFLAGS_DEFAULT,
    .tp_weaklistoffset                     = offsetof(ext_block, weakrefs),
    .tp_doc     = "Block(comm, nbytes): memory from shoal_alloc on comm (read "
                  "by peers in place), freed when the block is collected. A "
                  "writable buffer; dlpack() views it as a typed array.",
    .tp_new     = block_new,
    .tp_methods = block_methods,
    .tp_getset  = block_getset,
};
