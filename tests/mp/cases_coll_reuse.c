// coll_reuse: buffers may be reused as soon as a call completes (shoal.h):
// every rank overwrites its sendbuf the moment its call completes, before
// checking its output, so a peer that still reads that sendbuf in place
// (single-copy algorithms, shoal_alloc memory or process_vm_readv) gets the
// scribble and fails its check. A random rank starts each call a little late
// to vary who finishes first. Each call is blocking, i+wait or i+test, with
// malloc or shoal_alloc buffers; all ten collectives in turn.
#include <string.h>

#include "mptest.h"
#include "ref.h"

int
mp_case_coll_reuse(shoal_comm *comm, int argc, char **argv)
{
    static const size_t counts[] = { 1, 7, 64, 1023, 4099, 65536 };
    int      rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int      dts[] = { SHOAL_UINT8, SHOAL_FLOAT16, SHOAL_INT32, SHOAL_FLOAT32,
             SHOAL_FLOAT64, SHOAL_BOOL, SHOAL_INT64 };
    int      iters = 300, wrong = 0;
    uint64_t seed = 1;
    double   t0   = mp_now();
    cc_spec  s;

    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "full") == 0) {
            iters = 3000;
        } else if (strncmp(argv[i], "seed=", 5) == 0) {
            seed = strtoull(argv[i] + 5, NULL, 10);
        } else if (strcmp(argv[i], "sample") != 0) {
            fprintf(stderr, "unknown argument %s\n", argv[i]);
            return 1;
        }
    }
    MP_OK(shoal_comm_set_timeout(comm, 120000));
    for (int i = 0; i < iters; i++) {
        uint64_t h    = ref_mix(seed * 1000u + (uint64_t) i);
        cc_coll  coll = (cc_coll) (i % CC_COLL_COUNT);
        int      op   = cc_is_reduction(coll) ? SHOAL_SUM : -1;
        cc_spec_init(&s, coll, (shoal_dtype) dts[h % 7], op,
            counts[(h >> 8) % 6], seed * 7777u + (uint64_t) i);
        s.mode     = (int) ((h >> 16) % 3);
        s.bufs     = (int) ((h >> 20) % 3);
        s.root     = (int) ((h >> 24) % (unsigned) size);
        s.scribble = 1;
        if ((int) ((h >> 32) % (unsigned) size) == rank) {
            mp_sleep_ms((int) ((h >> 40) % 3));
        }
        int rc = cc_run(comm, &s);
        if (rc == CC_ERROR) {
            return 1;
        }
        wrong += rc == CC_WRONG;
    }
    if (rank == 0) {
        printf("reuse [%d ranks]: %d calls, sendbuf overwritten at "
               "completion, %d wrong, %.1f s\n",
            size, iters, wrong, mp_now() - t0);
    }
    return wrong ? 1 : 0;
}

// A rank may destroy its communicator as soon as its last call completed
// (shoal_comm_destroy is local): the peers' calls, whose data that rank
// has already handed over, must still complete. Each round splits off a
// fresh communicator, runs one checked collective on it, and destroys it
// at once; a random rank starts late.
int
mp_case_coll_destroy(shoal_comm *comm, int argc, char **argv)
{
    static const size_t counts[] = { 1, 64, 1023, 4099 };
    int     rank = shoal_comm_rank(comm), size = shoal_comm_size(comm);
    int     rounds = 150;
    double  t0     = mp_now();
    cc_spec s;

    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "full") == 0) {
            rounds = 1500;
        } else if (strcmp(argv[i], "sample") != 0) {
            fprintf(stderr, "unknown argument %s\n", argv[i]);
            return 1;
        }
    }
    MP_OK(shoal_comm_set_timeout(comm, 60000));
    for (int i = 0; i < rounds; i++) {
        uint64_t    h = ref_mix(0xde57u + (uint64_t) i);
        shoal_comm *sub;
        cc_coll     coll = (cc_coll) (i % CC_COLL_COUNT);
        MP_OK(shoal_comm_split(comm, 0, 0, &sub));
        cc_spec_init(&s, coll, SHOAL_INT32,
            cc_is_reduction(coll) ? SHOAL_SUM : -1, counts[h % 4],
            (uint64_t) i);
        s.mode = (int) ((h >> 8) % 3);
        s.bufs = (int) ((h >> 16) % 3);
        s.root = (int) ((h >> 24) % (unsigned) size);
        if ((int) ((h >> 32) % (unsigned) size) == rank) {
            mp_sleep_ms((int) ((h >> 40) % 3));
        }
        int rc = cc_run(sub, &s);
        int st = shoal_comm_destroy(sub);
        if (rc != CC_PASS) {
            return 1;
        }
        if (st != SHOAL_OK) {
            fprintf(stderr, "rank %d: FAIL round %d (%s): destroy: %s: %s\n",
                rank, i, cc_coll_name(coll), shoal_status_name(st),
                shoal_last_error());
            return 1;
        }
    }
    if (rank == 0) {
        printf("destroy [%d ranks]: %d rounds of split, one collective, "
               "destroy at once: all completed, %.1f s\n",
            size, rounds, mp_now() - t0);
    }
    return 0;
}
