// Algorithm selection (see select.h): the built-in table, the SHOAL_ALGO
// parser and printer, and the per-call lookup.
//
// Spec grammar (whitespace allowed around every token):
//   spec  := [ seg { ';' seg } ]          (empty segments are skipped)
//   seg   := coll ':' item { ',' item }
//   item  := algo [ '@' [size] '-' [size] ] [ '#' [ranks] '-' [ranks] ]
//   size  := digits [ K | M | G ]          (binary, case-insensitive)
// Sizes are [lo, hi) bytes, rank bounds [min, max] inclusive; an empty
// bound is open. Names are case-insensitive.
#include "coll/select.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "algo/registry.h"
#include "base/env.h"
#include "base/error.h"
#include "core/request.h"
#include "shoal.h"

// Message sizes where the defaults change algorithm. Measured tuning will
// move these; keep every threshold here.
#define SEL_KIB            ((size_t) 1024)
#define SEL_MIB            (1024 * SEL_KIB)
#define SEL_SMALL_MAX      (32 * SEL_KIB) // one- or two-shot below, direct above
#define SEL_MOVE_SMALL_MAX (8 * SEL_KIB) // data movement: staging below
// Broadcast: the outbox (the root copies in, readers copy out, pipelined
// in 256 KiB slots); readers copying straight from the root's buffer
// ("direct") is left to tuning. This VM has two modes, and they disagree:
// where lines move slowly between CPUs (a flag round trip 0.3 us) direct
// took 6.4 / 21.8 / 48.8 / 190 us at 16 KiB / 64 KiB / 256 KiB / 1 MiB
// against the outbox's 10.9 / 23 / 131 / 444; where they move fast (0.07
// us), which was most of the time, shoal-tune measured the outbox ahead
// at every size from 16 KiB, 1.0-3.1x, and 2-3.4x from 512 KiB (1 MiB:
// 35 us against 128), in three runs.
#define SEL_OPEN SIZE_MAX
// Across hosts: latency-bound algorithms below, the ring above.
#define SEL_NET_SMALL_MAX (64 * SEL_KIB)

// Longest token quoted in an error message.
#define SEL_QUOTE_MAX 80

// A built-in rule: [from, to) bytes on ranks [lo_ranks, hi_ranks] (0:
// open); hand_over 1: its algorithm hands a call with a buffer outside the
// shared heap to its row's hand_over algorithm (registry.h).
#define SEL_RULE_AS(c, a, from, to, lo_ranks, hi_ranks, hands_over)           \
    {                                                                         \
        .coll = (c), .algo = (a), .lo = (from), .hi = (to),                   \
        .min_ranks = (lo_ranks), .max_ranks = (hi_ranks),                     \
        .hand_over = (hands_over)                                             \
    }
// ... for any rank count.
#define SEL_RULE(c, a, from, to) SEL_RULE_AS(c, a, from, to, 0, 0, 0)
// ... for some rank counts.
#define SEL_RULE_N(c, a, from, to, lo_ranks, hi_ranks)                        \
    SEL_RULE_AS(c, a, from, to, lo_ranks, hi_ranks, 0)
// ... that hands over.
#define SEL_RULE_HAND_OVER(c, a, from, to, lo_ranks, hi_ranks)                \
    SEL_RULE_AS(c, a, from, to, lo_ranks, hi_ranks, 1)

// The largest all-reduce or reduce handed from the single copy to staging
// for private memory. Idle, the staged algorithms beat the kernel's copy
// from private memory up to 16 MiB here, but they move about 5 S per rank
// against 2 S: in training (DDP's 25 MB buckets, compute on every core)
// plain DDP's communication overhead rose from 0.29-0.42x gloo's to
// 0.44-0.61x with every size handed over.
#define SEL_HAND_OVER_MAX SEL_MIB

