// Algorithm selection: the built-in table, SHOAL_ALGO parsing (good and
// bad specs), fallbacks when an algorithm is unavailable, rank filters and
// the printed form. Pure logic, no transport.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "coll/select.h"
#include "base/error.h"
#include "test.h"

#define K ((size_t) 1024)
#define M (K * K)
#define G (K * M)

// Every algorithm of a shared-memory communicator available (one over
// TCP has only the network algorithms, see select_net_algorithms).
#define ALL_ALGOS (((1u << (SHI_ALGO_FLAGS + 1)) - 1u) & ~1u)
#define NET_ALGOS                                                             \
    (SHI_ALGO_BIT(SHI_ALGO_RING) | SHI_ALGO_BIT(SHI_ALGO_RHD)                 \
        | SHI_ALGO_BIT(SHI_ALGO_FLAT))

static unsigned
all_but(shi_algo a)
{
    return ALL_ALGOS & ~SHI_ALGO_BIT(a);
}

static int
rules_equal(const shi_select_table *a, const shi_select_table *b)
{
    if (a->nrules != b->nrules) {
        return 0;
    }
    for (int i = 0; i < a->nrules; i++) {
        const shi_select_rule *x = &a->rules[i], *y = &b->rules[i];
        if (x->coll != y->coll || x->algo != y->algo || x->lo != y->lo
            || x->hi != y->hi || x->min_ranks != y->min_ranks
            || x->max_ranks != y->max_ranks) {
            return 0;
        }
    }
    return 1;
}

// The algorithm for (coll, bytes) at 4 ranks with everything available.
static shi_algo
pick(const shi_select_table *t, shi_coll coll, size_t bytes)
{
    return shi_select(t, coll, bytes, 4, ALL_ALGOS);
}

TEST(select_names)
{
    CHECK(strcmp(shi_coll_name(SHI_COLL_ALLREDUCE), "allreduce") == 0);
    CHECK(
        strcmp(shi_coll_name(SHI_COLL_REDUCE_SCATTER), "reducescatter") == 0);
    CHECK(strcmp(shi_coll_name(SHI_COLL_BARRIER), "barrier") == 0);
    CHECK(shi_coll_name(-1) == NULL);
    CHECK(shi_coll_name(SHI_COLL_COUNT) == NULL);
    CHECK(strcmp(shi_algo_name(SHI_ALGO_ONESHOT), "oneshot") == 0);
    CHECK(strcmp(shi_algo_name(SHI_ALGO_FLAGS), "flags") == 0);
    CHECK(strcmp(shi_algo_name(SHI_ALGO_NONE), "none") == 0);
    CHECK(shi_algo_name(-1) == NULL);
    CHECK(shi_algo_name(SHI_ALGO_COUNT) == NULL);
    for (int c = 0; c < SHI_COLL_COUNT; c++) {
        CHECK(shi_coll_name(c) != NULL);
    }
    for (int a = 0; a < SHI_ALGO_COUNT; a++) {
        CHECK(shi_algo_name(a) != NULL);
    }
}

TEST(select_algos_for)
{
    unsigned move
        = SHI_ALGO_BIT(SHI_ALGO_STAGED) | SHI_ALGO_BIT(SHI_ALGO_DIRECT);

    unsigned ring = SHI_ALGO_BIT(SHI_ALGO_RING);
    unsigned flat = SHI_ALGO_BIT(SHI_ALGO_FLAT);
    unsigned rhd  = SHI_ALGO_BIT(SHI_ALGO_RHD);

    CHECK(shi_algos_for(SHI_COLL_ALLREDUCE)
        == (SHI_ALGO_BIT(SHI_ALGO_ONESHOT) | SHI_ALGO_BIT(SHI_ALGO_TWOSHOT)
            | SHI_ALGO_BIT(SHI_ALGO_DIRECT) | ring | rhd
            | SHI_ALGO_BIT(SHI_ALGO_HIER)));
    CHECK(shi_algos_for(SHI_COLL_REDUCE)
        == (SHI_ALGO_BIT(SHI_ALGO_ONESHOT) | SHI_ALGO_BIT(SHI_ALGO_DIRECT)
            | ring | flat));
    CHECK(shi_algos_for(SHI_COLL_ALLGATHER)
        == (move | ring | flat | SHI_ALGO_BIT(SHI_ALGO_BRUCK)));
    CHECK(shi_algos_for(SHI_COLL_REDUCE_SCATTER) == (move | ring | flat));
    CHECK(shi_algos_for(SHI_COLL_ALLTOALL) == (move | flat));
    CHECK(shi_algos_for(SHI_COLL_GATHER) == (move | flat));
    CHECK(shi_algos_for(SHI_COLL_SCATTER) == (move | flat));
    CHECK(shi_algos_for(SHI_COLL_BROADCAST)
        == (SHI_ALGO_BIT(SHI_ALGO_OUTBOX) | SHI_ALGO_BIT(SHI_ALGO_DIRECT)
            | ring | flat | SHI_ALGO_BIT(SHI_ALGO_HIER)));
    CHECK(shi_algos_for(SHI_COLL_BARRIER)
        == (SHI_ALGO_BIT(SHI_ALGO_FLAGS) | rhd));
    CHECK(shi_algos_for(SHI_COLL_COUNT) == 0);
}

