// Receives posted after their messages arrived (the sends were written and
// a barrier passed): small ones are taken as they are issued, from the
// buffered messages or the head of the channel, and must keep the
// matching rules all the same. Pairs of ranks (0 with 1, 2 with 3, ...);
// the odd rank sends, the even one receives; an odd last rank only joins
// the barriers.
//   1. tag 1 (A), tag 2 (B), tag 1 (C): receives for tags 2, 1, 1 get B,
//      A, C, each complete when issued, its source the sender.
//   2. tag 4, 16 bytes, then tag 4, 64 KiB (two slots): the small one is
//      taken first, the large one after it.
//   3. A receive held across its communicator's destruction: still
//      complete, with its data and source, and freed without it.
//   4. tag 9, 8 bytes, received as 4 (ranks 0 and 1 only):
//      SHOAL_EMISMATCH, the communicator aborted on every rank.
#include <string.h>

#include "mptest.h"

#define BIG ((size_t) 64 << 10)

// What a rank does in each round.
enum role { SENDER, RECEIVER, BYSTANDER };

static int
recv_done(shoal_comm *comm, int peer, int tag, int *v)
{
    shoal_request *r;

    MP_OK(shoal_irecv(comm, v, 1, SHOAL_INT32, peer, tag, &r));
    MP_OK(shoal_test(r));
    MP_CHECK(shoal_request_source(r) == peer);
    shoal_request_free(r);
    return 0;
}

static int
tags_in_order(shoal_comm *comm, enum role role, int peer)
{
    int me = shoal_comm_rank(comm), got = 0;
    int a = 100 + me, b = 200 + me, c = 300 + me;

    if (role == SENDER) {
        MP_OK(shoal_send(comm, &a, 1, SHOAL_INT32, peer, 1));
        MP_OK(shoal_send(comm, &b, 1, SHOAL_INT32, peer, 2));
        MP_OK(shoal_send(comm, &c, 1, SHOAL_INT32, peer, 1));
    }
    MP_OK(shoal_barrier(comm));
    if (role == RECEIVER) {
        MP_CHECK(recv_done(comm, peer, 2, &got) == 0 && got == 200 + peer);
        MP_CHECK(recv_done(comm, peer, 1, &got) == 0 && got == 100 + peer);
        MP_CHECK(recv_done(comm, peer, 1, &got) == 0 && got == 300 + peer);
    }
    return 0;
}

static int
small_before_large(shoal_comm *comm, enum role role, int peer)
{
    unsigned char  small[16], *big = malloc(BIG);
    shoal_request *s = NULL;

    MP_CHECK(big != NULL);
    if (role == SENDER) {
        mp_fill(small, sizeof(small), shoal_comm_rank(comm), 1);
        mp_fill(big, BIG, shoal_comm_rank(comm), 2);
        MP_OK(shoal_send(comm, small, sizeof(small), SHOAL_UINT8, peer, 4));
        MP_OK(shoal_isend(comm, big, BIG, SHOAL_UINT8, peer, 4, &s));
    }
    MP_OK(shoal_barrier(comm));
    if (role == RECEIVER) {
        MP_OK(shoal_recv(comm, small, sizeof(small), SHOAL_UINT8, peer, 4));
        MP_OK(shoal_recv(comm, big, BIG, SHOAL_UINT8, peer, 4));
        MP_CHECK(mp_verify(small, sizeof(small), peer, 1));
        MP_CHECK(mp_verify(big, BIG, peer, 2));
    } else if (role == SENDER) {
        MP_OK(shoal_wait(s, -1));
        shoal_request_free(s);
    }
    free(big);
    return 0;
}

static int
held_past_destroy(shoal_comm *world, enum role role, int peer)
{
    int size = shoal_comm_size(world), all[64],
        v    = 500 + shoal_comm_rank(world);
    shoal_comm    *comm;
    shoal_request *r = NULL;

    MP_CHECK(size <= 64);
    for (int i = 0; i < size; i++) {
        all[i] = i;
    }
    MP_OK(shoal_comm_split_ranks(world, all, size, &comm));
    if (role == SENDER) {
        MP_OK(shoal_send(comm, &v, 1, SHOAL_INT32, peer, 6));
    }
    MP_OK(shoal_barrier(comm));
    if (role == RECEIVER) {
        v = 0;
        MP_OK(shoal_irecv(comm, &v, 1, SHOAL_INT32, peer, 6, &r));
    }
    MP_OK(shoal_comm_destroy(comm));
    if (r != NULL) {
        MP_OK(shoal_wait(r, -1));
        MP_CHECK(v == 500 + peer && shoal_request_source(r) == peer);
        shoal_request_free(r);
    }
    return 0;
}

static int
size_mismatch(shoal_comm *comm, enum role role, int peer)
{
    int64_t v = 7;
    int     st;

    if (role == SENDER) {
        MP_OK(shoal_send(comm, &v, 1, SHOAL_INT64, peer, 9));
    }
    // The receiver may fail the communicator before the others are out.
    st = shoal_barrier(comm);
    MP_CHECK(st == SHOAL_OK || (role != RECEIVER && st == SHOAL_EMISMATCH));
    if (role == RECEIVER) {
        MP_EXPECT(
            shoal_recv(comm, &v, 1, SHOAL_INT32, peer, 9), SHOAL_EMISMATCH);
        MP_CHECK(strstr(shoal_last_error(), "8 bytes") != NULL);
    }
    MP_CHECK(shoal_barrier(comm) < 0);
    return 0;
}

int
mp_case_p2p_early(shoal_comm *comm, int argc, char **argv)
{
    int       rank = shoal_comm_rank(comm), peer = rank ^ 1;
    enum role role = rank % 2 == 1 ? SENDER : RECEIVER;

    (void) argc;
    (void) argv;
    if (peer >= shoal_comm_size(comm)) {
        role = BYSTANDER;
    }
    MP_CHECK(tags_in_order(comm, role, peer) == 0);
    MP_CHECK(small_before_large(comm, role, peer) == 0);
    MP_CHECK(held_past_destroy(comm, role, peer) == 0);
    // One pair only: a second receiver could see the first one's abort.
    return size_mismatch(comm, rank < 2 ? role : BYSTANDER, peer);
}
