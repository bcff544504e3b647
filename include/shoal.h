// shoal: collective communication for tensors on CPUs.
//
// This is the only public header of libshoal. Every handle is opaque; every
// function returns a status (0 success, positive "in progress", negative an
// error) unless its comment says otherwise. The caller owns every buffer it
// passes in: the library never frees user memory, and never touches a buffer
// after the call (blocking forms) or the request (non-blocking forms) that
// used it has completed.
//
// Thread safety: a communicator may be used from several threads, but
// operations on one communicator are matched across ranks in the order they
// are issued, so concurrent issuers must agree on that order themselves.

#ifndef SHOAL_H
#define SHOAL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SHOAL_BUILDING) && defined(__GNUC__)
#define SHOAL_API __attribute__((visibility("default")))
#else
#define SHOAL_API
#endif

#define SHOAL_VERSION_MAJOR 0
#define SHOAL_VERSION_MINOR 1
#define SHOAL_VERSION_PATCH 0

// Returns the library's version as MAJOR * 10000 + MINOR * 100 + PATCH.
SHOAL_API int shoal_version(void);

// ---------------------------------------------------------------------------
// Status codes
// ---------------------------------------------------------------------------

// One list generates the enum and the strings (shoal_strerror,
// shoal_status_name). Errors are negative, so `if (st < 0)` is the test.
#define SHOAL_STATUS_MAP(XX)                                                  \
    XX(OK, 0, "success")                                                      \
    XX(INPROGRESS, 1, "operation still in progress")                          \
    XX(EINVAL, -1, "invalid argument")                                        \
    XX(ENOMEM, -2, "out of memory")                                           \
    XX(ENOTSUP, -3, "operation or combination not supported")                 \
    XX(ETIMEDOUT, -4, "deadline passed before the operation completed")       \
    XX(EPEER, -5, "a peer rank died or left the communicator")                \
    XX(EMISMATCH, -6, "ranks disagree on the operation they called")          \
    XX(EABORTED, -7, "communicator was aborted after an earlier error")       \
    XX(ESYS, -8, "system call failed")                                        \
    XX(EAUTH, -9, "peer failed to prove the job secret")                      \
    XX(EPROTO, -10, "malformed or unexpected message on the wire")            \
    XX(EENV, -11, "launch environment missing or contradictory")              \
    XX(ECONNECT, -12, "could not connect to the store or a peer")             \
    XX(ENOSPACE, -13, "shared memory too small")                              \
    XX(EAGAIN, -14, "queue empty, or full, when the call's time ran out")     \
    XX(EREVOKED, -15, "communicator was revoked; shrink it to go on")

typedef enum shoal_status {
#define SHOAL_STATUS_ENUM_(name, value, text) SHOAL_##name = (value),
    SHOAL_STATUS_MAP(SHOAL_STATUS_ENUM_)
#undef SHOAL_STATUS_ENUM_
} shoal_status;

// Returns a static sentence describing `status`; never NULL (unknown values
// give "unknown status").
SHOAL_API const char *shoal_strerror(int status);

// Returns the enum name of `status` ("SHOAL_ETIMEDOUT"); never NULL.
SHOAL_API const char *shoal_status_name(int status);

// Returns the detailed message of the last failing shoal call made by this
// thread (which operation, which peer, how long it waited), or "" if none
// failed. The text stays valid until this thread's next failing call.
SHOAL_API const char *shoal_last_error(void);

// ---------------------------------------------------------------------------
// Element types and reduce operations
// ---------------------------------------------------------------------------

typedef enum shoal_dtype {
    SHOAL_BOOL = 0,
    SHOAL_UINT8,
    SHOAL_INT8,
    SHOAL_INT16,
    SHOAL_INT32,
    SHOAL_INT64,
    SHOAL_FLOAT16,
    SHOAL_BFLOAT16,
    SHOAL_FLOAT32,
    SHOAL_FLOAT64,
    SHOAL_DTYPE_COUNT // not a type: the number of types
} shoal_dtype;

// Returns the size of one element in bytes, or 0 for an unknown dtype.
SHOAL_API size_t shoal_dtype_size(int dtype);

// Returns the lower-case name ("float32"), or "unknown"; never NULL.
SHOAL_API const char *shoal_dtype_name(int dtype);

typedef enum shoal_op_kind {
    SHOAL_SUM = 0,
    SHOAL_PROD,
    SHOAL_MIN,
    SHOAL_MAX,
    SHOAL_BAND,
    SHOAL_BOR,
    SHOAL_BXOR,
    SHOAL_AVG,
    SHOAL_PREMUL_SUM, // multiply every input by `scalar`, then sum
    SHOAL_OP_COUNT // not an op: the number of ops
} shoal_op_kind;

// A reduce operation. Only SHOAL_PREMUL_SUM reads `scalar`.
typedef struct shoal_reduce_op {
    shoal_op_kind kind;
    double        scalar;
} shoal_reduce_op;

#define SHOAL_REDUCE_OP(k) ((shoal_reduce_op) { .kind = (k), .scalar = 0.0 })
#define SHOAL_PREMUL_SUM_OP(s)                                                \
    ((shoal_reduce_op) { .kind = SHOAL_PREMUL_SUM, .scalar = (s) })

// Returns the lower-case name ("sum"), or "unknown"; never NULL.
SHOAL_API const char *shoal_op_name(int op_kind);

// ---------------------------------------------------------------------------
// Communicators
// ---------------------------------------------------------------------------

typedef struct shoal_comm    shoal_comm;
typedef struct shoal_request shoal_request;

// Sentinel for "take this setting from the environment or the default".
#define SHOAL_UNDEF (-1)

// Creation settings. Always start from SHOAL_CONFIG_INIT so that fields
// added by later versions get their defaults: `size` lets the library tell
// which fields the caller knows about.
typedef struct shoal_config {
    size_t size; // sizeof(shoal_config), set by SHOAL_CONFIG_INIT
    int    rank; // this process's rank, or SHOAL_UNDEF (environment)
    int    nranks; // number of ranks, or SHOAL_UNDEF (environment)
    // Rendezvous store: "host:port" (TCP, served by the launcher or by rank
    // 0) or a file path (file store on a file system all ranks share).
    // NULL: from the environment.
    const char *store;
    // Job secret proven by every connection; NULL: SHOAL_SECRET. An empty
    // string turns authentication off (with a warning).
    const char *secret;
    // Default deadline of every operation, in milliseconds; SHOAL_UNDEF:
    // SHOAL_TIMEOUT_SECONDS, or 600 s.
    int64_t timeout_ms;
    // Name shown in logs and errors; NULL: "world".
    const char *name;
} shoal_config;

#define SHOAL_CONFIG_INIT                                                     \
    {                                                                         \
        .size = sizeof(shoal_config), .rank = SHOAL_UNDEF,                    \
        .nranks = SHOAL_UNDEF, .store = NULL, .secret = NULL,                 \
        .timeout_ms = SHOAL_UNDEF, .name = NULL                               \
    }

