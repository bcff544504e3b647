// shoal._C: the objects and helpers the extension's files share.
//
// Three types: Buffer (a view of caller memory through DLPack or the buffer
// protocol), Comm (a shoal_comm) and Work (a shoal_request plus the buffers
// it uses). The Python package above validates arguments with readable
// messages; the checks here keep memory safe whatever Python passes.
#ifndef SHOAL_EXT_H
#define SHOAL_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "shoal.h"

// ---- Buffer (buffer.c) ----------------------------------------------------

#define EXT_SMALL_DIMS 4

typedef struct {
    PyObject_HEAD PyObject *obj; // the exporter, kept alive with the view
    char                   *data; // first element
    size_t                  count; // elements
    size_t                  itemsize;
    int                     dtype; // shoal_dtype
    int                     ndim;
    int64_t                *shape; // ndim entries (owned, or in `small`)
    int64_t                *strides; // in elements (owned, or in `small`)
    int                     contiguous; // C order, no gaps
    int                     readonly;
    void                   *managed; // DLPack tensor to release, or NULL
    int                     versioned; // managed is the 1.0 struct
    int                     has_view; // `view` holds a buffer-protocol view
    Py_buffer               view;
    // Shape and strides of up to EXT_SMALL_DIMS dimensions: viewing a
    // tensor, which every call does, then allocates nothing more.
    int64_t small[2 * EXT_SMALL_DIMS];
} ext_buffer;

extern PyTypeObject ext_buffer_type;

// Views `obj` (any __dlpack__ exporter, else the buffer protocol). With
// `writable`, read-only memory is refused. Returns a new reference or NULL
// with an exception set.
ext_buffer *ext_buffer_from(PyObject *obj, int writable);
// The same with a DLPack capsule of obj already made (NULL or None: ask
// obj for one).
ext_buffer *ext_buffer_with(PyObject *obj, int writable, PyObject *capsule);

// An operation's buffer argument: `obj` itself when it is a Buffer, else
// a Buffer viewing it; refused (InvalidArgumentError naming `what`) when
// not contiguous, or read-only where `writable`. A new reference or NULL.
ext_buffer *ext_buffer_arg(PyObject *obj, int writable, const char *what);

// Readies the type and the constants it uses. Returns 0 or -1.
int ext_buffer_init(void);

// ---- Comm (comm.c, comm_ops.c) --------------------------------------------

struct ext_work;
struct ext_plan;

typedef struct {
    PyObject_HEAD shoal_comm *comm; // NULL after finalize
    int64_t                   timeout_ms; // default deadline of operations
    int                       abort_on_error; // abort() on outside faults
    struct ext_work          *works; // works whose request is still live
    Py_ssize_t                blocks; // live Blocks in its heap (alloc.c)
    shoal_comm      *retired; // finalized while blocks lived (alloc.c)
    struct ext_plan *plans; // live compiled plans (plan.c)
    int              dropped_status; // < 0: a dropped work failed (dropped.c)
    PyObject        *dropped_text; // its message, raised by the next call
    int              waiting_now; // threads in ext_wait_now's wait
} ext_comm;

extern PyTypeObject ext_comm_type;
extern PyMethodDef  ext_comm_op_methods[]; // comm_ops.c, NULL-terminated
extern PyMethodDef  ext_comm_algo_methods[]; // comm_algos.c, likewise

// Readies the type (with both method tables). Returns 0 or -1.
int ext_comm_init(void);

// Returns 0, or -1 with an exception when the communicator was finalized
// or an operation whose Work was dropped has failed (raised once).
int ext_comm_check_open(ext_comm *self);

// An operation whose Work (or Future) was dropped without wait() ended
// with `status`: when it failed, reports it to sys.unraisablehook (as a
// failure in `where`) and keeps it for the next call on the communicator
// to raise. Keeps any exception already set. (dropped.c)
void ext_comm_note_dropped(
    ext_comm *comm, int status, const char *text, PyObject *where);
// Raises the kept failure (and forgets it): -1, or 0 when there is none.
int ext_comm_raise_dropped(ext_comm *comm);
// Comm._note_dropped(exc, where): ext_comm_note_dropped for a failure
// raised in Python (exc: the exception its wait raised).
PyObject *ext_comm_note_dropped_py(ext_comm *self, PyObject *args);

