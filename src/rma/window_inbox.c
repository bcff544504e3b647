// Small puts the target applies while it waits (see window.h).
//
// A put into a peer's buffer that peers do not map is a single copy
// through the kernel (process_vm_writev): a system call that costs about
// 2 us even for 8 bytes. A target that waits on the window (in
// wait_signal, or in a put of its own) is polling anyway, so a small put
// goes to it instead:
//   1. The origin writes offset, length and data into its slot in the
//      target's inbox, publishes the slot (POSTED) and rings the inbox's
//      bell.
//   2. A waiting thread of the target sees the bell, takes the slot
//      (POSTED -> TAKEN, so only one thread applies it), checks offset and
//      length against its window, copies the data into its buffer and
//      marks the slot DONE (or REFUSED).
//   3. The origin waits for DONE, serving its own inbox meanwhile (two
//      ranks that put to each other at once serve each other), and
//      returns: the data is in the target's buffer, as shoal.h promises.
//      If the target has not taken the slot in time, the origin takes it
//      back (POSTED -> IDLE) and copies through the kernel. In time: about
//      the kernel copy's cost where the target said it waits (it polls, so
//      only a lost CPU keeps it), a fraction of that where it did not (it
//      may be about to wait, as in an exchange; if it computes, the put
//      pays that fraction more, and the next puts to it that find it not
//      waiting copy at once: see INBOX_SKIP_MAX).
// Cost: two copies of at most SHI_WIN_INBOX_BYTES and two flag transfers
// against one system call.
#include <string.h>

#include "base/clock.h"
#include "base/copy_shared.h"
#include "platform/cpu_relax.h"
#include "rma/window.h"

// How long an origin waits for the target to take its put before copying
// it itself: where the target waits on the window (about what the kernel's
// copy costs), and where it does not (step 3).
#define INBOX_WAIT_NS 3000
#define INBOX_MEET_NS 2000
// How often an origin whose slot a target holds looks for a failure.
#define INBOX_TAKEN_NS 1000000

// After puts waited in vain for a target that had not said it waits, the
// next such puts to it copy at once: 1, 2, 4, ... up to INBOX_SKIP_MAX
// after 1, 2, 3, ... misses in a row. A target that computes would make
// each of them wait; one late for an exchange now and then costs one.
#define INBOX_SKIP_MAX 64

size_t
shi_win_inbox_size(int n)
{
    return sizeof(struct shi_win_inbox_head)
        + (size_t) n * sizeof(struct shi_win_slot);
}

static struct shi_win_slot *
slot_in(struct shi_win_inbox_head *head, int origin)
{
    return (struct shi_win_slot *) (head + 1) + origin;
}

void
shi_win_inbox_open(shoal_window *win, struct shi_win_desc *d)
{
    shoal_comm *comm  = win->comm;
    size_t      bytes = shi_win_inbox_size(comm->size);
    void       *mem   = NULL;

    // Peers map a buffer from the heap and write it in place; over
    // messages the target applies every put anyway.
    if (win->messages || win->bytes == 0 || comm->size < 2
        || comm->tp->mem_view(comm, &d->buf, 0, win->bytes) != NULL) {
        return;
    }
    if (shoal_alloc(comm, bytes, &mem) != SHOAL_OK) {
        shi_error_clear();
        return; // no room: single copies, as without an inbox
    }
    memset(mem, 0, bytes);
    win->inbox = mem;
    comm->tp->mem_expose(comm, mem, bytes, &d->inbox);
}

int
shi_win_inbox_reach(shoal_window *win, int r)
{
    shoal_comm                 *comm  = win->comm;
    const struct shi_tp_region *box   = &win->peers[r].inbox;
    size_t                      bytes = shi_win_inbox_size(comm->size);

    if (box->bytes == 0 || r == comm->rank) {
        return SHOAL_OK;
    }
    if (box->owner != r || box->bytes != bytes) {
        return shi_error(SHOAL_EPROTO,
            "window_register: rank %d described its inbox inconsistently", r);
    }
    struct shi_win_inbox_head *head
        = comm->tp->mem_view(comm, box, 0, sizeof(*head));
    if (head == NULL) {
        return SHOAL_OK; // not mapped here: single copies
    }
    win->inbox_heads[r] = head;
    win->inbox_slots[r] = slot_in(head, comm->rank);
    return SHOAL_OK;
}

void
shi_win_inbox_close(shoal_window *win, int keep)
{
    if (!keep && win->inbox != NULL) {
        shoal_free(win->comm, win->inbox);
    }
    win->inbox = NULL;
}

void
shi_win_inbox_attend(shoal_window *win, int delta)
{
    if (win->inbox != NULL) {
        // Sequentially consistent: pairs with the origin's post (step 1).
        atomic_fetch_add(&win->inbox->attending, (uint64_t) (int64_t) delta);
    }
}

// Applies origin `p`'s slot if it is posted and no other thread took it.
static void
serve_slot(shoal_window *win, struct shi_win_slot *s)
{
    uint32_t posted = SHI_SLOT_POSTED;

    if (atomic_load_explicit(&s->state, memory_order_relaxed)
            != SHI_SLOT_POSTED
        || !atomic_compare_exchange_strong_explicit(&s->state, &posted,
            SHI_SLOT_TAKEN, memory_order_acquire, memory_order_relaxed)) {
        return;
    }
    // The origin's words, read once and checked: a peer is not trusted.
    uint64_t off = s->off;
    uint32_t len = s->len;
    if (len > SHI_WIN_INBOX_BYTES || off > win->bytes
        || len > win->bytes - off) {
        atomic_store_explicit(
            &s->state, SHI_SLOT_REFUSED, memory_order_release);
        return;
    }
    memcpy(win->base + off, s->data, len);
    atomic_store_explicit(&s->state, SHI_SLOT_DONE, memory_order_release);
}