// Creates a communicator over all ranks of the job. Collective: every rank
// must call it. Blocks until every rank has joined or the deadline passes.
//   out  OUT: the new communicator; set to NULL on failure.
//   cfg  IN:  settings, or NULL to take everything from the environment:
//             SHOAL_RANK/SHOAL_SIZE/SHOAL_STORE, torchrun (RANK, WORLD_SIZE,
//             MASTER_ADDR, MASTER_PORT), Open MPI (OMPI_COMM_WORLD_RANK/SIZE),
//             MPICH (PMI_RANK/PMI_SIZE), Slurm (SLURM_PROCID/SLURM_NTASKS),
//             first match wins.
// Errors: SHOAL_EENV (environment missing or contradictory: the message
// names the variables looked for), SHOAL_EINVAL, SHOAL_ECONNECT (store
// unreachable), SHOAL_EAUTH (job secret refused), SHOAL_ETIMEDOUT,
// SHOAL_ENOTSUP (SHOAL_TRANSPORT=shm while ranks are on different hosts:
// those need TCP), SHOAL_EPEER (a rank died or failed during creation),
// SHOAL_ESYS.
SHOAL_API int shoal_comm_create(shoal_comm **out, const shoal_config *cfg);

// Destroys a communicator: waits (up to its deadline) for this rank's
// pending operations, then releases its memory, sockets and shared memory.
// Local: does not wait for other ranks. NULL is accepted and ignored.
// Returns the first error of a pending operation, or SHOAL_OK.
SHOAL_API int shoal_comm_destroy(shoal_comm *comm);

// Rank of the calling process in `comm` (0 .. size-1), or SHOAL_EINVAL.
SHOAL_API int shoal_comm_rank(const shoal_comm *comm);

// Number of ranks in `comm`, or SHOAL_EINVAL.
SHOAL_API int shoal_comm_size(const shoal_comm *comm);

// Name given at creation ("world" by default, "<parent>.split<N>" for
// split communicators); never NULL for a valid comm.
SHOAL_API const char *shoal_comm_name(const shoal_comm *comm);

// Sets the default deadline, in milliseconds, of operations issued from
// now on. Local. Errors: SHOAL_EINVAL (timeout_ms <= 0).
SHOAL_API int shoal_comm_set_timeout(shoal_comm *comm, int64_t timeout_ms);

// The default deadline, in milliseconds, of operations issued now: the
// config's timeout_ms, else SHOAL_TIMEOUT_SECONDS (a positive decimal
// number of seconds, e.g. 30 or 2.5), else 600 s, until set_timeout.
// SHOAL_EINVAL for a NULL comm.
SHOAL_API int64_t shoal_comm_timeout(const shoal_comm *comm);

// Options of one operation; they travel with that operation alone.
typedef struct shoal_call_opts {
    int64_t timeout_ms; // its deadline; <= 0: the communicator's default
    // Collectives: run this algorithm (a name shoal_comm_algorithms
    // lists) instead of the selection table's choice; NULL: the table's.
    // Every rank must pass the same (a different one fails the call with
    // SHOAL_EMISMATCH, as other differing arguments do). One that cannot
    // run the call on this communicator (or this call: the host-aware
    // all_reduce and 16-bit floats) fails it with SHOAL_ENOTSUP before
    // anything is sent; the communicator stays usable. The string must
    // stay valid until the operation is called.
    const char *algo;
    // Non-zero: the caller waits for this operation (shoal_wait or
    // shoal_wait_for) right after issuing it, driving it itself, so the
    // progress thread is not woken for it at issue (a wake-up that costs
    // a system call and a core for a few microseconds). When a wait
    // returns with the operation unfinished (shoal_wait_for), the progress
    // thread takes over as usual. Without a wait the operation advances
    // only when this rank next waits: set it only when one follows.
    int caller_waits;
} shoal_call_opts;

// Gives `opts` to the next operation this thread issues, on any
// communicator (send, receive, broadcast, barrier or one of the
// collectives below, blocking or not): that operation takes them, whether
// it starts or fails its argument checks, and the one after it has none
// again. No communicator's default changes, so threads issuing operations
// at the same time do not see each other's options. NULL drops options
// given and not taken yet. Compiled plans (shoal_plan_run) do not take
// them. Errors: SHOAL_EINVAL (timeout_ms < 0).
SHOAL_API int shoal_next_call_opts(const shoal_call_opts *opts);

// The algorithms that can run `collective` ("all_reduce", "all_gather",
// "reduce_scatter", "all_to_all", "reduce", "gather", "scatter",
// "broadcast", "barrier"; underscores optional) on this communicator:
// up to `max` names into `names` (static strings); returns how many there
// are in all. For tuners, with shoal_call_opts.algo. Errors: SHOAL_EINVAL
// (unknown collective, NULL arguments with max > 0).
SHOAL_API int shoal_comm_algorithms(
    shoal_comm *comm, const char *collective, const char **names, int max);

// The algorithm the communicator's table chooses for `collective` on
// `bytes` bytes (the size its rules use: all_reduce's buffer, the total
// of every rank's block for all_gather and the like), into *name (a
// static string). Errors: SHOAL_EINVAL.
SHOAL_API int shoal_comm_algorithm_for(
    shoal_comm *comm, const char *collective, size_t bytes, const char **name);

// The cost model of `algorithm` running `collective` on `bytes` bytes
// (as shoal_comm_algorithm_for counts them) on this communicator: into
// coef[0] the latency rounds (alpha), coef[1] the bytes the busiest rank
// moves (beta), coef[2] the bytes a rank reduces (gamma), so that a
// machine's time is alpha * coef[0] + beta * coef[1] + gamma * coef[2].
// For fitting alpha, beta and gamma to measurements (shoal-tune) and for
// predicting times. Errors: SHOAL_EINVAL (unknown collective, NULL
// arguments), SHOAL_ENOTSUP (the algorithm cannot run it here).
SHOAL_API int shoal_comm_algorithm_cost(shoal_comm *comm,
    const char *collective, const char *algorithm, size_t bytes,
    double coef[3]);

// The number of hosts `comm` spans (the "hosts" field of tuning rules).
// Errors: SHOAL_EINVAL (NULL comm).
SHOAL_API int shoal_comm_hosts(const shoal_comm *comm);

// The tuning file communicators read (rank 0, at creation):
// SHOAL_TUNING_FILE, else $XDG_CACHE_HOME/shoal/tuning, else
// ~/.cache/shoal/tuning; into buf. Returns buf, or NULL when no path can
// be formed (no HOME) or it does not fit in len bytes.
SHOAL_API const char *shoal_tuning_file_path(char *buf, size_t len);

// Aborts the communicator on every rank: operations in flight and later
// ones fail with SHOAL_EABORTED, and a message naming this rank and
// `reason` (NULL: "asked by the application"). Does not block and is
// safe from any thread (a watchdog's); the
// communicator must still be destroyed. A communicator that failed before
// keeps its first cause. Errors: SHOAL_EINVAL (NULL comm).
SHOAL_API int shoal_comm_abort(shoal_comm *comm, const char *reason);

// The last error recorded on `comm`: operation, its sequence number, the
// peer involved and the time waited. "" when nothing failed. Valid until
// the next failing call on `comm`.
SHOAL_API const char *shoal_comm_last_error(const shoal_comm *comm);

// Marker for shoal_comm_split: this rank joins no new communicator.
#define SHOAL_SPLIT_NONE (-1)

// Splits `comm` by color: ranks passing the same color >= 0 form a new
// communicator, ranked by (key, old rank). Collective over `comm`: every
// rank must call it. A rank passing SHOAL_SPLIT_NONE gets *out = NULL.
// Errors: SHOAL_EINVAL (color < -1), plus those of shoal_comm_create.
SHOAL_API int shoal_comm_split(
    shoal_comm *comm, int color, int key, shoal_comm **out);

