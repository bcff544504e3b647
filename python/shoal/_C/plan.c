// Plan: a compiled custom collective (shoal_plan) from Python, the engine
// under shoal.compile_op. Plan(comm, shape, dtype, reduction, inputs,
// outputs, error, tensors=None) compiles (collective): boxes are (offset,
// shape) pairs of one tensor of `shape`, or, with tensors a list of (name,
// ndim, shape or None), (tensor index, offset, shape) triples.
// local_tensors says what a run takes; start(inputs, outputs, error)
// begins a run over Buffers; wait() and test() finish it.
//
// The Python layer checks tensors with readable messages and passes its
// complaint as `error`, so that every rank fails together. The checks here
// are the memory-safety floor: a Buffer whose shape or element size does
// not match its local tensor is refused the same way, whatever Python
// passes.
#include "ext.h"

#include <stdlib.h>
#include <string.h>

// A local tensor as a run must pass it: its shape (its tensor's ndim).
typedef struct plan_local {
    int     ndim;
    int64_t shape[SHOAL_PLAN_MAX_DIMS];
} plan_local;

typedef struct ext_plan {
    PyObject_HEAD shoal_plan *plan; // NULL once its communicator finalized
    ext_comm                 *comm; // strong
    PyObject                 *keep; // the run's buffers, or NULL
    int                       dtype;
    int                       nlocal_in, nlocal_out;
    plan_local      *locals; // nlocal_in inputs, then nlocal_out outputs
    PyObject        *local_info; // local_tensors' value, made once
    int              busy; // a thread is in start() or wait() without the GIL
    struct ext_plan *prev, *next; // comm->plans
} ext_plan;

// What Plan() parses, kept until shoal_plan_create has read it.
typedef struct plan_parsed {
    int64_t            shape[SHOAL_PLAN_MAX_DIMS];
    int64_t           *in, *out; // packed boxes
    int               *in_tensor, *out_tensor;
    shoal_plan_tensor *tensors;
    int64_t           *tensor_shapes; // ntensors x SHOAL_PLAN_MAX_DIMS
} plan_parsed;

static void
plan_parsed_free(plan_parsed *pp)
{
    free(pp->in);
    free(pp->out);
    free(pp->in_tensor);
    free(pp->out_tensor);
    free(pp->tensors);
    free(pp->tensor_shapes);
}