// Data movement: staging below 8 KiB; from there the single copy where
// every buffer is in the shared heap (a memcpy from the peer's mapping:
// 2 ranks, 16-64 KiB allgather 1.4-3.1 us against staging's 5.3-10.2),
// and for private memory staging up to a bound that grows with the ranks
// (the single copy hands the call over after its first sync point),
// the single copy above it; staging where single copy does not work.
// Staging costs a flag round per slab and one more copy of this rank's own
// block; the single copy from private memory costs a process_vm_readv per
// peer, page pinning included (tens of microseconds at 16 ranks), which
// pays only for large blocks. Medians of forced runs (shoal-perf, private
// buffers), staged/direct in us, where the two cross:
//   2 ranks (2-vCPU VM)  allgather  64K  7.4/11.2   gather 128K 13.1/12.4
//   4 ranks (16 cores)   allgather  64K 13.9/11.5   alltoall 64K 14.2/11.9
//   8 ranks              allgather 128K 30.3/25.4   reducescatter 4M 1049/808
//   16 ranks             allgather 256K 61.0/51.4   gather 4M 521/551
// so the bound is about 16 KiB a rank for allgather, alltoall and scatter,
// 64 KiB a rank for gather, more for reduce-scatter (whose staging reduces
// as it reads). Above 16 ranks the 16-rank bounds stand (not measured).
// From 1 byte: all_to_all_v selects with size 0 (its sizes differ by rank)
// and must not be taken for small.
#define SEL_MOVE(c, to2, to4, to8, to16)                                      \
    SEL_RULE(c, SHI_ALGO_STAGED, 1, SEL_MOVE_SMALL_MAX),                      \
        SEL_RULE_HAND_OVER(                                                   \
            c, SHI_ALGO_DIRECT, SEL_MOVE_SMALL_MAX, to2, 1, 2),               \
        SEL_RULE_HAND_OVER(                                                   \
            c, SHI_ALGO_DIRECT, SEL_MOVE_SMALL_MAX, to4, 3, 4),               \
        SEL_RULE_HAND_OVER(                                                   \
            c, SHI_ALGO_DIRECT, SEL_MOVE_SMALL_MAX, to8, 5, 8),               \
        SEL_RULE_HAND_OVER(                                                   \
            c, SHI_ALGO_DIRECT, SEL_MOVE_SMALL_MAX, to16, 9, 0),              \
        SEL_RULE(c, SHI_ALGO_DIRECT, 0, SEL_OPEN),                            \
        SEL_RULE(c, SHI_ALGO_STAGED, 0, SEL_OPEN)

