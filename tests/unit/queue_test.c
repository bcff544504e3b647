// Queues (shoal.h, "Queues"): the queue case (many senders to one
// location with order checked, remote gets, multicast, named queues,
// objects and tensors, transactions, items larger than a ring, time-outs,
// bad arguments) over shared memory and TCP, with rings small enough to
// wrap and queues full often; and a location killed while others wait.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define ENV(...) ((const char *const[]) { __VA_ARGS__, NULL })
#define SHM      ENV("SHOAL_TRANSPORT=shm")
#define TCP      ENV("SHOAL_TRANSPORT=tcp")
// Rings of 16 KiB: senders wait for room, a 3 MiB item goes in many
// pieces (without process_vm_readv: else the location reads large items
// from the sender's memory). FULL: queues of 4 items too, for the case that
// fills one (the queue case's locations put to themselves before they take:
// with such queues they would wait for themselves).
#define SHM_SMALL                                                             \
    ENV("SHOAL_TRANSPORT=shm", "SHOAL_QUEUE_RING_BYTES=16K", "SHOAL_CMA=0")
#define TCP_SMALL                                                             \
    ENV("SHOAL_TRANSPORT=tcp", "SHOAL_QUEUE_RING_BYTES=16K",                  \
        "SHOAL_TCP_CHUNK_BYTES=1024")
#define SHM_FULL                                                              \
    ENV("SHOAL_TRANSPORT=shm", "SHOAL_QUEUE_RING_BYTES=16K",                  \
        "SHOAL_QUEUE_CAPACITY=4")
#define TCP_FULL                                                              \
    ENV("SHOAL_TRANSPORT=tcp", "SHOAL_QUEUE_RING_BYTES=16K",                  \
        "SHOAL_QUEUE_CAPACITY=4")

static void
expect(int n, const char *name, const char *const *env, int want_rc,
    int want_ok, const char *want_text)
{
    char *out;
    int   rc = test_run_mptest(n, name, NULL, env, &out, 120);

    CHECK_MSG(rc == want_rc && test_count(out, " OK\n") >= want_ok
            && (want_text == NULL || strstr(out, want_text) != NULL),
        "case %s on %d ranks (%s): exit %d, wanted %d\n%s", name, n,
        env[1] != NULL ? env[1] : env[0], rc, want_rc, out);
    free(out);
}

#define QUEUE_CASE(tname, n, case_name, env)                                  \
    TEST_T(tname, 120)                                                        \
    {                                                                         \
        expect(n, case_name, env, 0, n, NULL);                                \
    }

QUEUE_CASE(queue_1, 1, "queue", SHM)
QUEUE_CASE(queue_2, 2, "queue", SHM)
QUEUE_CASE(queue_3, 3, "queue", SHM)
QUEUE_CASE(queue_4, 4, "queue", SHM)
QUEUE_CASE(queue_8, 8, "queue", SHM)
QUEUE_CASE(queue_small_3, 3, "queue", SHM_SMALL)
QUEUE_CASE(queue_tcp_2, 2, "queue", TCP)
QUEUE_CASE(queue_tcp_3, 3, "queue", TCP)
QUEUE_CASE(queue_tcp_small_3, 3, "queue", TCP_SMALL)
// Everyone to everyone at once, before anyone takes, with small rings.
QUEUE_CASE(queue_all_4, 4, "queue_all", SHM_SMALL)
QUEUE_CASE(queue_all_tcp_3, 3, "queue_all", TCP_SMALL)
// A full queue: puts wait, or fail at once when they may not wait.
QUEUE_CASE(queue_full_2, 2, "queue_full", SHM_FULL)
QUEUE_CASE(queue_full_tcp_2, 2, "queue_full", TCP_FULL)

// The location dies: the others' gets fail within 2 s naming it (the case
// checks), and the launcher reports the kill.
TEST_T(queue_kill_3, 60)
{
    expect(3, "queue_kill", SHM, 137, 2, "rank 0 killed by signal 9");
}

TEST_T(queue_kill_tcp_3, 60)
{
    expect(3, "queue_kill", TCP, 137, 2, "rank 0 killed by signal 9");
}