static int
plan_int64s(PyObject *seq_obj, int64_t *out, int n, const char *what)
{
    PyObject *seq = PySequence_Fast(seq_obj, what);

    if (seq == NULL) {
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(seq) != n) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: %d values expected", what, n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        out[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

// One box: (offset, shape), or (tensor, offset, shape) with several
// tensors; its values go to *v (2 * its ndim), its tensor to *tensor.
static int
plan_box(PyObject *item, const shoal_plan_spec *spec, int64_t **v, int *tensor)
{
    int       named = spec->ntensors > 0, nd = spec->ndim;
    PyObject *off, *shape;

    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2 + named) {
        PyErr_SetString(PyExc_TypeError,
            named ? "a box is (tensor, offset, shape)"
                  : "a box is (offset, shape)");
        return -1;
    }
    if (named) {
        long k = PyLong_AsLong(PyTuple_GET_ITEM(item, 0));

        if (k == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (k < 0 || k >= spec->ntensors) {
            PyErr_Format(PyExc_ValueError, "box of tensor %ld of %d", k,
                spec->ntensors);
            return -1;
        }
        *tensor = (int) k;
        nd      = spec->tensors[k].ndim;
    }
    off   = PyTuple_GET_ITEM(item, named);
    shape = PyTuple_GET_ITEM(item, named + 1);
    if (plan_int64s(off, *v, nd, "box offset") < 0
        || plan_int64s(shape, *v + nd, nd, "box shape") < 0) {
        return -1;
    }
    *v += 2 * nd;
    return 0;
}

// boxes: a list of boxes into packed int64s and their tensors.
static int
plan_boxes(PyObject *list, const shoal_plan_spec *spec, int64_t **out,
    int **tensor, int *n)
{
    PyObject *seq = PySequence_Fast(list, "boxes must be a list");
    int64_t  *v;

    if (seq == NULL) {
        return -1;
    }
    *n   = (int) PySequence_Fast_GET_SIZE(seq);
    *out = calloc((size_t) *n * 2 * SHOAL_PLAN_MAX_DIMS + 1, sizeof(int64_t));
    *tensor = calloc((size_t) *n + 1, sizeof(int));
    if (*out == NULL || *tensor == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    v = *out;
    for (int i = 0; i < *n; i++) {
        if (plan_box(PySequence_Fast_GET_ITEM(seq, i), spec, &v, &(*tensor)[i])
            < 0) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

// tensors: a list of (name, ndim, shape or None).
static int
plan_tensors(PyObject *list, shoal_plan_spec *spec, plan_parsed *pp)
{
    PyObject *seq = PySequence_Fast(list, "tensors must be a list");
    int       n;

    if (seq == NULL) {
        return -1;
    }
    n           = (int) PySequence_Fast_GET_SIZE(seq);
    pp->tensors = calloc((size_t) n + 1, sizeof(*pp->tensors));
    pp->tensor_shapes
        = calloc(((size_t) n + 1) * SHOAL_PLAN_MAX_DIMS, sizeof(int64_t));
    if (pp->tensors == NULL || pp->tensor_shapes == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (int k = 0; k < n; k++) {
        PyObject          *item = PySequence_Fast_GET_ITEM(seq, k);
        shoal_plan_tensor *t    = &pp->tensors[k];
        int64_t *shape = pp->tensor_shapes + (size_t) k * SHOAL_PLAN_MAX_DIMS;

        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3
            || (t->name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(item, 0))) == NULL
            || (t->ndim = PyLong_AsLong(PyTuple_GET_ITEM(item, 1))) < 0
            || t->ndim > SHOAL_PLAN_MAX_DIMS) {
            Py_DECREF(seq);
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError,
                    "a tensor is (name, ndim 0..12, shape or None)");
            }
            return -1;
        }
        if (PyTuple_GET_ITEM(item, 2) != Py_None) {
            if (plan_int64s(
                    PyTuple_GET_ITEM(item, 2), shape, t->ndim, "tensor shape")
                < 0) {
                Py_DECREF(seq);
                return -1;
            }
            t->shape = shape;
        }
    }
    // The names point into the tuples' strings: the caller's list keeps
    // them alive until the plan is created.
    Py_DECREF(seq);
    spec->ntensors = n;
    spec->tensors  = pp->tensors;
    return 0;
}

static void
plan_link(ext_plan *p)
{
    p->next = (ext_plan *) p->comm->plans;
    if (p->next != NULL) {
        p->next->prev = p;
    }
    p->prev        = NULL;
    p->comm->plans = p;
}

static void
plan_unlink(ext_plan *p)
{
    if (p->prev != NULL) {
        p->prev->next = p->next;
    } else if (p->comm != NULL && p->comm->plans == p) {
        p->comm->plans = p->next;
    }
    if (p->next != NULL) {
        p->next->prev = p->prev;
    }
    p->prev = p->next = NULL;
}

// The local tensors the native plan takes, and local_tensors' value:
// ((name, shape), ...) for the inputs, then for the outputs.
static int
plan_keep_locals(ext_plan *p)
{
    PyObject *sides[2] = { NULL, NULL };
    int       n;

    shoal_plan_local_tensors(p->plan, &p->nlocal_in, &p->nlocal_out);
    n         = p->nlocal_in + p->nlocal_out;
    p->locals = calloc((size_t) n + 1, sizeof(*p->locals));
    sides[0]  = PyTuple_New(p->nlocal_in);
    sides[1]  = PyTuple_New(p->nlocal_out);
    if (p->locals == NULL || sides[0] == NULL || sides[1] == NULL) {
        Py_XDECREF(sides[0]);
        Py_XDECREF(sides[1]);
        return p->locals == NULL ? (PyErr_NoMemory(), -1) : -1;
    }
    for (int i = 0; i < n; i++) {
        int         out = i >= p->nlocal_in, k = out ? i - p->nlocal_in : i;
        plan_local *l = &p->locals[i];
        const char *name;
        PyObject   *shape, *pair;

        shoal_plan_local_tensor(p->plan, out, k, &l->ndim, l->shape, &name);
        shape = PyTuple_New(l->ndim);
        for (int d = 0; shape != NULL && d < l->ndim; d++) {
            PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(l->shape[d]));
        }
        pair = shape != NULL ? Py_BuildValue("(sN)", name, shape) : NULL;
        if (pair == NULL) {
            Py_DECREF(sides[0]);
            Py_DECREF(sides[1]);
            return -1;
        }
        PyTuple_SET_ITEM(sides[out], k, pair);
    }
    p->local_info = Py_BuildValue("(NN)", sides[0], sides[1]);
    return p->local_info != NULL ? 0 : -1;
}

