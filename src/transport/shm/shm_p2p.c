// Point-to-point messages over the shared-memory channels.
//
// A message is one or more slots of the channel from sender to receiver:
// the first slot carries the tag and total size. The receiver drains its
// channel in order; a message whose receive is not posted yet is copied
// aside if it fits in one slot (and the unexpected budget), otherwise it
// waits at the head of the channel until its receive is posted. Messages
// with the same tag therefore arrive in send order.
//
// A message of READ_MIN_BYTES or more, or larger than the channel, travels
// in one copy where the receiver can read the sender's memory (the buffer
// lies in the shared heap, or every rank can read its peers through the
// kernel: comm->cma_ok): its one slot carries the buffer's region
// (SHM_READ), the receiver, once its receive is posted, reads the message
// straight into its buffer and consumes the slot, and the consumed slot
// completes the send. Until then the sender's later messages to that peer
// wait, as they would behind a long one. Such a send waits for its receive
// (shoal.h promises no more); a smaller one completes without it.
//
// A message may lie in a strided layout at either end (req->layout): the
// slots are filled and emptied piece by piece, and a single-copy read goes
// from the sender's layout straight into the receiver's, so neither side
// packs.
//
// Any-source receives wait on one queue of the communicator. A message
// goes to the earliest posted receive that matches it, named (the
// sender's queue) or any-source (by post number, req->seq). A message
// that finds no receive gets an arrival number when first seen, whether
// it is copied aside or waits at the head of its channel; a new
// any-source receive takes the lowest-numbered one with its tag, so
// messages are taken in the order they were seen and none is passed over
// forever. Invariant, after every post and every step: no arrived message
// matches a posted receive.
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/copy_shared.h"
#include "base/log.h"
#include "transport/shm/shm.h"
#include "transport/upcalls.h"

// Budget for buffered unexpected messages per communicator.
#define P2P_UNEXPECTED_MAX (64LL << 20)

// From this size a message goes in one copy (the receiver reads it
// through the kernel) rather than two (through the slots, which are
// filled with streaming stores: base/copy_shared.h). At 16 KiB the
// read's system call costs more than the second copy. Where the two
// ranks' CPUs share an L3 (2 ranks, medians in us):
//   64 KiB ping-pong  slots 6.0-7.8   one copy 9.5-10.6 (Open MPI 9.4)
//   64 KiB both ways  slots 9.6-13.0  one copy 7.4-8.9  (Open MPI 7.4-8.4)
//   128 KiB both ways slots 18.3-22.4 one copy 12.6-15.3
// Where they do not (the same host's vCPUs on two L3 domains):
//   64 KiB ping-pong  slots 5.9-6.4   one copy 23.8-26.1 (Open MPI 9.4-11)
//   64 KiB both ways  slots 7.4-7.6   one copy 12.7-16.9 (Open MPI 13)
//   128 KiB both ways slots 14.0-16.7 one copy 22.0-26.4
// A user gets whichever placement the host gives: 64 KiB goes through the
// slots, whose worst case (both ways on one L3) is far from one copy's
// (ping-pong across two). From 128 KiB the two trade about evenly, and
// one copy moves half the bytes through memory.
#define READ_MIN_BYTES (128u << 10)

// What a SHM_READ slot carries: the sender's exposed region, where the
// message's base lies in it, and the message's layout from that base.
struct shm_read_desc {
    struct shi_tp_region region;
    uint64_t             base_off;
    shi_strided          layout;
};

// Copies n bytes of r's message stream from byte `at` to dense `to` (a
// slot, which the peer reads next), or from dense `from` into it (the
// other pointer NULL).
static void
stream_copy(const shoal_request *r, uint64_t at, unsigned char *to,
    const unsigned char *from, size_t n)
{
    const struct shi_tp_req *tr = shi_tp_req(r);

    if (n == 0) { // buf may be NULL for zero bytes
        return;
    }
    if (tr->layout != NULL && to != NULL) {
        shi_strided_copy(to, NULL, 0, tr->buf, tr->layout, at, n);
    } else if (tr->layout != NULL) {
        shi_strided_copy(tr->buf, tr->layout, at, from, NULL, 0, n);
    } else if (to != NULL) {
        shi_copy_shared(to, tr->buf + at, n); // into a slot
    } else if (from != NULL) {
        memcpy(tr->buf + at, from, n);
    }
}

