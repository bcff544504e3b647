// A message of a message transport (SHI_TP_MESSAGES, see transport.h): a
// point-to-point operation or one data message of a collective's schedule.
// The owner (the schedule executor, or a point-to-point request) fills in
// the first group of fields and keeps the message until `done`; the rest
// is the transport's bookkeeping.
#ifndef SHI_MSG_H
#define SHI_MSG_H

#include <stddef.h>
#include <stdint.h>

enum shi_msg_type {
    SHI_MSG_DATA = 1, // collective data: paired by position on the channel
    SHI_MSG_P2P, // point to point: matched by tag in send order
    // One-sided, into a window (transport.h, rma_send); after numbers a
    // transport may use for its own control messages.
    SHI_MSG_PUT    = 5,
    SHI_MSG_SIGNAL = 6,
};

typedef struct shi_msg {
    // Filled in by the owner.
    int      peer;
    int      type; // shi_msg_type
    int      tag; // P2P
    uint32_t coll_seq; // DATA: collective number; PUT, SIGNAL: window
    uint64_t call_hash; // DATA: the call's descriptor hash; PUT: the target
                        // byte offset; SIGNAL: the counter
    uint64_t       posted; // P2P receive: post number (request seq)
    unsigned char *buf;
    size_t         total;
    void          *owner; // P2P: the request
    // Set by the transport.
    int      done;
    uint64_t id; // position on its channel (DATA: msg_number)
    // The transport's bookkeeping.
    struct shi_msg *next;
    struct shi_msg *forward; // unexpected: the receive it belongs to
    uint64_t        arrival; // P2P unexpected: arrival number
    size_t          handed; // send: bytes given to frames
    size_t          moved; // bytes fully written or read
    int             readers; // frames being read into buf
    int             owned; // buf is ours (unexpected message)
} shi_msg;

#endif
