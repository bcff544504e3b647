// Algorithm selection: which algorithm runs a collective, by (collective,
// message bytes, ranks). A built-in table gives the defaults; a tuning
// file (tuning.h) and SHOAL_ALGO override it (SHOAL_ALGO first), e.g.
//   SHOAL_ALGO="allreduce:oneshot@0-64K,twoshot@64K-1M,direct@1M-;allgather:staged@0-"
// (ranges are [lo, hi) in bytes with K/M/G suffixes; an empty bound is
// open; no range is every size). A rule may also name the rank counts it is
// for, inclusive and either side open: "allreduce:twoshot@1M-#4-".
// Collective names ignore underscores ("all_reduce"). Every rank must pick
// the same algorithm for the same call, so the communicator uses rank 0's
// SHOAL_ALGO and tuning file on every rank, and only inputs that
// are equal on every rank (collective, total bytes, ranks, the agreed
// availability mask) enter the choice.
#ifndef SHI_SELECT_H
#define SHI_SELECT_H

#include <stddef.h>
#include <stdint.h>

#include "algo/registry.h"
#include "core/op_props.h"

#define SHI_SELECT_MAX_RULES 512

// Where a rule came from (said in SHOAL_DEBUG=INFO logs).
typedef enum shi_rule_source {
    SHI_RULE_BUILTIN = 0, // the built-in table
    SHI_RULE_FILE, // a tuning file (tuning.h)
    SHI_RULE_ENV, // SHOAL_ALGO
    SHI_RULE_CALL, // the call's own options (shoal_call_opts.algo)
    SHI_RULE_SOURCES
} shi_rule_source;

// "built-in table", "tuning file", ...
const char *shi_rule_source_name(int source);

typedef struct shi_select_rule {
    shi_coll coll;
    shi_algo algo;
    size_t   lo, hi; // bytes, [lo, hi); hi == SIZE_MAX: open
    int      min_ranks, max_ranks; // 0: any
    int      source; // shi_rule_source
    // Built-in rules only: where a buffer lies outside the shared heap, the
    // algorithm's row may hand the call over (registry.h, hand_over).
    int hand_over;
} shi_select_rule;

typedef struct shi_select_table {
    int             nrules;
    shi_select_rule rules[SHI_SELECT_MAX_RULES]; // first match wins
    // Where each collective's rules start, so that a choice (made on every
    // call) skips the rules of the collectives before it. Kept by the
    // functions below that fill the table; a table filled by hand, with
    // these at 0, is read from its first rule.
    int16_t first[SHI_COLL_COUNT];
} shi_select_table;

// The collective named `name` (underscores ignored: "all_reduce"), or -1.
int shi_coll_by_name(const char *name);

// The names of the algorithms in `mask`, ", "-separated, into buf.
void shi_algo_mask_names(unsigned mask, char *buf, size_t len);

// The built-in table.
void shi_select_defaults(shi_select_table *t);

// Puts the rules of `spec` (SHOAL_ALGO syntax) before the table's own, so
// they win. Errors: SHOAL_EINVAL with a message naming the bad part
// (unknown collective or algorithm, an algorithm that cannot run that
// collective, a malformed range); the table is unchanged then.
int shi_select_parse(shi_select_table *t, const char *spec);

// The same, marking the new rules as coming from `source`
// (shi_select_parse: SHI_RULE_ENV).
int shi_select_parse_as(
    shi_select_table *t, const char *spec, shi_rule_source source);

// The algorithm for a call: the first rule matching (coll, bytes, nranks)
// whose algorithm is in `available`; if none matches, the first available
// algorithm of the defaults' rules matching the call, else of any default
// rule for `coll`. Never SHI_ALGO_NONE for a
// collective with at least one available algorithm.
shi_algo shi_select(const shi_select_table *t, shi_coll coll, size_t bytes,
    int nranks, unsigned available);

// shi_select, also saying in *source which rules chose (the built-in ones
// when no rule of the table matched).
shi_algo shi_select_why(const shi_select_table *t, shi_coll coll, size_t bytes,
    int nranks, unsigned available, shi_rule_source *source);

// Whether the built-in rule that chose `algo` for (coll, bytes, nranks)
// lets a call with a buffer outside the shared heap be handed over (the
// first rule of the table, else of the defaults, matching the call and
// naming algo).
int shi_select_hands_over(const shi_select_table *t, shi_coll coll,
    size_t bytes, int nranks, shi_algo algo);

// Prints the table in SHOAL_ALGO syntax (for logs; shi_select_parse reads it
// back to the same rules, less the built-in rules' hand_over marks). Like
// snprintf: writes at most len bytes with a NUL, and returns the length of
// the whole text.
int shi_select_format(const shi_select_table *t, char *buf, size_t len);

#endif