// The staging bounds of the data movement defaults for private memory at
// 2, 4, 8 and 16 ranks (select.c, SEL_MOVE), per collective from
// SHI_COLL_ALLGATHER on.
static const size_t move_bounds[][4] = {
    { 128 * K, 64 * K, 128 * K, 256 * K }, // allgather
    { 128 * K, 2 * M, 4 * M, 8 * M }, // reducescatter
    { 32 * K, 64 * K, 128 * K, 256 * K }, // alltoall
    { 128 * K, 256 * K, M, 8 * M }, // gather
    { 64 * K, 32 * K, 128 * K, 256 * K }, // scatter
};

// Which of move_bounds' columns n ranks take.
static int
move_column(int n)
{
    return n <= 2 ? 0 : n <= 4 ? 1 : n <= 8 ? 2 : 3;
}

TEST(select_defaults_by_size)
{
    static const size_t sizes[] = { 0, 8, 32 * K - 1, 32 * K, 64 * M };
    static const int    ranks[] = { 1, 2, 3, 8, 64 };
    shi_select_table    t;

    shi_select_defaults(&t);
    CHECK(t.nrules > 0 && t.nrules <= SHI_SELECT_MAX_RULES);
    for (size_t r = 0; r < sizeof(ranks) / sizeof(ranks[0]); r++) {
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            size_t b = sizes[i];
            int    n = ranks[r];
            CHECK(shi_select(&t, SHI_COLL_REDUCE, b, n, ALL_ALGOS)
                == (b < 32 * K ? SHI_ALGO_ONESHOT : SHI_ALGO_DIRECT));
            // Broadcast: the outbox at every size.
            CHECK(shi_select(&t, SHI_COLL_BROADCAST, b, n, ALL_ALGOS)
                == SHI_ALGO_OUTBOX);
            CHECK(shi_select(
                      &t, SHI_COLL_BROADCAST, b, n, all_but(SHI_ALGO_DIRECT))
                == SHI_ALGO_OUTBOX);
            CHECK(shi_select(&t, SHI_COLL_BARRIER, b, n, ALL_ALGOS)
                == SHI_ALGO_FLAGS);
        }
        // Data movement: staging from 1 byte up to 8 KiB, single copy from
        // there (and for 0 bytes), handing private memory over to staging
        // up to a bound that grows with the ranks.
        int n = ranks[r];
        for (int c = SHI_COLL_ALLGATHER; c <= SHI_COLL_SCATTER; c++) {
            size_t bound = move_bounds[c - SHI_COLL_ALLGATHER][move_column(n)];
            shi_coll coll = (shi_coll) c;
            CHECK(shi_select(&t, coll, 0, n, ALL_ALGOS) == SHI_ALGO_DIRECT);
            CHECK(!shi_select_hands_over(&t, coll, 0, n, SHI_ALGO_DIRECT));
            CHECK(shi_select(&t, coll, 1, n, ALL_ALGOS) == SHI_ALGO_STAGED);
            CHECK(shi_select(&t, coll, 8 * K - 1, n, ALL_ALGOS)
                == SHI_ALGO_STAGED);
            CHECK(
                shi_select(&t, coll, 8 * K, n, ALL_ALGOS) == SHI_ALGO_DIRECT);
            CHECK(shi_select_hands_over(&t, coll, 8 * K, n, SHI_ALGO_DIRECT));
            CHECK(shi_select(&t, coll, bound - 1, n, ALL_ALGOS)
                == SHI_ALGO_DIRECT);
            CHECK(shi_select_hands_over(
                &t, coll, bound - 1, n, SHI_ALGO_DIRECT));
            CHECK(
                shi_select(&t, coll, bound, n, ALL_ALGOS) == SHI_ALGO_DIRECT);
            CHECK(!shi_select_hands_over(&t, coll, bound, n, SHI_ALGO_DIRECT));
            CHECK(!shi_select_hands_over(&t, coll, 4 * K, n, SHI_ALGO_STAGED));
            CHECK(!shi_select_hands_over(
                &t, coll, 8 * K - 1, n, SHI_ALGO_DIRECT));
            // Without single copy: staging at every size.
            CHECK(shi_select(&t, coll, 64 * M, n, all_but(SHI_ALGO_DIRECT))
                == SHI_ALGO_STAGED);
        }
        // allreduce and reduce hand private memory over up to 1 MiB.
        for (int c = SHI_COLL_ALLREDUCE; c <= SHI_COLL_REDUCE; c++) {
            shi_coll coll = (shi_coll) c;
            CHECK(shi_select_hands_over(&t, coll, 32 * K, n, SHI_ALGO_DIRECT));
            CHECK(shi_select_hands_over(&t, coll, M - 1, n, SHI_ALGO_DIRECT));
            CHECK(!shi_select_hands_over(&t, coll, M, n, SHI_ALGO_DIRECT));
        }
    }
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, SIZE_MAX) == SHI_ALGO_DIRECT);
}

