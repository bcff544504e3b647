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
// Files: window.c (create, register, deregister, free), window_ops.c
// (put, signal, wait_signal, peer pointers), window_remote.c (what a
// message transport asks when a peer's put or signal arrives).
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

// What a rank publishes at registration (it crosses to the peers as
// bytes: each field is checked before use).
struct shi_win_desc {
    uint64_t             id; // registration number on the communicator
    uint64_t             bytes;
    uint64_t             elem; // element size
    struct shi_tp_region buf, counters;
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

#endif
