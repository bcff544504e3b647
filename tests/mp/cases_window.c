// Windows: one-sided put, signal and mapped peer memory.
//
// window_ring heap|plain|heap-quick|plain-quick: the ring torchcomms tests.
// The window holds `count` elements per rank; every rank puts its input into
// slot `rank` of its right neighbour, signals it, waits for its left
// neighbour's signal and checks that slot; 10 iterations per combination
// of count {4, 1024, 1M+3}, dtype {float32, int32, int8, bfloat16}, put
// and signal blocking or not. The put's request is waited only after the
// check: the signal alone must order it. `heap`: the windows are
// shoal_alloc memory (mapped in place over shared memory); `plain`:
// malloc memory (single copies through the kernel). `quick`: count 4 and
// 1024 only.
//
// window_map [separate|pairs]: peer pointers (writes through them are seen
// by the owner after a signal; reads see the owner's writes); peers on
// other hosts (or every peer over TCP alone: "separate") have none and
// are written with puts. "pairs": ranks 2k and 2k+1 share a host.
//
// window_errors: bad arguments of every call, and a rank that registers
// a different size (every rank fails at registration, naming it).
//
// window_kill: the last rank dies while the others wait for its signal:
// they fail within 2 s naming it. window_timeout: a wait whose deadline
// passes fails with SHOAL_ETIMEDOUT.
#include <signal.h>
#include <string.h>

#include "mptest.h"

#define RING_ITERS 10

struct ring {
    shoal_comm    *comm;
    int            rank, size, right, left, heap;
    shoal_window  *win;
    unsigned char *mem, *input;
};

static unsigned char *
ring_alloc(struct ring *r, size_t bytes)
{
    void *p = NULL;

    if (r->heap) {
        if (shoal_alloc(r->comm, bytes, &p) != SHOAL_OK) {
            return NULL;
        }
        return p;
    }
    return malloc(bytes > 0 ? bytes : 1);
}

static void
ring_free(struct ring *r, void *p)
{
    if (r->heap) {
        shoal_free(r->comm, p);
    } else {
        free(p);
    }
}

// One iteration: put, signal, wait, check, then wait for the put.
static int
ring_step(struct ring *r, size_t count, shoal_dtype dt, int async_put,
    int async_signal, int it)
{
    size_t         es = shoal_dtype_size(dt), bytes = count * es;
    shoal_request *put = NULL, *sig = NULL;

    mp_fill(r->input, bytes, r->rank, it);
    if (async_put) {
        MP_OK(shoal_window_iput(r->win, r->input, count, dt, r->right,
            (size_t) r->rank * count, &put));
    } else {
        MP_OK(shoal_window_put(
            r->win, r->input, count, dt, r->right, (size_t) r->rank * count));
    }
    if (async_signal) {
        MP_OK(shoal_window_isignal(r->win, r->right, &sig));
    } else {
        MP_OK(shoal_window_signal(r->win, r->right));
    }
    MP_OK(shoal_window_wait_signal(r->win, r->left));
    MP_CHECK(mp_verify(r->mem + (size_t) r->left * bytes, bytes, r->left, it));
    if (sig != NULL) {
        MP_OK(shoal_wait(sig, -1));
        shoal_request_free(sig);
    }
    if (put != NULL) {
        MP_OK(shoal_wait(put, -1));
        shoal_request_free(put);
    }
    // The left neighbour's next put must not land before the check.
    MP_OK(shoal_barrier(r->comm));
    return 0;
}

static int
ring_combo(struct ring *r, size_t count, shoal_dtype dt)
{
    size_t bytes = count * shoal_dtype_size(dt);

    MP_CHECK((r->mem = ring_alloc(r, bytes * (size_t) r->size)) != NULL);
    MP_CHECK((r->input = malloc(bytes)) != NULL);
    MP_OK(shoal_window_register(r->win, r->mem, count * (size_t) r->size, dt));
    MP_CHECK(shoal_window_bytes(r->win) == bytes * (size_t) r->size);
    for (int mode = 0; mode < 4; mode++) {
        for (int it = 0; it < RING_ITERS; it++) {
            if (ring_step(
                    r, count, dt, mode & 1, mode >> 1, mode * 100 + it)) {
                fprintf(stderr, "rank %d: count %zu %s mode %d iteration %d\n",
                    r->rank, count, shoal_dtype_name(dt), mode, it);
                return 1;
            }
        }
    }
    MP_OK(shoal_window_deregister(r->win));
    MP_CHECK(shoal_window_bytes(r->win) == 0);
    ring_free(r, r->mem);
    free(r->input);
    return 0;
}