// allreduce: one-shot for the smallest sizes (fewer of them the more ranks
// there are), two-shot up to 32 KiB, direct from there.
TEST(select_defaults_allreduce)
{
    static const struct {
        int    n;
        size_t oneshot_below;
    } cases[] = { { 1, 4 * K }, { 2, 4 * K }, { 3, 2 * K }, { 4, 2 * K },
        { 5, K }, { 16, K }, { 64, K } };
    shi_select_table t;

    shi_select_defaults(&t);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int    n  = cases[i].n;
        size_t lo = cases[i].oneshot_below;
        CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 0, n, ALL_ALGOS)
            == SHI_ALGO_ONESHOT);
        CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, lo - 1, n, ALL_ALGOS)
            == SHI_ALGO_ONESHOT);
        CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, lo, n, ALL_ALGOS)
            == SHI_ALGO_TWOSHOT);
        CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 32 * K - 1, n, ALL_ALGOS)
            == SHI_ALGO_TWOSHOT);
        CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 32 * K, n, ALL_ALGOS)
            == SHI_ALGO_DIRECT);
        // Without two-shot, one-shot up to 32 KiB.
        CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 32 * K - 1, n,
                  all_but(SHI_ALGO_TWOSHOT))
            == SHI_ALGO_ONESHOT);
    }
}

TEST(select_fallback_when_unavailable)
{
    shi_select_table t;
    unsigned         no_direct = all_but(SHI_ALGO_DIRECT);

    shi_select_defaults(&t);
    // Large allreduce without single copy: two-shot.
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 32 * K, 4, no_direct)
        == SHI_ALGO_TWOSHOT);
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 64 * M, 4, no_direct)
        == SHI_ALGO_TWOSHOT);
    // Small sizes do not care.
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 8, 4, no_direct)
        == SHI_ALGO_ONESHOT);
    // Neither direct nor two-shot: one-shot at every size.
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 64 * M, 4,
              SHI_ALGO_BIT(SHI_ALGO_ONESHOT))
        == SHI_ALGO_ONESHOT);
    // No rule covers small sizes with two-shot: the first default that is
    // available.
    CHECK(shi_select(
              &t, SHI_COLL_ALLREDUCE, 8, 4, SHI_ALGO_BIT(SHI_ALGO_TWOSHOT))
        == SHI_ALGO_TWOSHOT);
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 8, 4, all_but(SHI_ALGO_ONESHOT))
        == SHI_ALGO_TWOSHOT);
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 8, 4,
              all_but(SHI_ALGO_ONESHOT) & all_but(SHI_ALGO_TWOSHOT))
        == SHI_ALGO_DIRECT);
    // Reduce: one-shot is the large fallback.
    CHECK(shi_select(&t, SHI_COLL_REDUCE, 64 * M, 4, no_direct)
        == SHI_ALGO_ONESHOT);
    // Data movement: staged.
    for (int c = SHI_COLL_ALLGATHER; c <= SHI_COLL_SCATTER; c++) {
        CHECK(
            shi_select(&t, (shi_coll) c, 0, 4, no_direct) == SHI_ALGO_STAGED);
        CHECK(shi_select(&t, (shi_coll) c, 64 * M, 4, no_direct)
            == SHI_ALGO_STAGED);
    }
    // Nothing that can run the collective: none.
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 8, 4, 0) == SHI_ALGO_NONE);
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 8, 4,
              SHI_ALGO_BIT(SHI_ALGO_OUTBOX) | SHI_ALGO_BIT(SHI_ALGO_STAGED))
        == SHI_ALGO_NONE);
    CHECK(shi_select(&t, SHI_COLL_BROADCAST, 8, 4,
              all_but(SHI_ALGO_OUTBOX) & all_but(SHI_ALGO_DIRECT))
        == SHI_ALGO_NONE);
}

TEST(select_fallback_without_rules)
{
    // A table with no rule for the collective still picks an available
    // algorithm: the defaults' for the size, else the first default one.
    shi_select_table t;

    memset(&t, 0, sizeof(t));
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, 8) == SHI_ALGO_ONESHOT);
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, 64 * M) == SHI_ALGO_DIRECT);
    CHECK(shi_select(
              &t, SHI_COLL_ALLREDUCE, 64 * M, 4, all_but(SHI_ALGO_ONESHOT))
        == SHI_ALGO_DIRECT);
    CHECK(pick(&t, SHI_COLL_GATHER, 0) == SHI_ALGO_DIRECT);
    CHECK(pick(&t, SHI_COLL_BARRIER, 0) == SHI_ALGO_FLAGS);
    // An override for another collective does not count.
    CHECK_OK(shi_select_parse(&t, "allgather:staged"));
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, 0) == SHI_ALGO_ONESHOT);
    CHECK(pick(&t, SHI_COLL_ALLGATHER, 0) == SHI_ALGO_STAGED);
}