// Gives a per-call deadline (ms; <= 0: the communicator's default),
// capped by this thread's shoal.deadline (ext_call_timeout_ms), to the
// operation this thread issues next on `comm`, right before it (it
// travels with that operation; nothing else on any thread sees it).
void ext_call_deadline(const ext_comm *comm, long long timeout_ms);
// next_call_algorithm(name): the algorithm the next operation this thread
// issues runs (the hint "shoal::algorithm"; checked by that call).
PyObject *ext_next_call_algorithm(PyObject *mod, PyObject *arg);

// ---- shoal.deadline (deadline.c) ------------------------------------------

// The timeout (ms; <= 0: the communicator's default) an operation issued
// now on `comm` with `timeout_ms` gets: that, or less when this thread's
// shoal.deadline ends sooner (at least 1 ms).
long long ext_call_timeout_ms(const ext_comm *comm, long long timeout_ms);
// The same for a wait of `timeout_ms` (< 0: until the operation's own
// deadline): 0 once the thread's deadline has passed.
int64_t ext_wait_timeout_ms(int64_t timeout_ms);
// Into buf: " (shoal.deadline(S s) of this thread ran out)" once this
// thread's deadline has passed, else "". For timeout messages.
void ext_deadline_note(char *buf, size_t len);
// The module functions deadline_enter, deadline_restore, deadline_left.
PyObject *ext_deadline_enter(PyObject *mod, PyObject *arg);
PyObject *ext_deadline_restore(PyObject *mod, PyObject *arg);
PyObject *ext_deadline_left(PyObject *mod, PyObject *unused);

// ---- Work (work.c) --------------------------------------------------------

typedef struct ext_work {
    PyObject_HEAD shoal_request *req; // NULL once finished
    int                          status; // final status once req is NULL
    PyObject                    *error; // message of a failed operation
    ext_comm                    *comm; // strong reference
    PyObject                    *keep; // buffers used until completion
    struct ext_work             *prev, *next; // comm->works
    int                          waiting; // a thread is in shoal_wait
    int                          recv; // a receive: source() applies
    int                          source; // its sender, once it succeeded
    int                          told; // its failure was raised to someone
} ext_work;

extern PyTypeObject ext_work_type;

// Wraps a request just issued on `comm`; the work keeps `keep` alive until
// the request completes. Steals nothing. On failure frees `req` (waiting
// for it) and returns NULL with an exception set.
PyObject *ext_work_new(ext_comm *comm, shoal_request *req, PyObject *keep);
// A blocking form's wait for the request it just issued on `comm` (the
// caller keeps its buffers alive meanwhile): as Work.wait() waits,
// looking for signals, but without a Work; then frees the request.
// Returns True, or NULL with the operation's error (or a signal
// handler's exception).
PyObject *ext_wait_now(ext_comm *comm, shoal_request *req);

// Marks a work just made by ext_work_new as a receive, whose sender its
// source() reports once complete.
void ext_work_mark_recv(PyObject *work);

// torchcomms' abort_process_on_timeout_or_error: when `comm` asks for it
// and `status` is a fault that broke the communicator, prints `text` and
// ends the process with abort(), so no rank is left waiting on it.
void ext_abort_if_asked(const ext_comm *comm, int status, const char *text);

// Finishes every live work of `comm` (waits for it, frees its request) so
// the communicator can be destroyed. Returns 0, or -1 with an exception.
int ext_work_drain(ext_comm *comm);

// ---- Plan (plan.c) --------------------------------------------------------

extern PyTypeObject ext_plan_type;

// Releases the native plans of `comm` (waiting for their runs) before the
// communicator is destroyed; the Python objects then raise when used.
// Returns 0, or -1 with an exception when another thread is in one.
int ext_plan_drain(ext_comm *comm);

// ---- Block (alloc.c) -----------------------------------------------------

typedef struct ext_block {
    PyObject_HEAD ext_comm *owner; // strong: the heap this block lies in
    void                   *ptr;
    size_t                  nbytes; // as asked for (the heap rounds up)
    int               detached; // its communicator is gone (alloc_exit.c)
    PyObject         *weakrefs; // shoal.memory finds blocks by address
    struct ext_block *prev, *next; // ext_blocks
} ext_block;

extern PyTypeObject ext_block_type;
extern ext_block   *ext_blocks; // every live block, newest first

// Called by finalize with the communicator's handle (already detached from
// `comm`): when Blocks of its heap are alive, keeps the handle in
// comm->retired for the last Block to destroy, and returns 1; otherwise
// returns 0 and the caller destroys it.
int ext_block_defer_destroy(ext_comm *comm, shoal_comm *handle);

// At interpreter exit (atexit): finalizes every communicator that blocks
// keep alive and destroys it, keeping the blocks' pages mapped where they
// are. Returns None, or NULL with an exception.
PyObject *ext_block_release_at_exit(PyObject *cls, PyObject *unused);