int
mp_case_window_ring(shoal_comm *comm, int argc, char **argv)
{
    static const shoal_dtype dts[]
        = { SHOAL_FLOAT32, SHOAL_INT32, SHOAL_INT8, SHOAL_BFLOAT16 };
    static const size_t counts[] = { 4, 1024, (1u << 20) + 3 };
    struct ring         r        = { .comm = comm };
    int                 quick = argc > 0 && strstr(argv[0], "quick") != NULL;

    r.rank  = shoal_comm_rank(comm);
    r.size  = shoal_comm_size(comm);
    r.right = (r.rank + 1) % r.size;
    r.left  = (r.rank + r.size - 1) % r.size;
    r.heap  = argc > 0 && strncmp(argv[0], "heap", 4) == 0;
    MP_OK(shoal_window_create(comm, &r.win));
    for (size_t c = 0; c < (quick ? 2u : 3u); c++) {
        for (size_t d = 0; d < sizeof(dts) / sizeof(*dts); d++) {
            if (ring_combo(&r, counts[c], dts[d])) {
                return 1;
            }
        }
    }
    shoal_window_free(r.win);
    return 0;
}

// ------------------------------------------------------------- mapping

// The access this rank should have to `peer` by the case's argument:
// "separate" every peer (a network transport alone), "pairs" ranks 2k and
// 2k+1 share a host, anything else mapped (shared memory).
static int
expected_access(const char *how, int rank, int peer)
{
    if (strcmp(how, "separate") == 0) {
        return rank == peer ? SHOAL_ACCESS_UNIFIED : SHOAL_ACCESS_SEPARATE;
    }
    if (strcmp(how, "pairs") == 0) {
        return rank / 2 == peer / 2 ? SHOAL_ACCESS_UNIFIED
                                    : SHOAL_ACCESS_SEPARATE;
    }
    return SHOAL_ACCESS_UNIFIED;
}

// Writes `n` values for the right neighbour: through its mapped buffer
// where there is one, else with a put (so every rank signals either way).
static int
map_write_right(
    shoal_window *win, int rank, int right, int64_t *peer, size_t n)
{
    int64_t vals[256];

    for (size_t i = 0; i < n; i++) {
        vals[i] = (int64_t) (rank * 1000000 + (int) i);
        if (peer != NULL) {
            peer[i] = vals[i];
        }
    }
    if (peer == NULL) {
        MP_OK(shoal_window_put(win, vals, n, SHOAL_INT64, right, 0));
    }
    return 0;
}

int
mp_case_window_map(shoal_comm *comm, int argc, char **argv)
{
    int           rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int           right = (rank + 1) % size, left = (rank + size - 1) % size;
    const char   *how = argc > 0 ? argv[0] : "mapped";
    shoal_window *win;
    int64_t      *mine, *peer = NULL;
    const size_t  n = 256;

    MP_OK(shoal_alloc(comm, n * sizeof(int64_t) * 2, (void **) &mine));
    memset(mine, 0, n * sizeof(int64_t) * 2);
    MP_OK(shoal_window_create(comm, &win));
    MP_OK(shoal_window_register(win, mine, 2 * n, SHOAL_INT64));
    MP_CHECK(shoal_window_access_of(win, rank) == SHOAL_ACCESS_UNIFIED);
    MP_CHECK(shoal_window_access_of(win, right)
        == expected_access(how, rank, right));
    if (shoal_window_access_of(win, right) == SHOAL_ACCESS_SEPARATE) {
        // Across hosts nothing is mapped, and the error says why.
        MP_EXPECT(
            shoal_window_peer_ptr(win, right, (void **) &peer), SHOAL_ENOTSUP);
        MP_CHECK(peer == NULL);
        MP_CHECK(strstr(shoal_last_error(), "TCP") != NULL);
    } else {
        MP_OK(shoal_window_peer_ptr(win, right, (void **) &peer));
    }
    // The first half of the right neighbour's buffer, seen by it after our
    // signal.
    if (map_write_right(win, rank, right, peer, n)) {
        return 1;
    }
    MP_OK(shoal_window_signal(win, right));
    MP_OK(shoal_window_wait_signal(win, left));
    for (size_t i = 0; i < n; i++) {
        MP_CHECK(mine[i] == (int64_t) (left * 1000000 + (int) i));
    }
    // Reads through the pointer see the owner's own writes.
    for (size_t i = 0; i < n; i++) {
        mine[n + i] = -(int64_t) (rank * 1000 + (int) i);
    }
    MP_OK(shoal_barrier(comm));
    for (size_t i = 0; peer != NULL && i < n; i++) {
        MP_CHECK(peer[n + i] == -(int64_t) (right * 1000 + (int) i));
    }
    MP_OK(shoal_window_deregister(win));
    MP_EXPECT(
        shoal_window_peer_ptr(win, right, (void **) &peer), SHOAL_EINVAL);
    shoal_window_free(win);
    // Ordinary memory is not mapped: no pointer, and the error says what
    // to register instead.
    int64_t plain[16];
    MP_OK(shoal_window_create(comm, &win));
    MP_OK(shoal_window_register(win, plain, 16, SHOAL_INT64));
    if (size > 1) {
        MP_CHECK(shoal_window_access_of(win, right) == SHOAL_ACCESS_SEPARATE);
        MP_EXPECT(
            shoal_window_peer_ptr(win, right, (void **) &peer), SHOAL_ENOTSUP);
        MP_CHECK(strstr(shoal_last_error(), "shoal_alloc") != NULL
            || strstr(shoal_last_error(), "TCP") != NULL);
    }
    MP_OK(shoal_window_deregister(win));
    shoal_window_free(win);
    MP_OK(shoal_free(comm, mine));
    return 0;
}