// The built-in table, first match wins. shi_select skips a rule whose
// algorithm is not available on this communicator and tries the next.
static const shi_select_rule select_defaults[] = {
    // allreduce, small: latency-bound. One-shot (every rank reduces every
    // input) costs one flag round; its reads and reductions grow with the
    // ranks, and two-shot (reduce-scatter, then all-gather, each rank
    // reducing 1/n) overtakes it early. Medians of forced runs in us,
    // one-shot/two-shot: 2 ranks 4 KiB 1.21/0.88, 16 KiB 3.68/1.80; 4 ranks
    // 2 KiB 2.81/2.56, 16 KiB 12.7/7.3; 8 ranks 1 KiB 3.16/2.92, 16 KiB
    // 24.2/7.7; 16 ranks 2 KiB 9.1/6.4, 16 KiB 50.7/12.2.
    SEL_RULE_N(SHI_COLL_ALLREDUCE, SHI_ALGO_ONESHOT, 0, 4 * SEL_KIB, 1, 2),
    SEL_RULE_N(SHI_COLL_ALLREDUCE, SHI_ALGO_ONESHOT, 0, 2 * SEL_KIB, 3, 4),
    SEL_RULE_N(SHI_COLL_ALLREDUCE, SHI_ALGO_ONESHOT, 0, SEL_KIB, 5, 0),
    SEL_RULE(SHI_COLL_ALLREDUCE, SHI_ALGO_TWOSHOT, 0, SEL_SMALL_MAX),
    SEL_RULE(SHI_COLL_ALLREDUCE, SHI_ALGO_ONESHOT, 0, SEL_SMALL_MAX),
    // allreduce, large: bandwidth-bound. Reading peers' buffers directly
    // moves about half the bytes of staging through shared memory; it is
    // available only where the single-copy path works (buffers in shared
    // memory, or CMA allowed).
    SEL_RULE_HAND_OVER(SHI_COLL_ALLREDUCE, SHI_ALGO_DIRECT, SEL_SMALL_MAX,
        SEL_HAND_OVER_MAX, 0, 0),
    SEL_RULE(SHI_COLL_ALLREDUCE, SHI_ALGO_DIRECT, SEL_SMALL_MAX, SEL_OPEN),
    // allreduce, large, no single copy: reduce-scatter then all-gather
    // through staging, so each rank reduces only 1/n of the data.
    SEL_RULE(SHI_COLL_ALLREDUCE, SHI_ALGO_TWOSHOT, SEL_SMALL_MAX, SEL_OPEN),

    // reduce: the same split as allreduce; only the root needs the result,
    // so there is no two-shot, and one-shot is the large-size fallback.
    SEL_RULE(SHI_COLL_REDUCE, SHI_ALGO_ONESHOT, 0, SEL_SMALL_MAX),
    SEL_RULE_HAND_OVER(SHI_COLL_REDUCE, SHI_ALGO_DIRECT, SEL_SMALL_MAX,
        SEL_HAND_OVER_MAX, 0, 0),
    SEL_RULE(SHI_COLL_REDUCE, SHI_ALGO_DIRECT, SEL_SMALL_MAX, SEL_OPEN),
    SEL_RULE(SHI_COLL_REDUCE, SHI_ALGO_ONESHOT, SEL_SMALL_MAX, SEL_OPEN),

    // Data movement without reduction (see SEL_MOVE).
    SEL_MOVE(SHI_COLL_ALLGATHER, 128 * SEL_KIB, 64 * SEL_KIB, 128 * SEL_KIB,
        256 * SEL_KIB),
    SEL_MOVE(SHI_COLL_REDUCE_SCATTER, 128 * SEL_KIB, 2 * SEL_MIB, 4 * SEL_MIB,
        8 * SEL_MIB),
    SEL_MOVE(SHI_COLL_ALLTOALL, 32 * SEL_KIB, 64 * SEL_KIB, 128 * SEL_KIB,
        256 * SEL_KIB),
    SEL_MOVE(
        SHI_COLL_GATHER, 128 * SEL_KIB, 256 * SEL_KIB, SEL_MIB, 8 * SEL_MIB),
    SEL_MOVE(SHI_COLL_SCATTER, 64 * SEL_KIB, 32 * SEL_KIB, 128 * SEL_KIB,
        256 * SEL_KIB),

    // Broadcast: the outbox at every size (single copy where tuning
    // finds it faster).
    SEL_RULE(SHI_COLL_BROADCAST, SHI_ALGO_OUTBOX, 0, SEL_OPEN),

    // One algorithm.
    SEL_RULE(SHI_COLL_BARRIER, SHI_ALGO_FLAGS, 0, SEL_OPEN),

    // Across hosts (only these are available there). Small messages pay a
    // network round trip per step: the fewest steps win (recursive
    // doubling: log2 n; flat: one round of n - 1 messages). Large ones are
    // bandwidth-bound: the ring moves 2 (n - 1) / n of the data per rank,
    // the least possible, in pipelined pieces.
    // With several ranks on a host, large all-reduces combine the host's
    // ranks through shared memory so that one rank per host uses the
    // network (4 ranks on 2 hosts, 64 MiB: 141 ms against the flat ring's
    // 165). Small ones stay flat: three stages on three communicators cost
    // more than recursive doubling's rounds there (8 B: 98 us against 48,
    // with 2 ranks per core).
    SEL_RULE(SHI_COLL_ALLREDUCE, SHI_ALGO_HIER, SEL_NET_SMALL_MAX, SEL_OPEN),
    SEL_RULE(SHI_COLL_ALLREDUCE, SHI_ALGO_RHD, 0, SEL_NET_SMALL_MAX),
    SEL_RULE(SHI_COLL_ALLREDUCE, SHI_ALGO_RING, 0, SEL_OPEN),
    SEL_RULE(SHI_COLL_REDUCE, SHI_ALGO_FLAT, 0, SEL_NET_SMALL_MAX),
    SEL_RULE(SHI_COLL_REDUCE, SHI_ALGO_RING, 0, SEL_OPEN),
    SEL_RULE(SHI_COLL_ALLGATHER, SHI_ALGO_FLAT, 1, SEL_NET_SMALL_MAX),
    SEL_RULE(SHI_COLL_ALLGATHER, SHI_ALGO_RING, 0, SEL_OPEN),
    SEL_RULE(SHI_COLL_REDUCE_SCATTER, SHI_ALGO_FLAT, 1, SEL_NET_SMALL_MAX),
    SEL_RULE(SHI_COLL_REDUCE_SCATTER, SHI_ALGO_RING, 0, SEL_OPEN),
    SEL_RULE(SHI_COLL_ALLTOALL, SHI_ALGO_FLAT, 0, SEL_OPEN),
    SEL_RULE(SHI_COLL_GATHER, SHI_ALGO_FLAT, 0, SEL_OPEN),
    SEL_RULE(SHI_COLL_SCATTER, SHI_ALGO_FLAT, 0, SEL_OPEN),
    // Large broadcasts likewise: within the root's host, between the hosts'
    // leaders, within every other host.
    SEL_RULE(SHI_COLL_BROADCAST, SHI_ALGO_HIER, SEL_NET_SMALL_MAX, SEL_OPEN),
    SEL_RULE(SHI_COLL_BROADCAST, SHI_ALGO_FLAT, 0, SEL_NET_SMALL_MAX),
    SEL_RULE(SHI_COLL_BROADCAST, SHI_ALGO_RING, 0, SEL_OPEN),
    SEL_RULE(SHI_COLL_BARRIER, SHI_ALGO_RHD, 0, SEL_OPEN),
};