TEST(select_hand_built_rule_for_wrong_coll_ignored)
{
    shi_select_table t;

    shi_select_defaults(&t);
    t.rules[0].algo = SHI_ALGO_OUTBOX; // allreduce cannot run outbox
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, 8) == SHI_ALGO_ONESHOT);
}

TEST(select_override_wins)
{
    shi_select_table t;

    shi_select_defaults(&t);
    CHECK_OK(shi_select_parse(&t, "allreduce:twoshot@0-1M"));
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, 0) == SHI_ALGO_TWOSHOT);
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, 8) == SHI_ALGO_TWOSHOT);
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, M - 1) == SHI_ALGO_TWOSHOT);
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, M) == SHI_ALGO_DIRECT);
    // An unavailable override falls through to the defaults.
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 8, 4, all_but(SHI_ALGO_TWOSHOT))
        == SHI_ALGO_ONESHOT);
    // Other collectives keep their defaults.
    CHECK(pick(&t, SHI_COLL_REDUCE, 8) == SHI_ALGO_ONESHOT);

    // A later parse goes before an earlier one.
    CHECK_OK(shi_select_parse(&t, "allreduce:oneshot"));
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, 64 * M) == SHI_ALGO_ONESHOT);
}

TEST(select_header_example)
{
    shi_select_table t, defaults;

    shi_select_defaults(&defaults);
    shi_select_defaults(&t);
    CHECK_OK(shi_select_parse(&t,
        "allreduce:oneshot@0-64K,twoshot@64K-1M,direct@1M-;allgather:staged@"
        "0-"));
    CHECK(t.nrules == 4 + defaults.nrules);
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, 64 * K - 1) == SHI_ALGO_ONESHOT);
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, 64 * K) == SHI_ALGO_TWOSHOT);
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, M - 1) == SHI_ALGO_TWOSHOT);
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, M) == SHI_ALGO_DIRECT);
    CHECK(pick(&t, SHI_COLL_ALLGATHER, 0) == SHI_ALGO_STAGED);
    CHECK(pick(&t, SHI_COLL_ALLGATHER, 64 * M) == SHI_ALGO_STAGED);
}

TEST(select_several_collectives)
{
    shi_select_table t;

    shi_select_defaults(&t);
    CHECK_OK(shi_select_parse(&t,
        "reduce:oneshot; reduce_scatter:staged@1K-;alltoall:staged;"
        "gather:staged@-4K;scatter:staged,direct;broadcast:outbox;"
        "barrier:flags"));
    CHECK(pick(&t, SHI_COLL_REDUCE, 64 * M) == SHI_ALGO_ONESHOT);
    CHECK(pick(&t, SHI_COLL_REDUCE_SCATTER, K - 1) == SHI_ALGO_STAGED);
    CHECK(pick(&t, SHI_COLL_REDUCE_SCATTER, K) == SHI_ALGO_STAGED);
    CHECK(pick(&t, SHI_COLL_ALLTOALL, 8) == SHI_ALGO_STAGED);
    CHECK(pick(&t, SHI_COLL_GATHER, 4 * K - 1) == SHI_ALGO_STAGED);
    CHECK(pick(&t, SHI_COLL_GATHER, 4 * K) == SHI_ALGO_STAGED); // defaults
    CHECK(pick(&t, SHI_COLL_GATHER, 256 * K) == SHI_ALGO_DIRECT);
    CHECK(pick(&t, SHI_COLL_SCATTER, 64 * M) == SHI_ALGO_STAGED);
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, 64 * M) == SHI_ALGO_DIRECT);
    CHECK(pick(&t, SHI_COLL_BROADCAST, 8) == SHI_ALGO_OUTBOX);
    CHECK(pick(&t, SHI_COLL_BARRIER, 0) == SHI_ALGO_FLAGS);
}

TEST(select_parse_sizes)
{
    static const struct {
        const char *spec;
        size_t      lo, hi;
    } cases[] = {
        { "allreduce:oneshot@0-1", 0, 1 },
        { "allreduce:oneshot@1k-2K", K, 2 * K },
        { "allreduce:oneshot@3m-4M", 3 * M, 4 * M },
        { "allreduce:oneshot@5g-6G", 5 * G, 6 * G },
        { "allreduce:oneshot@1000-1025", 1000, 1025 },
        { "allreduce:oneshot@64K-", 64 * K, SIZE_MAX },
        { "allreduce:oneshot@-64K", 0, 64 * K },
        { "allreduce:oneshot@-", 0, SIZE_MAX },
        { "allreduce:oneshot", 0, SIZE_MAX },
        { "allreduce:oneshot@0-17179869183G", 0, (size_t) 17179869183 * G },
        { "allreduce:oneshot@1-18446744073709551614", 1,
            (size_t) 18446744073709551614u },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        shi_select_table t;
        memset(&t, 0, sizeof(t));
        CHECK_OK(shi_select_parse(&t, cases[i].spec));
        CHECK_MSG(t.nrules == 1 && t.rules[0].lo == cases[i].lo
                && t.rules[0].hi == cases[i].hi,
            "%s: got %zu-%zu", cases[i].spec, t.rules[0].lo, t.rules[0].hi);
        CHECK(t.rules[0].coll == SHI_COLL_ALLREDUCE);
        CHECK(t.rules[0].algo == SHI_ALGO_ONESHOT);
        CHECK(t.rules[0].min_ranks == 0 && t.rules[0].max_ranks == 0);
    }
}