static void
consume_slot(shoal_comm *comm, int src)
{
    struct shi_shm_peer *p = &shi_shm_of(comm)->peers[src];

    p->recv_slot++;
    atomic_store_explicit(
        &shm_p2p_tail(shi_shm_seg(comm), src, shi_tp_comm(comm)->rank)->tail,
        p->recv_slot, memory_order_release);
    shi_ring(comm, src, 0);
}

static int
size_mismatch(shoal_comm *comm, int src, int tag, uint64_t sent,
    const shoal_request *req)
{
    const struct shi_tp_req *tr = shi_tp_req(req);

    shi_comm_abort(comm, SHOAL_EMISMATCH,
        "rank %d sent %llu bytes with tag %d, but rank %d posted "
        "a receive of %zu bytes (%zu x %s)",
        src, (unsigned long long) sent, tag, shi_tp_comm(comm)->rank,
        tr->bytes, tr->count, shoal_dtype_name(tr->dtype));
    return 1;
}

// Whether data slot h holds what its header says fits: a chunk no larger
// than a slot or than the `left` bytes of its message still to come,
// ending the message exactly where it says it is the last.
static int
chunk_in_bounds(
    shoal_comm *comm, const struct shm_slot_header *h, uint64_t left)
{
    return h->chunk_bytes <= shi_shm_seg(comm)->p2p_slot_bytes
        && h->chunk_bytes <= left
        && ((h->flags & SHM_LAST) == 0 || h->chunk_bytes == left);
}

// chunk_in_bounds for slot h from src, whose header is the peer's: a
// chunk that does not fit aborts the communicator rather than overrun a
// buffer or end a receive short.
static int
chunk_fits(
    shoal_comm *comm, int src, const struct shm_slot_header *h, uint64_t left)
{
    if (chunk_in_bounds(comm, h, left)) {
        return 1;
    }
    shi_comm_abort(comm, SHOAL_EPROTO,
        "rank %d sent a %u-byte chunk%s where %llu bytes of its message "
        "were left and a slot holds %u",
        src, h->chunk_bytes, (h->flags & SHM_LAST) ? " (its last)" : "",
        (unsigned long long) left, shi_shm_seg(comm)->p2p_slot_bytes);
    return 0;
}

// Copies a one-slot message whose receive is not posted yet. Returns 0 if
// the budget is exhausted (the message stays in the channel) or its
// header is false.
static int
buffer_unexpected(shoal_comm *comm, int src, struct shm_slot_header *h)
{
    struct shi_shm_peer   *p = &shi_shm_of(comm)->peers[src];
    struct shi_unexpected *u;

    if (!chunk_fits(comm, src, h, h->msg_bytes)) {
        return 0; // the communicator is aborted
    }
    if (shi_shm_of(comm)->unexpected_bytes + (int64_t) h->chunk_bytes
        > P2P_UNEXPECTED_MAX) {
        return 0;
    }
    u = malloc(sizeof(*u) + h->chunk_bytes);
    if (u == NULL) {
        return 0;
    }
    u->next = NULL;
    u->arrival
        = p->head_seen != 0 ? p->head_seen : ++shi_shm_of(comm)->p2p_arrivals;
    u->tag   = (int) h->tag;
    u->bytes = h->chunk_bytes;
    if (h->chunk_bytes > 0) {
        memcpy(u->data, shm_slot_data(h), h->chunk_bytes);
    }
    if (p->unexpected_tail != NULL) {
        p->unexpected_tail->next = u;
    } else {
        p->unexpected = u;
    }
    p->unexpected_tail = u;
    p->head_seen       = 0;
    shi_shm_of(comm)->unexpected_bytes += (int64_t) u->bytes;
    consume_slot(comm, src);
    return 1;
}

static shoal_request *
first_with_tag(const shi_req_queue *q, int tag)
{
    for (shoal_request *r = q->head; r != NULL; r = shi_tp_req(r)->qnext) {
        if (shi_tp_req(r)->tag == tag) {
            return r;
        }
    }
    return NULL;
}