// Splits `comm` by an explicit list of ranks: the listed ranks form a new
// communicator in list order. Collective over `comm`. Members pass the same
// list (which must contain themselves); ranks outside the group pass
// nranks = 0 and get *out = NULL.
// Errors: SHOAL_EINVAL (caller not in a non-empty list, duplicate or
// out-of-range ranks), SHOAL_EMISMATCH (members passed different lists).
SHOAL_API int shoal_comm_split_ranks(
    shoal_comm *comm, const int *ranks, int nranks, shoal_comm **out);

// ---------------------------------------------------------------------------
// Surviving a lost rank (ULFM's revoke, shrink, agree and get_failed)
// ---------------------------------------------------------------------------
//
// A rank that dies aborts its communicators on every other rank (their
// operations fail with SHOAL_EPEER). The survivors go on without it by
// shrinking the communicator: they agree, through the store, on who is
// still there and form a new communicator of those ranks. The agreement
// needs nothing from the dead ranks, but it needs the store: a store
// served by the launcher (shoalrun) or by a process that is still alive.
// Deaths are known from the store (a rank's connection to it closed
// without an orderly close) and from the transport (a rank that destroyed
// its communicator said goodbye). A rank that is alive but does not call
// the agreement (stopped, or busy elsewhere) is waited for until the
// communicator's timeout, as any collective's peer.

// Revokes the communicator on every rank that can still be reached: its
// operations in flight and later ones fail with SHOAL_EREVOKED and a
// message naming this rank and `reason` (NULL: "asked by the
// application"). Not collective; does not block. The communicator stays
// valid as the parent of shoal_comm_shrink and shoal_comm_agree. A
// communicator that failed before keeps its first cause.
// Errors: SHOAL_EINVAL (NULL comm).
SHOAL_API int shoal_comm_revoke(shoal_comm *comm, const char *reason);

// A fault-tolerant AND: every live rank of `comm` passes *flag (0 or 1);
// once every rank has either joined or is known to have died or left,
// each gets the AND of the flags of the ranks that joined in *flag, and
// the same set of the ranks that did not join (ascending) in
// failed[0..*nfailed) (failed may be NULL; it has room for max_failed
// ranks, *nfailed counts them all). Works on a communicator that failed
// (aborted, revoked). Collective over the live ranks: each calls the
// agreements and shrinks of one communicator in the same order.
// Errors: SHOAL_EINVAL, SHOAL_ETIMEDOUT (a live rank never joined: named),
// SHOAL_ECONNECT (the store is gone), SHOAL_ENOTSUP (a file store: it
// cannot tell a dead rank).
SHOAL_API int shoal_comm_agree(
    shoal_comm *comm, int *flag, int *failed, int max_failed, int *nfailed);

// A new communicator of the ranks of `comm` that are alive, in the same
// order, agreed as by shoal_comm_agree; a rank that dies during the
// shrink is left out too (the agreement repeats). Works on a failed
// communicator (the usual case: a death aborted it). *out is NULL on
// failure. Errors: those of shoal_comm_agree and shoal_comm_create.
SHOAL_API int shoal_comm_shrink(shoal_comm *comm, shoal_comm **out);

// The ranks of `comm` this rank knows to have died (the transport saw
// their connection drop, or the store saw theirs close without an orderly
// close), ascending, into ranks[0..max) (may be NULL); returns how many,
// or an error. Ranks that destroyed their communicator are not failed.
// Does not block on peers (asks the store once per rank not known dead).
SHOAL_API int shoal_comm_get_failed(shoal_comm *comm, int *ranks, int max);

// The communicator's failure without blocking: SHOAL_OK while it is
// fine, else the status that failed it (SHOAL_EPEER, SHOAL_ETIMEDOUT,
// SHOAL_EABORTED, SHOAL_EREVOKED, ...) with its cause as this thread's
// error text (shoal_last_error). Safe from any thread.
SHOAL_API int shoal_comm_get_async_error(shoal_comm *comm);

// ---------------------------------------------------------------------------
// The flight recorder
// ---------------------------------------------------------------------------
//
// Each communicator keeps its last SHOAL_FR_ENTRIES operations (2000 by
// default; 0 turns recording off): kind, number, sizes and dtype, peer or
// root, algorithm, state (started, completed, failed) and start time. It
// is written on a time-out, an abort or a revoke when SHOAL_FR_DUMP_DIR
// names a directory, and on demand here, as one file per rank,
// <dir>/shoal_trace_<communicator name>_rank_<rank>, in torch's
// flight-recorder format: `python -m
// torch.distributed.flight_recorder.fr_trace <dir>` reads one
// communicator's files and names the rank that skipped or mismatched a
// collective. Entries are labelled "gloo:<collective>" (the analyser knows
// only torch's backends' names); ranks are those of the communicator.

// Writes comm's flight record into dir (NULL: SHOAL_FR_DUMP_DIR). Errors:
// SHOAL_EINVAL (NULL comm), SHOAL_ENOTSUP (recording off, or no
// directory), SHOAL_ESYS (the file could not be written).
SHOAL_API int shoal_comm_dump_flight_record(shoal_comm *comm, const char *dir);

// The same for every communicator of this process.
SHOAL_API int shoal_dump_flight_records(const char *dir);

// ---------------------------------------------------------------------------
// Stragglers
// ---------------------------------------------------------------------------
//
// Who arrives last at collectives, seen from what shared memory already
// holds: each rank's descriptor of a collective carries the time it
// called it, and a rank reads every rank's time for an earlier collective
// while it waits in a later one (time it would spin anyway). No extra
// message. This rank's view: collectives it accounted while it waited (a
// rank that never waits, the usual straggler, accounts few). Over shared
// memory only; SHOAL_ENOTSUP over TCP and UCX.

#define SHOAL_LATE_BUCKETS                                                    \
    8 // < 1 us, 10 us, 100 us, 1 ms, 10 ms, 100 ms, 1 s, more

typedef struct shoal_peer_stats {
    uint64_t collectives; // accounted with this rank's arrival known
    uint64_t last; // of them, those it arrived last at (after the others)
    uint64_t late[SHOAL_LATE_BUCKETS]; // its lateness after the first
    int64_t  late_ns_total; // sum of its lateness
    int64_t  late_ns_max;
} shoal_peer_stats;

// Fills out[0 .. nranks) (nranks = the communicator's size) with each
// rank's arrivals, this rank's included. Errors: SHOAL_EINVAL (NULL,
// nranks != size), SHOAL_ENOTSUP (not over shared memory).
SHOAL_API int shoal_comm_stats(
    shoal_comm *comm, shoal_peer_stats *out, int nranks);

// ---------------------------------------------------------------------------
// Requests (non-blocking operations)
// ---------------------------------------------------------------------------
//
// Every operation below has a blocking form and a non-blocking form taking
// `shoal_request **req`. A non-blocking operation makes progress in the
// background without the caller polling. Its buffers must stay valid and
// unmodified (send side) or unread (receive side) until shoal_test returns
// SHOAL_OK or shoal_wait returns. If the call returns an error, no request is
// created and *req is NULL.
//
// Failures: an operation fails with SHOAL_ETIMEDOUT when its deadline passes,
// SHOAL_EPEER when a rank it needs died or destroyed its communicator, and
// SHOAL_EMISMATCH when ranks called different operations, roots, counts or
// dtypes at the same point. These outside faults abort the communicator on
// every rank: later operations fail with SHOAL_EABORTED and the same
// message. Argument errors (SHOAL_EINVAL) are found before anything is sent
// and leave the communicator usable.

