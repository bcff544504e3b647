// Comm's operations: each issues the non-blocking shoal call and returns a
// Work that keeps its buffers alive (Python waits on it at once for
// async_op=False), or, in its blocking form (the "_now" methods of the
// common collectives), waits for it here without a Work.
//
// Buffer arguments are Buffers or anything Buffer() accepts; they must be
// contiguous (the Python layer copies strided arrays in and out). Sizes are
// checked here against the buffers so that no call can make the library
// read or write past one, whatever the caller passes; the Python layer
// checks them first with messages in the caller's terms (shapes, lists).
#include "ext.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// As ext_buffer_arg, but None gives a NULL buffer and no error (*out = NULL).
static int
ops_optional(PyObject *obj, int writable, const char *what, ext_buffer **out)
{
    *out = NULL;
    if (obj == Py_None) {
        return 0;
    }
    *out = ext_buffer_arg(obj, writable, what);
    return *out != NULL ? 0 : -1;
}

// The checks of a call's buffers, made here once for every caller (the
// Python methods check only what this layer never sees: their lists).
// `op` is the method the caller called ("all_gather_single").
static int
ops_same_dtype(const char *op, const ext_buffer *a, const ext_buffer *b)
{
    if (a->dtype != b->dtype) {
        ext_invalid("%s: input is %s but output is %s: dtypes differ", op,
            shoal_dtype_name(a->dtype), shoal_dtype_name(b->dtype));
        return -1;
    }
    return 0;
}

// `big` must hold exactly n times the elements of `small`.
static int
ops_times(const char *op, const ext_buffer *big, const char *big_name,
    const ext_buffer *small, const char *small_name, size_t n)
{
    if (big->count == small->count * n) {
        return 0;
    }
    if (n == 1) {
        ext_invalid("%s: %s has %zu elements, expected %zu (as many as %s)",
            op, big_name, big->count, small->count, small_name);
    } else {
        ext_invalid("%s: %s has %zu elements, expected %zu (%zu ranks x %zu "
                    "elements of %s)",
            op, big_name, big->count, small->count * n, n, small->count,
            small_name);
    }
    return -1;
}

// One operation's issue: a per-call deadline around the call, then either
// a Work for the request or the error.
typedef struct {
    ext_comm      *self;
    long long      timeout_ms; // <= 0: the communicator's default
    shoal_request *req;
    int            st;
} ops_call;

static int
ops_begin(ops_call *c, ext_comm *self, long long timeout_ms)
{
    c->self       = self;
    c->timeout_ms = timeout_ms;
    c->req        = NULL;
    c->st         = SHOAL_OK;
    return ext_comm_check_open(self);
}

// The algorithm the next operation of this thread runs (the hint
// "shoal::algorithm"), "" for the table's choice; taken by that call.
static _Thread_local char ops_next_algo[64];

PyObject *
ext_next_call_algorithm(PyObject *mod, PyObject *arg)
{
    const char *name = PyUnicode_AsUTF8(arg);

    (void) mod;
    if (name == NULL) {
        return NULL;
    }
    if (strlen(name) >= sizeof(ops_next_algo)) {
        return ext_invalid("hint shoal::algorithm: no algorithm is named "
                           "'%.80s' (too long)",
            name);
    }
    snprintf(ops_next_algo, sizeof(ops_next_algo), "%s", name);
    Py_RETURN_NONE;
}

// Gives the next call its options: `timeout_ms` (capped by this thread's
// shoal.deadline), whether its caller waits at once, and the algorithm
// set by next_call_algorithm, if any.
static void
ops_give_opts(const ext_comm *comm, long long timeout_ms, int caller_waits)
{
    static _Thread_local char algo[64]; // the name, while the call runs
    long long                 ms    = ext_call_timeout_ms(comm, timeout_ms);
    const char               *named = NULL;

    if (ops_next_algo[0] != '\0') { // rare: a hint named one
        memcpy(algo, ops_next_algo, sizeof(algo));
        ops_next_algo[0] = '\0';
        named            = algo;
    }
    if (ms > 0 || caller_waits || named != NULL) {
        shoal_call_opts opts = { .timeout_ms = ms > 0 ? ms : 0,
            .caller_waits                    = caller_waits,
            .algo                            = named };
        shoal_next_call_opts(&opts);
    }
}

void
ext_call_deadline(const ext_comm *comm, long long timeout_ms)
{
    ops_give_opts(comm, timeout_ms, 0);
}

