// Collective and split cases.
#include <string.h>

#include "mptest.h"

static const size_t bcast_counts[] = { 0, 1, 7, 1023, 262147, (1u << 20) + 3 };

int
mp_case_bcast(shoal_comm *comm, int argc, char **argv)
{
    int rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    (void) argc;
    (void) argv;
    size_t max = bcast_counts[sizeof(bcast_counts) / sizeof(size_t) - 1] * 4;
    unsigned char *buf = malloc(max);
    for (int root = 0; root < size; root++) {
        for (size_t k = 0; k < sizeof(bcast_counts) / sizeof(size_t); k++) {
            size_t n = bcast_counts[k];
            if (rank == root) {
                mp_fill(buf, n * 4, root, (int) k);
            } else {
                memset(buf, 0xee, n * 4);
            }
            MP_OK(shoal_broadcast(comm, buf, n, SHOAL_FLOAT32, root));
            MP_CHECK(mp_verify(buf, n * 4, root, (int) k));
        }
    }
    // Non-blocking, several in flight, then waited in reverse order.
    shoal_request *req[4];
    unsigned char  small[4][64];
    for (int i = 0; i < 4; i++) {
        if (rank == i % size) {
            mp_fill(small[i], 64, i, 40 + i);
        }
        MP_OK(shoal_ibroadcast(
            comm, small[i], 16, SHOAL_INT32, i % size, &req[i]));
    }
    for (int i = 3; i >= 0; i--) {
        MP_OK(shoal_wait(req[i], -1));
        shoal_request_free(req[i]);
        MP_CHECK(mp_verify(small[i], 64, i, 40 + i));
    }
    free(buf);
    return 0;
}

int
mp_case_barrier(shoal_comm *comm, int argc, char **argv)
{
    int rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    (void) argc;
    (void) argv;
    for (int i = 0; i < 200; i++) {
        MP_OK(shoal_barrier(comm));
    }
    // Nobody leaves before the last rank arrives.
    double t0 = mp_now();
    if (rank == size - 1) {
        mp_sleep_ms(300);
    }
    MP_OK(shoal_barrier(comm));
    MP_CHECK(size == 1 || mp_now() - t0 > 0.25);
    shoal_request *req;
    MP_OK(shoal_ibarrier(comm, &req));
    MP_OK(shoal_wait(req, -1));
    shoal_request_free(req);
    return 0;
}

// Split by parity (key reverses the order), then by an explicit list.
int
mp_case_split(shoal_comm *comm, int argc, char **argv)
{
    int         rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    shoal_comm *half, *first, *none;
    (void) argc;
    (void) argv;
    MP_OK(shoal_comm_split(comm, rank % 2, -rank, &half));
    MP_CHECK(half != NULL);
    int hsize = (size + (rank % 2 ? 0 : 1)) / 2;
    MP_CHECK(shoal_comm_size(half) == hsize);
    MP_CHECK(shoal_comm_rank(half) == hsize - 1 - rank / 2);
    // Broadcast from the half's rank 0 (the highest parent rank of it).
    int v = rank;
    MP_OK(shoal_broadcast(half, &v, 1, SHOAL_INT32, 0));
    int top = rank % 2 ? (size % 2 ? size - 2 : size - 1)
                       : (size % 2 ? size - 1 : size - 2);
    MP_CHECK(v == top);
    MP_OK(shoal_barrier(half));
    // The parent still works while the child exists.
    MP_OK(shoal_barrier(comm));
    MP_OK(shoal_comm_split(comm, SHOAL_SPLIT_NONE, 0, &none));
    MP_CHECK(none == NULL);
    // Explicit list: the first ceil(size/2) ranks, in reverse order.
    int n = (size + 1) / 2, list[64];
    for (int i = 0; i < n; i++) {
        list[i] = n - 1 - i;
    }
    int member = rank < n;
    MP_OK(shoal_comm_split_ranks(comm, list, member ? n : 0, &first));
    MP_CHECK((first != NULL) == member);
    if (member) {
        MP_CHECK(shoal_comm_rank(first) == n - 1 - rank);
        int w = rank;
        MP_OK(shoal_broadcast(first, &w, 1, SHOAL_INT32, 0));
        MP_CHECK(w == n - 1);
        MP_OK(shoal_comm_destroy(first));
    }
    // A list without the caller is an error, and the comm still works.
    if (size > 1) {
        int         other = (rank + 1) % size;
        shoal_comm *bad;
        MP_EXPECT(shoal_comm_split_ranks(comm, &other, 1, &bad), SHOAL_EINVAL);
        MP_CHECK(bad == NULL);
    }
    MP_OK(shoal_comm_destroy(half));
    MP_OK(shoal_barrier(comm));
    return 0;
}

// Bad arguments fail on the calling rank before anything is sent, and the
// communicator keeps working.
int
mp_case_bad_args(shoal_comm *comm, int argc, char **argv)
{
    int            rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int            x   = 0;
    shoal_request *req = (shoal_request *) &x;
    (void) argc;
    (void) argv;
    MP_EXPECT(shoal_broadcast(comm, NULL, 4, SHOAL_INT32, 0), SHOAL_EINVAL);
    MP_EXPECT(shoal_broadcast(comm, &x, 1, SHOAL_INT32, size), SHOAL_EINVAL);
    MP_EXPECT(shoal_broadcast(comm, &x, 1, SHOAL_INT32, -1), SHOAL_EINVAL);
    MP_EXPECT(shoal_broadcast(comm, &x, 1, (shoal_dtype) 42, 0), SHOAL_EINVAL);
    MP_EXPECT(shoal_send(comm, NULL, 1, SHOAL_INT32, 0, 0), SHOAL_EINVAL);
    MP_EXPECT(shoal_send(comm, &x, 1, SHOAL_INT32, size, 0), SHOAL_EINVAL);
    MP_EXPECT(shoal_send(comm, &x, 1, SHOAL_INT32, rank, 0), SHOAL_EINVAL);
    MP_EXPECT(shoal_recv(comm, &x, 1, SHOAL_INT32, 0, -3), SHOAL_EINVAL);
    MP_EXPECT(shoal_isend(comm, &x, 1, SHOAL_FLOAT16 + 100, 0, 0, &req),
        SHOAL_EINVAL);
    MP_CHECK(req == NULL);
    MP_CHECK(strstr(shoal_comm_last_error(comm), "dtype") != NULL);
    MP_EXPECT(shoal_barrier(NULL), SHOAL_EINVAL);
    MP_EXPECT(shoal_comm_set_timeout(comm, 0), SHOAL_EINVAL);
    // Zero elements with a NULL buffer are fine.
    MP_OK(shoal_broadcast(comm, NULL, 0, SHOAL_INT32, 0));
    x = rank == 0 ? 77 : 0;
    MP_OK(shoal_broadcast(comm, &x, 1, SHOAL_INT32, 0));
    MP_CHECK(x == 77);
    return 0;
}
