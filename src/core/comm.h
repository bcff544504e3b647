// The communicator: identity, peers, shared memory, the progress engine's
// queues, and failure state. Internal to libshoal.
#ifndef SHI_COMM_H
#define SHI_COMM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "core/engine_state.h"
#include "core/op_props.h"
#include "core/request.h"
#include "shoal.h"
#include "transport/transport.h"
#include "transport/upcalls.h"

struct shi_select_table;
struct shi_net_run;
struct shi_mapped_state;
struct shi_q_channel;
struct shi_store_ref; // shared by a communicator and the ones split from it

struct shoal_comm {
    // What a transport sees (transport/view.h): first, and named both
    // ways, comm->rank here and shi_tp_comm(comm)->rank in a transport.
    union {
        struct shi_tp_comm tp_view;
        struct {
            SHI_TP_COMM_FIELDS
        };
    };

    struct shi_store_ref *store;
    int                   nsplits; // splits made from this comm
    // While being created (rendezvous.c): the communicator it is split
    // from (its failure ends the creation), whether a will is left.
    shoal_comm *rdv_parent;
    int         rdv_will;
    int         rdv_adopted; // failed with another rank's reported cause
    char        rdv_job_key[64]; // set when a rank of the job is gone
    int         nplans; // plans compiled on this comm
    // While being created by a shrink (shrink.c): a look, each slice of a
    // watched wait, at whether a member's process is gone.
    int (*rdv_extra)(void *arg);
    void *rdv_extra_arg;
    // Surviving a lost rank (core/ft.h): agreements and shrinks made on
    // this comm, and per rank a hash of its host identity, which with its
    // pid names its process's "gone" key in the store.
    int       nagrees;
    uint64_t *host_hash;
    // The flight recorder (core/flight.h): NULL when off; whether the
    // failure's dump was written.
    struct shi_fr *fr;
    int            fr_dumped;

    // The transport (transport.h); its private state is tp_state.
    const struct shi_transport_ops *tp;

    // Over TCP with several ranks on some host (algo/common/hier.c): this
    // host's ranks, and the first rank of each host (NULL elsewhere).
    shoal_comm *local, *leaders;
    int         host_index, local_rank, hier_wanted;
    int        *host_first; // per rank: the first rank of its host
    int        *local_rank_of; // per rank: its rank within its host
    // The communicator's lock: its engine, transport and requests.
    pthread_mutex_t   lock;
    struct shi_engine engine; // the engine's alone (core/engine_state.h)
    shoal_request    *owned; // non-blocking requests not freed yet (onext)
    // The first failure among untracked requests (a send or receive issued
    // without a request handle), until shoal_comm_sync reports it.
    int      untracked_failed;
    char     untracked_text[SHI_ERROR_TEXT_MAX];
    unsigned fork_generation; // forked.c: the process it belongs to
    int      creator_pid;

    // Collectives (src/algo, src/coll): the mapped-memory family's lasting
    // state, the algorithm table (rank 0's SHOAL_ALGO), scratch for reads
    // and reduces.
    struct shi_mapped_state *mapped_state; // algo/mapped/driver.h
    unsigned                 algos_available;
    struct shi_select_table *select;
    // Per collective, the (algorithm, rule source) pairs already named in
    // an INFO line (coll/api.c), so each is said once per communicator.
    _Atomic uint64_t algo_noted[SHI_COLL_COUNT];
    // Per collective, the table's last choice, packed (coll/api.c).
    _Atomic uint64_t choice_memo[SHI_COLL_COUNT];
    // The collective driver of the transport's class (coll/setup.c): one
    // step over the head collectives, and what an abort leaves to clean.
    int (*coll_step)(shoal_comm *comm);
    void (*coll_abandon)(shoal_comm *comm);
    // Windows (src/rma): their list, and what releases them when the
    // communicator is destroyed first (set with the first window).
    shoal_window *windows;
    uint32_t      window_seq; // registrations so far (collective: equal)
    void (*windows_detach)(shoal_comm *comm);
    int abandoned; // coll_abandon ran (engine.c)
    // Queues (src/queue): the channel, what closes it when the
    // communicator is destroyed, and a watch the engine calls at every
    // pass while one is set (under the lock: it only looks and wakes).
    struct shi_q_channel *queue_channel;
    void (*queue_close)(shoal_comm *comm);
    void (*watch)(void *arg);
    void *watch_arg;
    // Message schedules (algo/net): the executor's state for the head
    // collective, and the host-aware stage in flight.
    struct shi_net_run *net_run;
    shoal_request      *hier_sub;
    int                 hier_started;
    int                 table_agreed; // `select` is rank 0's table
    unsigned char      *scratch;
    size_t              scratch_bytes;
    const void        **inputs; // nranks pointers for the reduction kernels
    uint64_t           *peer_counts; // nranks x nranks: all_to_all_v plans
    struct shi_heap    *heap; // shoal_alloc bookkeeping (heap.c)

    // The failure itself (failed, fail_text) is in the transport's view.
    char last_error[SHI_ERROR_TEXT_MAX];
};

// shi_tp_comm() and shi_tp_req() cast to the first member.
_Static_assert(offsetof(struct shoal_comm, tp_view) == 0,
    "the transport's view of the communicator must come first");