TEST(select_parse_whitespace_and_case)
{
    shi_select_table a, b;

    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    CHECK_OK(shi_select_parse(&a,
        "  allreduce : oneshot @ 0 - 32K , twoshot@ 32k - ;\t"
        "AllGather:STAGED # 2 - 8 ; ReduceScatter:direct ;"));
    CHECK_OK(shi_select_parse(&b,
        "allreduce:oneshot@0-32K,twoshot@32K-;allgather:staged#2-8;"
        "reducescatter:direct"));
    CHECK(a.nrules == 4);
    CHECK(rules_equal(&a, &b));
}

TEST(select_parse_empty_is_no_change)
{
    static const char *const specs[] = { "", "   ", ";", " ; ;; " };
    shi_select_table         t, before;

    shi_select_defaults(&t);
    memcpy(&before, &t, sizeof(t));
    CHECK_OK(shi_select_parse(&t, NULL));
    CHECK(memcmp(&t, &before, sizeof(t)) == 0);
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        CHECK_OK(shi_select_parse(&t, specs[i]));
        CHECK(memcmp(&t, &before, sizeof(t)) == 0);
    }
}

TEST(select_parse_rejects_malformed)
{
    // Each bad spec, and a part of the error message that must name the
    // offending token.
    static const struct {
        const char *spec;
        const char *names;
    } bad[] = {
        { "allreduc:oneshot", "'allreduc'" }, // unknown collective
        { "allreduce:oneshoot", "'oneshoot'" }, // unknown algorithm
        { "allreduce:none", "'none'" }, // not an algorithm
        { "allreduce:outbox", "'outbox'" }, // cannot run allreduce
        { "reduce:twoshot", "'twoshot'" }, // cannot run reduce
        { "broadcast:staged", "'staged'" }, // cannot run broadcast
        { "allgather:oneshot", "'oneshot'" }, // cannot run allgather
        { "allreduce oneshot", "'allreduce oneshot'" }, // no ':'
        { ":oneshot", "':oneshot'" }, // no collective
        { "allreduce:", "'allreduce:'" }, // no algorithm
        { "allreduce:oneshot,", "'allreduce:oneshot,'" }, // empty item
        { "allreduce:,oneshot", "'allreduce:,oneshot'" }, // empty item
        { "allreduce:@0-1K", "'@0-1K'" }, // algorithm missing
        { "allreduce:oneshot@64K-32K", "'64K-32K'" }, // lo > hi
        { "allreduce:oneshot@32K-32K", "'32K-32K'" }, // lo == hi
        { "allreduce:oneshot@1K", "'1K'" }, // no '-'
        { "allreduce:oneshot@", "'oneshot@'" }, // empty range
        { "allreduce:oneshot@abc-", "'abc'" }, // not a number
        { "allreduce:oneshot@1T-", "'1T'" }, // unknown suffix
        { "allreduce:oneshot@1KB-", "'1KB'" }, // two letters
        { "allreduce:oneshot@1 K-", "'1 K'" }, // space in a size
        { "allreduce:oneshot@-1-", "'1-'" }, // negative
        { "allreduce:oneshot@0x10-", "'0x10'" }, // hex
        { "allreduce:oneshot@1-2-3", "'2-3'" }, // two dashes
        { "allreduce:oneshot@0-1K@2K", "'1K@2K'" }, // two ranges
        { "allreduce:oneshot@99999999999999999999-",
            "'99999999999999999999'" },
        { "allreduce:oneshot@0-17179869184G", "'17179869184G'" }, // overflow
        { "allreduce:oneshot#0-4", "'0'" }, // zero ranks
        { "allreduce:oneshot#8-2", "'8-2'" }, // min > max
        { "allreduce:oneshot#x-", "'x'" }, // not a number
        { "allreduce:oneshot#4", "'4'" }, // no '-'
        { "allreduce:oneshot#1K-", "'1K'" }, // no suffix on ranks
        { "allreduce:oneshot#99999999999-", "'99999999999'" }, // overflow
        { "allreduce:oneshot#2-4@0-1K", "'4@0-1K'" }, // filter before range
        { "allreduce:oneshot;gather:staged;x:y", "'x'" }, // late error
    };
    shi_select_table t, before;

    shi_select_defaults(&t);
    CHECK_OK(shi_select_parse(&t, "gather:staged@1K-"));
    memcpy(&before, &t, sizeof(t));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        shi_error_clear();
        int st = shi_select_parse(&t, bad[i].spec);
        CHECK_MSG(st == SHOAL_EINVAL, "'%s' returned %d", bad[i].spec, st);
        CHECK_MSG(strstr(shi_error_text(), bad[i].names) != NULL,
            "'%s': message '%s' does not name %s", bad[i].spec,
            shi_error_text(), bad[i].names);
        CHECK_MSG(strstr(shi_error_text(), "SHOAL_ALGO") != NULL,
            "'%s': message '%s'", bad[i].spec, shi_error_text());
        CHECK_MSG(memcmp(&t, &before, sizeof(t)) == 0,
            "'%s' changed the table", bad[i].spec);
    }
}

