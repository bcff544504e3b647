// The mapped-memory algorithms' index math, without shared memory: how
// shi_segment splits a message among ranks, and what each rank takes from
// each peer in the data-movement collectives (shi_move_range, which both
// the direct and the staged algorithms run from). The movement is
// simulated on private buffers and compared with each collective's
// definition, for 1 to 5 ranks, even and uneven counts, every root.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "algo/common/algos.h"
#include "algo/mapped/mapped.h"
#include "algo/mapped/move_plan.h"
#include "algo/mapped/xfer.h"
#include "core/ops.h"
#include "core/request.h"
#include "test.h"

#define MAXR 5

TEST(mapped_segments_partition_the_message)
{
    static const size_t counts[] = { 0, 1, 7, 16, 17, 100, 1000, 4099 };
    static const size_t esizes[] = { 1, 2, 4, 8, 64, 128 };

    for (size_t c = 0; c < sizeof(counts) / sizeof(*counts); c++) {
        for (size_t e = 0; e < sizeof(esizes) / sizeof(*esizes); e++) {
            for (int n = 1; n <= 9; n++) {
                size_t next = 0, unit = esizes[e] >= 64 ? 1 : 64 / esizes[e];
                size_t most = 0, least = SIZE_MAX;
                for (int i = 0; i < n; i++) {
                    size_t lo, hi;
                    shi_segment(counts[c], esizes[e], n, i, &lo, &hi);
                    CHECK(lo == next && hi >= lo && hi <= counts[c]);
                    // Cuts fall on 64-byte multiples but at the very end.
                    CHECK(hi == counts[c] || hi % unit == 0);
                    most  = hi - lo > most ? hi - lo : most;
                    least = hi - lo < least ? hi - lo : least;
                    next  = hi;
                }
                CHECK(next == counts[c]);
                // Balanced: segments differ by one unit at most, plus the
                // tail's shortfall (less than a unit).
                CHECK(most - least < 2 * unit);
            }
        }
    }
}

// Element i of rank r's send buffer.
static uint32_t
sent(int r, size_t i)
{
    return (uint32_t) (r * 100000 + (int) i + 1);
}

struct sim {
    int           kind, n, root;
    size_t        count;
    size_t        counts[MAXR]; // v-forms: per-rank counts
    size_t        matrix[MAXR][MAXR]; // all_to_all_v: [q][p] q sends p
    uint32_t     *send[MAXR], *recv[MAXR];
    size_t        send_n[MAXR], recv_n[MAXR];
    shoal_request req[MAXR];
};

static void
sim_buffers(struct sim *s)
{
    for (int r = 0; r < s->n; r++) {
        size_t sn = 0, rn = 0;
        switch (s->kind) {
            case SHI_OP_ALLGATHER:
                sn = s->count, rn = s->count * (size_t) s->n;
                break;
            case SHI_OP_ALLGATHERV:
                sn = s->counts[r];
                for (int q = 0; q < s->n; q++) {
                    rn += s->counts[q];
                }
                break;
            case SHI_OP_ALLTOALL:
                sn = rn = s->count * (size_t) s->n;
                break;
            case SHI_OP_ALLTOALLV:
                for (int q = 0; q < s->n; q++) {
                    sn += s->matrix[r][q];
                    rn += s->matrix[q][r];
                }
                break;
            case SHI_OP_GATHER:
                sn = s->count,
                rn = r == s->root ? s->count * (size_t) s->n : 0;
                break;
            case SHI_OP_SCATTER:
                sn = r == s->root ? s->count * (size_t) s->n : 0,
                rn = s->count;
                break;
        }
        s->send_n[r] = sn, s->recv_n[r] = rn;
        s->send[r] = calloc(sn + 1, sizeof(uint32_t));
        s->recv[r] = calloc(rn + 1, sizeof(uint32_t));
        for (size_t i = 0; i < sn; i++) {
            s->send[r][i] = sent(r, i);
        }
    }
}

static void
sim_free(struct sim *s)
{
    for (int r = 0; r < s->n; r++) {
        free(s->send[r]);
        free(s->recv[r]);
        free(s->req[r].rcounts);
    }
}