// Returns SHOAL_OK if the operation completed, SHOAL_INPROGRESS if not, or
// its error. Never blocks.
SHOAL_API int shoal_test(shoal_request *req);

// Blocks until the operation completes or fails. timeout_ms < 0 waits until
// the operation's own deadline; timeout_ms >= 0 sets a shorter one for this
// wait. A passed deadline fails the operation (SHOAL_ETIMEDOUT) and aborts
// the communicator, as partial transfers cannot be taken back.
SHOAL_API int shoal_wait(shoal_request *req, int64_t timeout_ms);

// Blocks at most wait_ms (>= 0) for the operation without failing it:
// SHOAL_OK if it completed, SHOAL_INPROGRESS if it is still running, or its
// error (its own deadline still applies). For callers that must look up
// between waits, such as a thread checking for Ctrl-C. SHOAL_EINVAL for a
// NULL req or a negative wait_ms.
SHOAL_API int shoal_wait_for(shoal_request *req, int64_t wait_ms);

// Releases a request. An incomplete request is waited for first (up to its
// deadline). NULL is accepted.
SHOAL_API void shoal_request_free(shoal_request *req);

// Blocks until every operation issued on `comm` by this rank has completed.
// Returns the first error among them, or SHOAL_OK; the failure of a send or
// receive issued without a request (see shoal_isend) is reported here, once,
// naming the operation. Once the communicator has failed (an abort, a lost
// peer) sync returns that failure even where this rank's own operations all
// completed before it: the communicator can carry no more work.
SHOAL_API int shoal_comm_sync(shoal_comm *comm);

// ---------------------------------------------------------------------------
// Point-to-point
// ---------------------------------------------------------------------------
//
// Messages from one rank to another with the same tag arrive in the order
// they were sent. Sender and receiver must agree on count and dtype (a
// different size fails the receive with SHOAL_EMISMATCH). Tags are >= 0.
// A send may complete before the receiver has posted its receive.

// Sends `count` elements of `dtype` at `buf` to rank `peer`. Blocks until
// `buf` may be reused. Errors: SHOAL_EINVAL (NULL buf with count > 0, peer
// out of range, unknown dtype, negative tag), plus the failures above.
SHOAL_API int shoal_send(shoal_comm *comm, const void *buf, size_t count,
    shoal_dtype dtype, int peer, int tag);
// shoal_isend starts the send and returns at once; `buf` must not change
// until it completes. With `req` NULL the communicator tracks it: it is
// complete when shoal_comm_sync or shoal_barrier returns, which report its
// failure (the native communicator view's send, numr's contract).
SHOAL_API int shoal_isend(shoal_comm *comm, const void *buf, size_t count,
    shoal_dtype dtype, int peer, int tag, shoal_request **req);

// Receives `count` elements of `dtype` from rank `peer` into `buf`. Blocks
// until the data is in `buf`. `peer` may be SHOAL_ANY_SOURCE (see below).
// Errors as shoal_send; SHOAL_ANY_SOURCE on a communicator of one rank is
// SHOAL_EINVAL (no other rank can send, and sends to oneself are refused).
SHOAL_API int shoal_recv(shoal_comm *comm, void *buf, size_t count,
    shoal_dtype dtype, int peer, int tag);
// shoal_irecv starts the receive; with `req` NULL the communicator tracks
// it, as for shoal_isend: `buf` holds the message once shoal_comm_sync or
// shoal_barrier has returned SHOAL_OK.
SHOAL_API int shoal_irecv(shoal_comm *comm, void *buf, size_t count,
    shoal_dtype dtype, int peer, int tag, shoal_request **req);

// `peer` of a receive that takes a message with its tag from any rank.
//
// Matching: a message goes to the earliest posted receive, named or
// any-source, that matches its sender and tag (post order, as in MPI); a
// receive takes the earliest arrived message that matches it. Messages
// from one sender with one tag still arrive in send order. Among senders,
// "arrived" is the order in which this rank first sees a message (its
// first bytes, found by the progress engine's pass over every sender),
// not the order of the send calls: so a message that has reached this
// rank waits only for those seen before it, and no sender's message waits
// forever while receives for its tag keep being posted. Nothing more is
// promised about which sender goes first.
//
// A size different from the message's fails the receive (SHOAL_EMISMATCH),
// as for a named receive. Any rank's death aborts the communicator and so
// fails a pending any-source receive (SHOAL_EPEER), since that rank might
// have been its sender. Until it matches a message it also fails with
// SHOAL_EPEER once every other rank has destroyed its communicator; a rank
// that leaves while others remain does not fail it. Deadlines and aborts
// as for any request.
#define SHOAL_ANY_SOURCE (-1)

// Returns the rank whose message a completed receive got: its `peer`, or
// for SHOAL_ANY_SOURCE the sender it matched. Never blocks. Errors:
// SHOAL_EINVAL (req NULL, not a receive, still in progress, or failed).
SHOAL_API int shoal_request_source(const shoal_request *req);

// shoal_recv with SHOAL_ANY_SOURCE that also says who sent: on success
// *source (if not NULL) is the sender's rank; on failure it is
// SHOAL_ANY_SOURCE. Blocks until the data is in `buf`. Errors as
// shoal_recv.
SHOAL_API int shoal_recv_any(shoal_comm *comm, void *buf, size_t count,
    shoal_dtype dtype, int tag, int *source);

// ---------------------------------------------------------------------------
// Collectives
// ---------------------------------------------------------------------------
//
// Collective over `comm`: every rank calls the same collectives in the same
// order with the same root, count and dtype.

// Blocks until every rank of `comm` has entered the barrier. Implies
// shoal_comm_sync: when it returns, every operation this rank issued before
// it has completed (its error, if one failed, is returned). shoal_ibarrier
// does not imply it.
SHOAL_API int shoal_barrier(shoal_comm *comm);
SHOAL_API int shoal_ibarrier(shoal_comm *comm, shoal_request **req);

// Copies `count` elements of `dtype` from `buf` on rank `root` into `buf`
// on every other rank. Errors: SHOAL_EINVAL (NULL buf with count > 0, root
// out of range, unknown dtype), plus the failures above.
SHOAL_API int shoal_broadcast(
    shoal_comm *comm, void *buf, size_t count, shoal_dtype dtype, int root);
SHOAL_API int shoal_ibroadcast(shoal_comm *comm, void *buf, size_t count,
    shoal_dtype dtype, int root, shoal_request **req);