#define SEL_NDEFAULTS                                                         \
    ((int) (sizeof(select_defaults) / sizeof(*select_defaults)))

_Static_assert(
    SEL_NDEFAULTS <= SHI_SELECT_MAX_RULES, "the defaults must fit in a table");

// Records where each collective's first rule is (the table's `first`).
static void
select_index(shi_select_table *t)
{
    for (int c = SHI_COLL_COUNT - 1; c >= 0; c--) {
        t->first[c] = (int16_t) t->nrules;
    }
    for (int i = t->nrules - 1; i >= 0; i--) {
        if (t->rules[i].coll < SHI_COLL_COUNT) {
            t->first[t->rules[i].coll] = (int16_t) i;
        }
    }
}

void
shi_select_defaults(shi_select_table *t)
{
    memset(t, 0, sizeof(*t));
    memcpy(t->rules, select_defaults, sizeof(select_defaults));
    t->nrules = SEL_NDEFAULTS;
    select_index(t);
}

static int
select_rule_matches(
    const shi_select_rule *r, shi_coll coll, size_t bytes, int nranks)
{
    return r->coll == coll && bytes >= r->lo
        && (r->hi == SEL_OPEN || bytes < r->hi)
        && (r->min_ranks == 0 || nranks >= r->min_ranks)
        && (r->max_ranks == 0 || nranks <= r->max_ranks);
}

static int
select_usable(shi_algo algo, unsigned usable)
{
    return algo > SHI_ALGO_NONE && algo < SHI_ALGO_COUNT
        && (usable & SHI_ALGO_BIT(algo)) != 0;
}

shi_algo
shi_select(const shi_select_table *t, shi_coll coll, size_t bytes, int nranks,
    unsigned available)
{
    shi_rule_source source;

    return shi_select_why(t, coll, bytes, nranks, available, &source);
}

const char *
shi_rule_source_name(int source)
{
    static const char *const names[SHI_RULE_SOURCES] = {
        [SHI_RULE_BUILTIN] = "built-in table",
        [SHI_RULE_FILE]    = "tuning file",
        [SHI_RULE_ENV]     = "SHOAL_ALGO",
        [SHI_RULE_CALL]    = "the call's options",
    };

    return source >= 0 && source < SHI_RULE_SOURCES ? names[source] : NULL;
}

