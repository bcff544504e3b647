// The SHOAL_ALGO parser (coll/select.c). A spec that parses is printed
// with shi_select_format and parsed again: the printer promises text the
// parser reads back to the same rules in the same order. A spec that does
// not parse must leave the table as it was.
#include <stdlib.h>
#include <string.h>

#include "coll/select.h"
#include "fuzz.h"
#include "shoal.h"

static int
same_rule(const shi_select_rule *a, const shi_select_rule *b)
{
    return a->coll == b->coll && a->algo == b->algo && a->lo == b->lo
        && a->hi == b->hi && a->min_ranks == b->min_ranks
        && a->max_ranks == b->max_ranks;
}

static int
same_table(const shi_select_table *a, const shi_select_table *b)
{
    if (a->nrules != b->nrules) {
        return 0;
    }
    for (int i = 0; i < a->nrules; i++) {
        if (!same_rule(&a->rules[i], &b->rules[i])) {
            return 0;
        }
    }
    return 1;
}

// The table as SHOAL_ALGO text, in a buffer of exactly its size.
static char *
format_table(const shi_select_table *t)
{
    int   n   = shi_select_format(t, NULL, 0);
    char *buf = malloc((size_t) n + 1);

    FUZZ_CHECK(n >= 0 && buf != NULL);
    FUZZ_CHECK(shi_select_format(t, buf, (size_t) n + 1) == n);
    FUZZ_CHECK(strlen(buf) == (size_t) n);
    return buf;
}

static void
check_round_trip(const shi_select_table *t)
{
    shi_select_table again = { 0 };
    char            *text  = format_table(t);
    char            *text2;

    FUZZ_CHECK(shi_select_parse(&again, text) == SHOAL_OK);
    FUZZ_CHECK(same_table(t, &again));
    text2 = format_table(&again);
    FUZZ_CHECK(strcmp(text, text2) == 0);
    free(text2);
    free(text);
}

// Every rule names an algorithm that can run its collective, so the
// lookup never picks one that cannot.
static void
check_select(const shi_select_table *t)
{
    static const size_t sizes[] = { 0, 1, 4096, 65536, (size_t) 1 << 30 };

    for (int c = 0; c < SHI_COLL_COUNT; c++) {
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            shi_algo a = shi_select(t, (shi_coll) c, sizes[i], 4, ~0u);
            FUZZ_CHECK(a != SHI_ALGO_NONE);
            FUZZ_CHECK(shi_algos_for((shi_coll) c) & SHI_ALGO_BIT(a));
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char            *spec = malloc(size + 1);
    shi_select_table t    = { 0 };
    shi_select_table defaults, merged;

    FUZZ_CHECK(spec != NULL);
    memcpy(spec, data, size);
    spec[size] = '\0';
    shi_select_defaults(&defaults);
    merged = defaults;
    if (shi_select_parse(&t, spec) == SHOAL_OK) {
        check_round_trip(&t);
        // Before the defaults: the parsed rules first, then the table's.
        if (shi_select_parse(&merged, spec) == SHOAL_OK) {
            FUZZ_CHECK(merged.nrules == t.nrules + defaults.nrules);
            for (int i = 0; i < merged.nrules; i++) {
                FUZZ_CHECK(same_rule(&merged.rules[i],
                    i < t.nrules ? &t.rules[i]
                                 : &defaults.rules[i - t.nrules]));
            }
            check_select(&merged);
        }
    } else {
        FUZZ_CHECK(t.nrules == 0);
        FUZZ_CHECK(shi_select_parse(&merged, spec) != SHOAL_OK);
        FUZZ_CHECK(same_table(&merged, &defaults));
    }
    free(spec);
    return 0;
}
