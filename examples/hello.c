// A complete small shoal program: run it as 4 ranks with
//   shoalrun -n 4 ./hello
// Each rank broadcasts from rank 0, passes a token around a ring with
// send/recv, overlaps a non-blocking barrier with work, and splits the
// world into even and odd ranks.
#include <shoal.h>
#include <stdio.h>

#define CHECK(call)                                                           \
    do {                                                                      \
        int st_ = (call);                                                     \
        if (st_ != SHOAL_OK) {                                                \
            fprintf(stderr, "%s failed: %s\n", #call, shoal_last_error());    \
            return 1;                                                         \
        }                                                                     \
    } while (0)

int
main(void)
{
    shoal_comm *world, *half;

    // Rank, size and the rendezvous store come from the launcher.
    CHECK(shoal_comm_create(&world, NULL));
    int rank = shoal_comm_rank(world), size = shoal_comm_size(world);

    // Broadcast: every rank ends with rank 0's values.
    float weights[4] = { 0 };
    if (rank == 0) {
        for (int i = 0; i < 4; i++) {
            weights[i] = 0.5f * (float) (i + 1);
        }
    }
    CHECK(shoal_broadcast(world, weights, 4, SHOAL_FLOAT32, 0));

    // A token goes once around the ring; each rank adds its rank.
    long token = 0;
    if (size > 1) {
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        if (rank == 0) {
            CHECK(shoal_send(world, &token, 1, SHOAL_INT64, next, 0));
            CHECK(shoal_recv(world, &token, 1, SHOAL_INT64, prev, 0));
        } else {
            CHECK(shoal_recv(world, &token, 1, SHOAL_INT64, prev, 0));
            token += rank;
            CHECK(shoal_send(world, &token, 1, SHOAL_INT64, next, 0));
        }
    }

    // Non-blocking: start a barrier, do some work, then wait for it.
    shoal_request *req;
    CHECK(shoal_ibarrier(world, &req));
    double work = 0;
    for (int i = 1; i < 100000; i++) {
        work += 1.0 / i;
    }
    CHECK(shoal_wait(req, -1));
    shoal_request_free(req);

    // Split into even and odd ranks and broadcast within each half.
    CHECK(shoal_comm_split(world, rank % 2, rank, &half));
    int leader = rank;
    CHECK(shoal_broadcast(half, &leader, 1, SHOAL_INT32, 0));

    printf("rank %d/%d: weights[3]=%.1f token=%ld half-leader=%d work=%.2f\n",
        rank, size, weights[3], token, leader, work);
    CHECK(shoal_comm_destroy(half));
    CHECK(shoal_comm_destroy(world));
    return 0;
}