// ---------------------------------------------------------------------------
// Collectives with reductions and data movement
// ---------------------------------------------------------------------------
//
// Buffers: `sendbuf` is read, `recvbuf` written; both stay owned by the
// caller. Counts are in elements of `dtype`. Reduce ops: SUM, PROD, MIN and
// MAX on every dtype (MIN/MAX propagate NaN, as torch.maximum does); AVG on
// every dtype but bool (on integer types it divides the sum by the rank
// count rounding toward zero, as torch's rounding_mode='trunc' does); BAND,
// BOR, BXOR on integer and bool types only; PREMUL_SUM on floating types
// only. float16 and bfloat16 accumulate in float32 and round once. Any
// other pair fails with SHOAL_EINVAL before anything is sent. Results are
// bitwise identical on every rank (inputs are combined in rank order).
//
// In-place forms are given by pointers, as noted per call (the v-variants'
// in-place forms use the packed displacement of this rank's block); any
// other overlap of sendbuf and recvbuf fails with SHOAL_EINVAL.
//
// Errors of every call: SHOAL_EINVAL (NULL buffer with count > 0, root out
// of range, unknown dtype or op, bad dtype/op pair, overlapping buffers),
// SHOAL_EMISMATCH (ranks passed different counts, dtypes, ops or roots),
// plus the failures listed above for requests.

// Reduces `count` elements of every rank's sendbuf into every rank's
// recvbuf. In place: sendbuf == recvbuf.
SHOAL_API int shoal_all_reduce(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, size_t count, shoal_dtype dtype, shoal_reduce_op op);
SHOAL_API int shoal_iall_reduce(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, size_t count, shoal_dtype dtype, shoal_reduce_op op,
    shoal_request **req);

// Reduces into recvbuf on `root` only (recvbuf is ignored, and may be NULL,
// elsewhere). In place on the root: sendbuf == recvbuf.
SHOAL_API int shoal_reduce(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, size_t count, shoal_dtype dtype, shoal_reduce_op op,
    int root);
SHOAL_API int shoal_ireduce(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, size_t count, shoal_dtype dtype, shoal_reduce_op op,
    int root, shoal_request **req);

// Every rank contributes `count` elements; recvbuf (size * count elements)
// receives them in rank order. In place: sendbuf == recvbuf + rank * count
// elements.
SHOAL_API int shoal_all_gather(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, size_t count, shoal_dtype dtype);
SHOAL_API int shoal_iall_gather(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, size_t count, shoal_dtype dtype, shoal_request **req);

// As shoal_all_gather with per-rank counts: rank r contributes
// recvcounts[r] elements; blocks are packed in rank order in recvbuf.
// recvcounts (size entries) must be equal on every rank.
SHOAL_API int shoal_all_gather_v(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, const size_t *recvcounts, shoal_dtype dtype);
SHOAL_API int shoal_iall_gather_v(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, const size_t *recvcounts, shoal_dtype dtype,
    shoal_request **req);

// sendbuf holds size blocks of `recvcount` elements; rank r receives the
// reduction of every rank's block r. In place: recvbuf == sendbuf + rank *
// recvcount elements.
SHOAL_API int shoal_reduce_scatter(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, size_t recvcount, shoal_dtype dtype, shoal_reduce_op op);
SHOAL_API int shoal_ireduce_scatter(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, size_t recvcount, shoal_dtype dtype, shoal_reduce_op op,
    shoal_request **req);

// As shoal_reduce_scatter with per-rank counts: block r of sendbuf has
// recvcounts[r] elements (blocks packed in rank order); recvcounts must be
// equal on every rank.
SHOAL_API int shoal_reduce_scatter_v(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, const size_t *recvcounts, shoal_dtype dtype,
    shoal_reduce_op op);
SHOAL_API int shoal_ireduce_scatter_v(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, const size_t *recvcounts, shoal_dtype dtype,
    shoal_reduce_op op, shoal_request **req);

// Block p (count elements) of rank r's sendbuf lands in block r of rank p's
// recvbuf. sendbuf and recvbuf must not overlap.
SHOAL_API int shoal_all_to_all(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, size_t count, shoal_dtype dtype);
SHOAL_API int shoal_iall_to_all(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, size_t count, shoal_dtype dtype, shoal_request **req);

// As shoal_all_to_all with split sizes (torch's all_to_all_single): rank r
// sends sendcounts[p] elements to p and receives recvcounts[p] from p,
// blocks packed in rank order. sendcounts[p] on rank r must equal
// recvcounts[r] on rank p.
SHOAL_API int shoal_all_to_all_v(shoal_comm *comm, const void *sendbuf,
    const size_t *sendcounts, void *recvbuf, const size_t *recvcounts,
    shoal_dtype dtype);
SHOAL_API int shoal_iall_to_all_v(shoal_comm *comm, const void *sendbuf,
    const size_t *sendcounts, void *recvbuf, const size_t *recvcounts,
    shoal_dtype dtype, shoal_request **req);

// Every rank sends `count` elements; the root's recvbuf (size * count)
// receives them in rank order (recvbuf ignored elsewhere). In place on the
// root: sendbuf == recvbuf + root * count elements.
SHOAL_API int shoal_gather(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, size_t count, shoal_dtype dtype, int root);
SHOAL_API int shoal_igather(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, size_t count, shoal_dtype dtype, int root,
    shoal_request **req);

// The root's sendbuf holds size blocks of `count` elements; block r lands
// in rank r's recvbuf (sendbuf ignored elsewhere). In place on the root:
// recvbuf == sendbuf + root * count elements.
SHOAL_API int shoal_scatter(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, size_t count, shoal_dtype dtype, int root);
SHOAL_API int shoal_iscatter(shoal_comm *comm, const void *sendbuf,
    void *recvbuf, size_t count, shoal_dtype dtype, int root,
    shoal_request **req);

// ---------------------------------------------------------------------------
// Shared-memory buffers (zero copy)
// ---------------------------------------------------------------------------

// Allocates `bytes` (64-byte aligned) of memory that the other ranks of
// `comm` can read in place: collectives whose buffers lie in such memory
// skip the copy through staging memory or the kernel. Over TCP the memory
// is shared with the ranks of this host when the host runs several of the
// communicator's ranks (its host-local shared memory), else private.
// Local (not collective). The memory stays valid until shoal_free or the
// destruction of `comm`. Errors: SHOAL_EINVAL, SHOAL_ENOSPACE (the
// communicator's shared heap, SHOAL_SHM_HEAP_BYTES per rank, is
// exhausted).
SHOAL_API int shoal_alloc(shoal_comm *comm, size_t bytes, void **out);

// Releases memory from shoal_alloc. NULL is accepted. Errors: SHOAL_EINVAL
// (not a live allocation of this communicator).
SHOAL_API int shoal_free(shoal_comm *comm, void *ptr);

// Memory registration (torchcomms' commRegister/commDeregister): declares
// a buffer that operations on `comm` will use again and again, so that the
// transport prepares it once. What it buys depends on where the buffer is
// and on the transport (shoal_mem_reg_kind says which):
// - SHOAL_MEM_SHARED: it lies in the communicator's shared heap
//   (shoal_alloc): collectives and windows read and write it in place.
//   Registering adds nothing to that; the Python layer moves a tensor
//   there first (shoal.share_memory_), which is what buys the zero copy.
// - SHOAL_MEM_PINNED: other memory of a shared-memory communicator, locked
//   in RAM (mlock, within RLIMIT_MEMLOCK), so that peers' single copies
//   through the kernel never wait for a page to come back.
// - SHOAL_MEM_PLAIN: nothing to prepare (over TCP every message is copied
//   by the kernel's sockets; or the lock was refused: shoal_last_error
//   says why at registration, as an INFO line).
// Local; the buffer stays the caller's and must outlive the registration.
// A registration outlives its communicator harmlessly (destroying the
// communicator releases what it holds). Errors: SHOAL_EINVAL.
enum {
    SHOAL_MEM_PLAIN  = 0,
    SHOAL_MEM_SHARED = 1,
    SHOAL_MEM_PINNED = 2,
};
typedef struct shoal_mem_reg shoal_mem_reg;
SHOAL_API int                shoal_mem_register(
                   shoal_comm *comm, void *ptr, size_t bytes, shoal_mem_reg **out);