// Takes the receive a message from `src` with `tag` goes to: the earliest
// posted of src's named receives and the any-source ones.
static shoal_request *
take_posted(shoal_comm *comm, int src, int tag)
{
    struct shi_shm_peer *p     = &shi_shm_of(comm)->peers[src];
    shoal_request       *named = first_with_tag(&p->recvs, tag);
    shoal_request *any = first_with_tag(&shi_shm_of(comm)->any_recvs, tag);

    if (any != NULL
        && (named == NULL || shi_tp_req(any)->seq < shi_tp_req(named)->seq)) {
        shi_queue_remove(&shi_shm_of(comm)->any_recvs, any);
        shi_tp_req(any)->source = src;
        shi_tp_req(any)->blocked_on
            = src; // from now on it needs this sender only
        return any;
    }
    if (named != NULL) {
        shi_queue_remove(&p->recvs, named);
    }
    return named;
}

// The message at the head of src's channel found no receive: number it
// once, so any-source receives can weigh it against buffered ones.
static void
note_waiting_head(shoal_comm *comm, struct shi_shm_peer *p)
{
    if (p->head_seen == 0) {
        p->head_seen = ++shi_shm_of(comm)->p2p_arrivals;
    }
}

// Reads a SHM_READ message into r's buffer. The descriptor comes from the
// peer: its region must be the sender's, its layout exactly the message,
// and the transport checks both against what it can reach. A failure
// aborts the communicator (the sender waits for this read).
static int
read_from_sender(
    shoal_comm *comm, int src, struct shm_slot_header *h, shoal_request *r)
{
    struct shi_tp_req   *tr = shi_tp_req(r);
    struct shm_read_desc d;
    int                  st;

    if (h->chunk_bytes != sizeof(d)) {
        shi_comm_abort(comm, SHOAL_EPROTO,
            "rank %d sent a single-copy message with a %u-byte "
            "descriptor (expected %zu)",
            src, h->chunk_bytes, sizeof(d));
        return SHOAL_EPROTO;
    }
    memcpy(&d, shm_slot_data(h), sizeof(d));
    if (d.region.owner != src) {
        shi_comm_abort(comm, SHOAL_EPROTO,
            "rank %d sent a single-copy message in rank %d's memory", src,
            (int) d.region.owner);
        return SHOAL_EPROTO;
    }
    st = shi_shm_mem_read_strided(comm, &d.region, d.base_off, &d.layout,
        tr->bytes, tr->buf, tr->layout);
    if (st != SHOAL_OK) {
        shi_comm_abort(comm, st, "receiving %zu bytes from rank %d: %s",
            tr->bytes, src, shoal_last_error());
        return st;
    }
    tr->done = tr->bytes;
    return SHOAL_OK;
}

// Drains the channel from `src` as far as posted receives allow.
static int
recv_step(shoal_comm *comm, int src)
{
    struct shi_shm_peer *p = &shi_shm_of(comm)->peers[src];
    int                  n = 0;

    for (;;) {
        struct shm_slot_header *h = shm_p2p_slot(
            shi_shm_seg(comm), src, shi_tp_comm(comm)->rank, p->recv_slot);
        if (atomic_load_explicit(&h->seq, memory_order_acquire)
            != p->recv_slot + 1) {
            return n;
        }
        if (p->active_recv == NULL) {
            shoal_request *r = take_posted(comm, src, (int) h->tag);
            if (r == NULL) {
                if (!(h->flags & SHM_LAST) || (h->flags & SHM_READ)
                    || !buffer_unexpected(comm, src, h)) {
                    note_waiting_head(comm, p);
                    return n;
                }
                n++;
                continue;
            }
            p->head_seen   = 0;
            p->active_recv = r;
            if (h->msg_bytes != shi_tp_req(r)->bytes) {
                return size_mismatch(comm, src, (int) h->tag, h->msg_bytes, r);
            }
        }
        shoal_request *r    = p->active_recv;
        uint32_t       flag = h->flags;
        if (flag & SHM_READ) {
            if (shi_tp_leave_long_copy(shi_tp_comm(comm))) {
                return n; // matched; read by a later pass (view.h)
            }
            if (read_from_sender(comm, src, h, r) != SHOAL_OK) {
                return n + 1;
            }
        } else {
            if (!chunk_fits(comm, src, h,
                    shi_tp_req(r)->bytes - shi_tp_req(r)->done)) {
                return n + 1;
            }
            stream_copy(r, shi_tp_req(r)->done, NULL, shm_slot_data(h),
                h->chunk_bytes);
            shi_tp_req(r)->done += h->chunk_bytes;
        }
        consume_slot(comm, src);
        n++;
        if (flag & SHM_LAST) {
            p->active_recv = NULL;
            shi_transport_complete(comm, r, SHOAL_OK);
        }
    }
}

