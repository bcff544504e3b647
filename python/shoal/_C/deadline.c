// shoal.deadline: a time limit on every operation a thread issues and on
// every wait it makes for one.
//
// The limit is per thread (a `with shoal.deadline(s):` in one thread leaves
// the others alone) and lives here, where every operation's timeout
// passes on its way to the library: ext_call_timeout_ms caps what an
// operation gets, ext_wait_timeout_ms what a wait gets, and ext_raise adds
// the deadline to the message of a timeout it caused. Nested contexts keep
// the earliest end: the Python layer saves the state on entry and restores
// it on exit (deadline_enter, deadline_restore).
#include "ext.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

// The earliest end of this thread's contexts (0: none) and the length of
// the context that set it (what messages name).
static _Thread_local int64_t deadline_end_ns;
static _Thread_local double  deadline_seconds;

static int64_t
deadline_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Milliseconds left, rounded up so that an operation given them ends no
// sooner than the context; 0 once it has passed; -1 without one.
static int64_t
deadline_left_ms(void)
{
    int64_t left;

    if (deadline_end_ns == 0) {
        return -1;
    }
    left = deadline_end_ns - deadline_now_ns();
    return left <= 0 ? 0 : (left + 999999) / 1000000;
}

long long
ext_call_timeout_ms(const ext_comm *comm, long long timeout_ms)
{
    int64_t left = deadline_left_ms();
    int64_t own  = timeout_ms > 0 ? timeout_ms : comm->timeout_ms;

    if (left < 0 || own <= left) {
        return timeout_ms;
    }
    // A deadline already passed still gives the operation a moment: it
    // then fails as any timeout does, aborting the communicator, so that
    // its peers hear of it instead of waiting out their own timeouts.
    return left > 0 ? left : 1;
}

int64_t
ext_wait_timeout_ms(int64_t timeout_ms)
{
    int64_t left = deadline_left_ms();

    if (left < 0 || (timeout_ms >= 0 && timeout_ms <= left)) {
        return timeout_ms;
    }
    return left;
}

// A timeout this close to the deadline's end was its doing: waits count
// whole milliseconds from a clock read in milliseconds, so one capped by
// the deadline may end up to a millisecond before it.
#define DEADLINE_SLACK_NS 2000000

void
ext_deadline_note(char *buf, size_t len)
{
    buf[0] = '\0';
    if (deadline_end_ns != 0
        && deadline_now_ns() >= deadline_end_ns - DEADLINE_SLACK_NS) {
        snprintf(buf, len, " (shoal.deadline(%g s) of this thread ran out)",
            deadline_seconds);
    }
}

// deadline_enter(seconds) -> the state to restore: this thread's limit
// becomes the earlier of its own and `seconds` from now.
PyObject *
ext_deadline_enter(PyObject *mod, PyObject *arg)
{
    double    s = PyFloat_AsDouble(arg);
    PyObject *saved;
    int64_t   end;

    (void) mod;
    if (s == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    if (!(s > 0) || !isfinite(s) || s > 1e9) {
        return ext_invalid(
            "shoal.deadline: seconds must be > 0 and at most 1e9, not %g", s);
    }
    saved = Py_BuildValue("Ld", (long long) deadline_end_ns, deadline_seconds);
    if (saved == NULL) {
        return NULL;
    }
    end = deadline_now_ns() + (int64_t) (s * 1e9);
    if (deadline_end_ns == 0 || end < deadline_end_ns) {
        deadline_end_ns  = end;
        deadline_seconds = s;
    }
    return saved;
}

// deadline_restore(saved): back to the state deadline_enter returned.
PyObject *
ext_deadline_restore(PyObject *mod, PyObject *arg)
{
    long long end;
    double    s;

    (void) mod;
    if (!PyArg_ParseTuple(arg, "Ld", &end, &s)) {
        return NULL;
    }
    deadline_end_ns  = (int64_t) end;
    deadline_seconds = s;
    Py_RETURN_NONE;
}

// deadline_left() -> (seconds left, the context's length), or None.
PyObject *
ext_deadline_left(PyObject *mod, PyObject *unused)
{
    int64_t left;

    (void) mod;
    (void) unused;
    if (deadline_end_ns == 0) {
        Py_RETURN_NONE;
    }
    left = deadline_end_ns - deadline_now_ns();
    return Py_BuildValue(
        "dd", left > 0 ? (double) left / 1e9 : 0.0, deadline_seconds);
}
