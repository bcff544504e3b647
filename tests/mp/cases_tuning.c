// tuning: rank 0's tuning file applies on every rank. Each rank writes a
// file of its own (rank 0 asks two-shot for every all-reduce, the others
// one-shot; over TCP rhd and ring), points SHOAL_TUNING_FILE at it, and
// makes a communicator (a split, which reads the table again): every rank
// must then choose rank 0's. SHOAL_ALGO still overrides the file; a malformed
// file on rank 0 leaves the built-in table on every rank.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/select.h"
#include "core/comm.h"
#include "mptest.h"

#define M ((size_t) 1 << 20)

static int
write_tuning(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    if (f == NULL) {
        return 1;
    }
    fputs(text, f);
    fclose(f);
    return 0;
}

// The all-reduce algorithm of a fresh communicator split from `comm`.
static int
choice_after_split(shoal_comm *comm, shi_algo *out)
{
    shoal_comm *sub;

    MP_OK(shoal_comm_split(comm, 0, shoal_comm_rank(comm), &sub));
    *out = shi_select(sub->select, SHI_COLL_ALLREDUCE, M, shoal_comm_size(sub),
        sub->algos_available);
    MP_OK(shoal_comm_destroy(sub));
    return 0;
}

int
mp_case_tuning(shoal_comm *comm, int argc, char **argv)
{
    int      rank = shoal_comm_rank(comm);
    int      net  = comm->tp->klass == SHI_TP_MESSAGES;
    char     path[64], mine[128];
    shi_algo got, builtin;
    // Rank 0's choice, the others', and SHOAL_ALGO's (by transport class).
    const char *first = net ? "rhd" : "twoshot",
               *other = net ? "ring" : "oneshot";
    shi_algo want     = net ? SHI_ALGO_RHD : SHI_ALGO_TWOSHOT;

    (void) argc;
    (void) argv;
    snprintf(
        path, sizeof(path), "/tmp/shoal-tuning-%d-%d", (int) getpid(), rank);
    MP_CHECK(choice_after_split(comm, &builtin) == 0);
    snprintf(mine, sizeof(mine), "# rank %d's\nall_reduce, 0, -, *, *, %s\n",
        rank, rank == 0 ? first : other);
    MP_CHECK(write_tuning(path, mine) == 0);
    setenv("SHOAL_TUNING_FILE", path, 1);
    MP_CHECK(choice_after_split(comm, &got) == 0);
    MP_CHECK(got == want);
    // SHOAL_ALGO comes first.
    snprintf(mine, sizeof(mine), "allreduce:%s", other);
    setenv("SHOAL_ALGO", mine, 1);
    MP_CHECK(choice_after_split(comm, &got) == 0);
    MP_CHECK(got != want && got == (net ? SHI_ALGO_RING : SHI_ALGO_ONESHOT));
    unsetenv("SHOAL_ALGO");
    // A malformed file on rank 0: the built-in table everywhere.
    if (rank == 0) {
        snprintf(mine, sizeof(mine),
            "allreduce, 0, -, *, *, %s\nallreduce, 0, -, *\n", first);
        MP_CHECK(write_tuning(path, mine) == 0);
    }
    MP_CHECK(choice_after_split(comm, &got) == 0);
    MP_CHECK(got == builtin);
    unsetenv("SHOAL_TUNING_FILE");
    unlink(path);
    return 0;
}

// tuned: the choices a communicator makes under SHOAL_TUNING_FILE (set by
// the test to a file shoal-tune wrote), printed by rank 0 as
// "choice COLLECTIVE BYTES ALGORITHM" for all_reduce and all_gather at
// every power of two up to argv[0] bytes; then one all_reduce of 32 bytes.
int
mp_case_tuned(shoal_comm *comm, int argc, char **argv)
{
    static const char *colls[] = { "all_reduce", "all_gather" };
    size_t             max     = argc > 0 ? strtoull(argv[0], NULL, 10) : 0;
    shoal_comm        *sub;

    // A split reads the file again, as any new communicator does.
    MP_OK(shoal_comm_split(comm, 0, shoal_comm_rank(comm), &sub));
    for (size_t c = 0; c < sizeof(colls) / sizeof(*colls); c++) {
        for (size_t b = 8; b <= max && shoal_comm_rank(sub) == 0; b *= 2) {
            const char *name = NULL;
            MP_OK(shoal_comm_algorithm_for(sub, colls[c], b, &name));
            printf("choice %s %zu %s\n", colls[c], b, name);
        }
    }
    fflush(stdout);
    // One call, so that SHOAL_DEBUG=INFO says who chose its algorithm.
    float x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    MP_OK(shoal_all_reduce(
        sub, x, x, 8, SHOAL_FLOAT32, SHOAL_REDUCE_OP(SHOAL_SUM)));
    MP_CHECK(x[7] == 16);
    MP_OK(shoal_comm_destroy(sub));
    return 0;
}