shi_algo
shi_select_why(const shi_select_table *t, shi_coll coll, size_t bytes,
    int nranks, unsigned available, shi_rule_source *source)
{
    // An algorithm that cannot run `coll` is never chosen, whatever a
    // hand-built table says.
    unsigned usable = available & shi_algos_for(coll);

    *source = SHI_RULE_BUILTIN;
    if (usable == 0) {
        return SHI_ALGO_NONE;
    }
    for (int i = t->first[coll]; i < t->nrules; i++) {
        const shi_select_rule *r = &t->rules[i];
        if (select_rule_matches(r, coll, bytes, nranks)
            && select_usable(r->algo, usable)) {
            *source = (shi_rule_source) r->source;
            return r->algo;
        }
    }
    // No rule of the table fits: the defaults for this size, then any
    // default algorithm of the collective, in the defaults' order.
    for (int i = 0; i < SEL_NDEFAULTS; i++) {
        const shi_select_rule *r = &select_defaults[i];
        if (select_rule_matches(r, coll, bytes, nranks)
            && select_usable(r->algo, usable)) {
            return r->algo;
        }
    }
    for (int i = 0; i < SEL_NDEFAULTS; i++) {
        const shi_select_rule *r = &select_defaults[i];
        if (r->coll == coll && select_usable(r->algo, usable)) {
            return r->algo;
        }
    }
    // The defaults name every algorithm of every collective, so this is
    // only a guard against a future table that forgets one.
    for (int a = SHI_ALGO_NONE + 1; a < SHI_ALGO_COUNT; a++) {
        if (usable & SHI_ALGO_BIT(a)) {
            return (shi_algo) a;
        }
    }
    return SHI_ALGO_NONE;
}

// The first rule of rules[0 .. n) matching the call and naming algo.
static const shi_select_rule *
rule_naming(const shi_select_rule *rules, int n, shi_coll coll, size_t bytes,
    int nranks, shi_algo algo)
{
    for (int i = 0; i < n; i++) {
        if (rules[i].algo == algo
            && select_rule_matches(&rules[i], coll, bytes, nranks)) {
            return &rules[i];
        }
    }
    return NULL;
}

int
shi_select_hands_over(const shi_select_table *t, shi_coll coll, size_t bytes,
    int nranks, shi_algo algo)
{
    int                    from = t->first[coll]; // as shi_select_why
    const shi_select_rule *r    = rule_naming(
           t->rules + from, t->nrules - from, coll, bytes, nranks, algo);

    if (r == NULL) { // the defaults chose, no rule of the table matching
        r = rule_naming(
            select_defaults, SEL_NDEFAULTS, coll, bytes, nranks, algo);
    }
    return r != NULL && r->source == SHI_RULE_BUILTIN && r->hand_over;
}

// ---- parsing -------------------------------------------------------------

// A piece of the spec: not NUL-terminated.
typedef struct select_span {
    const char *p;
    size_t      n;
} select_span;

static int
select_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
        || c == '\v';
}

static select_span
select_trim(select_span s)
{
    while (s.n > 0 && select_is_space(s.p[0])) {
        s.p++;
        s.n--;
    }
    while (s.n > 0 && select_is_space(s.p[s.n - 1])) {
        s.n--;
    }
    return s;
}

// Length and pointer arguments for "%.*s", capped for messages.
#define SEL_Q(s) (int) ((s).n < SEL_QUOTE_MAX ? (s).n : SEL_QUOTE_MAX), (s).p

// Splits `s` at the first `c`: *head is before it, *tail after it.
// Returns 0 if `c` does not occur (then *head is all of `s`).
static int
select_split(select_span s, char c, select_span *head, select_span *tail)
{
    const char *at = memchr(s.p, c, s.n);

    if (at == NULL) {
        *head   = s;
        tail->p = s.p + s.n;
        tail->n = 0;
        return 0;
    }
    head->p = s.p;
    head->n = (size_t) (at - s.p);
    tail->p = at + 1;
    tail->n = s.n - head->n - 1;
    return 1;
}

static int
select_span_is(select_span s, const char *name)
{
    return s.n == strlen(name) && strncasecmp(s.p, name, s.n) == 0;
}

// A collective's name, underscores ignored ("all_reduce", "reduce_scatter",
// as torch and the C API spell them).
static int
select_lookup_coll(select_span s)
{
    char   name[32];
    size_t n = 0;

    for (size_t i = 0; i < s.n && n + 1 < sizeof(name); i++) {
        if (s.p[i] != '_') {
            name[n++] = s.p[i];
        }
    }
    select_span bare = { name, n };
    for (int c = 0; c < SHI_COLL_COUNT; c++) {
        if (select_span_is(bare, shi_coll_name(c))) {
            return c;
        }
    }
    return -1;
}

int
shi_coll_by_name(const char *name)
{
    select_span s = { name, strlen(name) };

    return select_lookup_coll(s);
}

static int
select_lookup_algo(select_span s)
{
    shi_algo a = shi_algo_by_name(s.p, s.n);

    return a == SHI_ALGO_NONE ? -1 : (int) a;
}