// Fills slot h with the region of r's message when the receiver can read
// it from there; 0 when r goes through the slots.
static int
offer_read(shoal_comm *comm, shoal_request *r, struct shm_slot_header *h)
{
    struct shi_tp_req   *tr = shi_tp_req(r);
    struct shm_read_desc d;
    int64_t              lo, hi;

    size_t channel = (size_t) shi_shm_seg(comm)->p2p_slots
        * shi_shm_seg(comm)->p2p_slot_bytes;

    if ((tr->bytes < READ_MIN_BYTES && tr->bytes <= channel)
        || shi_shm_seg(comm)->p2p_slot_bytes < sizeof(d)) {
        return 0; // before d is cleared: small sends pass here every time
    }
    memset(&d, 0, sizeof(d));
    if (tr->layout != NULL) {
        d.layout = *tr->layout;
    } else {
        shi_strided_dense(&d.layout, tr->bytes);
    }
    if (shi_strided_extent(&d.layout, tr->bytes, &lo, &hi) != 0) {
        return 0; // the caller checked it; the slots take it anyway
    }
    shi_shm_mem_expose(comm, tr->buf + lo, (size_t) (hi - lo), &d.region);
    if (d.region.heap_off == 0 && !shi_tp_comm(comm)->cma_ok) {
        return 0;
    }
    d.base_off = (uint64_t) -lo;
    memcpy(shm_slot_data(h), &d, sizeof(d));
    h->msg_bytes   = tr->bytes;
    h->tag         = (uint32_t) tr->tag;
    h->chunk_bytes = (uint32_t) sizeof(d);
    h->flags       = SHM_FIRST | SHM_LAST | SHM_READ;
    return 1;
}

// Whether the receiver consumed r's SHM_READ slot: it has read the message.
static int
read_done(shoal_comm *comm, int dst, const shoal_request *r)
{
    uint64_t tail = atomic_load_explicit(
        &shm_p2p_tail(shi_shm_seg(comm), shi_tp_comm(comm)->rank, dst)->tail,
        memory_order_acquire);

    return tail >= shi_tp_req(r)->p2p_read_slot;
}

// Whether dst's channel has a free slot for this rank's next message: the
// receiver's tail is read again only once the slots known free are used.
static int
slot_free_to(shoal_comm *comm, int dst)
{
    struct shi_shm_peer *p = &shi_shm_of(comm)->peers[dst];

    if (p->send_slot < p->send_free) {
        return 1;
    }
    p->send_free = atomic_load_explicit(&shm_p2p_tail(shi_shm_seg(comm),
                                            shi_tp_comm(comm)->rank, dst)
                                             ->tail,
                       memory_order_acquire)
        + shi_shm_seg(comm)->p2p_slots;
    return p->send_slot < p->send_free;
}

// Copies the next `chunk` bytes of send r into slot h of its peer's
// channel (the next free one), publishes the slot and rings the peer.
static void
publish_chunk(shoal_comm *comm, shoal_request *r, struct shm_slot_header *h,
    size_t chunk)
{
    struct shi_tp_req   *tr = shi_tp_req(r);
    struct shi_shm_peer *p  = &shi_shm_of(comm)->peers[tr->peer];

    stream_copy(r, tr->done, shm_slot_data(h), NULL, chunk);
    h->msg_bytes   = tr->bytes;
    h->tag         = (uint32_t) tr->tag;
    h->chunk_bytes = (uint32_t) chunk;
    h->flags       = (tr->done == 0 ? SHM_FIRST : 0)
        | (tr->done + chunk == tr->bytes ? SHM_LAST : 0);
    atomic_store_explicit(&h->seq, p->send_slot + 1, memory_order_release);
    p->send_slot++;
    tr->done += chunk;
    shi_ring(comm, tr->peer, 0);
}