// Set (under the GIL) by the blocking forms around the call they make:
// that call's caller waits for it at once. Cleared when the call is
// issued, before its wait lets other threads in.
static int ops_waits_next;

static void
ops_deadline(ops_call *c)
{
    ops_give_opts(c->self, c->timeout_ms, ops_waits_next);
}

// Wraps the request issued with status c->st in a Work, or for a blocking
// form waits for it. Releases a and b (the Work holds its own references).
static PyObject *
ops_end(ops_call *c, ext_buffer *a, ext_buffer *b)
{
    PyObject *keep, *work;
    int       waits = ops_waits_next;

    ops_waits_next = 0;
    if (c->st < 0) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        // An operation refused because the communicator broke earlier.
        ext_abort_if_asked(c->self, c->st, shoal_last_error());
        return ext_raise_status(c->st, c->self->comm);
    }
    if (waits) {
        // A blocking form: its wait needs no Work (this frame holds the
        // buffers), and one that completed as it was issued (its peers
        // were there first) none at all.
        PyObject *done = shoal_test(c->req) == SHOAL_OK
            ? (shoal_request_free(c->req), Py_NewRef(Py_True))
            : ext_wait_now(c->self, c->req);
        Py_XDECREF(a);
        Py_XDECREF(b);
        return done;
    }
    keep = PyTuple_Pack(2, a != NULL ? (PyObject *) a : Py_None,
        b != NULL ? (PyObject *) b : Py_None);
    Py_XDECREF(a);
    Py_XDECREF(b);
    if (keep == NULL) {
        // The request must still finish before its buffers go.
        Py_BEGIN_ALLOW_THREADS shoal_request_free(c->req);
        Py_END_ALLOW_THREADS return NULL;
    }
    work = ext_work_new(c->self, c->req, keep);
    Py_DECREF(keep);
    return work;
}

static shoal_reduce_op
ops_reduce_op(int kind, double scalar)
{
    shoal_reduce_op op = { .kind = (shoal_op_kind) kind, .scalar = scalar };

    return op;
}