// Every rank takes from every peer what shi_move_range says, checking
// each range against the buffers' sizes.
static void
sim_move(struct sim *s)
{
    size_t     peer_counts[MAXR * MAXR];
    shoal_comm comm;

    for (int q = 0; q < s->n; q++) {
        for (int p = 0; p < s->n; p++) {
            peer_counts[q * s->n + p] = s->matrix[q][p];
        }
    }
    for (int me = 0; me < s->n; me++) {
        shoal_request *req = &s->req[me];
        memset(&comm, 0, sizeof(comm));
        comm.rank        = me;
        comm.size        = s->n;
        comm.peer_counts = (uint64_t *) peer_counts;
        shi_req_fill(req, s->kind, NULL, s->count, SHOAL_INT32, s->root);
        req->counts = s->kind == SHI_OP_ALLGATHERV ? s->counts
            : s->kind == SHI_OP_ALLTOALLV          ? s->matrix[me]
                                                   : NULL;
        if (s->kind == SHI_OP_ALLTOALLV) {
            req->rcounts = calloc(MAXR, sizeof(size_t));
            for (int q = 0; q < s->n; q++) {
                req->rcounts[q] = s->matrix[q][me];
            }
        }
        for (int q = 0; q < s->n; q++) {
            size_t src, len, dst;
            CHECK(shi_move_range(&comm, req, q, &src, &len, &dst) == 0);
            CHECK(src % 4 == 0 && len % 4 == 0 && dst % 4 == 0);
            CHECK(src / 4 + len / 4 <= s->send_n[q]);
            CHECK(dst / 4 + len / 4 <= s->recv_n[me]);
            if (len > 0) {
                memcpy((char *) s->recv[me] + dst, (char *) s->send[q] + src,
                    len);
            }
        }
    }
}

// The definition of each collective, element by element.
static uint32_t
expected(const struct sim *s, int me, size_t i)
{
    size_t b = s->count;
    switch (s->kind) {
        case SHI_OP_ALLGATHER:
        case SHI_OP_GATHER:
            return sent((int) (i / b), i % b);
        case SHI_OP_ALLGATHERV: {
            int q = 0;
            while (i >= s->counts[q]) {
                i -= s->counts[q++];
            }
            return sent(q, i);
        }
        case SHI_OP_ALLTOALL:
            return sent((int) (i / b), (size_t) me * b + i % b);
        case SHI_OP_ALLTOALLV: {
            int q = 0;
            while (i >= s->matrix[q][me]) {
                i -= s->matrix[q++][me];
            }
            size_t off = 0;
            for (int p = 0; p < me; p++) {
                off += s->matrix[q][p];
            }
            return sent(q, off + i);
        }
        case SHI_OP_SCATTER:
            return sent(s->root, (size_t) me * b + i);
    }
    return 0;
}

static void
sim_check(int kind, int n, int root, size_t count, unsigned seed)
{
    struct sim s = { .kind = kind, .n = n, .root = root, .count = count };

    srand(seed);
    for (int q = 0; q < n; q++) {
        s.counts[q] = (size_t) (rand() % 7);
        for (int p = 0; p < n; p++) {
            s.matrix[q][p] = (size_t) (rand() % 5);
        }
    }
    sim_buffers(&s);
    sim_move(&s);
    for (int me = 0; me < n; me++) {
        for (size_t i = 0; i < s.recv_n[me]; i++) {
            CHECK_MSG(s.recv[me][i] == expected(&s, me, i),
                "%s on %d ranks (root %d, count %zu): rank %d element %zu is "
                "%u, expected %u",
                shi_op_kind_name(kind), n, root, count, me, i, s.recv[me][i],
                expected(&s, me, i));
        }
    }
    sim_free(&s);
}

TEST(mapped_move_ranges_deliver_every_element)
{
    static const int kinds[] = { SHI_OP_ALLGATHER, SHI_OP_ALLGATHERV,
        SHI_OP_ALLTOALL, SHI_OP_ALLTOALLV, SHI_OP_GATHER, SHI_OP_SCATTER };

    for (size_t k = 0; k < sizeof(kinds) / sizeof(*kinds); k++) {
        for (int n = 1; n <= MAXR; n++) {
            for (int root = 0; root < n; root++) {
                for (size_t count = 0; count <= 3; count++) {
                    sim_check(kinds[k], n, root, count,
                        (unsigned) (k * 1000 + (size_t) n * 10 + count));
                }
            }
        }
    }
}