// Releases a registration (NULL accepted).
SHOAL_API int shoal_mem_deregister(shoal_mem_reg *reg);
// SHOAL_MEM_SHARED, SHOAL_MEM_PINNED or SHOAL_MEM_PLAIN; SHOAL_EINVAL for
// NULL.
SHOAL_API int shoal_mem_reg_kind(const shoal_mem_reg *reg);

// ---------------------------------------------------------------------------
// Windows: one-sided put, signal and mapped peer memory
// ---------------------------------------------------------------------------
//
// A window lets a rank write into a buffer its peers registered, without
// the peer taking part: `put` copies local data to a peer's buffer, and
// `signal` / `wait_signal` tell the peer the data is there. Each ordered
// pair of ranks has one signal counter per window: the n-th
// shoal_window_wait_signal(win, p) returns once rank p's n-th
// shoal_window_signal(win, me) arrived.
//
// Ordering: every put a rank issued to a target before a signal to that
// target is complete and visible in the target's buffer when the target's
// matching wait_signal returns, whether or not the put's request was waited
// for. Puts to one target without a signal between them are not ordered
// against each other (writes to the same bytes: the last one to land wins).
//
// Memory: over shared memory a buffer from shoal_alloc is mapped by every
// peer, so a put is one memcpy by the origin, and shoal_window_peer_ptr
// gives the peer's buffer itself; any other buffer is reached by a single
// copy through the kernel (process_vm_writev), and has no peer pointer,
// except that a put of at most 4 KiB to a target that waits on the window
// at that moment (in wait_signal, or in a put of its own) is copied by the
// target from a slot in its shared heap, which costs less than the
// system call. Either way the put returns once the data is there.
// Over TCP a put and a signal are messages that the target's progress
// engine applies on arrival (its progress thread, while a window is
// registered), with no call on the target's side; a peer on this host of
// a communicator spanning hosts is reached through the host's shared
// memory as above (the window is registered there too).
//
// Deadlines: wait_signal takes the communicator's timeout, or the one
// shoal_next_call_opts gives; a passed deadline fails it with
// SHOAL_ETIMEDOUT and aborts the communicator, as for every operation. A
// dead peer fails waits on it with SHOAL_EPEER naming the rank.

typedef struct shoal_window shoal_window;

// How this rank reaches a peer's registered buffer.
typedef enum shoal_window_access {
    SHOAL_ACCESS_UNIFIED  = 0, // mapped here: shoal_window_peer_ptr works
    SHOAL_ACCESS_SEPARATE = 1, // reached by copies or messages only
} shoal_window_access;

// Creates an empty window on `comm`. Local (not collective). Errors:
// SHOAL_EINVAL (NULL argument), SHOAL_ENOMEM.
SHOAL_API int shoal_window_create(shoal_comm *comm, shoal_window **out);

// Releases a window. Local. A registered window should be deregistered
// first (collectively); freeing one that is still registered releases this
// rank's side only: its memory stays reserved until the communicator is
// destroyed, and a peer's later put to it is a protocol error. NULL is
// accepted.
SHOAL_API void shoal_window_free(shoal_window *win);

// Registers `count` elements of `dtype` at `buf` as the window's memory.
// Collective over the window's communicator: every rank calls it, in the
// same order as its collectives, with the same byte size and the same
// element size. The caller keeps ownership of `buf`, which must stay valid
// until shoal_window_deregister (or the window's or communicator's end).
// A rank's bad arguments (NULL buf with count > 0, an unknown dtype, a
// window already registered) or a size that differs between ranks fail the
// call on every rank with the same SHOAL_EINVAL message naming the rank,
// and the communicator stays usable. Errors: SHOAL_EINVAL, SHOAL_ENOSPACE
// (no room for the window's signal counters in the heap), plus the
// failures of collectives.
SHOAL_API int shoal_window_register(
    shoal_window *win, void *buf, size_t count, shoal_dtype dtype);

// Deregisters the window's memory. Collective. Returns once every rank's
// puts and signals to this rank have landed and every rank deregistered:
// afterwards no peer writes to the buffer, and peer pointers from
// shoal_window_peer_ptr must not be used. SHOAL_EINVAL when not
// registered (on this rank only: the others wait for it).
SHOAL_API int shoal_window_deregister(shoal_window *win);

// Registered bytes (0 when none, or for a NULL window).
SHOAL_API size_t shoal_window_bytes(const shoal_window *win);

// Writes `count` elements of `dtype` from `src` into rank `dst`'s registered
// buffer at element `target_offset` (elements of `dtype`, whose size must
// be the window's element size). Blocks until `src` may be reused; over
// shared memory the data is then in the target's buffer. dst may be this
// rank. Errors (found before anything is written): SHOAL_EINVAL (not
// registered, dst out of range, NULL src with count > 0, element size
// differs from the window's, or the range exceeds the window: the message
// gives both sizes), plus the failures of operations.
SHOAL_API int shoal_window_put(shoal_window *win, const void *src,
    size_t count, shoal_dtype dtype, int dst, size_t target_offset);
// Non-blocking put: `src` stays untouched by the caller until the request
// completes. Over shared memory the copy is done before it returns.
SHOAL_API int shoal_window_iput(shoal_window *win, const void *src,
    size_t count, shoal_dtype dtype, int dst, size_t target_offset,
    shoal_request **req);

// Increments this rank's signal counter at rank `dst` (see the ordering
// above). Does not wait for the target. Errors: SHOAL_EINVAL (not
// registered, dst out of range), plus the failures of operations.
SHOAL_API int shoal_window_signal(shoal_window *win, int dst);
SHOAL_API int shoal_window_isignal(
    shoal_window *win, int dst, shoal_request **req);

// Blocks until rank `peer`'s next signal to this rank has arrived (the
// n-th call for `peer` waits for its n-th signal). Errors: SHOAL_EINVAL
// (not registered, peer out of range), SHOAL_ETIMEDOUT, SHOAL_EPEER, plus
// the failures of operations.
SHOAL_API int shoal_window_wait_signal(shoal_window *win, int peer);
SHOAL_API int shoal_window_iwait_signal(
    shoal_window *win, int peer, shoal_request **req);

// How this rank reaches `peer`'s registered buffer (shoal_window_access),
// or SHOAL_EINVAL (not registered, peer out of range).
SHOAL_API int shoal_window_access_of(shoal_window *win, int peer);

// Points *out at `peer`'s registered buffer, mapped in this process, for
// direct loads and stores (valid until deregistration). SHOAL_ENOTSUP,
// with *out NULL, where the transport cannot map it (the peer's buffer is
// not from shoal_alloc, or the peer is on another host); SHOAL_EINVAL
// (not registered, peer out of range).
SHOAL_API int shoal_window_peer_ptr(shoal_window *win, int peer, void **out);

