// The algorithm registry: every row is well formed and runnable, names and
// masks derive from it, what a communicator is offered follows its class
// and needs, the defaults only name algorithms that can run their
// collective, and every cost formula is sane. Pure logic, no transport.
#include <string.h>

#include "algo/registry.h"
#include "coll/select.h"
#include "test.h"

TEST(registry_rows_are_well_formed)
{
    int                  n;
    const shi_algo_desc *rows = shi_algo_rows(&n);

    CHECK(n > 0);
    for (int i = 0; i < n; i++) {
        const shi_algo_desc *d = &rows[i];
        CHECK(d->coll >= 0 && d->coll < SHI_COLL_COUNT);
        CHECK(d->algo > SHI_ALGO_NONE && d->algo < SHI_ALGO_COUNT);
        CHECK(d->name != NULL && d->cost != NULL);
        // Exactly one way to run it: by itself, or as a schedule (only
        // on a message transport).
        CHECK((d->step != NULL) != (d->build != NULL));
        CHECK(d->build == NULL || d->klass == SHI_TP_MESSAGES);
        // One row per (collective, algorithm), found by the lookup.
        CHECK(shi_algo_find(d->coll, d->algo) == d);
        // An algorithm has one name, whatever collective it runs.
        CHECK(strcmp(shi_algo_name(d->algo), d->name) == 0);
        CHECK(shi_algo_by_name(d->name, strlen(d->name)) == d->algo);
    }
    CHECK(shi_algo_find(SHI_COLL_COUNT, SHI_ALGO_RING) == NULL);
    CHECK(shi_algo_find(SHI_COLL_BARRIER, SHI_ALGO_COUNT) == NULL);
    CHECK(shi_algo_find(SHI_COLL_BARRIER, SHI_ALGO_RING) == NULL);
    CHECK(shi_algo_by_name("RING", 4) == SHI_ALGO_RING);
    CHECK(shi_algo_by_name("rin", 3) == SHI_ALGO_NONE);
    CHECK(shi_algo_by_name("nosuch", 6) == SHI_ALGO_NONE);
}

TEST(registry_every_collective_runs_on_every_class)
{
    for (int c = 0; c < SHI_COLL_COUNT; c++) {
        unsigned mapped = shi_algos_offered(SHI_TP_MAPPED, 0)
            & shi_algos_for((shi_coll) c);
        unsigned messages = shi_algos_offered(SHI_TP_MESSAGES, 0)
            & shi_algos_for((shi_coll) c);
        CHECK(mapped != 0);
        CHECK(messages != 0);
    }
}

TEST(registry_offers_by_class_and_needs)
{
    unsigned mapped = shi_algos_offered(SHI_TP_MAPPED, 0);
    unsigned cma    = shi_algos_offered(SHI_TP_MAPPED, SHI_NEEDS_SINGLE_COPY);
    unsigned net    = shi_algos_offered(SHI_TP_MESSAGES, 0);
    unsigned hosts  = shi_algos_offered(SHI_TP_MESSAGES, SHI_NEEDS_HOSTS);

    CHECK(!(mapped & SHI_ALGO_BIT(SHI_ALGO_DIRECT)));
    CHECK(cma == (mapped | SHI_ALGO_BIT(SHI_ALGO_DIRECT)));
    CHECK(!(
        mapped & (SHI_ALGO_BIT(SHI_ALGO_RING) | SHI_ALGO_BIT(SHI_ALGO_HIER))));
    CHECK(net
        == (SHI_ALGO_BIT(SHI_ALGO_RING) | SHI_ALGO_BIT(SHI_ALGO_RHD)
            | SHI_ALGO_BIT(SHI_ALGO_FLAT) | SHI_ALGO_BIT(SHI_ALGO_BRUCK)));
    CHECK(hosts == (net | SHI_ALGO_BIT(SHI_ALGO_HIER)));
}

// The built-in table only names algorithms that can run the rule's
// collective, and on each class the defaults choose an algorithm of that
// class for every collective and size.
TEST(registry_defaults_choose_within_the_class)
{
    static const size_t sizes[] = { 0, 8, 4096, 65536, 1u << 20, 1u << 26 };
    shi_select_table    t;

    shi_select_defaults(&t);
    for (int i = 0; i < t.nrules; i++) {
        CHECK(shi_algo_find(t.rules[i].coll, t.rules[i].algo) != NULL);
    }
    for (int k = 0; k < 2; k++) {
        enum shi_tp_class klass = k ? SHI_TP_MESSAGES : SHI_TP_MAPPED;
        unsigned offered = shi_algos_offered(klass, SHI_NEEDS_SINGLE_COPY);
        for (int c = 0; c < SHI_COLL_COUNT; c++) {
            for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++) {
                shi_algo a
                    = shi_select(&t, (shi_coll) c, sizes[s], 4, offered);
                const shi_algo_desc *d = shi_algo_find((shi_coll) c, a);
                CHECK(d != NULL);
                CHECK(d->klass == klass);
            }
        }
    }
}

// Costs are finite, non-negative, at least one latency round for a
// message, and never fall as messages grow.
TEST(registry_costs_are_sane)
{
    static const size_t  sizes[] = { 8, 4096, 1u << 20, 1u << 26 };
    static const int     ranks[] = { 2, 3, 4, 8, 16 };
    int                  n;
    const shi_algo_desc *rows = shi_algo_rows(&n);

    for (int i = 0; i < n; i++) {
        for (size_t r = 0; r < sizeof(ranks) / sizeof(*ranks); r++) {
            shi_cost prev = { 0, 0, 0 };
            for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++) {
                shi_cost_call c = { .bytes = sizes[s],
                    .nranks                = ranks[r],
                    .slab_bytes            = 2u << 20 };
                shi_cost      k;
                rows[i].cost(&c, &k);
                CHECK(k.alpha >= 1 && k.beta >= 0 && k.gamma >= 0);
                CHECK(k.alpha < 1e9 && k.beta < 1e12 && k.gamma < 1e12);
                CHECK(k.alpha >= prev.alpha && k.beta >= prev.beta
                    && k.gamma >= prev.gamma);
                prev = k;
            }
        }
    }
}