// This rank's complaint from the pending Python exception (cleared), to
// send to every rank instead of leaving the others waiting.
static void
plan_take_error(char *buf, size_t len)
{
    PyObject   *type, *value, *tb, *text;
    const char *t = NULL;

    PyErr_Fetch(&type, &value, &tb);
    text = value != NULL ? PyObject_Str(value) : NULL;
    t    = text != NULL ? PyUnicode_AsUTF8(text) : NULL;
    snprintf(buf, len, "%s", t != NULL ? t : "unusable arguments");
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
}

// Parses shape, tensors and boxes into spec; on a bad value, empties the
// spec and sets spec->error (in err) instead of raising.
static void
plan_parse_spec(shoal_plan_spec *spec, PyObject *shape_obj,
    PyObject *tensors_obj, PyObject *in_obj, PyObject *out_obj,
    plan_parsed *pp, char *err, size_t len)
{
    if (tensors_obj != Py_None) {
        if (plan_tensors(tensors_obj, spec, pp) < 0) {
            plan_take_error(err, len);
        }
    } else if ((spec->ndim = (int) PyObject_Length(shape_obj)) < 0
        || spec->ndim > SHOAL_PLAN_MAX_DIMS) {
        PyErr_Clear();
        snprintf(err, len, "the shape must have 0 to %d dimensions",
            SHOAL_PLAN_MAX_DIMS);
    } else if (plan_int64s(shape_obj, pp->shape, spec->ndim, "shape") < 0) {
        plan_take_error(err, len);
    }
    if (err[0] == '\0'
        && (plan_boxes(in_obj, spec, &pp->in, &pp->in_tensor, &spec->ninputs)
                < 0
            || plan_boxes(
                   out_obj, spec, &pp->out, &pp->out_tensor, &spec->noutputs)
                < 0)) {
        plan_take_error(err, len);
    }
    if (err[0] != '\0') {
        spec->ndim     = 0;
        spec->ninputs  = 0;
        spec->noutputs = 0;
        spec->ntensors = 0;
        spec->error    = err;
    }
    spec->shape         = pp->shape;
    spec->inputs        = pp->in;
    spec->outputs       = pp->out;
    spec->input_tensor  = pp->in_tensor;
    spec->output_tensor = pp->out_tensor;
}

static PyObject *
plan_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = { "comm", "shape", "dtype", "reduction", "inputs",
        "outputs", "error", "tensors", NULL };
    ext_comm    *comm;
    PyObject    *shape_obj, *in_obj, *out_obj, *tensors_obj = Py_None;
    const char  *error    = NULL;
    char         err[512] = "";
    plan_parsed  pp       = { 0 };
    shoal_plan_spec spec  = SHOAL_PLAN_SPEC_INIT;
    ext_plan       *p;
    int             st;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!OiiOOz|O:Plan", names,
            &ext_comm_type, &comm, &shape_obj, &spec.dtype, &spec.reduction,
            &in_obj, &out_obj, &error, &tensors_obj)
        || ext_comm_check_open(comm) < 0) {
        return NULL;
    }
    if (error != NULL) {
        snprintf(err, sizeof(err), "%s", error);
    }
    plan_parse_spec(
        &spec, shape_obj, tensors_obj, in_obj, out_obj, &pp, err, sizeof(err));
    p = (ext_plan *) type->tp_alloc(type, 0);
    if (p == NULL) {
        PyErr_Clear();
        spec.error = "out of memory";
    } else {
        p->dtype = spec.dtype;
    }
    // Every rank takes part in the creation, whatever went wrong here.
    Py_BEGIN_ALLOW_THREADS st
        = shoal_plan_create(comm->comm, &spec, p != NULL ? &p->plan : NULL);
    Py_END_ALLOW_THREADS plan_parsed_free(&pp);
    if (st != SHOAL_OK || p == NULL) {
        ext_abort_if_asked(comm, st, shoal_last_error());
        Py_XDECREF(p);
        return p == NULL && st == SHOAL_OK ? PyErr_NoMemory()
                                           : ext_raise_status(st, comm->comm);
    }
    Py_INCREF(comm);
    p->comm = comm;
    plan_link(p);
    if (plan_keep_locals(p) < 0) {
        Py_DECREF(p);
        return NULL;
    }
    return (PyObject *) p;
}

