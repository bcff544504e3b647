// Messages between ranks over TCP, driven by the progress engine.
//
// Every pair of ranks holds `nsock` connected sockets (SHOAL_SOCKETS_PER_
// PEER), non-blocking, in the communicator's epoll set. A message travels
// as frames: a 48-byte header then up to `chunk` bytes of payload, written
// straight from the sender's buffer and read straight into the receiver's
// (when its receive is posted; otherwise into a buffer of ours, copied
// once the receive arrives). A large message's frames spread over every
// socket, each socket taking the next chunk when it is free, so the
// streams share the load by their speed and the receiver reassembles by
// offset.
//
// Two channels per ordered pair of ranks:
//  - collective data: the k-th message sent to a peer is the k-th receive
//    posted for it (schedules pair them by position, see sched.h). Each
//    frame carries the collective number and a hash of the call, so a
//    peer in a different collective is a mismatch, not corrupted data;
//  - point-to-point: matched by tag in send order, as over shared memory;
//    one-sided puts and signals of windows share it, so a signal arrives
//    after the puts sent before it;
//    they go over the first socket only, whole messages one after the
//    other, so their order is the send order. A message that arrives
//    before its receive is kept whole (numbered in arrival order); a
//    message goes to the earliest posted receive for it, named or
//    any-source (one queue per communicator), and a new any-source
//    receive takes the earliest arrived message with its tag.
// Control frames (abort with its text, goodbye) also use the first socket.
//
// Frames are in the host's byte order; the magic number tells a peer of
// another byte order (or not a shoal rank) at the first frame.
#ifndef SHI_TCP_XFER_H
#define SHI_TCP_XFER_H

#include <stddef.h>
#include <stdint.h>

#include "shoal.h"
#include "transport/msg.h"

struct shi_net;

// Frame types (the message types keep their numbers on the wire).
enum shi_tcp_type {
    SHI_TCP_DATA  = SHI_MSG_DATA,
    SHI_TCP_P2P   = SHI_MSG_P2P,
    SHI_TCP_ABORT = 3, // payload: the abort's text; coll_seq: its status
    SHI_TCP_BYE   = 4, // the sender destroyed its communicator
    // One-sided, on the point-to-point channel (so in order with each
    // other): coll_seq the window, call_hash the target byte offset (PUT)
    // or the counter (SIGNAL, no payload).
    SHI_TCP_PUT    = SHI_MSG_PUT,
    SHI_TCP_SIGNAL = SHI_MSG_SIGNAL,
};

// Queues a message to `msg->peer` (type DATA or P2P, buf, total, tag or
// coll_seq and call_hash filled in; DATA: also its id, the message's
// position on the channel, taken from the peer's data_tx_id when the
// schedule was built). Under the comm lock.
void shi_tcp_send(struct shi_net *net, shi_msg *msg);

// Posts a receive (DATA: message msg->id of the peer's data channel, from
// its data_rx_id; P2P: the next message with msg->tag, from msg->peer or,
// for SHOAL_ANY_SOURCE, from any peer, with msg->posted set). A message
// already (partly) here is adopted. Returns 1 if msg completed at once.
// Under the comm lock.
int shi_tcp_recv(struct shi_net *net, shi_msg *msg);

// Moves bytes on every socket that is ready (epoll, no wait) and returns
// the number of frames finished (0: nothing moved). Peer failures and
// protocol errors abort the communicator. `may_clear_wake`: no thread of
// ours sleeps (or is about to) in shi_tcp_sleep, so a pending wake-up may
// be reset; otherwise it is left for them. Under the comm lock.
int shi_tcp_progress(struct shi_net *net, int may_clear_wake);

// Sleeps until a socket is ready, the wake-up descriptor is rung, or
// timeout_ns passes. Without the comm lock.
void shi_tcp_sleep(struct shi_net *net, int64_t timeout_ns);

// Wakes every thread in shi_tcp_sleep, and any that enters it before the
// next shi_tcp_progress allowed to clear the wake-up: the descriptor
// stays readable until then, and epoll passes a readable descriptor on
// from one waiter to the next.
void shi_tcp_wake(struct shi_net *net);

// Queues an abort's text to every peer (best effort: sent as the sockets
// allow, and flushed at destroy).
void shi_tcp_abort_peers(struct shi_net *net, int status, const char *text);

// After an abort: forgets every queued message (their owners' buffers
// may go away) and finishes frames already begun with zeros, so that the
// streams stay in step for the abort and goodbye frames that follow.
void shi_tcp_purge(struct shi_net *net);

// Looks for a peer that does not acknowledge what we sent (or our
// keep-alive probes) for over a second: its link or host is down. Returns
// 1 with the peer's rank in *peer and the evidence in why.
int shi_tcp_unreachable(struct shi_net *net, int *peer, char *why, size_t len);

// Says goodbye to every peer and writes what is queued, waiting at most
// until `deadline`. Under the comm lock.
void shi_tcp_goodbye(struct shi_net *net, int64_t deadline);

#endif