TEST(select_parse_invalid_algo_lists_valid_ones)
{
    shi_select_table t;

    shi_select_defaults(&t);
    CHECK_ST(shi_select_parse(&t, "reduce:staged"), SHOAL_EINVAL);
    CHECK(strstr(shi_error_text(), "oneshot, direct") != NULL);
    CHECK_ST(shi_select_parse(&t, "alltoal:staged"), SHOAL_EINVAL);
    CHECK(strstr(shi_error_text(), "alltoall") != NULL);
}

TEST(select_parse_too_many_rules)
{
    shi_select_table t, before;
    char             spec[4096];
    size_t           pos = 0;

    // A spec that alone has more rules than a table holds.
    pos += (size_t) snprintf(spec + pos, sizeof(spec) - pos, "barrier:flags");
    for (int i = 1; i <= SHI_SELECT_MAX_RULES; i++) {
        pos += (size_t) snprintf(spec + pos, sizeof(spec) - pos, ",flags");
    }
    CHECK(pos < sizeof(spec));
    memset(&t, 0, sizeof(t));
    memcpy(&before, &t, sizeof(t));
    CHECK_ST(shi_select_parse(&t, spec), SHOAL_EINVAL);
    CHECK(strstr(shi_error_text(), "too many") != NULL);
    CHECK(memcmp(&t, &before, sizeof(t)) == 0);

    // Exactly a table's worth fits in an empty table...
    spec[strlen(spec) - strlen(",flags")] = '\0';
    CHECK_OK(shi_select_parse(&t, spec));
    CHECK(t.nrules == SHI_SELECT_MAX_RULES);
    // ...but not before the defaults.
    shi_select_defaults(&t);
    memcpy(&before, &t, sizeof(t));
    CHECK_ST(shi_select_parse(&t, spec), SHOAL_EINVAL);
    CHECK(memcmp(&t, &before, sizeof(t)) == 0);
    // Filling the defaults' table up to the limit works.
    snprintf(spec, sizeof(spec), "barrier:flags");
    for (int i = t.nrules + 1; i < SHI_SELECT_MAX_RULES; i++) {
        strcat(spec, ",flags");
    }
    CHECK_OK(shi_select_parse(&t, spec));
    CHECK(t.nrules == SHI_SELECT_MAX_RULES);
    CHECK_ST(shi_select_parse(&t, "barrier:flags"), SHOAL_EINVAL);
}

TEST(select_rank_filters)
{
    shi_select_table t;

    shi_select_defaults(&t);
    CHECK_OK(shi_select_parse(&t,
        "allreduce:twoshot@0-1M#5-,direct@-1M#-2;"
        "allgather:staged#3-4"));
    CHECK(t.rules[0].min_ranks == 5 && t.rules[0].max_ranks == 0);
    CHECK(t.rules[1].min_ranks == 0 && t.rules[1].max_ranks == 2);
    CHECK(t.rules[2].min_ranks == 3 && t.rules[2].max_ranks == 4);

    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 8, 1, ALL_ALGOS)
        == SHI_ALGO_DIRECT);
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 8, 2, ALL_ALGOS)
        == SHI_ALGO_DIRECT);
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 8, 3, ALL_ALGOS)
        == SHI_ALGO_ONESHOT);
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 8, 4, ALL_ALGOS)
        == SHI_ALGO_ONESHOT);
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 8, 5, ALL_ALGOS)
        == SHI_ALGO_TWOSHOT);
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 8, 64, ALL_ALGOS)
        == SHI_ALGO_TWOSHOT);
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 2 * M, 64, ALL_ALGOS)
        == SHI_ALGO_DIRECT);

    CHECK(shi_select(&t, SHI_COLL_ALLGATHER, 128 * K, 2, ALL_ALGOS)
        == SHI_ALGO_DIRECT);
    CHECK(shi_select(&t, SHI_COLL_ALLGATHER, 256 * K, 3, ALL_ALGOS)
        == SHI_ALGO_STAGED);
    CHECK(shi_select(&t, SHI_COLL_ALLGATHER, 256 * K, 4, ALL_ALGOS)
        == SHI_ALGO_STAGED);
    CHECK(shi_select(&t, SHI_COLL_ALLGATHER, 256 * K, 5, ALL_ALGOS)
        == SHI_ALGO_DIRECT);

    // "#-" has no bound on either side, like no filter; "#3-3" one count.
    memset(&t, 0, sizeof(t));
    CHECK_OK(shi_select_parse(&t, "gather:staged#-,direct#3-3"));
    CHECK(t.rules[0].min_ranks == 0 && t.rules[0].max_ranks == 0);
    CHECK(t.rules[1].min_ranks == 3 && t.rules[1].max_ranks == 3);
}