// Converts a list of counts to a size_t array of `n` entries (freed by
// the caller); `sum` receives their total.
static size_t *
ops_counts(PyObject *list, int n, const char *what, size_t *sum)
{
    PyObject *seq = PySequence_Fast(list, "counts must be a list");
    size_t   *out;

    if (seq == NULL) {
        return NULL;
    }
    if (PySequence_Fast_GET_SIZE(seq) != n) {
        ext_invalid("%s has %zd entries, expected one per rank (%d)", what,
            PySequence_Fast_GET_SIZE(seq), n);
        Py_DECREF(seq);
        return NULL;
    }
    out  = calloc((size_t) n + 1, sizeof(size_t));
    *sum = 0;
    for (int i = 0; out != NULL && i < n; i++) {
        out[i] = PyLong_AsSize_t(PySequence_Fast_GET_ITEM(seq, i));
        if (out[i] == (size_t) -1 && PyErr_Occurred()) {
            free(out);
            out = NULL;
            break;
        }
        *sum += out[i];
    }
    if (out == NULL && !PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    Py_DECREF(seq);
    return out;
}

static int
ops_size(ext_comm *self)
{
    return shoal_comm_size(self->comm);
}

// The arguments of the common collectives' methods, as METH_FASTCALL
// hands them over: no tuple is built and no format parsed the general
// way (PyArg_ParseTuple cost a 4-byte all_reduce a fifth of its time in
// this extension). `fmt` as PyArg_ParseTuple's, of 'O' (PyObject *), 'i'
// (int), 'd' (double), 'L' (long long) and 's' (const char *, UTF-8),
// with '|' before the optional ones; the same errors' types. Returns 0,
// or -1 with an exception set.
static int
ops_args(const char *method, PyObject *const *args, Py_ssize_t nargs,
    const char *fmt, ...)
{
    const char *bar   = strchr(fmt, '|');
    Py_ssize_t  most  = (Py_ssize_t) strlen(fmt) - (bar != NULL);
    Py_ssize_t  least = bar != NULL ? bar - fmt : most;
    int         rc    = 0;
    va_list     ap;

    if (nargs < least || nargs > most) {
        PyErr_Format(PyExc_TypeError, "%s() takes %s%zd arguments (%zd given)",
            method, least == most ? "exactly " : "at most ", most, nargs);
        return -1;
    }
    va_start(ap, fmt);
    for (Py_ssize_t i = 0; *fmt != '\0' && i < nargs && rc == 0; fmt++) {
        PyObject *a = args[i];
        long      v;

        switch (*fmt) {
            case '|':
                continue;
            case 'O':
                *va_arg(ap, PyObject **) = a;
                break;
            case 'i':
                v = PyLong_AsLong(a);
                if (v == -1 && PyErr_Occurred()) {
                    rc = -1;
                } else if (v < INT_MIN || v > INT_MAX) {
                    PyErr_SetString(PyExc_OverflowError,
                        "signed integer is out of an int's range");
                    rc = -1;
                } else {
                    *va_arg(ap, int *) = (int) v;
                }
                break;
            case 'd':
                *va_arg(ap, double *) = PyFloat_AsDouble(a);
                rc                    = PyErr_Occurred() != NULL ? -1 : 0;
                break;
            case 'L':
                *va_arg(ap, long long *) = PyLong_AsLongLong(a);
                rc                       = PyErr_Occurred() != NULL ? -1 : 0;
                break;
            case 's':
                if (!PyUnicode_Check(a)) {
                    PyErr_Format(PyExc_TypeError,
                        "%s() argument %zd must be str, not %s", method, i + 1,
                        Py_TYPE(a)->tp_name);
                    rc = -1;
                } else {
                    *va_arg(ap, const char **) = PyUnicode_AsUTF8(a);
                    rc = PyErr_Occurred() != NULL ? -1 : 0;
                }
                break;
        }
        i++;
    }
    va_end(ap);
    return rc;
}

// ---- point-to-point -------------------------------------------------------

static PyObject *
ops_p2p(ext_comm *self, PyObject *args, int is_send)
{
    PyObject   *obj;
    int         peer, tag;
    long long   timeout;
    ext_buffer *b;
    ops_call    c;
    PyObject   *work;

    if (!PyArg_ParseTuple(args, "OiiL", &obj, &peer, &tag, &timeout)
        || ops_begin(&c, self, timeout) < 0
        || (b = ext_buffer_arg(
                obj, !is_send, is_send ? "send buffer" : "receive buffer"))
            == NULL) {
        return NULL;
    }
    ops_deadline(&c);
    c.st = is_send ? shoal_isend(
               self->comm, b->data, b->count, b->dtype, peer, tag, &c.req)
                   : shoal_irecv(self->comm, b->data, b->count, b->dtype, peer,
                       tag, &c.req);
    work = ops_end(&c, b, NULL);
    if (work != NULL && !is_send) {
        ext_work_mark_recv(work);
    }
    return work;
}

static PyObject *
ops_send(ext_comm *self, PyObject *args)
{
    return ops_p2p(self, args, 1);
}

static PyObject *
ops_recv(ext_comm *self, PyObject *args)
{
    return ops_p2p(self, args, 0);
}

// ---- barrier, broadcast ---------------------------------------------------

static PyObject *
ops_barrier(ext_comm *self, PyObject *const *args, Py_ssize_t nargs)
{
    long long timeout;
    ops_call  c;

    if (ops_args("barrier", args, nargs, "L", &timeout) < 0
        || ops_begin(&c, self, timeout) < 0) {
        return NULL;
    }
    ops_deadline(&c);
    c.st = shoal_ibarrier(self->comm, &c.req);
    return ops_end(&c, NULL, NULL);
}

static PyObject *
ops_broadcast(ext_comm *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject   *obj;
    int         root;
    long long   timeout;
    ext_buffer *b;
    ops_call    c;

    if (ops_args("broadcast", args, nargs, "OiL", &obj, &root, &timeout) < 0
        || ops_begin(&c, self, timeout) < 0
        || (b = ext_buffer_arg(obj, 1, "tensor")) == NULL) {
        return NULL;
    }
    ops_deadline(&c);
    c.st = shoal_ibroadcast(
        self->comm, b->data, b->count, b->dtype, root, &c.req);
    return ops_end(&c, b, NULL);
}

// ---- reductions -----------------------------------------------------------

static PyObject *
ops_all_reduce(ext_comm *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject   *in, *out;
    int         kind;
    double      scalar;
    long long   timeout;
    ext_buffer *s = NULL, *r = NULL;
    ops_call    c;

    if (ops_args("all_reduce", args, nargs, "OOidL", &in, &out, &kind, &scalar,
            &timeout)
            < 0
        || ops_begin(&c, self, timeout) < 0
        || (s = ext_buffer_arg(in, 0, "input")) == NULL
        || (r = ext_buffer_arg(out, 1, "output")) == NULL
        || ops_same_dtype("all_reduce", s, r) < 0
        || ops_times("all_reduce", r, "output", s, "input", 1)) {
        Py_XDECREF(s);
        Py_XDECREF(r);
        return NULL;
    }
    ops_deadline(&c);
    c.st = shoal_iall_reduce(self->comm, s->data, r->data, r->count, r->dtype,
        ops_reduce_op(kind, scalar), &c.req);
    return ops_end(&c, s, r);
}

// Output only on the root; None elsewhere.
static PyObject *
ops_reduce(ext_comm *self, PyObject *args)
{
    PyObject   *in, *out;
    int         kind, root;
    double      scalar;
    long long   timeout;
    ext_buffer *s = NULL, *r = NULL;
    ops_call    c;

    if (!PyArg_ParseTuple(
            args, "OOidiL", &in, &out, &kind, &scalar, &root, &timeout)
        || ops_begin(&c, self, timeout) < 0
        || (s = ext_buffer_arg(in, 0, "input")) == NULL
        || ops_optional(out, 1, "output", &r) < 0
        || (r != NULL
            && (ops_same_dtype("reduce", s, r) < 0
                || ops_times("reduce", r, "output", s, "input", 1) < 0))) {
        Py_XDECREF(s);
        Py_XDECREF(r);
        return NULL;
    }
    if (r == NULL && root == shoal_comm_rank(self->comm)) {
        Py_DECREF(s);
        return ext_invalid("reduce: the root needs an output");
    }
    ops_deadline(&c);
    c.st = shoal_ireduce(self->comm, s->data, r != NULL ? r->data : NULL,
        s->count, s->dtype, ops_reduce_op(kind, scalar), root, &c.req);
    return ops_end(&c, s, r);
}

static PyObject *
ops_reduce_scatter(ext_comm *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject   *in, *out;
    int         kind;
    double      scalar;
    long long   timeout;
    ext_buffer *s = NULL, *r = NULL;
    const char *name = "reduce_scatter"; // or the caller's method
    ops_call    c;

    if (ops_args("reduce_scatter", args, nargs, "OOidL|s", &in, &out, &kind,
            &scalar, &timeout, &name)
            < 0
        || ops_begin(&c, self, timeout) < 0
        || (s = ext_buffer_arg(in, 0, "input")) == NULL
        || (r = ext_buffer_arg(out, 1, "output")) == NULL
        || ops_same_dtype(name, s, r) < 0
        || ops_times(name, s, "input", r, "output", ops_size(self)) < 0) {
        Py_XDECREF(s);
        Py_XDECREF(r);
        return NULL;
    }
    ops_deadline(&c);
    c.st = shoal_ireduce_scatter(self->comm, s->data, r->data, r->count,
        r->dtype, ops_reduce_op(kind, scalar), &c.req);
    return ops_end(&c, s, r);
}

static PyObject *
ops_reduce_scatter_v(ext_comm *self, PyObject *args)
{
    PyObject   *in, *out, *list;
    int         kind;
    double      scalar;
    long long   timeout;
    ext_buffer *s = NULL, *r = NULL;
    size_t     *counts = NULL, total;
    ops_call    c;

    if (!PyArg_ParseTuple(
            args, "OOOidL", &in, &out, &list, &kind, &scalar, &timeout)
        || ops_begin(&c, self, timeout) < 0
        || (s = ext_buffer_arg(in, 0, "input")) == NULL
        || (r = ext_buffer_arg(out, 1, "output")) == NULL
        || ops_same_dtype("reduce_scatter_v", s, r) < 0
        || (counts = ops_counts(list, ops_size(self), "counts", &total))
            == NULL) {
        Py_XDECREF(s);
        Py_XDECREF(r);
        return NULL;
    }
    if (total != s->count || counts[shoal_comm_rank(self->comm)] != r->count) {
        ext_invalid("reduce_scatter_v: counts sum to %zu for an input "
                    "of %zu elements, and give this rank %zu for an "
                    "output of %zu",
            total, s->count, counts[shoal_comm_rank(self->comm)], r->count);
        free(counts);
        Py_DECREF(s);
        Py_DECREF(r);
        return NULL;
    }
    ops_deadline(&c);
    c.st = shoal_ireduce_scatter_v(self->comm, s->data, r->data, counts,
        r->dtype, ops_reduce_op(kind, scalar), &c.req);
    free(counts);
    return ops_end(&c, s, r);
}

// ---- data movement --------------------------------------------------------

static PyObject *
ops_all_gather(ext_comm *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject   *in, *out;
    long long   timeout;
    ext_buffer *s = NULL, *r = NULL;
    const char *name = "all_gather"; // or the caller's method
    ops_call    c;

    if (ops_args(
            "all_gather", args, nargs, "OOL|s", &in, &out, &timeout, &name)
            < 0
        || ops_begin(&c, self, timeout) < 0
        || (s = ext_buffer_arg(in, 0, "input")) == NULL
        || (r = ext_buffer_arg(out, 1, "output")) == NULL
        || ops_same_dtype(name, s, r) < 0
        || ops_times(name, r, "output", s, "input", ops_size(self)) < 0) {
        Py_XDECREF(s);
        Py_XDECREF(r);
        return NULL;
    }
    ops_deadline(&c);
    c.st = shoal_iall_gather(
        self->comm, s->data, r->data, s->count, s->dtype, &c.req);
    return ops_end(&c, s, r);
}

static PyObject *
ops_all_gather_v(ext_comm *self, PyObject *args)
{
    PyObject   *in, *out, *list;
    long long   timeout;
    ext_buffer *s = NULL, *r = NULL;
    size_t     *counts = NULL, total;
    ops_call    c;

    if (!PyArg_ParseTuple(args, "OOOL", &in, &out, &list, &timeout)
        || ops_begin(&c, self, timeout) < 0
        || (s = ext_buffer_arg(in, 0, "input")) == NULL
        || (r = ext_buffer_arg(out, 1, "output")) == NULL
        || ops_same_dtype("all_gather_v", s, r) < 0
        || (counts = ops_counts(list, ops_size(self), "counts", &total))
            == NULL) {
        Py_XDECREF(s);
        Py_XDECREF(r);
        return NULL;
    }
    if (total != r->count || counts[shoal_comm_rank(self->comm)] != s->count) {
        ext_invalid("all_gather_v: counts sum to %zu for an output "
                    "of %zu elements, and give this rank %zu for an "
                    "input of %zu",
            total, r->count, counts[shoal_comm_rank(self->comm)], s->count);
        free(counts);
        Py_DECREF(s);
        Py_DECREF(r);
        return NULL;
    }
    ops_deadline(&c);
    c.st = shoal_iall_gather_v(
        self->comm, s->data, r->data, counts, r->dtype, &c.req);
    free(counts);
    return ops_end(&c, s, r);
}

static PyObject *
ops_all_to_all(ext_comm *self, PyObject *args)
{
    PyObject   *in, *out;
    long long   timeout;
    ext_buffer *s = NULL, *r = NULL;
    const char *name = "all_to_all"; // or the caller's method
    size_t      n;
    ops_call    c;

    if (!PyArg_ParseTuple(args, "OOL|s", &in, &out, &timeout, &name)
        || ops_begin(&c, self, timeout) < 0
        || (s = ext_buffer_arg(in, 0, "input")) == NULL
        || (r = ext_buffer_arg(out, 1, "output")) == NULL
        || ops_same_dtype(name, s, r) < 0
        || ops_times(name, r, "output", s, "input", 1) < 0) {
        Py_XDECREF(s);
        Py_XDECREF(r);
        return NULL;
    }
    n = (size_t) ops_size(self);
    if (s->count % n != 0) {
        Py_DECREF(s);
        Py_DECREF(r);
        return ext_invalid("%s: input has %zu elements, which do not split "
                           "evenly over %zu ranks",
            name, s->count, n);
    }
    ops_deadline(&c);
    c.st = shoal_iall_to_all(
        self->comm, s->data, r->data, s->count / n, s->dtype, &c.req);
    return ops_end(&c, s, r);
}

static PyObject *
ops_all_to_all_v(ext_comm *self, PyObject *args)
{
    PyObject   *in, *out, *slist, *rlist;
    long long   timeout;
    ext_buffer *s = NULL, *r = NULL;
    size_t     *sc = NULL, *rc = NULL, stotal, rtotal;
    const char *name = "all_to_all_v"; // or the caller's method
    ops_call    c;

    if (!PyArg_ParseTuple(
            args, "OOOOL|s", &in, &slist, &out, &rlist, &timeout, &name)
        || ops_begin(&c, self, timeout) < 0
        || (s = ext_buffer_arg(in, 0, "input")) == NULL
        || (r = ext_buffer_arg(out, 1, "output")) == NULL
        || ops_same_dtype(name, s, r) < 0
        || (sc = ops_counts(slist, ops_size(self), "send counts", &stotal))
            == NULL
        || (rc = ops_counts(rlist, ops_size(self), "receive counts", &rtotal))
            == NULL) {
        free(sc);
        Py_XDECREF(s);
        Py_XDECREF(r);
        return NULL;
    }
    if (stotal > s->count || rtotal > r->count) {
        free(sc);
        free(rc);
        Py_DECREF(s);
        Py_DECREF(r);
        return ext_invalid("%s: send counts sum to %zu for an input of %zu "
                           "elements, receive counts to %zu for an output "
                           "of %zu",
            name, stotal, s->count, rtotal, r->count);
    }
    ops_deadline(&c);
    c.st = shoal_iall_to_all_v(
        self->comm, s->data, sc, r->data, rc, r->dtype, &c.req);
    free(sc);
    free(rc);
    return ops_end(&c, s, r);
}

// Gather: output only on the root. Scatter: input only on the root.
static PyObject *
ops_rooted(ext_comm *self, PyObject *args, int is_gather)
{
    PyObject   *in, *out;
    int         root;
    long long   timeout;
    ext_buffer *s = NULL, *r = NULL, *whole, *part;
    ops_call    c;

    if (!PyArg_ParseTuple(args, "OOiL", &in, &out, &root, &timeout)
        || ops_begin(&c, self, timeout) < 0
        || ops_optional(in, 0, "input", &s) < 0
        || ops_optional(out, 1, "output", &r) < 0) {
        goto fail;
    }
    whole = is_gather ? r : s;
    part  = is_gather ? s : r;
    if (part == NULL
        || (whole == NULL && root == shoal_comm_rank(self->comm))) {
        ext_invalid("%s: every rank needs its %s, the root its %s",
            is_gather ? "gather" : "scatter", is_gather ? "input" : "output",
            is_gather ? "output" : "input");
        goto fail;
    }
    if (whole != NULL
        && (ops_same_dtype(is_gather ? "gather" : "scatter", s, r) < 0
            || ops_times(is_gather ? "gather" : "scatter", whole,
                   is_gather ? "output" : "input", part,
                   is_gather ? "input" : "output", ops_size(self))
                < 0)) {
        goto fail;
    }
    ops_deadline(&c);
    c.st = is_gather ? shoal_igather(self->comm, s->data,
               r != NULL ? r->data : NULL, s->count, s->dtype, root, &c.req)
                     : shoal_iscatter(self->comm, s != NULL ? s->data : NULL,
                         r->data, r->count, r->dtype, root, &c.req);
    return ops_end(&c, s, r);
fail:
    Py_XDECREF(s);
    Py_XDECREF(r);
    return NULL;
}

static PyObject *
ops_gather(ext_comm *self, PyObject *args)
{
    return ops_rooted(self, args, 1);
}

static PyObject *
ops_scatter(ext_comm *self, PyObject *args)
{
    return ops_rooted(self, args, 0);
}

// ---- blocking forms -------------------------------------------------------
// The operation issued, then waited for here (ops_end): True or its error,
// and no Work object, for Python or here, which cost a small call more
// than the call itself. The wait is Work.wait's (it looks for signals); a
// call that completes while it is issued does not wait, and one that does
// not is driven by this thread alone (caller_waits: the progress thread
// is not woken for it).

static PyObject *
ops_now(PyObject *result)
{
    ops_waits_next = 0; // where the call failed before it was issued
    return result; // True, or NULL: ops_end waited
}

static PyObject *
ops_all_reduce_now(ext_comm *self, PyObject *const *args, Py_ssize_t nargs)
{
    ops_waits_next = 1;
    return ops_now(ops_all_reduce(self, args, nargs));
}

static PyObject *
ops_broadcast_now(ext_comm *self, PyObject *const *args, Py_ssize_t nargs)
{
    ops_waits_next = 1;
    return ops_now(ops_broadcast(self, args, nargs));
}

static PyObject *
ops_barrier_now(ext_comm *self, PyObject *const *args, Py_ssize_t nargs)
{
    ops_waits_next = 1;
    return ops_now(ops_barrier(self, args, nargs));
}

static PyObject *
ops_all_gather_now(ext_comm *self, PyObject *const *args, Py_ssize_t nargs)
{
    ops_waits_next = 1;
    return ops_now(ops_all_gather(self, args, nargs));
}

static PyObject *
ops_reduce_scatter_now(ext_comm *self, PyObject *const *args, Py_ssize_t nargs)
{
    ops_waits_next = 1;
    return ops_now(ops_reduce_scatter(self, args, nargs));
}

PyMethodDef ext_comm_op_methods[] = {
    { "all_reduce_now", (PyCFunction) (void (*)(void)) ops_all_reduce_now,
        METH_FASTCALL,
        "all_reduce_now(input, output, op, scalar, timeout_ms) -> True: "
        "all_reduce, waited for" },
    { "broadcast_now", (PyCFunction) (void (*)(void)) ops_broadcast_now,
        METH_FASTCALL,
        "broadcast_now(buf, root, timeout_ms) -> True: broadcast, waited "
        "for" },
    { "barrier_now", (PyCFunction) (void (*)(void)) ops_barrier_now,
        METH_FASTCALL,
        "barrier_now(timeout_ms) -> True: barrier, waited for" },
    { "all_gather_now", (PyCFunction) (void (*)(void)) ops_all_gather_now,
        METH_FASTCALL,
        "all_gather_now(input, output, timeout_ms) -> True: all_gather, "
        "waited for" },
    { "reduce_scatter_now",
        (PyCFunction) (void (*)(void)) ops_reduce_scatter_now, METH_FASTCALL,
        "reduce_scatter_now(input, output, op, scalar, timeout_ms) -> True: "
        "reduce_scatter, waited for" },
    { "send", (PyCFunction) ops_send, METH_VARARGS,
        "send(buf, dst, tag, timeout_ms) -> Work" },
    { "recv", (PyCFunction) ops_recv, METH_VARARGS,
        "recv(buf, src, tag, timeout_ms) -> Work; src ANY_SOURCE (-1) "
        "takes a message with the tag from any rank (Work.source() names "
        "it)" },
    { "barrier", (PyCFunction) (void (*)(void)) ops_barrier, METH_FASTCALL,
        "barrier(timeout_ms) -> Work" },
    { "broadcast", (PyCFunction) (void (*)(void)) ops_broadcast, METH_FASTCALL,
        "broadcast(buf, root, timeout_ms) -> Work" },
    { "all_reduce", (PyCFunction) (void (*)(void)) ops_all_reduce,
        METH_FASTCALL,
        "all_reduce(input, output, op, scalar, timeout_ms) -> Work" },
    { "reduce", (PyCFunction) ops_reduce, METH_VARARGS,
        "reduce(input, output|None, op, scalar, root, timeout_ms) -> Work" },
    { "reduce_scatter", (PyCFunction) (void (*)(void)) ops_reduce_scatter,
        METH_FASTCALL,
        "reduce_scatter(input, output, op, scalar, timeout_ms) -> Work" },
    { "reduce_scatter_v", (PyCFunction) ops_reduce_scatter_v, METH_VARARGS,
        "reduce_scatter_v(input, output, counts, op, scalar, timeout_ms) "
        "-> Work" },
    { "all_gather", (PyCFunction) (void (*)(void)) ops_all_gather,
        METH_FASTCALL, "all_gather(input, output, timeout_ms) -> Work" },
    { "all_gather_v", (PyCFunction) ops_all_gather_v, METH_VARARGS,
        "all_gather_v(input, output, counts, timeout_ms) -> Work" },
    { "all_to_all", (PyCFunction) ops_all_to_all, METH_VARARGS,
        "all_to_all(input, output, timeout_ms) -> Work" },
    { "all_to_all_v", (PyCFunction) ops_all_to_all_v, METH_VARARGS,
        "all_to_all_v(input, send_counts, output, recv_counts, timeout_ms) "
        "-> Work" },
    { "gather", (PyCFunction) ops_gather, METH_VARARGS,
        "gather(input, output|None, root, timeout_ms) -> Work" },
    { "scatter", (PyCFunction) ops_scatter, METH_VARARGS,
        "scatter(input|None, output, root, timeout_ms) -> Work" },
    { NULL, NULL, 0, NULL },
};