// comm has failed: records, for `op` ("" or "window_put: "), that it was
// revoked (SHOAL_EREVOKED) or aborted (SHOAL_EABORTED) by an earlier
// error, with the cause, and returns that status. Not under err_lock.
int shi_comm_failed_error(shoal_comm *comm, const char *op);

// An abort the application asked for (shoal_comm_abort, shoal_comm_revoke:
// `op`): fails comm with `status`, "rank R <done> the communicator:
// <reason>", on every rank, without blocking.
int shi_comm_abort_asked(shoal_comm *comm, int status, const char *op,
    const char *done, const char *reason);

// Records `status` and the thread's error text as comm's last error (and
// returns status), so shoal_comm_last_error can show it.
int shi_comm_error(shoal_comm *comm, int status);

// A bad argument: records SHOAL_EINVAL with the formatted message as this
// thread's error and comm's last error (comm may be NULL), and returns it.
int shi_comm_invalid(shoal_comm *comm, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// Wakes every peer that sleeps (after publishing something they may wait
// for).
void shi_ring_peers(shoal_comm *comm);

// Bootstrap (bootstrap.c): given rank, size, store and prefix filled in,
// connect to the peers, set up shared memory and start the threads.
int shi_comm_bootstrap(shoal_comm *comm, int64_t deadline);

// Allocates a communicator with its locks initialized.
int shi_comm_alloc(shoal_comm **out, const char *name, int rank, int size,
    int64_t timeout_ms);

// A communicator made from `parent` (split.c): alloc gives it the
// parent's secret, store and timeout; the caller sets its prefix (and what
// its creation watches), then boot bootstraps it into *out, freeing it on
// failure.
int shi_comm_child_alloc(shoal_comm *parent, const char *name, int rank,
    int size, shoal_comm **out);
int shi_comm_child_boot(shoal_comm *child, int64_t deadline, shoal_comm **out);

// Frees a communicator after its threads have stopped; the thread's last
// error stays the caller's (teardown's own failures are only logged).
void shi_comm_free(shoal_comm *comm);

// Untracked requests (request_owned.c): frees the completed ones, keeping
// the first failure; with `report`, returns its status (0: none), leaves
// its message as this thread's error and forgets it.
int shi_req_reap_untracked(shoal_comm *comm, int report);

// Releases what memory registrations of `comm` hold (mem_reg.c), before
// the transport goes; the registrations stay the callers'.
void shi_mem_reg_detach_all(shoal_comm *comm);

// Every communicator is listed while it lives (leave.c), so that a process
// exiting without destroying it still says goodbye on it at exit.
void shi_leave_list(shoal_comm *comm);
void shi_leave_unlist(shoal_comm *comm);
// Calls fn on every communicator listed (the process's, leave.c), under
// the list's lock; returns the first failure.
int shi_comms_each(int (*fn)(shoal_comm *comm, void *arg), void *arg);

// Shared heap of shoal_alloc (heap.c).
int  shi_heap_init(shoal_comm *comm);
void shi_heap_destroy(shoal_comm *comm);

// Rendezvous through the store (rendezvous.c). Creation keys live under
// <prefix>boot/ (shi_rdv_key). begin leaves a will naming this rank; get
// waits for a key but fails as soon as the parent communicator fails or
// another rank's creation failed or died; end reports a failure to the
// others (or adopts theirs, which explains ours) and returns the status,
// or, on success, deletes the keys once every rank is done.
void shi_rdv_key(
    const shoal_comm *comm, const char *what, char *buf, size_t len);
int shi_rdv_begin(shoal_comm *comm, int64_t deadline);
int shi_rdv_end(shoal_comm *comm, int st, int64_t deadline);
// shi_rdv_get for a key `peer` of the created comm sets (a split's
// choice): fails too if that peer destroyed its communicator without.
int shi_rdv_get_from(shoal_comm *comm, int peer, const char *key, char **value,
    size_t *len, int64_t deadline);
// For a communicator of the whole job (rank and size from the launcher):
// leaves a will saying this rank of the job is gone, which every creation
// of such a communicator watches, so a rank that died before a creation
// began (ranks re-creating after a failure) fails it too.
struct shi_launch;
int shi_rdv_job_will(
    shoal_comm *comm, const struct shi_launch *env, int64_t deadline);
// Whether the comm's store keeps last wills (a TCP store: a file store
// cannot tell a process that died).
int shi_comm_store_has_wills(shoal_comm *comm);
// What a watched wait checks each slice (rendezvous.c says what).
int shi_rdv_check(shoal_comm *comm);
// SHOAL_OK, or SHOAL_EABORTED with comm's cause, for `op` on comm.
int shi_rdv_usable(shoal_comm *comm, const char *op);

// fork() safety (forked.c): mark a new communicator as this process's;
// check returns SHOAL_EINVAL (message naming `op`) in a forked child;
// forked says whether this is one, without a message.
void shi_fork_mark(shoal_comm *comm);
int  shi_fork_check(const shoal_comm *comm, const char *op);
int  shi_forked(const shoal_comm *comm);

struct shi_store_ref *shi_store_ref_get(struct shi_store_ref *ref);
void                  shi_store_ref_put(struct shi_store_ref *ref);

#endif