// ---------------------------------------------------------------------------
// Queues: tensors and objects between ranks, FIFO per sender
// ---------------------------------------------------------------------------
//
// A queue lives on one rank (its location) or on several (multicast: every
// put is delivered to each of them, and each takes from its own copy).
// Any rank of the communicator may put; any rank may take from a queue
// with one location (a remote get asks its location), only the locations
// from a multicast one. Items keep their order per sender; items of
// different senders interleave.
//
// A put never waits for the receiving rank to call anything: it writes
// the item into a ring that the location registered for it in the
// communicator's queue channel (a window, see "Windows"), and the
// location's progress thread moves it into the queue. Each sender has a
// ring of SHOAL_QUEUE_RING_BYTES (default 1 MiB) at each rank; an item
// larger than the ring goes in pieces as the location takes them in. A
// queue holds at most SHOAL_QUEUE_CAPACITY items (default 65536): while
// it is full its location takes nothing more from a sender whose next
// item is for it, so that sender's puts wait (or fail with SHOAL_EAGAIN
// once their time is out) when its ring fills, puts to other queues of
// that location included.
//
// The channel: one per communicator, opened by every rank together
// (shoal_queue_channel_open; the first shoal_queue_create opens it). A
// named queue is opened by one rank alone, on a communicator whose channel
// is open.
//
// Times: `timeout_ms` < 0 waits without limit (a dead location still ends
// the wait, with SHOAL_EPEER naming it), 0 does not wait, > 0 waits that
// long. A time that runs out returns SHOAL_EAGAIN and leaves the
// communicator as it was: it is not a failure.

typedef struct shoal_queue      shoal_queue;
typedef struct shoal_queue_item shoal_queue_item;

// What an item holds: a tensor (dtype and shape describe its bytes), or
// bytes the application encoded (a pickled object, say).
typedef enum shoal_queue_kind {
    SHOAL_QUEUE_TENSOR = 0,
    SHOAL_QUEUE_OBJECT = 1,
} shoal_queue_kind;

#define SHOAL_QUEUE_MAX_DIMS 8
// Put flag: the item belongs to a transaction whose next item follows;
// the receiving rank shows none of the transaction's items until one
// without the flag arrives, and drops them if the sender dies first.
#define SHOAL_QUEUE_MORE 1u

// Opens the communicator's queue channel. Collective; a no-op where it is
// open already. Errors: those of shoal_window_register (SHOAL_ENOSPACE:
// no room for the rings in the shared heap).
SHOAL_API int shoal_queue_channel_open(shoal_comm *comm);

// Creates an unnamed queue, collectively: every rank calls it, in the
// same order as its other queue creations, with the same locations.
// `locations` lists `nlocations` distinct ranks (1 .. size). `streaming`
// must be 0: puts always become visible whole (SHOAL_ENOTSUP otherwise).
// Errors: SHOAL_EINVAL, SHOAL_EMISMATCH (ranks passed different
// locations), SHOAL_ENOTSUP, plus those of shoal_queue_channel_open.
SHOAL_API int shoal_queue_create(shoal_comm *comm, const int *locations,
    int nlocations, int streaming, shoal_queue **out);

// Opens the named queue `name` (1 .. 255 bytes) by this rank alone: the
// same name and locations on any rank reach the same queue. Opening a
// name this rank opened before with other locations fails with
// SHOAL_EINVAL. Errors: SHOAL_EINVAL (also: the channel is not open),
// SHOAL_ENOTSUP (streaming).
SHOAL_API int shoal_queue_open(shoal_comm *comm, const char *name,
    const int *locations, int nlocations, int streaming, shoal_queue **out);

// Releases this rank's handle (NULL accepted). Items stay in the queue.
SHOAL_API void shoal_queue_free(shoal_queue *q);

// The queue's id: equal on every rank for the same queue.
SHOAL_API uint64_t shoal_queue_id(const shoal_queue *q);

// Puts an item: `bytes` bytes at `data`, which may be reused on return;
// for a tensor, `dtype` and `shape[ndim]` (ndim <= SHOAL_QUEUE_MAX_DIMS)
// must describe exactly `bytes`. `flags`: 0 or SHOAL_QUEUE_MORE. Returns
// once the item is in the ring of every location on this host (a size
// asked from any rank afterwards counts it), or read by it (large items),
// and on its way to each location on another host (it arrives after, in
// order: a size asked before then misses it).
// Errors: SHOAL_EINVAL, SHOAL_EAGAIN (no room before the time ran out;
// nothing was sent), SHOAL_EPEER, SHOAL_EABORTED.
SHOAL_API int shoal_queue_put(shoal_queue *q, shoal_queue_kind kind,
    const void *data, size_t bytes, shoal_dtype dtype, int ndim,
    const int64_t *shape, unsigned flags, int64_t timeout_ms);

// The same, returning at once with *req (shoal_wait / shoal_test): `data`
// must stay unchanged until it completes. A large item a location on this
// host reads from `data` itself completes when that location has read it,
// while the caller goes on; any other item is sent on return, *req done.
SHOAL_API int shoal_queue_iput(shoal_queue *q, shoal_queue_kind kind,
    const void *data, size_t bytes, shoal_dtype dtype, int ndim,
    const int64_t *shape, unsigned flags, int64_t timeout_ms,
    shoal_request **req);

// Takes the queue's next item, waiting up to `timeout_ms`. The caller owns
// *out (shoal_queue_item_free). Errors: SHOAL_EAGAIN (empty until the time
// ran out), SHOAL_EINVAL (a multicast queue this rank is not a location
// of), SHOAL_EPEER (the location died), SHOAL_EABORTED.
SHOAL_API int shoal_queue_get(
    shoal_queue *q, int64_t timeout_ms, shoal_queue_item **out);

// The number of items in the queue now (asked of its location: a round
// trip where that is another rank). Errors: those of shoal_queue_get.
SHOAL_API int shoal_queue_size(shoal_queue *q, size_t *out);

// Waits up to `timeout_ms` until the queue holds an item, without taking
// it: SHOAL_OK, or SHOAL_EAGAIN. Errors: those of shoal_queue_get.
SHOAL_API int shoal_queue_wait(shoal_queue *q, int64_t timeout_ms);

// An item's parts. The data is the caller's to read and write until
// shoal_queue_item_free.
SHOAL_API shoal_queue_kind shoal_queue_item_kind(const shoal_queue_item *it);
SHOAL_API void            *shoal_queue_item_data(shoal_queue_item *it);
SHOAL_API size_t           shoal_queue_item_bytes(const shoal_queue_item *it);
SHOAL_API shoal_dtype      shoal_queue_item_dtype(const shoal_queue_item *it);
SHOAL_API int              shoal_queue_item_ndim(const shoal_queue_item *it);
SHOAL_API const int64_t   *shoal_queue_item_shape(const shoal_queue_item *it);
// The rank that put it.
SHOAL_API int  shoal_queue_item_sender(const shoal_queue_item *it);
SHOAL_API void shoal_queue_item_free(shoal_queue_item *it);