// A rule that names an algorithm never hands over, even where a built-in
// rule for the same algorithm would: a named algorithm runs as named.
TEST(select_named_rules_do_not_hand_over)
{
    shi_select_table t;

    shi_select_defaults(&t);
    CHECK(shi_select_hands_over(
        &t, SHI_COLL_ALLGATHER, 64 * K, 2, SHI_ALGO_DIRECT));
    CHECK_OK(shi_select_parse(&t, "broadcast:outbox;allgather:direct@32K-"));
    CHECK(!shi_select_hands_over(
        &t, SHI_COLL_ALLGATHER, 64 * K, 2, SHI_ALGO_DIRECT));
    // Sizes the parsed rule leaves to the built-in ones still hand over.
    CHECK(shi_select_hands_over(
        &t, SHI_COLL_ALLGATHER, 16 * K, 2, SHI_ALGO_DIRECT));
    CHECK(shi_select_hands_over(
        &t, SHI_COLL_ALLREDUCE, 64 * K, 2, SHI_ALGO_DIRECT));
}

TEST(select_format_defaults)
{
    shi_select_table t;
    char             buf[2048];
    const char      *want
        = "allreduce:oneshot@0-4K#1-2,oneshot@0-2K#3-4,oneshot@0-1K#5-,"
          "twoshot@0-32K,oneshot@0-32K,direct@32K-1M,direct@32K-,"
          "twoshot@32K-;"
          "reduce:oneshot@0-32K,direct@32K-1M,direct@32K-,oneshot@32K-;"
          "allgather:staged@1-8K,direct@8K-128K#1-2,direct@8K-64K#3-4,"
          "direct@8K-128K#5-8,direct@8K-256K#9-,direct,staged;"
          "reducescatter:staged@1-8K,direct@8K-128K#1-2,direct@8K-2M#3-4,"
          "direct@8K-4M#5-8,direct@8K-8M#9-,direct,staged;"
          "alltoall:staged@1-8K,direct@8K-32K#1-2,direct@8K-64K#3-4,"
          "direct@8K-128K#5-8,direct@8K-256K#9-,direct,staged;"
          "gather:staged@1-8K,direct@8K-128K#1-2,direct@8K-256K#3-4,"
          "direct@8K-1M#5-8,direct@8K-8M#9-,direct,staged;"
          "scatter:staged@1-8K,direct@8K-64K#1-2,direct@8K-32K#3-4,"
          "direct@8K-128K#5-8,direct@8K-256K#9-,direct,staged;"
          "broadcast:outbox;barrier:flags;"
          "allreduce:hier@64K-,rhd@0-64K,ring;"
          "reduce:flat@0-64K,ring;"
          "allgather:flat@1-64K,ring;"
          "reducescatter:flat@1-64K,ring;alltoall:flat;"
          "gather:flat;scatter:flat;"
          "broadcast:hier@64K-,flat@0-64K,ring;"
          "barrier:rhd";

    shi_select_defaults(&t);
    int n = shi_select_format(&t, buf, sizeof(buf));
    CHECK_MSG(strcmp(buf, want) == 0, "got %s", buf);
    CHECK(n == (int) strlen(want));
}

TEST(select_format_truncates_like_snprintf)
{
    shi_select_table t;
    char             full[1024], small[16];

    shi_select_defaults(&t);
    int n = shi_select_format(&t, full, sizeof(full));
    CHECK(shi_select_format(&t, NULL, 0) == n);
    memset(small, 'x', sizeof(small));
    CHECK(shi_select_format(&t, small, sizeof(small)) == n);
    CHECK(small[sizeof(small) - 1] == '\0');
    CHECK(strncmp(small, full, sizeof(small) - 1) == 0);

    memset(&t, 0, sizeof(t));
    CHECK(shi_select_format(&t, full, sizeof(full)) == 0);
    CHECK(full[0] == '\0');
}

// Formats `t`, parses the text into an empty table, and checks that the two
// tables hold the same rules.
static void
check_round_trip(const shi_select_table *t)
{
    shi_select_table back;
    char             buf[8192];

    int n = shi_select_format(t, buf, sizeof(buf));
    CHECK(n > 0 && (size_t) n < sizeof(buf));
    memset(&back, 0, sizeof(back));
    CHECK_MSG(shi_select_parse(&back, buf) == SHOAL_OK, "'%s': %s", buf,
        shi_error_text());
    CHECK_MSG(rules_equal(t, &back), "'%s' did not round-trip", buf);
}