// Writes the queued sends to `dst` into free slots, in issue order.
static int
send_step(shoal_comm *comm, int dst)
{
    struct shi_tp_comm  *tc  = shi_tp_comm(comm);
    struct shi_shm_peer *p   = &shi_shm_of(comm)->peers[dst];
    size_t               max = shi_shm_seg(comm)->p2p_slot_bytes;
    int                  n   = 0;
    shoal_request       *r;

    while ((r = p->sends.head) != NULL) {
        if (shi_tp_req(r)->p2p_read_slot != 0) {
            if (!read_done(comm, dst, r)) {
                return n;
            }
            shi_transport_complete(comm, r, SHOAL_OK);
            n++;
            continue;
        }
        if (!slot_free_to(comm, dst)) {
            return n;
        }
        struct shm_slot_header *h
            = shm_p2p_slot(shi_shm_seg(comm), tc->rank, dst, p->send_slot);
        if (shi_tp_req(r)->done == 0 && offer_read(comm, r, h)) {
            atomic_store_explicit(
                &h->seq, p->send_slot + 1, memory_order_release);
            shi_tp_req(r)->p2p_read_slot = ++p->send_slot;
            n++;
            shi_ring(comm, dst, 0);
            continue;
        }
        size_t chunk = shi_tp_req(r)->bytes - shi_tp_req(r)->done < max
            ? shi_tp_req(r)->bytes - shi_tp_req(r)->done
            : max;
        publish_chunk(comm, r, h, chunk);
        n++;
        if (shi_tp_req(r)->done == shi_tp_req(r)->bytes) {
            shi_transport_complete(comm, r, SHOAL_OK);
        }
    }
    return n;
}

int
shi_shm_p2p_step(shoal_comm *comm)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    int                 n  = 0;

    for (int peer = 0; peer < tc->size; peer++) {
        if (peer == tc->rank) {
            continue;
        }
        if (shi_shm_of(comm)->peers[peer].sends.head != NULL) {
            n += send_step(comm, peer);
        }
        n += recv_step(comm, peer);
    }
    return n;
}

// The first buffered message from `p` with `tag` (*prev: the one before
// it in the list, NULL if it is the first), or NULL.
static struct shi_unexpected *
find_unexpected(
    const struct shi_shm_peer *p, int tag, struct shi_unexpected **prev)
{
    *prev = NULL;
    for (struct shi_unexpected *u = p->unexpected; u; *prev = u, u = u->next) {
        if (u->tag == tag) {
            return u;
        }
    }
    return NULL;
}

// Takes the buffered message u from src's list (prev: the one before it,
// NULL if it is the first); the caller frees it.
static void
unlink_unexpected(shoal_comm *comm, int src, struct shi_unexpected *u,
    struct shi_unexpected *prev)
{
    struct shi_shm_peer *p = &shi_shm_of(comm)->peers[src];

    if (prev != NULL) {
        prev->next = u->next;
    } else {
        p->unexpected = u->next;
    }
    if (p->unexpected_tail == u) {
        p->unexpected_tail = prev;
    }
    shi_shm_of(comm)->unexpected_bytes -= (int64_t) u->bytes;
}

// Completes `req` with the buffered message u from `src` (prev: the one
// before u in src's list), which it unlinks and frees.
static void
deliver_unexpected(shoal_comm *comm, int src, struct shi_unexpected *u,
    struct shi_unexpected *prev, shoal_request *req)
{
    struct shi_tp_req *tr = shi_tp_req(req);

    unlink_unexpected(comm, src, u, prev);
    tr->source = src;
    if (u->bytes != tr->bytes) {
        size_mismatch(comm, src, u->tag, u->bytes, req);
    } else {
        stream_copy(req, 0, NULL, u->data, u->bytes);
        shi_transport_complete(comm, req, SHOAL_OK);
    }
    free(u);
}

// Whether a message with `tag` waits at the head of src's channel for a
// receive (seen before, too large to buffer).
static int
head_waits_with_tag(shoal_comm *comm, int src, int tag)
{
    struct shi_shm_peer *p = &shi_shm_of(comm)->peers[src];

    return p->head_seen != 0 && p->active_recv == NULL
        && (int) shm_p2p_slot(
               shi_shm_seg(comm), src, shi_tp_comm(comm)->rank, p->recv_slot)
               ->tag
        == tag;
}