// -------------------------------------------------------------- errors

static int
errors_unregistered(shoal_comm *comm, shoal_window *win)
{
    float x = 1;

    MP_CHECK(shoal_window_bytes(win) == 0);
    MP_EXPECT(shoal_window_put(win, &x, 1, SHOAL_FLOAT32, 0, 0), SHOAL_EINVAL);
    MP_CHECK(strstr(shoal_last_error(), "register") != NULL);
    MP_EXPECT(shoal_window_signal(win, 0), SHOAL_EINVAL);
    MP_EXPECT(shoal_window_wait_signal(win, 0), SHOAL_EINVAL);
    MP_EXPECT(shoal_window_deregister(win), SHOAL_EINVAL);
    MP_EXPECT(shoal_window_create(comm, NULL), SHOAL_EINVAL);
    MP_EXPECT(shoal_window_register(NULL, &x, 1, SHOAL_FLOAT32), SHOAL_EINVAL);
    return 0;
}

static int
errors_registered(shoal_comm *comm, shoal_window *win, float *mem, size_t n)
{
    int            rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    float          src[8] = { 0 };
    shoal_request *req    = NULL;
    int32_t        wrong  = 0;

    MP_EXPECT(shoal_window_put(win, src, 8, SHOAL_FLOAT32, rank, n - 7),
        SHOAL_EINVAL);
    MP_CHECK(strstr(shoal_last_error(), "exceeds the window size") != NULL);
    MP_EXPECT(shoal_window_put(win, src, 1, SHOAL_FLOAT32, rank, (size_t) -1),
        SHOAL_EINVAL);
    MP_EXPECT(
        shoal_window_put(win, &wrong, 1, SHOAL_INT8, rank, 0), SHOAL_EINVAL);
    MP_CHECK(strstr(shoal_last_error(), "element sizes") != NULL);
    MP_EXPECT(
        shoal_window_put(win, NULL, 2, SHOAL_FLOAT32, rank, 0), SHOAL_EINVAL);
    MP_EXPECT(
        shoal_window_put(win, src, 1, SHOAL_FLOAT32, size, 0), SHOAL_EINVAL);
    MP_EXPECT(shoal_window_signal(win, -1), SHOAL_EINVAL);
    MP_EXPECT(shoal_window_wait_signal(win, size), SHOAL_EINVAL);
    MP_EXPECT(shoal_window_iput(win, src, 1, SHOAL_FLOAT32, 0, 0, NULL),
        SHOAL_EINVAL);
    MP_EXPECT(shoal_window_access_of(win, size), SHOAL_EINVAL);
    // Nothing was written by the refused puts.
    for (size_t i = 0; i < n; i++) {
        MP_CHECK(mem[i] == 7.0f);
    }
    // A put to oneself, blocking and not, lands at once.
    src[0] = 3;
    MP_OK(shoal_window_iput(win, src, 1, SHOAL_FLOAT32, rank, n - 1, &req));
    MP_OK(shoal_wait(req, -1));
    shoal_request_free(req);
    MP_CHECK(mem[n - 1] == 3.0f);
    // Registering twice: every rank (all call it, as it is collective).
    MP_EXPECT(shoal_window_register(win, mem, n, SHOAL_FLOAT32), SHOAL_EINVAL);
    MP_CHECK(strstr(shoal_last_error(), "registered already") != NULL);
    MP_CHECK(shoal_window_bytes(win) == n * sizeof(float));
    return 0;
}