// Writes the names of the algorithms in `mask` as "a, b, c".
void
shi_algo_mask_names(unsigned mask, char *buf, size_t len)
{
    size_t pos = 0;

    buf[0] = '\0';
    for (int a = SHI_ALGO_NONE + 1; a < SHI_ALGO_COUNT; a++) {
        if ((mask & SHI_ALGO_BIT(a)) && pos < len) {
            int n = snprintf(buf + pos, len - pos, "%s%s", pos ? ", " : "",
                shi_algo_name(a));
            pos += n > 0 ? (size_t) n : 0;
        }
    }
}

// Parses a byte count (shi_parse_bytes). Returns 0, -1 if malformed, -2
// on overflow.
static int
select_parse_size(select_span s, size_t *out)
{
    unsigned long long v;
    int                st = shi_parse_bytes(s.p, s.n, &v);

    if (st == 0 && v > SIZE_MAX) {
        st = -2;
    }
    if (st == 0) {
        *out = (size_t) v;
    }
    return st;
}

// Parses a rank count (a positive int, no suffix).
static int
select_parse_ranks(select_span s, int *out)
{
    long long v = 0;

    if (s.n == 0) {
        return -1;
    }
    for (size_t i = 0; i < s.n; i++) {
        if (s.p[i] < '0' || s.p[i] > '9') {
            return -1;
        }
        v = v * 10 + (s.p[i] - '0');
        if (v > INT_MAX) {
            return -2;
        }
    }
    if (v < 1) {
        return -1;
    }
    *out = (int) v;
    return 0;
}

// "lo-hi" after '@': sizes, either side empty for open.
static int
select_parse_bytes_range(select_span item, select_span s, shi_select_rule *r)
{
    select_span lo, hi;
    int         st;

    s = select_trim(s);
    if (!select_split(s, '-', &lo, &hi)) {
        return shi_error(SHOAL_EINVAL,
            "SHOAL_ALGO: size range '%.*s' in '%.*s' is not lo-hi", SEL_Q(s),
            SEL_Q(item));
    }
    lo    = select_trim(lo);
    hi    = select_trim(hi);
    r->lo = 0;
    r->hi = SEL_OPEN;
    if (lo.n > 0 && (st = select_parse_size(lo, &r->lo)) < 0) {
        return shi_error(SHOAL_EINVAL, "SHOAL_ALGO: size '%.*s' in '%.*s' %s",
            SEL_Q(lo), SEL_Q(item),
            st == -2 ? "is too large" : "is not a number with K, M or G");
    }
    if (hi.n > 0 && (st = select_parse_size(hi, &r->hi)) < 0) {
        return shi_error(SHOAL_EINVAL, "SHOAL_ALGO: size '%.*s' in '%.*s' %s",
            SEL_Q(hi), SEL_Q(item),
            st == -2 ? "is too large" : "is not a number with K, M or G");
    }
    if (r->lo >= r->hi) {
        return shi_error(SHOAL_EINVAL,
            "SHOAL_ALGO: size range '%.*s' in '%.*s' is empty (needs lo < "
            "hi)",
            SEL_Q(s), SEL_Q(item));
    }
    return 0;
}

// "min-max" after '#': inclusive rank counts, either side empty for open.
static int
select_parse_rank_range(select_span item, select_span s, shi_select_rule *r)
{
    select_span lo, hi;

    s = select_trim(s);
    if (!select_split(s, '-', &lo, &hi)) {
        return shi_error(SHOAL_EINVAL,
            "SHOAL_ALGO: rank range '%.*s' in '%.*s' is not min-max", SEL_Q(s),
            SEL_Q(item));
    }
    lo           = select_trim(lo);
    hi           = select_trim(hi);
    r->min_ranks = 0;
    r->max_ranks = 0;
    if (lo.n > 0 && select_parse_ranks(lo, &r->min_ranks) < 0) {
        return shi_error(SHOAL_EINVAL,
            "SHOAL_ALGO: rank count '%.*s' in '%.*s' is not an integer "
            "from 1 to %d",
            SEL_Q(lo), SEL_Q(item), INT_MAX);
    }
    if (hi.n > 0 && select_parse_ranks(hi, &r->max_ranks) < 0) {
        return shi_error(SHOAL_EINVAL,
            "SHOAL_ALGO: rank count '%.*s' in '%.*s' is not an integer "
            "from 1 to %d",
            SEL_Q(hi), SEL_Q(item), INT_MAX);
    }
    if (r->max_ranks != 0 && r->min_ranks > r->max_ranks) {
        return shi_error(SHOAL_EINVAL,
            "SHOAL_ALGO: rank range '%.*s' in '%.*s' is empty (needs min <= "
            "max)",
            SEL_Q(s), SEL_Q(item));
    }
    return 0;
}