// Makes the message waiting at the head of src's channel req's: the next
// step of recv_step copies it in.
static void
bind_waiting_head(shoal_comm *comm, int src, shoal_request *req)
{
    struct shi_tp_req      *tr = shi_tp_req(req);
    struct shi_shm_peer    *p  = &shi_shm_of(comm)->peers[src];
    struct shm_slot_header *h  = shm_p2p_slot(
         shi_shm_seg(comm), src, shi_tp_comm(comm)->rank, p->recv_slot);

    p->head_seen   = 0;
    p->active_recv = req;
    tr->source     = src;
    tr->blocked_on = src;
    if (h->msg_bytes != tr->bytes) {
        size_mismatch(comm, src, (int) h->tag, h->msg_bytes, req);
    }
}

// Matches a new named receive against what arrived from its peer: the
// buffered messages come before the one waiting at the head of the
// channel, so that same-tag messages keep their order.
static int
match_arrived(shoal_comm *comm, shoal_request *req)
{
    struct shi_tp_req     *tr = shi_tp_req(req);
    struct shi_unexpected *prev, *u;

    u = find_unexpected(&shi_shm_of(comm)->peers[tr->peer], tr->tag, &prev);
    if (u != NULL) {
        deliver_unexpected(comm, tr->peer, u, prev, req);
        return 1;
    }
    if (head_waits_with_tag(comm, tr->peer, tr->tag)) {
        bind_waiting_head(comm, tr->peer, req);
        return 1;
    }
    return 0;
}

// Matches a new any-source receive against the message with its tag that
// arrived first from any sender, buffered or waiting at a channel's head.
static int
match_arrived_any(shoal_comm *comm, shoal_request *req)
{
    struct shi_tp_comm    *tc   = shi_tp_comm(comm);
    struct shi_tp_req     *tr   = shi_tp_req(req);
    struct shi_unexpected *best = NULL, *best_prev = NULL;
    uint64_t               best_arrival = UINT64_MAX;
    int                    best_src = -1, best_is_head = 0;

    for (int src = 0; src < tc->size; src++) {
        struct shi_unexpected *prev, *u;
        if (src == tc->rank) {
            continue;
        }
        u = find_unexpected(&shi_shm_of(comm)->peers[src], tr->tag, &prev);
        if (u != NULL && u->arrival < best_arrival) {
            best = u, best_prev = prev, best_arrival = u->arrival;
            best_src = src, best_is_head = 0;
        } else if (u == NULL && head_waits_with_tag(comm, src, tr->tag)
            && shi_shm_of(comm)->peers[src].head_seen < best_arrival) {
            best_arrival = shi_shm_of(comm)->peers[src].head_seen;
            best_src = src, best_is_head = 1;
        }
    }
    if (best_src < 0) {
        return 0;
    }
    if (best_is_head) {
        bind_waiting_head(comm, best_src, req);
    } else {
        deliver_unexpected(comm, best_src, best, best_prev, req);
    }
    return 1;
}

// A send goes into its peer's channel at once where slots are free and no
// earlier send waits, and a named receive looks at its peer's channel at
// once: the engine's pass over every channel is then not needed.
int
shi_shm_p2p_post(shoal_comm *comm, shoal_request *req)
{
    struct shi_tp_comm *tc  = shi_tp_comm(comm);
    struct shi_tp_req  *tr  = shi_tp_req(req);
    int                 any = tr->peer == SHOAL_ANY_SOURCE;

    tr->seq        = ++tc->p2p_seq;
    tr->blocked_on = tr->peer; // -1 (no one yet) for any-source
    tr->source     = tr->peer;
    tc->p2p_active++;
    if (tr->kind == SHI_OP_SEND) {
        shi_queue_push(&shi_shm_of(comm)->peers[tr->peer].sends, req);
        send_step(comm, tr->peer);
        return 1;
    }
    if (any) {
        if (!match_arrived_any(comm, req)) {
            shi_queue_push(&shi_shm_of(comm)->any_recvs, req);
        }
        return 0; // a head it took is copied by the pass
    }
    if (!match_arrived(comm, req)) {
        shi_queue_push(&shi_shm_of(comm)->peers[tr->peer].recvs, req);
    }
    recv_step(comm, tr->peer);
    return 1;
}

