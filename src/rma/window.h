// Windows (include/shoal.h, "Windows"): one-sided put and signal into
// memory a rank registered, over the transport's memory operations.
//
// A registered window has, on every rank, the registered buffer and a
// block of signal counters, one cache line per origin rank, both exposed
// through the transport (mem_expose) and traded at registration. Where the
// transport maps peers' memory (shared memory) an origin writes the
// target's buffer itself (a view, else a single copy through the kernel)
// and raises its counter line in the target's heap, then rings the target;
// where it does not (TCP), puts and signals are messages the target's
// progress applies (transport.h, rma_send). Either way a signal lands
// after the puts issued before it, which is the ordering shoal.h promises.
//
// A TCP communicator whose host runs several of its ranks also registers
// the buffer on the host's shared-memory communicator (comm->local), and
// reaches its same-host peers there: mapped, as on one host.
//
// A small put into a peer's buffer that is not mapped here (not from
// shoal_alloc) costs a system call when the origin copies it through the
// kernel; where the target is waiting on the window at that moment, it
// copies the data from an inbox in its heap instead (window_inbox.c).
//
// Files: window.c (create, register, deregister, free), window_ops.c
// (put, signal, wait_signal, peer pointers), window_inbox.c (small puts
// the target applies while it waits), window_remote.c (what a message
// transport asks when a peer's put or signal arrives).
#ifndef SHI_WINDOW_H
#define SHI_WINDOW_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"
#include "transport/transport.h"

// Signal counters of one origin rank, on the target: a cache line, so
// origins do not share lines.
struct shi_win_line {
    _Atomic uint64_t signals; // the application's signals
    _Atomic uint64_t fence; // deregistration: "my puts to you are done"
    char             pad[48];
};

enum { SHI_WIN_SIGNALS = 0, SHI_WIN_FENCE = 1 }; // counter numbers

// The largest put that goes through a target's inbox: up to this size the
// two copies cost less than one system call (process_vm_writev).
#define SHI_WIN_INBOX_BYTES 4096

// The head of a rank's inbox, in its heap: how many of its threads wait
// on the window now (they apply posted puts), and a bell every origin
// rings after posting, so a waiting thread looks at the slots only when
// one was posted.
struct shi_win_inbox_head {
    _Atomic uint64_t attending;
    _Atomic uint64_t bell;
    char             pad[48];
};

// The states of a slot (see window_inbox.c).
enum shi_win_slot_state {
    SHI_SLOT_IDLE = 0, // the origin's to fill
    SHI_SLOT_POSTED, // filled: the target's to take
    SHI_SLOT_TAKEN, // a target thread applies it
    SHI_SLOT_DONE, // applied
    SHI_SLOT_REFUSED, // the offset or length did not fit the window
};

// An origin's use of its slot at one target, in its own memory: whether a
// thread of it posts there now, how many puts in a row the target let wait
// in vain, and how many more puts skip the slot for that.
struct shi_win_outbox {
    _Atomic int busy;
    int         misses, skip; // under busy
};

// One origin's slot in a target's inbox; the head is followed by one per
// rank of the communicator.
struct shi_win_slot {
    _Atomic uint32_t state; // enum shi_win_slot_state
    uint32_t         len; // bytes of data (the origin's word: checked)
    uint64_t         off; // into the target's buffer (checked)
    char             pad[48];
    unsigned char    data[SHI_WIN_INBOX_BYTES];
};

// What a rank publishes at registration (it crosses to the peers as
// bytes: each field is checked before use).
struct shi_win_desc {
    uint64_t             id; // registration number on the communicator
    uint64_t             bytes;
    uint64_t             elem; // element size
    struct shi_tp_region buf, counters;
    struct shi_tp_region inbox; // bytes 0: puts come by single copies
    int32_t              status; // 0, or this rank's argument error ...
    char                 text[148]; // ... and its message
};

