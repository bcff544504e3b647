// The operations' properties: flags, buffer sizes per rank and the
// in-place forms of every collective (include/shoal.h documents them).
// Pure logic.
#include <string.h>

#include "core/op_props.h"
#include "core/request.h"
#include "test.h"

TEST(op_props_flags)
{
    CHECK(strcmp(shi_op_props_of(SHI_OP_ALLREDUCE)->name, "all_reduce") == 0);
    CHECK(strcmp(shi_op_props_of(0)->name, "operation") == 0);
    CHECK(strcmp(shi_op_props_of(999)->name, "operation") == 0);
    CHECK(strcmp(shi_op_kind_name(SHI_OP_ALLTOALLV), "all_to_all_v") == 0);
    CHECK(!shi_op_props_of(SHI_OP_SEND)->collective);
    CHECK(shi_op_props_of(SHI_OP_BARRIER)->collective);
    for (int k = SHI_OP_SEND; k <= SHI_OP_SCATTER; k++) {
        const shi_op_props *p      = shi_op_props_of(k);
        int                 rooted = k == SHI_OP_REDUCE || k == SHI_OP_GATHER
            || k == SHI_OP_SCATTER || k == SHI_OP_BCAST;
        int reduces = k == SHI_OP_ALLREDUCE || k == SHI_OP_REDUCE
            || k == SHI_OP_REDUCE_SCATTER || k == SHI_OP_REDUCE_SCATTERV;
        CHECK(p->rooted == rooted);
        CHECK(p->reduces == reduces);
        CHECK(p->rcounts == (k == SHI_OP_ALLTOALLV));
        CHECK(p->counts
            == (k == SHI_OP_ALLGATHERV || k == SHI_OP_REDUCE_SCATTERV
                || k == SHI_OP_ALLTOALLV));
    }
}

TEST(op_props_buffer_elems)
{
    size_t       counts[3] = { 2, 5, 1 }, rcounts[3] = { 4, 4, 4 }, s, r;
    shi_op_shape sh = { .rank = 1, .nranks = 3, .root = 0, .count = 7 };

    sh.kind = SHI_OP_ALLREDUCE;
    shi_op_buffer_elems(&sh, &s, &r);
    CHECK(s == 7 && r == 7);
    sh.kind = SHI_OP_REDUCE; // not the root
    shi_op_buffer_elems(&sh, &s, &r);
    CHECK(s == 7 && r == 0);
    sh.kind = SHI_OP_ALLGATHER;
    shi_op_buffer_elems(&sh, &s, &r);
    CHECK(s == 7 && r == 21);
    sh.kind = SHI_OP_REDUCE_SCATTER;
    shi_op_buffer_elems(&sh, &s, &r);
    CHECK(s == 21 && r == 7);
    sh.kind = SHI_OP_GATHER;
    shi_op_buffer_elems(&sh, &s, &r);
    CHECK(s == 7 && r == 0);
    sh.kind = SHI_OP_SCATTER;
    shi_op_buffer_elems(&sh, &s, &r);
    CHECK(s == 0 && r == 7);
    sh.counts = counts;
    sh.kind   = SHI_OP_ALLGATHERV;
    shi_op_buffer_elems(&sh, &s, &r);
    CHECK(s == 5 && r == 8);
    CHECK(shi_op_block_displ(&sh, 2) == 7);
    sh.kind = SHI_OP_REDUCE_SCATTERV;
    shi_op_buffer_elems(&sh, &s, &r);
    CHECK(s == 8 && r == 5);
    sh.kind    = SHI_OP_ALLTOALLV;
    sh.rcounts = rcounts;
    shi_op_buffer_elems(&sh, &s, &r);
    CHECK(s == 8 && r == 12);
}

TEST(op_props_in_place_forms)
{
    unsigned char buf[256]  = { 0 };
    size_t        counts[3] = { 2, 5, 1 };
    shi_op_shape  sh = { .rank = 1, .nranks = 3, .root = 1, .count = 4 };

    sh.kind = SHI_OP_ALLREDUCE;
    CHECK(shi_op_in_place(&sh, 4, buf, buf));
    CHECK(!shi_op_in_place(&sh, 4, buf, buf + 4));
    sh.kind = SHI_OP_ALLGATHER; // send = recv + my block
    CHECK(shi_op_in_place(&sh, 4, buf + 16, buf));
    CHECK(!shi_op_in_place(&sh, 4, buf, buf));
    sh.kind = SHI_OP_REDUCE_SCATTER; // recv = send + my block
    CHECK(shi_op_in_place(&sh, 4, buf, buf + 16));
    sh.kind = SHI_OP_GATHER; // on the root: send = recv + root's block
    CHECK(shi_op_in_place(&sh, 4, buf + 16, buf));
    sh.root = 0; // not the root: never in place
    CHECK(!shi_op_in_place(&sh, 4, buf + 16, buf));
    CHECK(!shi_op_in_place(&sh, 4, buf, buf));
    sh.root = 1;
    sh.kind = SHI_OP_SCATTER;
    CHECK(shi_op_in_place(&sh, 4, buf, buf + 16));
    sh.kind = SHI_OP_ALLTOALL;
    CHECK(!shi_op_in_place(&sh, 4, buf, buf));
    sh.kind   = SHI_OP_ALLGATHERV;
    sh.counts = counts;
    CHECK(shi_op_in_place(&sh, 4, buf + 8, buf));
    CHECK(!shi_op_in_place(&sh, 4, NULL, buf));
}