// ---- runs
// -------------------------------------------------------------------

// Memory safety: each Buffer must have its local tensor's shape and the
// dtype's element size. Writes the complaint into err (empty when fine).
static void
plan_check_buffer(const ext_plan *p, const ext_buffer *b, int index,
    const char *what, int i, char *err, size_t len)
{
    const plan_local *l = &p->locals[index];

    if (b->itemsize != shoal_dtype_size(p->dtype)) {
        snprintf(err, len,
            "%s[%d] has %zu-byte elements, the op's dtype %s "
            "has %zu",
            what, i, b->itemsize, shoal_dtype_name(p->dtype),
            shoal_dtype_size(p->dtype));
        return;
    }
    if (b->ndim != l->ndim
        || memcmp(b->shape, l->shape, sizeof(int64_t) * (size_t) l->ndim)
            != 0) {
        snprintf(
            err, len, "%s[%d] does not have the shape of its tensor", what, i);
    }
}

// Views the Buffers of `tuple` (a tuple the caller keeps alive), checking
// each; a non-Buffer or a mismatch becomes this rank's complaint in err.
static int
plan_buffers(ext_plan *p, PyObject *tuple, int n_want, int base,
    const char *what, int written, ext_buffer ***out, int *n, char *err,
    size_t len)
{
    *n   = (int) PyTuple_GET_SIZE(tuple);
    *out = calloc((size_t) *n + 1, sizeof(ext_buffer *));
    if (*out == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < *n; i++) {
        PyObject *o = PyTuple_GET_ITEM(tuple, i);

        if (!PyObject_TypeCheck(o, &ext_buffer_type)) {
            if (err[0] == '\0') {
                snprintf(err, len, "%s[%d] is not a shoal Buffer", what, i);
            }
            *n = 0; // nothing of this list is used
            return 0;
        }
        (*out)[i] = (ext_buffer *) o;
        if (err[0] == '\0' && *n == n_want) {
            plan_check_buffer(p, (*out)[i], base + i, what, i, err, len);
        }
        if (err[0] == '\0' && written && (*out)[i]->readonly) {
            snprintf(err, len, "outputs[%d] is read-only", i);
        }
    }
    return 0;
}

static PyObject *
plan_finish(ext_plan *p, int st)
{
    Py_CLEAR(p->keep);
    if (st < 0) {
        ext_abort_if_asked(p->comm, st, shoal_last_error());
        return ext_raise_status(st, p->comm->comm);
    }
    Py_RETURN_NONE;
}

static int
plan_check_live(ext_plan *p)
{
    if (p->plan == NULL) {
        PyErr_SetString(
            ext_exc_base, "compile_op: the op's communicator was finalized");
        return -1;
    }
    return 0;
}

static int
plan_enter(ext_plan *p)
{
    if (plan_check_live(p) < 0) {
        return -1;
    }
    if (p->busy) {
        PyErr_SetString(PyExc_RuntimeError,
            "compile_op: another thread is running or waiting for this op");
        return -1;
    }
    return 0;
}

typedef struct plan_args {
    ext_buffer    **ins, **outs;
    int             nin, nout;
    const void    **in_ptr;
    void          **out_ptr;
    const int64_t **in_str, **out_str;
} plan_args;

static void
plan_args_free(plan_args *a)
{
    free(a->ins);
    free(a->outs);
    free(a->in_ptr);
    free(a->in_str);
    free(a->out_ptr);
    free(a->out_str);
}

