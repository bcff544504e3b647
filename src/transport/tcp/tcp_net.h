// State of a communicator whose ranks talk over TCP (see tcp_xfer.h for
// the message layer, tcp_mesh.c for how the sockets are set up).
#ifndef SHI_TCP_NET_H
#define SHI_TCP_NET_H

#include <stddef.h>
#include <stdint.h>

#include <stdatomic.h>

#include "transport/tcp/tcp_xfer.h"
#include "transport/transport.h"

struct shoal_comm;

#define SHI_TCP_MAGIC 0x53484f4cu // "SHOL"

// A frame header (host byte order).
struct shi_tcp_frame {
    uint32_t magic;
    uint16_t type; // shi_tcp_type
    uint16_t reserved;
    uint32_t coll_seq; // DATA: collective number; ABORT: status; P2P: tag
    uint32_t len; // payload bytes of this frame
    uint64_t id; // message position on its channel
    uint64_t off; // offset of the payload in the message
    uint64_t total; // message bytes
    uint64_t call_hash; // DATA: hash of the call
};

#define SHI_TCP_CTL_MAX 1024 // longest control payload (abort text)

// 1 if a received header is well formed: a known type, the payload inside
// the message it claims, a control payload that fits the socket's buffer.
// Pure, so that it can be fuzzed on its own.
int shi_tcp_frame_ok(const struct shi_tcp_frame *h);

struct shi_tcp_sock {
    int fd;
    int out_armed; // EPOLLOUT in the interest set
    int bye; // the peer said goodbye on this socket
    // Sending: the frame being written.
    shi_msg             *tx;
    const unsigned char *tx_src; // the frame's payload ...
    size_t               tx_skip; // ... where payload byte tx_skip is
    struct shi_tcp_frame tx_hdr;
    size_t               tx_done; // header + payload bytes written
    // Receiving: the frame being read.
    struct shi_tcp_frame rx_hdr;
    size_t               rx_hdr_got;
    shi_msg             *rx; // target message (NULL: control payload)
    size_t               rx_got; // payload bytes read
    char                 ctl[SHI_TCP_CTL_MAX];
};

struct shi_tcp_queue {
    shi_msg *head, *tail;
};

struct shi_tcp_peer {
    struct shi_tcp_sock *socks; // nsock of them
    int                  open_socks; // still in the epoll set
    int                  byes; // sockets that said goodbye
    struct shi_tcp_queue data_out, ctl_out; // to send (ctl: P2P, control)
    uint64_t             data_tx_id, p2p_tx_id, data_rx_id, p2p_rx_id;
    struct shi_tcp_queue posted; // data receives not complete
    struct shi_tcp_queue unexp; // data messages nobody posted yet
    struct shi_tcp_queue p2p_posted, p2p_unexp;
    // Unexpected messages a receive adopted while frames still arrive
    // into them (forwarded on): owned here until their last frame.
    struct shi_tcp_queue forwarding;
    shi_msg             *p2p_cur; // the P2P message arriving now
    shi_msg             *rma_cur; // the put arriving now (ours)
    char                 addr[64]; // "10.0.0.2:4567", for messages
};

struct shi_net {
    struct shoal_comm   *comm;
    int                  nsock;
    size_t               chunk; // payload bytes per frame, at most
    int                  epfd, wakefd;
    struct shi_tcp_peer *peers;
    int64_t              unexpected_bytes;
    struct shi_tcp_queue p2p_any; // any-source receives not matched yet
    uint64_t             p2p_arrivals; // P2P messages before their receive
    int                  abort_sent;
    _Atomic uint32_t     sleepers; // our threads in shi_tcp_sleep
    unsigned char       *heap; // shoal_alloc's range (private memory)
    size_t               heap_bytes;
    unsigned char       *zeros; // after an abort: what unfinished frames send
    shi_msg              purged; // ... on behalf of this message
};

// Sets up the mesh of sockets (tcp_mesh.c): given every rank's address,
// connects to the lower ranks and accepts the higher ones on `lfd`, each
// connection proving the job secret. On success comm->tp_state is set.
int shi_tcp_mesh(
    struct shoal_comm *comm, int lfd, char (*addrs)[64], int64_t deadline);

// Lists this rank's address, trades addresses through the store, then
// joins the mesh (tcp_setup.c): the transport's setup.
int shi_tcp_setup(
    struct shoal_comm *comm, const struct shi_tp_boot *boot, int64_t deadline);

// Point to point (tcp_p2p.c): posts a send or receive request; a message
// of a request (point to point or one-sided) finished, and an any-source
// receive's sender found (from tcp_xfer.c).
int  shi_tcp_p2p_post(struct shoal_comm *comm, shoal_request *req);
void shi_net_p2p_done(struct shoal_comm *comm, shi_msg *msg);
void shi_net_p2p_matched(struct shoal_comm *comm, shi_msg *msg);

// One-sided (tcp_rma.c): sends a window's put or signal (the table's
// rma_send); where an arriving put goes, and an arriving signal.
void shi_tcp_rma_send(
    struct shoal_comm *comm, shoal_request *req, uint32_t win, uint64_t off);
shi_msg *shi_tcp_put_arrives(
    struct shi_net *net, int p, const struct shi_tcp_frame *h);
void shi_tcp_signal_arrives(
    struct shi_net *net, int p, const struct shi_tcp_frame *h);

// Closes every socket and frees the state (NULL accepted).
void shi_net_free(struct shi_net *net);

// Frame payload size and sockets per peer from the environment
// (SHOAL_TCP_CHUNK_BYTES, SHOAL_SOCKETS_PER_PEER).
int shi_tcp_config(int *nsock, size_t *chunk);

// Adjusts a connected socket: non-blocking, TCP_NODELAY, large buffers,
// keep-alive, and TCP_USER_TIMEOUT so a silent peer fails sends.
void shi_tcp_tune(int fd, int64_t timeout_ms);

#endif