// One "algo@lo-hi#min-max" for `coll`, appended to `out`.
static int
select_parse_item(shi_select_table *out, int coll, select_span item)
{
    shi_select_rule r = { .coll = (shi_coll) coll, .hi = SEL_OPEN };
    select_span     name, rest, bytes, ranks;
    int             has_bytes, has_ranks, algo;
    char            names[128];

    // The rank filter comes last: split it off first, so an '@' after
    // the '#' is caught as garbage in the rank range.
    has_ranks = select_split(item, '#', &rest, &ranks);
    has_bytes = select_split(rest, '@', &name, &bytes);
    name      = select_trim(name);
    if (name.n == 0) {
        return shi_error(SHOAL_EINVAL,
            "SHOAL_ALGO: missing algorithm name in '%.*s' for %s", SEL_Q(item),
            shi_coll_name(coll));
    }
    shi_algo_mask_names(shi_algos_for((shi_coll) coll), names, sizeof(names));
    algo = select_lookup_algo(name);
    if (algo < 0) {
        return shi_error(SHOAL_EINVAL,
            "SHOAL_ALGO: unknown algorithm '%.*s' for %s (it can use %s)",
            SEL_Q(name), shi_coll_name(coll), names);
    }
    if (!(shi_algos_for((shi_coll) coll) & SHI_ALGO_BIT(algo))) {
        return shi_error(SHOAL_EINVAL,
            "SHOAL_ALGO: algorithm '%.*s' cannot run %s (it can use %s)",
            SEL_Q(name), shi_coll_name(coll), names);
    }
    r.algo = (shi_algo) algo;
    if (has_bytes) {
        int st = select_parse_bytes_range(item, bytes, &r);
        if (st < 0) {
            return st;
        }
    }
    if (has_ranks) {
        int st = select_parse_rank_range(item, ranks, &r);
        if (st < 0) {
            return st;
        }
    }
    if (out->nrules >= SHI_SELECT_MAX_RULES) {
        return shi_error(SHOAL_EINVAL,
            "SHOAL_ALGO: too many rules at '%.*s' (at most %d)", SEL_Q(item),
            SHI_SELECT_MAX_RULES);
    }
    out->rules[out->nrules++] = r;
    return 0;
}

// One "coll:item,item" segment, appended to `out`.
static int
select_parse_segment(shi_select_table *out, select_span seg)
{
    select_span cname, items, item;
    int         coll;

    if (!select_split(seg, ':', &cname, &items)) {
        return shi_error(SHOAL_EINVAL,
            "SHOAL_ALGO: '%.*s' is not collective:algorithms", SEL_Q(seg));
    }
    cname = select_trim(cname);
    if (cname.n == 0) {
        return shi_error(SHOAL_EINVAL,
            "SHOAL_ALGO: missing collective in '%.*s'", SEL_Q(seg));
    }
    coll = select_lookup_coll(cname);
    if (coll < 0) {
        char known[160];
        shi_coll_list(known, sizeof(known), 0);
        return shi_error(SHOAL_EINVAL,
            "SHOAL_ALGO: unknown collective '%.*s' in '%.*s' (known: %s)",
            SEL_Q(cname), SEL_Q(seg), known);
    }
    for (;;) {
        int more = select_split(items, ',', &item, &items);
        item     = select_trim(item);
        if (item.n == 0) {
            return shi_error(SHOAL_EINVAL,
                "SHOAL_ALGO: empty algorithm in '%.*s'", SEL_Q(seg));
        }
        int st = select_parse_item(out, coll, item);
        if (st < 0) {
            return st;
        }
        if (!more) {
            return 0;
        }
    }
}

int
shi_select_parse(shi_select_table *t, const char *spec)
{
    return shi_select_parse_as(t, spec, SHI_RULE_ENV);
}