static int
plan_args_fill(plan_args *a)
{
    a->in_ptr  = calloc((size_t) a->nin + 1, sizeof(void *));
    a->in_str  = calloc((size_t) a->nin + 1, sizeof(int64_t *));
    a->out_ptr = calloc((size_t) a->nout + 1, sizeof(void *));
    a->out_str = calloc((size_t) a->nout + 1, sizeof(int64_t *));
    if (a->in_ptr == NULL || a->in_str == NULL || a->out_ptr == NULL
        || a->out_str == NULL) {
        return -1;
    }
    for (int i = 0; i < a->nin; i++) {
        a->in_ptr[i] = a->ins[i]->data;
        a->in_str[i] = a->ins[i]->strides;
    }
    for (int o = 0; o < a->nout; o++) {
        a->out_ptr[o] = a->outs[o]->data;
        a->out_str[o] = a->outs[o]->strides;
    }
    return 0;
}

static PyObject *
plan_start(ext_plan *p, PyObject *args, PyObject *kwargs)
{
    static char *names[] = { "inputs", "outputs", "error", NULL };
    PyObject    *in_obj, *out_obj, *in_t = NULL, *out_t = NULL, *keep = NULL;
    const char  *error    = NULL;
    char         err[512] = "";
    plan_args    a        = { 0 };
    int          st;

    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "OO|z:start", names, &in_obj, &out_obj, &error)
        || plan_enter(p) < 0) {
        return NULL;
    }
    if (ext_comm_raise_dropped(p->comm) < 0) { // an earlier run's failure
        return NULL;
    }
    if (error != NULL) {
        snprintf(err, sizeof(err), "%s", error);
    }
    // Tuples the run keeps: the caller's lists may change or go.
    in_t  = PySequence_Tuple(in_obj);
    out_t = in_t != NULL ? PySequence_Tuple(out_obj) : NULL;
    keep  = out_t != NULL ? PyTuple_Pack(2, in_t, out_t) : NULL;
    if (keep == NULL
        || plan_buffers(p, in_t, p->nlocal_in, 0, "inputs", 0, &a.ins, &a.nin,
               err, sizeof(err))
            < 0
        || plan_buffers(p, out_t, p->nlocal_out, p->nlocal_in, "outputs", 1,
               &a.outs, &a.nout, err, sizeof(err))
            < 0
        || plan_args_fill(&a) < 0) {
        // This rank cannot even describe its tensors: it still joins the
        // start, with its complaint, so that the others do not wait.
        PyErr_Clear();
        plan_args_free(&a);
        memset(&a, 0, sizeof(a));
        snprintf(err, sizeof(err),
            "out of memory, or inputs or outputs "
            "that are not sequences");
    }
    p->busy                        = 1;
    Py_BEGIN_ALLOW_THREADS st      = shoal_plan_start(p->plan, a.nin, a.in_ptr,
             a.in_str, a.nout, a.out_ptr, a.out_str, err[0] ? err : NULL);
    Py_END_ALLOW_THREADS   p->busy = 0;
    plan_args_free(&a);
    Py_XDECREF(in_t);
    Py_XDECREF(out_t);
    if (st < 0) {
        Py_XDECREF(keep);
        return plan_finish(p, st);
    }
    // Only now: the start waited for the previous run, whose buffers the
    // old `keep` held.
    Py_XSETREF(p->keep, keep);
    Py_RETURN_NONE;
}

static PyObject *
plan_wait(ext_plan *p, PyObject *unused)
{
    int st;

    (void) unused;
    if (plan_enter(p) < 0) {
        return NULL;
    }
    p->busy                        = 1;
    Py_BEGIN_ALLOW_THREADS st      = shoal_plan_wait(p->plan);
    Py_END_ALLOW_THREADS   p->busy = 0;
    return plan_finish(p, st);
}

static PyObject *
plan_test(ext_plan *p, PyObject *unused)
{
    int       st;
    PyObject *r;

    (void) unused;
    if (plan_enter(p) < 0) {
        return NULL;
    }
    st = shoal_plan_test(p->plan);
    if (st == SHOAL_INPROGRESS) {
        Py_RETURN_FALSE;
    }
    r = plan_finish(p, st);
    if (r == NULL) {
        return NULL;
    }
    Py_DECREF(r);
    Py_RETURN_TRUE;
}