// Rank size-1 registers one element more: every rank fails, naming it,
// and the communicator stays usable.
static int
errors_sizes(shoal_comm *comm, shoal_window *win, float *mem, size_t n)
{
    int  rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    char name[32];

    snprintf(name, sizeof(name), "rank %d", size - 1);
    MP_EXPECT(shoal_window_register(
                  win, mem, rank == size - 1 ? n + 1 : n, SHOAL_FLOAT32),
        SHOAL_EINVAL);
    MP_CHECK(strstr(shoal_last_error(), name) != NULL);
    MP_CHECK(shoal_window_bytes(win) == 0);
    // A NULL buffer on rank 0 alone: every rank fails, naming rank 0.
    MP_EXPECT(
        shoal_window_register(win, rank == 0 ? NULL : mem, n, SHOAL_FLOAT32),
        SHOAL_EINVAL);
    MP_CHECK(strstr(shoal_last_error(), "rank 0") != NULL);
    MP_OK(shoal_barrier(comm));
    return 0;
}

// Operations after the communicator is destroyed fail and say so.
static int
errors_destroyed(shoal_comm *comm)
{
    shoal_comm   *sub;
    shoal_window *win;
    float         mem[4], x = 0;

    MP_OK(shoal_comm_split(comm, 0, shoal_comm_rank(comm), &sub));
    MP_OK(shoal_window_create(sub, &win));
    MP_OK(shoal_window_register(win, mem, 4, SHOAL_FLOAT32));
    MP_OK(shoal_comm_destroy(sub));
    MP_EXPECT(shoal_window_put(win, &x, 1, SHOAL_FLOAT32, 0, 0), SHOAL_EINVAL);
    MP_CHECK(strstr(shoal_last_error(), "destroyed") != NULL);
    MP_EXPECT(shoal_window_deregister(win), SHOAL_EINVAL);
    MP_CHECK(shoal_window_bytes(win) == 0);
    shoal_window_free(win);
    return 0;
}

int
mp_case_window_errors(shoal_comm *comm, int argc, char **argv)
{
    const size_t  n   = 64;
    float        *mem = malloc(n * sizeof(float));
    shoal_window *win;

    (void) argc;
    (void) argv;
    MP_CHECK(mem != NULL);
    for (size_t i = 0; i < n; i++) {
        mem[i] = 7.0f;
    }
    MP_OK(shoal_window_create(comm, &win));
    if (errors_unregistered(comm, win)) {
        return 1;
    }
    MP_OK(shoal_window_register(win, mem, n, SHOAL_FLOAT32));
    if (errors_registered(comm, win, mem, n)) {
        return 1;
    }
    MP_OK(shoal_window_deregister(win));
    if (errors_unregistered(comm, win)) {
        return 1;
    }
    if (shoal_comm_size(comm) > 1 && errors_sizes(comm, win, mem, n)) {
        return 1;
    }
    shoal_window_free(win);
    free(mem);
    return errors_destroyed(comm);
}

// -------------------------------------------------------------- faults

int
mp_case_window_kill(shoal_comm *comm, int argc, char **argv)
{
    int           rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int           victim = size - 1;
    shoal_window *win;
    float         mem[8];
    char          name[32];

    (void) argc;
    (void) argv;
    MP_CHECK(size > 1);
    MP_OK(shoal_window_create(comm, &win));
    MP_OK(shoal_window_register(win, mem, 8, SHOAL_FLOAT32));
    MP_OK(shoal_barrier(comm));
    if (rank == victim) {
        mp_sleep_ms(200); // the others are waiting by now
        raise(SIGKILL);
    }
    double t0     = mp_now();
    int    st     = shoal_window_wait_signal(win, victim);
    double waited = mp_now() - t0;
    printf("rank %d: wait_signal failed after %.3f s: %s: %s\n", rank, waited,
        shoal_status_name(st), shoal_last_error());
    snprintf(name, sizeof(name), "rank %d", victim);
    MP_CHECK(st == SHOAL_EPEER);
    MP_CHECK(strstr(shoal_last_error(), name) != NULL);
    MP_CHECK(waited < 2.2);
    MP_EXPECT(shoal_window_signal(win, 0), SHOAL_EABORTED);
    shoal_window_free(win);
    return 0;
}

// Rank 0 waits for a signal from itself that never comes; the others
// leave (freeing the window without the collective deregistration).
int
mp_case_window_timeout(shoal_comm *comm, int argc, char **argv)
{
    shoal_window   *win;
    float           mem[8];
    shoal_call_opts opts = { .timeout_ms = 300 };

    (void) argc;
    (void) argv;
    MP_OK(shoal_window_create(comm, &win));
    MP_OK(shoal_window_register(win, mem, 8, SHOAL_FLOAT32));
    if (shoal_comm_rank(comm) != 0) {
        shoal_window_free(win);
        return 0;
    }
    MP_OK(shoal_next_call_opts(&opts));
    double t0 = mp_now();
    MP_EXPECT(shoal_window_wait_signal(win, 0), SHOAL_ETIMEDOUT);
    MP_CHECK(mp_now() - t0 < 2.0);
    MP_CHECK(strstr(shoal_last_error(), "wait_signal") != NULL);
    shoal_window_free(win);
    return 0;
}
