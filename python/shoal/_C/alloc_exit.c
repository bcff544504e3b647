// At interpreter exit: the communicators that Blocks keep alive.
//
// torch does not free tensors when the interpreter exits, so the Blocks
// under shoal.empty tensors, and the communicators those Blocks keep alive,
// would never be destroyed: peers still running would see this process's
// connections close without a goodbye and report it as dead. shoal.memory
// registers ext_block_release_at_exit with atexit instead. For each such
// communicator it runs finalize (which waits for this rank's work), moves
// the pages of its live Blocks out of the communicator's mapping (mremap),
// destroys the communicator (goodbyes sent, segment unmapped), then moves
// the pages back to the same addresses. Arrays that later exit code still
// reads stay valid; the pages stay mapped until the process ends.
#include "ext.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct {
    uintptr_t lo, hi; // page-aligned
    void     *moved; // where the pages are while the segment goes away
} exit_span;

static int
exit_span_cmp(const void *a, const void *b)
{
    uintptr_t x = ((const exit_span *) a)->lo, y = ((const exit_span *) b)->lo;

    return x < y ? -1 : x > y;
}

// Page-aligned spans covering `comm`'s live Blocks, sorted and merged
// (neighbouring Blocks may share a page). NULL with *n == 0: none.
static exit_span *
exit_spans(ext_comm *comm, size_t *n)
{
    uintptr_t  page  = (uintptr_t) sysconf(_SC_PAGESIZE);
    size_t     count = 0, k = 0;
    exit_span *s;

    *n = 0;
    for (ext_block *b = ext_blocks; b != NULL; b = b->next) {
        count += b->owner == comm && !b->detached && b->ptr != NULL;
    }
    s = count > 0 ? calloc(count, sizeof(*s)) : NULL;
    if (s == NULL) {
        return NULL;
    }
    for (ext_block *b = ext_blocks; b != NULL; b = b->next) {
        if (b->owner == comm && !b->detached && b->ptr != NULL) {
            uintptr_t p = (uintptr_t) b->ptr;
            uintptr_t e = p + (b->nbytes > 0 ? b->nbytes : 1);

            s[k].lo = p / page * page;
            s[k].hi = (e + page - 1) / page * page;
            k++;
        }
    }
    qsort(s, count, sizeof(*s), exit_span_cmp);
    k = 0;
    for (size_t i = 1; i < count; i++) {
        if (s[i].lo <= s[k].hi) {
            s[k].hi = s[i].hi > s[k].hi ? s[i].hi : s[k].hi;
        } else {
            s[++k] = s[i];
        }
    }
    *n = k + 1;
    return s;
}

// mremap(2) itself, past libc: libraries that hook the process's memory
// calls (UCX's, loaded with the UCX transport) replace mremap, and UCX
// 1.13's replacement drops the fifth argument MREMAP_FIXED needs.
static void *
exit_mremap_fixed(void *from, size_t len, void *to)
{
    return (void *) syscall(
        SYS_mremap, from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
}

// Moves a span's pages to a fresh place. mremap moves a mapping only to
// a given destination (same size: it would stay put otherwise), so one is
// reserved first. Returns 0 or -1.
static int
exit_move_out(exit_span *s)
{
    size_t len = s->hi - s->lo;
    void  *to = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (to == MAP_FAILED) {
        return -1;
    }
    if (exit_mremap_fixed((void *) s->lo, len, to) == MAP_FAILED) {
        munmap(to, len);
        return -1;
    }
    s->moved = to;
    return 0;
}

// Moves every moved span back to its address. Returns 0, or -1 when one
// could not be (its arrays then point at unmapped memory).
static int
exit_restore(exit_span *s, size_t n)
{
    int rc = 0;

    for (size_t i = 0; i < n; i++) {
        size_t len = s[i].hi - s[i].lo;

        if (s[i].moved != NULL
            && exit_mremap_fixed(s[i].moved, len, (void *) s[i].lo)
                == MAP_FAILED) {
            rc = -1;
        }
    }
    return rc;
}

static void
exit_destroy(shoal_comm *handle)
{
    Py_BEGIN_ALLOW_THREADS shoal_comm_destroy(handle);
    Py_END_ALLOW_THREADS
}

// Destroys the finalized `comm` now, keeping its Blocks' memory. Returns
// 0, or -1 when the pages could not be moved (the communicator then stays
// as it was: destroyed by its last Block, if ever).
static int
exit_detach(ext_comm *comm)
{
    size_t      n;
    exit_span  *s = exit_spans(comm, &n);
    shoal_comm *handle;

    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (exit_move_out(&s[i]) < 0) {
            exit_restore(s, i);
            free(s);
            return -1;
        }
    }
    handle        = comm->retired;
    comm->retired = NULL;
    exit_destroy(handle); // unmaps the segment: holes where the spans were
    for (ext_block *b = ext_blocks; b != NULL; b = b->next) {
        b->detached |= b->owner == comm;
    }
    if (exit_restore(s, n) < 0) {
        fprintf(stderr,
            "shoal: at exit, shared memory of communicator arrays could not "
            "be kept mapped; arrays over it are no longer valid\n");
    }
    free(s);
    return 0;
}

// The communicators that own a live, attached Block (new references).
static PyObject *
exit_owners(void)
{
    PyObject *list = PyList_New(0);

    for (ext_block *b = ext_blocks; list != NULL && b != NULL; b = b->next) {
        int has;

        if (b->detached) {
            continue;
        }
        has = PySequence_Contains(list, (PyObject *) b->owner);
        if (has < 0 || (!has && PyList_Append(list, (PyObject *) b->owner))) {
            Py_CLEAR(list);
        }
    }
    return list;
}

PyObject *
ext_block_release_at_exit(PyObject *cls, PyObject *unused)
{
    PyObject *owners = exit_owners();

    (void) cls;
    (void) unused;
    if (owners == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(owners); i++) {
        ext_comm *comm = (ext_comm *) PyList_GET_ITEM(owners, i);

        if (comm->comm != NULL) {
            // Waits for its work; finalize may free the last Blocks (then
            // the communicator is destroyed at once) or defer.
            PyObject *r
                = PyObject_CallMethod((PyObject *) comm, "finalize", NULL);

            if (r == NULL) {
                PyErr_WriteUnraisable((PyObject *) comm);
                continue; // another thread waits on its work: leave it
            }
            Py_DECREF(r);
        }
        if (comm->retired != NULL) {
            exit_detach(comm);
        }
    }
    Py_DECREF(owners);
    Py_RETURN_NONE;
}