static PyObject *
plan_format(ext_plan *p, PyObject *unused)
{
    size_t    n;
    char     *text;
    PyObject *s;

    (void) unused;
    if (plan_check_live(p) < 0) {
        return NULL;
    }
    n    = shoal_plan_format(p->plan, NULL, 0);
    text = malloc(n + 1);
    if (text == NULL) {
        return PyErr_NoMemory();
    }
    shoal_plan_format(p->plan, text, n + 1);
    s = PyUnicode_FromString(text);
    free(text);
    return s;
}

static PyObject *
plan_get_bytes(ext_plan *p, void *closure)
{
    size_t sent = 0, received = 0;

    (void) closure;
    if (plan_check_live(p) < 0) {
        return NULL;
    }
    shoal_plan_bytes(p->plan, &sent, &received);
    return Py_BuildValue("(nn)", (Py_ssize_t) sent, (Py_ssize_t) received);
}

// Releases the native plan (waiting for its run); used by dealloc and by
// the communicator's finalize.
static void
plan_release(ext_plan *p)
{
    shoal_plan *native = p->plan;

    p->plan = NULL;
    if (native != NULL) {
        Py_BEGIN_ALLOW_THREADS shoal_plan_free(native);
        Py_END_ALLOW_THREADS
    }
    Py_CLEAR(p->keep);
}

int
ext_plan_drain(ext_comm *comm)
{
    while (comm->plans != NULL) {
        ext_plan *p = comm->plans;

        if (p->busy) {
            PyErr_SetString(PyExc_RuntimeError,
                "finalize: another thread is running or waiting for a "
                "compile_op of this communicator");
            return -1;
        }
        Py_INCREF(p); // releasing may drop the last other reference
        plan_release(p);
        plan_unlink(p);
        Py_DECREF(p);
    }
    return 0;
}

static void
plan_dealloc(ext_plan *p)
{
    plan_release(p);
    plan_unlink(p);
    Py_CLEAR(p->comm);
    Py_CLEAR(p->local_info);
    free(p->locals);
    Py_TYPE(p)->tp_free((PyObject *) p);
}

static PyMethodDef plan_methods[] = {
    { "start", (PyCFunction) (void (*)(void)) plan_start,
        METH_VARARGS | METH_KEYWORDS,
        "start(inputs, outputs, error=None): begins a run over lists of "
        "Buffers (collective: every rank starts its runs in the same "
        "order)." },
    { "wait", (PyCFunction) plan_wait, METH_NOARGS,
        "Finishes the run in flight; raises its error." },
    { "test", (PyCFunction) plan_test, METH_NOARGS,
        "False while the run's transfers are under way; otherwise finishes "
        "it as wait() does and returns True." },
    { "format", (PyCFunction) plan_format, METH_NOARGS,
        "This rank's part of the plan, as text." },
    { NULL, NULL, 0, NULL },
};

static PyObject *
plan_get_comm(ext_plan *p, void *closure)
{
    (void) closure;
    return Py_NewRef(p->comm);
}

static PyObject *
plan_get_local_tensors(ext_plan *p, void *closure)
{
    (void) closure;
    Py_INCREF(p->local_info);
    return p->local_info;
}

static PyGetSetDef plan_getset[] = {
    { "bytes", (getter) plan_get_bytes, NULL,
        "(sent, received): bytes this rank moves per run", NULL },
    { "comm", (getter) plan_get_comm, NULL, "the communicator it runs on",
        NULL },
    { "local_tensors", (getter) plan_get_local_tensors, NULL,
        "(inputs, outputs): the local tensors a run takes, each a "
        "(tensor name, shape) pair (name '' with one tensor)",
        NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject ext_plan_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shoal._C.Plan",
    .tp_basicsize                          = sizeof(ext_plan),
    .tp_dealloc                            = (destructor) plan_dealloc,
    .tp_flags                              = Py_TPFLAGS_DEFAULT,
    .tp_doc     = "A compiled custom collective (see shoal.compile_op).",
    .tp_new     = plan_new,
    .tp_methods = plan_methods,
    .tp_getset  = plan_getset,
};
