// Windows (one-sided put, signal, mapped memory): the ring pattern over
// shared memory (shoal_alloc windows and malloc ones) and over TCP on
// 2, 3, 4 and 8 ranks, peer pointers, bad arguments, a rank killed while
// the others wait for its signal, and a wait whose deadline passes. The
// cases across separate network stacks are in tests/net.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define ENV(...) ((const char *const[]) { __VA_ARGS__, NULL })
#define SHM      ENV("SHOAL_TRANSPORT=shm")
#define TCP      ENV("SHOAL_TRANSPORT=tcp")
// Tiny frames: every put spreads over many frames.
#define TCP_TINY ENV("SHOAL_TRANSPORT=tcp", "SHOAL_TCP_CHUNK_BYTES=1024")

static void
expect(int n, const char *name, const char *arg, const char *const *env,
    int want_rc, int want_ok, const char *want_text)
{
    char *out;
    int   rc = test_run_mptest(n, name, arg, env, &out, 300);

    CHECK_MSG(rc == want_rc && test_count(out, " OK\n") >= want_ok
            && (want_text == NULL || strstr(out, want_text) != NULL),
        "case %s %s on %d ranks (%s): exit %d, wanted %d\n%s", name,
        arg ? arg : "", n, env[0], rc, want_rc, out);
    free(out);
}

static void
pass(int n, const char *name, const char *arg, const char *const *env)
{
    expect(n, name, arg, env, 0, n, NULL);
}

#define WINDOW_CASE(tname, n, case_name, arg, env)                            \
    TEST_T(tname, 300)                                                        \
    {                                                                         \
        pass(n, case_name, arg, env);                                         \
    }

// The ring, every count, dtype and blocking mode.
WINDOW_CASE(window_ring_heap_2, 2, "window_ring", "heap", SHM)
WINDOW_CASE(window_ring_plain_2, 2, "window_ring", "plain", SHM)
WINDOW_CASE(window_ring_heap_3, 3, "window_ring", "heap", SHM)
WINDOW_CASE(window_ring_plain_4, 4, "window_ring", "plain", SHM)
WINDOW_CASE(window_ring_heap_8, 8, "window_ring", "heap", SHM)
WINDOW_CASE(window_ring_plain_8, 8, "window_ring", "plain", SHM)
WINDOW_CASE(window_ring_one_1, 1, "window_ring", "heap", SHM)
WINDOW_CASE(window_ring_tcp_2, 2, "window_ring", "plain", TCP)
WINDOW_CASE(window_ring_tcp_3, 3, "window_ring", "heap", TCP_TINY)
WINDOW_CASE(window_ring_tcp_4, 4, "window_ring", "plain", TCP)
WINDOW_CASE(window_ring_tcp_8, 8, "window_ring", "plain", TCP)

// Peer pointers: mapped over shared memory, refused over TCP.
WINDOW_CASE(window_map_2, 2, "window_map", NULL, SHM)
WINDOW_CASE(window_map_4, 4, "window_map", NULL, SHM)
WINDOW_CASE(window_map_tcp_3, 3, "window_map", "separate", TCP)

// Bad arguments, a size that differs between ranks, a destroyed
// communicator.
WINDOW_CASE(window_errors_1, 1, "window_errors", NULL, SHM)
WINDOW_CASE(window_errors_3, 3, "window_errors", NULL, SHM)
WINDOW_CASE(window_errors_tcp_3, 3, "window_errors", NULL, TCP)

// A rank dies while the others wait for its signal: they fail within 2 s
// naming it; the launcher reports the kill.
TEST_T(window_kill_3, 60)
{
    expect(3, "window_kill", NULL, SHM, 137, 2, "rank 2 killed by signal 9");
}

TEST_T(window_kill_tcp_3, 60)
{
    expect(3, "window_kill", NULL, TCP, 137, 2, "rank 2 killed by signal 9");
}

// A wait's own deadline.
WINDOW_CASE(window_timeout_2, 2, "window_timeout", NULL, SHM)
WINDOW_CASE(window_timeout_tcp_2, 2, "window_timeout", NULL, TCP)