struct shoal_window {
    shoal_comm          *comm; // NULL once the communicator is destroyed
    shoal_window        *next; // on comm->windows
    uint32_t             id; // 0: not registered
    unsigned char       *base;
    size_t               bytes;
    size_t               elem;
    shoal_dtype          dtype;
    int                  messages; // puts and signals go through rma_send
    struct shi_win_line *lines; // mine: comm->size of them, one per origin
    struct shi_win_desc *peers; // every rank's registration
    uint64_t            *waited; // per origin: signals consumed so far
    // Per rank, where the transport maps it (else NULL): its buffer, and
    // its counter line for this rank.
    unsigned char       **views;
    struct shi_win_line **remote_lines;
    // Small puts (window_inbox.c): my inbox, or NULL where peers map my
    // buffer; per peer, its inbox head and my slot there where it has one
    // (else NULL), and this rank's use of that slot.
    struct shi_win_inbox_head  *inbox;
    struct shi_win_inbox_head **inbox_heads;
    struct shi_win_slot       **inbox_slots;
    struct shi_win_outbox      *outbox;
    _Atomic uint64_t            bell_seen;
    // Over a message transport with several ranks on this host: the same
    // buffer registered on the host's shared-memory communicator
    // (comm->local), through which every same-host peer is reached (puts
    // and signals of a pair take one path, so their order holds).
    shoal_window *inner;
};

// The window and rank through which `*peer` is reached: `win`, or the
// host's inner window with the peer's rank there.
shoal_window *shi_window_route(shoal_window *win, int *peer);

// The communicator's window `id` (0 or unknown: NULL). Under comm->lock.
struct shoal_window *shi_window_find(shoal_comm *comm, uint32_t id);

// The checks every operation on a registered window starts with:
// SHOAL_OK, or SHOAL_EINVAL with the message recorded ("op: ...").
int shi_window_usable(const struct shoal_window *win, const char *op);

// Raises counter `which` of this rank at `dst` and wakes dst: done on
// return where peers are mapped, else a message (through the engine).
// Blocking (out NULL) or not; `timeout_ms` as shoal_call_opts.
int shi_window_raise(struct shoal_window *win, int dst, int which,
    int64_t timeout_ms, shoal_request **out);

// Waits until origin `peer`'s counter `which` here reaches `target`;
// blocking (out NULL) or not.
int shi_window_wait_counter(struct shoal_window *win, int peer, int which,
    uint64_t target, int64_t timeout_ms, shoal_request **out);

// ------------------------------------------------------------ inbox

// Bytes of the inbox of a communicator of `n` ranks.
size_t shi_win_inbox_size(int n);

// Makes this rank's inbox at registration where peers will not map its
// buffer, describing it in d->inbox (bytes 0: none, also when the heap
// has no room: puts then come by single copies).
void shi_win_inbox_open(shoal_window *win, struct shi_win_desc *d);

// Maps rank r's inbox head and this rank's slot there (after the trade);
// SHOAL_EPROTO where r described one that does not fit.
int shi_win_inbox_reach(shoal_window *win, int r);

// Releases what shi_win_inbox_open and reach made; `keep`: peers may still
// write the inbox, which stays in the heap until the communicator goes.
void shi_win_inbox_close(shoal_window *win, int keep);

// Puts `bytes` from src at byte `off` of rank dst's buffer through dst's
// inbox, if dst is waiting on the window and the put fits: SHOAL_OK once
// dst has copied it, 1 when the caller must copy it itself, or an error
// (dst refused it).
int shi_win_inbox_put(
    shoal_window *win, const void *src, size_t bytes, int dst, size_t off);

// Applies the puts posted to this rank's inbox (any thread, any time).
void shi_win_inbox_serve(shoal_window *win);

// A thread of this rank starts (+1) or stops (-1) waiting on the window:
// while any does, origins post their small puts to the inbox.
void shi_win_inbox_attend(shoal_window *win, int delta);

// Spins until done(arg) holds (1) or wait_ns have passed since the 8th
// look (0), applying the puts posted to this rank's inbox meanwhile: a
// rank that spins on its window never keeps an origin waiting.
int shi_win_spin_serving(
    shoal_window *win, int (*done)(void *arg), void *arg, int64_t wait_ns);

#endif