// A small send is one slot: written at once where nothing queues before
// it, it never enters the peer's send queue (transport.h).
static int
send_now(shoal_comm *comm, shoal_request *req)
{
    struct shi_tp_req *tr = shi_tp_req(req);

    if (tr->bytes > shi_shm_seg(comm)->p2p_slot_bytes
        || tr->bytes >= READ_MIN_BYTES
        || shi_shm_of(comm)->peers[tr->peer].sends.head != NULL
        || !slot_free_to(comm, tr->peer)) {
        return 0;
    }
    publish_chunk(comm, req,
        shm_p2p_slot(shi_shm_seg(comm), shi_tp_comm(comm)->rank, tr->peer,
            shi_shm_of(comm)->peers[tr->peer].send_slot),
        tr->bytes);
    return 1;
}

// A named receive whose one-slot message from its peer has arrived, with
// no receive posted before it that could want that message, takes it at
// once: buffered (they come first, in order) or at the head of the
// channel. A size that differs, or a header that does not fit, is left
// to the posted path, which reports it.
static int
recv_now(shoal_comm *comm, shoal_request *req)
{
    struct shi_tp_req      *tr = shi_tp_req(req);
    struct shi_shm_peer    *p  = &shi_shm_of(comm)->peers[tr->peer];
    struct shi_unexpected  *u, *prev;
    struct shm_slot_header *h;

    if (p->active_recv != NULL || p->recvs.head != NULL
        || shi_shm_of(comm)->any_recvs.head != NULL) {
        return 0;
    }
    if ((u = find_unexpected(p, tr->tag, &prev)) != NULL) {
        if (u->bytes != tr->bytes) {
            return 0;
        }
        unlink_unexpected(comm, tr->peer, u, prev);
        stream_copy(req, 0, NULL, u->data, u->bytes);
        free(u);
        return 1;
    }
    h = shm_p2p_slot(
        shi_shm_seg(comm), tr->peer, shi_tp_comm(comm)->rank, p->recv_slot);
    if (atomic_load_explicit(&h->seq, memory_order_acquire) != p->recv_slot + 1
        || (int) h->tag != tr->tag
        || (h->flags & (SHM_LAST | SHM_READ)) != SHM_LAST
        || h->msg_bytes != tr->bytes || !chunk_in_bounds(comm, h, tr->bytes)) {
        return 0;
    }
    stream_copy(req, 0, NULL, shm_slot_data(h), h->chunk_bytes);
    tr->done     = tr->bytes;
    p->head_seen = 0;
    consume_slot(comm, tr->peer);
    return 1;
}

int
shi_shm_p2p_now(shoal_comm *comm, shoal_request *req)
{
    struct shi_tp_req *tr = shi_tp_req(req);

    if (tr->layout != NULL || tr->peer < 0
        || !(tr->kind == SHI_OP_SEND ? send_now(comm, req)
                                     : recv_now(comm, req))) {
        return 0;
    }
    tr->seq        = ++shi_tp_comm(comm)->p2p_seq;
    tr->blocked_on = tr->peer;
    tr->source     = tr->peer;
    return 1;
}

void
shi_shm_p2p_discard(shoal_comm *comm)
{
    struct shi_shm *sh = shi_shm_of(comm);

    for (int i = 0;
         sh != NULL && sh->peers != NULL && i < shi_tp_comm(comm)->size; i++) {
        struct shi_unexpected *u = sh->peers[i].unexpected;
        while (u != NULL) {
            struct shi_unexpected *next = u->next;
            free(u);
            u = next;
        }
        sh->peers[i].unexpected = sh->peers[i].unexpected_tail = NULL;
    }
}

void
shi_shm_p2p_forget(shoal_comm *comm, shoal_request *req)
{
    struct shi_tp_req *tr = shi_tp_req(req);
    struct shi_shm    *sh = shi_shm_of(comm);

    if (tr->kind == SHI_OP_SEND) {
        shi_queue_remove(&sh->peers[tr->peer].sends, req);
    } else if (tr->source < 0) {
        shi_queue_remove(&sh->any_recvs, req); // any-source, not matched
    } else if (sh->peers[tr->source].active_recv == req) {
        sh->peers[tr->source].active_recv = NULL;
    } else {
        shi_queue_remove(&sh->peers[tr->source].recvs, req);
    }
}