// ---- DLPack export (dlpack_export.c) --------------------------------------

// A "dltensor" capsule viewing `offset` bytes into [base, base + nbytes)
// as a C-contiguous array of `shape` (a sequence of ints) and DLPack type
// (code, bits), which must fit; the array keeps `owner` alive. `what`
// prefixes error messages. A new reference, or NULL with an exception.
PyObject *ext_dlpack_export(unsigned char *base, size_t nbytes, size_t offset,
    PyObject *shape, int code, int bits, PyObject *owner, const char *what);

// ---- Window (window.c) ---------------------------------------------------

extern PyTypeObject ext_window_type;

// ---- Queues (queue.c) ----------------------------------------------------

// Readies the Queue and QueueItem types and adds them to `module`, with
// the queue functions and constants. Returns 0 or -1.
int ext_queue_init(PyObject *module);

// ---- Memory registrations (mem_reg.c) ---------------------------------

// Readies the type. Returns 0 or -1.
int ext_mem_reg_init(void);
// Comm.register_memory(buffer) -> a MemReg holding the buffer.
PyObject *ext_comm_register_memory(ext_comm *self, PyObject *arg);

// A Python communicator for `child`, made from self (split, shrink): the
// same type, deadline and abort policy. Destroys child on failure.
PyObject *ext_comm_child(ext_comm *self, shoal_comm *child);

// Surviving a lost rank (comm_ft.c).
PyObject *ext_comm_revoke(ext_comm *self, PyObject *arg);
PyObject *ext_comm_shrink(ext_comm *self, PyObject *unused);
PyObject *ext_comm_agree(ext_comm *self, PyObject *arg);
PyObject *ext_comm_failed_ranks(ext_comm *self, PyObject *unused);
PyObject *ext_comm_async_error(ext_comm *self, PyObject *unused);

// The flight recorder (flight.c): one communicator's record, every one's.
PyObject *ext_comm_dump_flight_record(ext_comm *self, PyObject *dir);
PyObject *ext_dump_flight_records(PyObject *module, PyObject *dir);
PyObject *ext_comm_stats(ext_comm *self, PyObject *unused);

// ---- Peer views (peer_view.c) ---------------------------------------------

// Readies the type. Returns 0 or -1.
int ext_peer_view_init(void);
// A DLPack capsule of `shape` (DLPack type code, bits) over `bytes` of a
// peer's memory at `ptr`, through a mapping of the view's own that keeps
// `window` alive. A new reference, or NULL with an exception.
PyObject *ext_peer_view_export(PyObject *window, ext_comm *comm, void *ptr,
    size_t bytes, PyObject *shape, int code, int bits);
// Replaces the mappings of the live views of `window` (or of any window of
// `comm`) by private zeroed pages; returns how many it replaced.
Py_ssize_t ext_peer_views_retire(PyObject *window, ext_comm *comm);
// Views of `window` still alive.
Py_ssize_t ext_peer_views_alive(PyObject *window);

// ---- Probes (probe.c) ---------------------------------------------------

// probe_memory, probe_round_trip: module functions.
extern PyMethodDef ext_probe_methods[];

// ---- Errors (errors.c) ----------------------------------------------------

extern PyObject *ext_exc_base; // ShoalError
extern PyObject *ext_exc_invalid; // InvalidArgumentError

// Creates the exception classes and adds them to `module`.
int ext_errors_init(PyObject *module);

// Raises the exception class mapped from `status` with `message` (or the
// status's own sentence when message is NULL or empty). Returns NULL.
PyObject *ext_raise(int status, const char *message);

// The most specific message of a failed shoal call: this thread's last
// error, else the communicator's (comm may be NULL).
const char *ext_error_text(const shoal_comm *comm);

// Raises for a failed shoal call with ext_error_text's message. Returns
// NULL.
PyObject *ext_raise_status(int status, const shoal_comm *comm);

// Raises InvalidArgumentError with a formatted message. Returns NULL.
PyObject *ext_invalid(const char *fmt, ...);

// A sequence of ranks as a C array the caller frees (*n of them); the
// library checks their range and repeats, naming the rank. `type_error`
// is the TypeError's text for anything but a sequence.
int ext_rank_list(PyObject *list, const char *type_error, int **out, int *n);

// True for the faults that abort a communicator (timeout, dead peer,
// mismatch, aborted).
int ext_is_outside_fault(int status);

#endif // SHOAL_EXT_H