// ---------------------------------------------------------------------------
// Compiled custom collectives (compile_op)
// ---------------------------------------------------------------------------
//
// A custom collective moves boxes of one global N-d tensor between ranks:
// every rank lists the boxes it holds (inputs) and the boxes it wants
// (outputs), each as an offset and a shape inside the global shape, and
// shoal plans the transfers once. Each local tensor holds its box in any
// strided layout (row-major by default), and a transfer copies any sub-box
// of it: nothing is staged through a global tensor.
//
// Overlapping inputs: without a reduction (SHOAL_PLAN_COPY) an output
// element takes the value of the last input covering it, in the order
// rank ascending, then the rank's inputs in the order listed: the highest
// rank wins, and within it the last listed input. With a reduction every
// covering input is combined, in that same order (so results are bitwise
// the same on every rank); AVG divides by the number of inputs covering
// each element.
//
// Several tensors: a plan may move boxes of several named global tensors
// at once (all of a layer's parameters, say), each with its own number of
// dimensions and shape, all of the plan's one dtype. Boxes of different
// tensors never meet. Each rank then passes one local tensor per tensor
// it names, holding that whole tensor, and the boxes are parts of it.

#define SHOAL_PLAN_COPY     (-1)
#define SHOAL_PLAN_MAX_DIMS 12
// Longest tensor name, in bytes (the NUL not counted).
#define SHOAL_PLAN_MAX_NAME 1024

typedef struct shoal_plan shoal_plan;

// A named global tensor of a plan over several tensors. Ranks that name
// the same tensor must agree on ndim, and on the shape where they give
// one; without a shape on any rank, the tensor's extent in each dimension
// is the end of the furthest box of it, over all ranks.
typedef struct shoal_plan_tensor {
    const char    *name; // 1 .. SHOAL_PLAN_MAX_NAME bytes, matched by value
    int            ndim; // 0 .. SHOAL_PLAN_MAX_DIMS
    const int64_t *shape; // ndim entries, or NULL: the boxes define it
} shoal_plan_tensor;

// A rank's part of a custom collective. Boxes are 2 * ndim int64 values
// each: the offset, then the shape.
typedef struct shoal_plan_spec {
    size_t         size; // sizeof(shoal_plan_spec), set by the INIT macro
    int            ndim; // 0 .. 12
    const int64_t *shape; // global shape, ndim entries
    shoal_dtype    dtype;
    int            reduction; // SHOAL_PLAN_COPY, or an op kind but PREMUL_SUM
    int            ninputs;
    const int64_t *inputs; // ninputs boxes
    int            noutputs;
    const int64_t *outputs; // noutputs boxes
    // Non-NULL: this rank found its own arguments bad (a front end's
    // parsing); every rank fails with "rank R: <error>" instead of hanging.
    const char *error;
    // Several tensors (tensors non-NULL; ndim and shape above are then
    // unused): input box i belongs to tensors[input_tensor[i]] and is 2 *
    // that tensor's ndim values, output box o to tensors[output_tensor[o]].
    // A rank taking no part may name no tensor (ntensors 0). A spec of an
    // older size (without these fields) has one tensor.
    int                      ntensors;
    const shoal_plan_tensor *tensors;
    const int               *input_tensor; // ninputs indexes into tensors
    const int               *output_tensor; // noutputs indexes
} shoal_plan_spec;

#define SHOAL_PLAN_SPEC_INIT                                                  \
    {                                                                         \
        .size = sizeof(shoal_plan_spec), .ndim = 0, .shape = NULL,            \
        .dtype = SHOAL_FLOAT32, .reduction = SHOAL_PLAN_COPY, .ninputs = 0,   \
        .inputs = NULL, .noutputs = 0, .outputs = NULL, .error = NULL,        \
        .ntensors = 0, .tensors = NULL, .input_tensor = NULL,                 \
        .output_tensor = NULL                                                 \
    }

// Compiles a custom collective. Collective over `comm`: every rank calls
// it, in the same order as its other collectives. All ranks must agree on
// ndim, shape (of each tensor they name), dtype and reduction; every box
// must lie inside its tensor's shape; every output element must be covered
// by some rank's input of the same tensor. A violation
// fails on every rank with the same SHOAL_EINVAL message (naming the rank,
// the box and the uncovered elements), and the communicator stays usable.
// Errors: SHOAL_EINVAL, SHOAL_ENOMEM, plus the failures of collectives.
SHOAL_API int shoal_plan_create(
    shoal_comm *comm, const shoal_plan_spec *spec, shoal_plan **out);

// Starts one run of the plan over this rank's local tensors. With one
// tensor (tensors NULL), inputs[i] / outputs[i] hold box i exactly. With
// several, the local input tensors are the tensors of this rank's input
// boxes, in the order they first appear among them, each holding its whole
// tensor (its global shape), and likewise the local output tensors
// (shoal_plan_local_tensors lists them). Each pointer is the first element
// of its local tensor (NULL allowed for empty ones); strides (in elements,
// one array per tensor of its tensor's ndim, or NULL for row-major) give
// its layout. Input and output memory may overlap (the
// inputs are then read in full before any output is written). Collective
// over the plan's ranks: every rank starts its runs in the same order,
// and the call agrees with them first, so a rank passing bad arguments
// makes every rank fail with SHOAL_EINVAL (nothing sent; the plan stays
// usable). `error` non-NULL is this rank's own complaint (a front end's
// check), failing every rank the same way. A run still in flight is waited
// for first. Buffers stay owned by the caller and must stay valid until
// shoal_plan_wait returns.
SHOAL_API int shoal_plan_start(shoal_plan *plan, int ninputs,
    const void *const *inputs, const int64_t *const *input_strides,
    int noutputs, void *const *outputs, const int64_t *const *output_strides,
    const char *error);

// Completes the run in flight (SHOAL_OK when none): waits for the
// transfers, then writes and reduces the outputs. Returns the run's first
// error (an outside fault aborts the communicator as for collectives).
SHOAL_API int shoal_plan_wait(shoal_plan *plan);

// Returns SHOAL_INPROGRESS while the run's transfers are under way,
// otherwise finishes the run as shoal_plan_wait does. Never blocks on
// peers.
SHOAL_API int shoal_plan_test(shoal_plan *plan);

// Writes a readable listing of this rank's part of the plan (messages,
// pieces, cells and their sources) into buf (NUL-terminated, truncated to
// len) and returns the length the whole listing needs. SHOAL_DEBUG=TRACE
// logs it when the plan is created.
SHOAL_API size_t shoal_plan_format(
    const shoal_plan *plan, char *buf, size_t len);

// Bytes this rank sends and receives per run (counting each message once).
SHOAL_API int shoal_plan_bytes(
    const shoal_plan *plan, size_t *sent, size_t *received);

// This rank's local tensors, as shoal_plan_start takes them: how many
// inputs (*ninputs) and outputs (*noutputs) it passes (either may be NULL).
// Returns SHOAL_OK, or SHOAL_EINVAL for a NULL plan.
SHOAL_API int shoal_plan_local_tensors(
    const shoal_plan *plan, int *ninputs, int *noutputs);

// The shape of local input (output 0) or output (output 1) tensor `index`:
// *ndim values into shape[SHOAL_PLAN_MAX_DIMS]; *name (may be NULL) gets
// its tensor's name ("" with one tensor), valid while the plan lives.
// Returns SHOAL_OK, or SHOAL_EINVAL for an index out of range.
SHOAL_API int shoal_plan_local_tensor(const shoal_plan *plan, int output,
    int index, int *ndim, int64_t *shape, const char **name);

// Waits for a run in flight, then releases the plan. NULL is accepted.
SHOAL_API void shoal_plan_free(shoal_plan *plan);

#ifdef __cplusplus
}
#endif

#endif // SHOAL_H