void
shi_win_inbox_serve(shoal_window *win)
{
    struct shi_win_inbox_head *head = win->inbox;

    if (head == NULL) {
        return;
    }
    uint64_t bell = atomic_load_explicit(&head->bell, memory_order_acquire);
    if (bell == atomic_load_explicit(&win->bell_seen, memory_order_relaxed)) {
        return;
    }
    atomic_store_explicit(&win->bell_seen, bell, memory_order_relaxed);
    for (int p = 0; p < win->comm->size; p++) {
        serve_slot(win, slot_in(head, p));
    }
}

int
shi_win_spin_serving(
    shoal_window *win, int (*done)(void *arg), void *arg, int64_t wait_ns)
{
    int64_t until = 0;

    for (unsigned i = 0;; i++) {
        if (done(arg)) {
            return 1;
        }
        shi_win_inbox_serve(win);
        // Every 8 looks (64 pauses take about 3 us here), from the 8th on:
        // what comes at once is seen before the first clock reading.
        if ((i & 7) == 7) {
            int64_t now = shi_now_ns();
            until       = until == 0 ? now + wait_ns : until;
            if (now >= until) {
                return 0;
            }
        }
        shi_cpu_relax();
    }
}

static int
slot_settled(void *slot)
{
    struct shi_win_slot *s = slot;
    uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
    return st == SHI_SLOT_DONE || st == SHI_SLOT_REFUSED;
}

// Waits for the target to apply the posted slot, serving this rank's own
// inbox meanwhile; takes the slot back if the target does not come in
// time. The slot's final state: DONE, REFUSED or IDLE (taken back), or
// TAKEN if the communicator failed while the target held it (a target
// that died mid-copy: the slot cannot be taken back from it).
static uint32_t
await_target(shoal_window *win, struct shi_win_slot *s, int64_t wait_ns)
{
    if (!shi_win_spin_serving(win, slot_settled, s, wait_ns)) {
        uint32_t posted = SHI_SLOT_POSTED;
        if (atomic_compare_exchange_strong(
                &s->state, &posted, SHI_SLOT_IDLE)) {
            return SHI_SLOT_IDLE;
        }
        // The target took it: it finishes within a copy, unless it was
        // preempted (or died, which the communicator's watcher reports).
        while (!shi_win_spin_serving(win, slot_settled, s, INBOX_TAKEN_NS)) {
            if (atomic_load(&win->comm->failed)) {
                return SHI_SLOT_TAKEN;
            }
        }
    }
    return atomic_load_explicit(&s->state, memory_order_acquire);
}

// Posts the put in slot s of dst's inbox and waits for it: SHOAL_OK, 1
// (taken back: the caller copies), or an error.
static int
post(shoal_window *win, struct shi_win_slot *s, const void *src, size_t bytes,
    int dst, size_t off, int64_t wait_ns)
{
    s->off = off;
    s->len = (uint32_t) bytes;
    shi_copy_shared(s->data, src, bytes);
    atomic_store_explicit(&s->state, SHI_SLOT_POSTED, memory_order_release);
    atomic_fetch_add(&win->inbox_heads[dst]->bell, 1);
    uint32_t st = await_target(win, s, wait_ns);
    if (st == SHI_SLOT_TAKEN) {
        return shi_comm_failed_error(win->comm, "window_put: ");
    }
    atomic_store_explicit(&s->state, SHI_SLOT_IDLE, memory_order_relaxed);
    if (st == SHI_SLOT_REFUSED) {
        return shi_comm_error(win->comm,
            shi_error(SHOAL_EPROTO,
                "window_put: rank %d refused %zu bytes at byte %zu of its "
                "window of %zu bytes (its registration differs from what "
                "this rank traded)",
                dst, bytes, off, win->bytes));
    }
    return st == SHI_SLOT_DONE ? SHOAL_OK : 1;
}

// Puts that copy at once after `misses` in a row (see INBOX_SKIP_MAX).
static int
skip_after(int misses)
{
    int skip = misses > 0;

    for (int i = 1; i < misses && skip < INBOX_SKIP_MAX; i++) {
        skip *= 2;
    }
    return skip;
}

int
shi_win_inbox_put(
    shoal_window *win, const void *src, size_t bytes, int dst, size_t off)
{
    struct shi_win_slot *s
        = win->inbox_slots != NULL ? win->inbox_slots[dst] : NULL;
    int idle = 0, st = 1;

    if (s == NULL || bytes == 0 || bytes > SHI_WIN_INBOX_BYTES) {
        return 1;
    }
    struct shi_win_outbox *out = &win->outbox[dst];
    if (!atomic_compare_exchange_strong(&out->busy, &idle, 1)) {
        return 1; // another thread of this rank uses the slot
    }
    int waits = atomic_load(&win->inbox_heads[dst]->attending) > 0;
    if (!waits && out->skip > 0) {
        out->skip--;
    } else {
        shi_win_inbox_attend(win, 1);
        st = post(win, s, src, bytes, dst, off,
            waits ? INBOX_WAIT_NS : INBOX_MEET_NS);
        shi_win_inbox_attend(win, -1);
        int missed  = st == 1 && !waits;
        out->misses = missed ? out->misses + (out->misses < 64) : 0;
        out->skip   = skip_after(out->misses);
    }
    atomic_store_explicit(&out->busy, 0, memory_order_release);
    return st;
}