TEST(select_format_round_trip)
{
    shi_select_table t;

    shi_select_defaults(&t);
    check_round_trip(&t);
    CHECK_OK(shi_select_parse(&t,
        "allreduce:oneshot@0-1000,twoshot@1000-3M#2-,direct@3M-#-16;"
        "gather:staged@1-1025;allreduce:direct@5G-6G#3-3;"
        "reduce_scatter:staged@0-1;scatter:direct@1M-;barrier:flags#1-"));
    check_round_trip(&t);
    // Repeated collectives stay in order: segments for allreduce from the
    // spec (two), the shared-memory defaults and the network defaults.
    char buf[8192];
    shi_select_format(&t, buf, sizeof(buf));
    CHECK(test_count(buf, "allreduce:") == 4);
    CHECK(strstr(buf, "twoshot@1000-3M#2-") != NULL);
    CHECK(strstr(buf, "direct@5G-6G#3-3") != NULL);
    CHECK(strstr(buf, "gather:staged@1-1025") != NULL);
}

// Across hosts only the network algorithms are available: small messages
// take the latency-bound ones, large ones the ring, and SHOAL_ALGO can
// force either.
TEST(select_net_algorithms)
{
    shi_select_table t;

    shi_select_defaults(&t);
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 8, 2, NET_ALGOS) == SHI_ALGO_RHD);
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 64 * K, 2, NET_ALGOS)
        == SHI_ALGO_RING);
    CHECK(shi_select(&t, SHI_COLL_REDUCE, 8, 3, NET_ALGOS) == SHI_ALGO_FLAT);
    CHECK(shi_select(&t, SHI_COLL_REDUCE, 64 * M, 3, NET_ALGOS)
        == SHI_ALGO_RING);
    CHECK(shi_select(&t, SHI_COLL_ALLGATHER, 4 * K, 4, NET_ALGOS)
        == SHI_ALGO_FLAT);
    CHECK(shi_select(&t, SHI_COLL_ALLGATHER, 64 * M, 4, NET_ALGOS)
        == SHI_ALGO_RING);
    CHECK(shi_select(&t, SHI_COLL_ALLTOALL, 0, 4, NET_ALGOS) == SHI_ALGO_FLAT);
    CHECK(shi_select(&t, SHI_COLL_BROADCAST, 64 * M, 4, NET_ALGOS)
        == SHI_ALGO_RING);
    CHECK(shi_select(&t, SHI_COLL_BARRIER, 0, 4, NET_ALGOS) == SHI_ALGO_RHD);
    // With several ranks on some host: the host-aware all-reduce.
    unsigned hier = NET_ALGOS | SHI_ALGO_BIT(SHI_ALGO_HIER);
    CHECK(shi_select(&t, SHI_COLL_ALLREDUCE, 8, 4, hier) == SHI_ALGO_RHD);
    CHECK(
        shi_select(&t, SHI_COLL_ALLREDUCE, 64 * M, 4, hier) == SHI_ALGO_HIER);
    CHECK(shi_select(&t, SHI_COLL_REDUCE, 8, 4, hier) == SHI_ALGO_FLAT);
    // The shared-memory table is untouched by them.
    CHECK(pick(&t, SHI_COLL_ALLREDUCE, 8) == SHI_ALGO_ONESHOT);
    CHECK_OK(shi_select_parse(&t, "allreduce:ring@0-;reducescatter:flat"));
    CHECK(
        shi_select(&t, SHI_COLL_ALLREDUCE, 8, 2, NET_ALGOS) == SHI_ALGO_RING);
    CHECK(shi_select(&t, SHI_COLL_REDUCE_SCATTER, 64 * M, 2, NET_ALGOS)
        == SHI_ALGO_FLAT);
    CHECK(shi_select_parse(&t, "alltoall:ring") == SHOAL_EINVAL);
}

// The table's index of where each collective's rules start changes no
// choice: every collective, size and availability picks as a scan from
// the first rule does, after defaults and after rules put in front.
TEST(select_index_changes_no_choice)
{
    static shi_select_table t, scan;
    unsigned                masks[]
        = { ALL_ALGOS, NET_ALGOS, NET_ALGOS | SHI_ALGO_BIT(SHI_ALGO_HIER) };

    shi_select_defaults(&t);
    for (int round = 0; round < 2; round++) {
        scan = t;
        memset(scan.first, 0, sizeof(scan.first));
        for (int c = 0; c < SHI_COLL_COUNT; c++) {
            for (size_t bytes = 0; bytes <= 256 * M; bytes = bytes * 2 + 1) {
                for (size_t m = 0; m < sizeof(masks) / sizeof(*masks); m++) {
                    CHECK(shi_select(&t, (shi_coll) c, bytes, 4, masks[m])
                        == shi_select(
                            &scan, (shi_coll) c, bytes, 4, masks[m]));
                }
            }
        }
        CHECK_OK(shi_select_parse(&t, "barrier:rhd;allgather:ring@1K-"));
    }
}