int
shi_select_parse_as(
    shi_select_table *t, const char *spec, shi_rule_source source)
{
    shi_select_table add;
    select_span      rest, seg;

    if (t->nrules < 0 || t->nrules > SHI_SELECT_MAX_RULES) {
        return shi_error(
            SHOAL_EINVAL, "selection table has %d rules", t->nrules);
    }
    if (spec == NULL) {
        return 0;
    }
    add.nrules = 0;
    rest.p     = spec;
    rest.n     = strlen(spec);
    for (;;) {
        int more = select_split(rest, ';', &seg, &rest);
        if (select_trim(seg).n > 0) {
            int st = select_parse_segment(&add, select_trim(seg));
            if (st < 0) {
                return st;
            }
        }
        if (!more) {
            break;
        }
    }
    if (add.nrules + t->nrules > SHI_SELECT_MAX_RULES) {
        return shi_error(SHOAL_EINVAL,
            "SHOAL_ALGO: %d rules do not fit before the table's %d (at most "
            "%d in all)",
            add.nrules, t->nrules, SHI_SELECT_MAX_RULES);
    }
    for (int i = 0; i < add.nrules; i++) {
        add.rules[i].source = (int) source;
    }
    memmove(t->rules + add.nrules, t->rules,
        (size_t) t->nrules * sizeof(t->rules[0]));
    memcpy(t->rules, add.rules, (size_t) add.nrules * sizeof(add.rules[0]));
    t->nrules += add.nrules;
    select_index(t);
    return 0;
}

// ---- printing ------------------------------------------------------------

// An snprintf-style writer: counts what it would write, writes what fits.
typedef struct select_out {
    char  *buf;
    size_t len;
    size_t pos;
} select_out;

static void select_put(select_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
select_put(select_out *o, const char *fmt, ...)
{
    va_list ap;
    int     n;

    va_start(ap, fmt);
    if (o->pos < o->len) {
        n = vsnprintf(o->buf + o->pos, o->len - o->pos, fmt, ap);
    } else {
        n = vsnprintf(NULL, 0, fmt, ap);
    }
    va_end(ap);
    if (n > 0) {
        o->pos += (size_t) n;
    }
}

// A byte count with the largest exact binary suffix (32768 -> "32K").
static void
select_put_size(select_out *o, size_t v)
{
    static const struct {
        unsigned shift;
        char     suffix;
    } units[] = { { 30, 'G' }, { 20, 'M' }, { 10, 'K' } };

    if (v != 0) {
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            size_t unit = (size_t) 1 << units[i].shift;
            if (v % unit == 0) {
                select_put(o, "%zu%c", v / unit, units[i].suffix);
                return;
            }
        }
    }
    select_put(o, "%zu", v);
}

static void
select_put_rule(select_out *o, const shi_select_rule *r)
{
    const char *name = shi_algo_name(r->algo);

    select_put(o, "%s", name ? name : "?");
    if (r->lo != 0 || r->hi != SEL_OPEN) {
        select_put(o, "@");
        select_put_size(o, r->lo);
        select_put(o, "-");
        if (r->hi != SEL_OPEN) {
            select_put_size(o, r->hi);
        }
    }
    if (r->min_ranks != 0 || r->max_ranks != 0) {
        select_put(o, "#");
        if (r->min_ranks != 0) {
            select_put(o, "%d", r->min_ranks);
        }
        select_put(o, "-");
        if (r->max_ranks != 0) {
            select_put(o, "%d", r->max_ranks);
        }
    }
}

int
shi_select_format(const shi_select_table *t, char *buf, size_t len)
{
    select_out o = { .buf = buf, .len = buf ? len : 0, .pos = 0 };

    if (o.len > 0) {
        buf[0] = '\0';
    }
    // Consecutive rules of one collective share a segment, so the printed
    // spec parses back to the same rules in the same order.
    for (int i = 0; i < t->nrules; i++) {
        const shi_select_rule *r = &t->rules[i];
        if (i == 0 || t->rules[i - 1].coll != r->coll) {
            const char *coll = shi_coll_name(r->coll);
            select_put(&o, "%s%s:", i ? ";" : "", coll ? coll : "?");
        } else {
            select_put(&o, ",");
        }
        select_put_rule(&o, r);
    }
    return o.pos > INT_MAX ? INT_MAX : (int) o.pos;
}
