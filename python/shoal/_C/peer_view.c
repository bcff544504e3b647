// Views of a peer's window memory (Window.map_remote_tensor).
//
// A view is a tensor over a peer's registered memory, and torch lets a
// user keep slices and .view()s of it past tensor_deregister, where shoal
// cannot take them back: writes through them would land in the peer's
// memory, by then perhaps another buffer of the peer's. So each view gets
// a mapping of its own, a second mapping of the peer's pages (mremap with
// an old size of 0 makes one of a shared mapping), and when its window is
// deregistered or closed, or its communicator finalized, that mapping is
// replaced in place by private zeroed pages: whatever still holds a view
// reads zeros and writes nowhere, and shoal.Window warns how many views
// were left behind.
#include "ext.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct ext_peer_view {
    PyObject_HEAD PyObject *window; // strong: its owner
    ext_comm               *comm; // its window's (alive as long as it is)
    unsigned char          *map; // the view's own mapping, page-aligned
    size_t                  len;
    int                     retired; // private pages now
    struct ext_peer_view   *prev, *next;
} ext_peer_view;

static ext_peer_view *views; // every live view, under the GIL

static void
view_unlink(ext_peer_view *v)
{
    if (v->prev != NULL) {
        v->prev->next = v->next;
    } else if (views == v) {
        views = v->next;
    }
    if (v->next != NULL) {
        v->next->prev = v->prev;
    }
    v->prev = v->next = NULL;
}

static void
view_dealloc(ext_peer_view *v)
{
    view_unlink(v);
    if (v->map != NULL) {
        munmap(v->map, v->len);
    }
    Py_XDECREF(v->window);
    PyObject_Free(v);
}

static PyTypeObject peer_view_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shoal._C.PeerView",
    .tp_basicsize                          = sizeof(ext_peer_view),
    .tp_dealloc                            = (destructor) view_dealloc,
    .tp_flags                              = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The mapping under a tensor of map_remote_tensor.",
};

int
ext_peer_view_init(void)
{
    return PyType_Ready(&peer_view_type);
}

PyObject *
ext_peer_view_export(PyObject *window, ext_comm *comm, void *ptr, size_t bytes,
    PyObject *shape, int code, int bits)
{
    uintptr_t page   = (uintptr_t) sysconf(_SC_PAGESIZE);
    uintptr_t lo     = (uintptr_t) ptr / page * page;
    size_t    len    = ((uintptr_t) ptr + bytes - lo + page - 1) / page * page;
    ext_peer_view *v = PyObject_New(ext_peer_view, &peer_view_type);
    PyObject      *capsule;

    if (v == NULL) {
        return NULL;
    }
    v->window  = Py_NewRef(window);
    v->comm    = comm;
    v->len     = len > 0 ? len : page;
    v->retired = 0;
    v->map     = mremap((void *) lo, 0, v->len, MREMAP_MAYMOVE);
    v->prev    = NULL;
    v->next    = views;
    if (views != NULL) {
        views->prev = v;
    }
    views = v;
    if (v->map == MAP_FAILED) {
        v->map = NULL;
        Py_DECREF(v);
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    capsule = ext_dlpack_export(v->map, v->len, (uintptr_t) ptr - lo, shape,
        code, bits, (PyObject *) v, "peer_dlpack");
    Py_DECREF(v); // the capsule, then the tensor, holds it
    return capsule;
}

Py_ssize_t
ext_peer_views_retire(PyObject *window, ext_comm *comm)
{
    Py_ssize_t n = 0;

    for (ext_peer_view *v = views; v != NULL; v = v->next) {
        if (v->retired || (v->window != window && v->comm != comm)) {
            continue;
        }
        // In place, so every tensor over it stays valid memory.
        if (mmap(v->map, v->len, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
            == MAP_FAILED) {
            munmap(v->map, v->len); // then a fault, never the peer
            v->map = NULL;
        }
        v->retired = 1;
        n++;
    }
    return n;
}

Py_ssize_t
ext_peer_views_alive(PyObject *window)
{
    Py_ssize_t n = 0;

    for (ext_peer_view *v = views; v != NULL; v = v->next) {
        n += v->window == window;
    }
    return n;
}
