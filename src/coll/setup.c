// Setup of the collectives when a communicator is created: the ranks agree
// on whether they can read each other's memory (process_vm_readv), learn
// the cores the host's ranks have together (the engine's wait policy), and
// agree on one algorithm table (rank 0's SHOAL_ALGO), so that every rank picks
// the same algorithm for every call.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>

#include "algo/common/hier.h"
#include "algo/mapped/driver.h"
#include "algo/net/net_driver.h"
#include "algo/registry.h"
#include "coll/select.h"
#include "coll/tuning.h"
#include "base/log.h"
#include "core/comm.h"
#include "core/engine.h"
#include "core/upcalls.h"
#include "platform/cpu_place.h"
#include "store/store.h"

#define PROBE_MAGIC 0x73686f616c434d41ull // "shoalCMA"

// A word every peer tries to read from this process.
static volatile uint64_t cma_probe_word = PROBE_MAGIC;

static int
store_put(
    shoal_comm *comm, const char *what, const char *value, int64_t deadline)
{
    char key[512];

    shi_rdv_key(comm, what, key, sizeof(key));
    return shi_store_set(
        shi_comm_store(comm), key, value, strlen(value), deadline);
}

static int
store_take(shoal_comm *comm, const char *what, char **value, int64_t deadline)
{
    char   key[512];
    size_t len;

    shi_rdv_key(comm, what, key, sizeof(key));
    return shi_rdv_get(comm, key, value, &len, deadline);
}

// Reads peer p's probe word through process_vm_readv, then writes the same
// value back with process_vm_writev (the single-copy all-reduce does both).
static int
can_read_peer(shoal_comm *comm, int p, int64_t deadline)
{
    char     key[64], *text;
    uint64_t addr, got = 0;

    snprintf(key, sizeof(key), "probe/%d", p);
    if (store_take(comm, key, &text, deadline) != SHOAL_OK) {
        return -1;
    }
    addr = strtoull(text, NULL, 16);
    free(text);
    struct iovec local = { .iov_base = &got, .iov_len = sizeof(got) };
    struct iovec remote
        = { .iov_base = (void *) (uintptr_t) addr, .iov_len = sizeof(got) };
    if (process_vm_readv(comm->peers[p].pid, &local, 1, &remote, 1, 0)
            != (ssize_t) sizeof(got)
        || got != PROBE_MAGIC
        || process_vm_writev(comm->peers[p].pid, &local, 1, &remote, 1, 0)
            != (ssize_t) sizeof(got)) {
        SHI_INFO(
            "rank %d cannot read or write rank %d's memory (%s): collectives "
            "copy through shared memory instead",
            comm->rank, p, strerror(errno));
        return 0;
    }
    return 1;
}

// What the ranks of one host may run on together: the union of their CPU
// masks, as their answers to agree_on_host carry them.
struct host_cpus {
    cpu_set_t set;
    int       ranks, known;
};

static void
add_host_cpus(
    const shoal_comm *comm, int p, const char *answer, struct host_cpus *h)
{
    if (comm->host_first != NULL
        && comm->host_first[p] != comm->host_first[comm->rank]) {
        return;
    }
    h->ranks++;
    h->known &= answer[0] != '\0' && answer[1] == ' ' && answer[2] != '\0'
        && shi_affinity_add(answer + 2, &h->set) == 0;
}

// The ranks of a host agree on what they share. Every rank tests every
// peer; the single-copy path is used only if all pairs work. Each rank's
// answer ("1 " or "0 ", then its CPU mask) also tells the engine what the
// host's ranks run on together: ranks pinned to a core each must not take
// themselves for ranks that share one.
static int
agree_on_host(shoal_comm *comm, int64_t deadline)
{
    char key[64], value[8 + SHI_AFFINITY_TEXT_MAX];
    int  mine = getenv("SHOAL_CMA") == NULL || atoi(getenv("SHOAL_CMA")) != 0;
    struct host_cpus host = { .known = 1 };
    int              st;

    // Under Yama's ptrace_scope=1 only a tracer we name may read us.
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    snprintf(key, sizeof(key), "probe/%d", comm->rank);
    snprintf(value, sizeof(value), "%" PRIxPTR, (uintptr_t) &cma_probe_word);
    if ((st = store_put(comm, key, value, deadline)) != SHOAL_OK) {
        return st;
    }
    for (int p = 0; p < comm->size && mine; p++) {
        if (p != comm->rank) {
            int ok = can_read_peer(comm, p, deadline);
            if (ok < 0) {
                return SHOAL_ETIMEDOUT;
            }
            mine = ok;
        }
    }
    snprintf(key, sizeof(key), "cma/%d", comm->rank);
    snprintf(value, sizeof(value), "%d ", mine ? 1 : 0);
    shi_affinity_text(value + 2, sizeof(value) - 2);
    if ((st = store_put(comm, key, value, deadline)) != SHOAL_OK) {
        return st;
    }
    comm->cma_ok = 1;
    CPU_ZERO(&host.set);
    for (int p = 0; p < comm->size; p++) {
        char *text;
        snprintf(key, sizeof(key), "cma/%d", p);
        if ((st = store_take(comm, key, &text, deadline)) != SHOAL_OK) {
            return st;
        }
        comm->cma_ok &= text[0] == '1';
        add_host_cpus(comm, p, text, &host);
        free(text);
    }
    if (host.known) {
        shi_engine_host_cpus(comm, host.ranks, CPU_COUNT(&host.set));
    }
    return SHOAL_OK;
}

// The number of hosts the communicator spans (equal on every rank).
static int
count_hosts(const shoal_comm *comm)
{
    int n = 0;

    for (int r = 0; comm->host_first != NULL && r < comm->size; r++) {
        n += comm->host_first[r] == r;
    }
    return n > 0 ? n : 1;
}

int
shoal_comm_hosts(const shoal_comm *comm)
{
    if (comm == NULL) {
        return shi_error(SHOAL_EINVAL, "comm_hosts: the communicator is NULL");
    }
    return count_hosts(comm);
}

// Rank 0's tuning file, as rules in SHOAL_ALGO syntax ("" for none); a
// malformed file is ignored with one warning.
static char *
read_tuning(const shoal_comm *comm, char *path_out, size_t len)
{
    const char *path = shi_tuning_path(path_out, len);
    char       *spec = NULL;

    if (path == NULL) {
        path_out[0] = '\0';
    }
    if (shi_tuning_read(path, count_hosts(comm), &spec) != SHOAL_OK) {
        SHI_WARN("%s; using the built-in algorithm table", shi_error_text());
        spec = NULL;
    }
    return spec != NULL ? spec : strdup("");
}

// Rank 0's value of `key`: `mine` on rank 0, published; the others take it.
static int
from_rank0(shoal_comm *comm, const char *key, const char *mine, char **out,
    int64_t deadline)
{
    int st;

    *out = NULL;
    if (comm->size == 1) {
        *out = strdup(mine);
        return *out != NULL ? SHOAL_OK
                            : shi_error(SHOAL_ENOMEM, "out of memory");
    }
    if (comm->rank == 0 && (st = store_put(comm, key, mine, deadline)) < 0) {
        return st;
    }
    return store_take(comm, key, out, deadline);
}

// Rank 0's tuning file and SHOAL_ALGO apply on every rank: SHOAL_ALGO's
// rules first, then the file's, then the built-in table.
int
shi_coll_agree_table(shoal_comm *comm, int64_t deadline)
{
    const char *env = getenv("SHOAL_ALGO");
    char        path[1024];
    char       *tuning = NULL, *mine = NULL, *spec = NULL;
    int         st;

    if (comm->table_agreed) {
        return SHOAL_OK;
    }
    if (comm->select == NULL
        && (comm->select = malloc(sizeof(*comm->select))) == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    shi_select_defaults(comm->select);
    path[0] = '\0';
    mine    = comm->rank == 0 ? read_tuning(comm, path, sizeof(path)) : NULL;
    st      = from_rank0(
             comm, "tuning", mine != NULL ? mine : "", &tuning, deadline);
    free(mine);
    if (st == SHOAL_OK) {
        st = from_rank0(comm, "algo", env ? env : "", &spec, deadline);
    }
    if (st == SHOAL_OK && env != NULL && strcmp(env, spec) != 0) {
        SHI_WARN(
            "SHOAL_ALGO differs from rank 0's; rank 0's applies: %s", spec);
    }
    if (st == SHOAL_OK) {
        st = shi_select_parse_as(comm->select, tuning, SHI_RULE_FILE);
    }
    if (st == SHOAL_OK) {
        st = shi_select_parse(comm->select, spec);
    }
    if (st == SHOAL_OK && comm->rank == 0 && tuning[0] != '\0') {
        SHI_INFO("communicator '%s': algorithm rules from tuning file %s "
                 "(after SHOAL_ALGO's, before the built-in table): %s",
            comm->name, path, tuning);
    }
    free(tuning);
    free(spec);
    comm->table_agreed = st == SHOAL_OK;
    return st;
}

// The collective driver of the transport's class, and the algorithms the
// registry offers for that class and what this communicator has.
static void
use_driver(shoal_comm *comm)
{
    int messages = comm->tp->klass == SHI_TP_MESSAGES;

    comm->coll_step       = messages ? shi_net_coll_step : shi_coll_step;
    comm->coll_abandon    = messages ? shi_hier_abandon : NULL;
    comm->algos_available = shi_algos_offered(
        comm->tp->klass, comm->cma_ok ? SHI_NEEDS_SINGLE_COPY : 0);
}

int
shi_coll_setup(shoal_comm *comm, int64_t deadline)
{
    int st;

    comm->inputs      = calloc((size_t) comm->size, sizeof(*comm->inputs));
    comm->peer_counts = calloc(
        (size_t) comm->size * (size_t) comm->size, sizeof(*comm->peer_counts));
    if (comm->inputs == NULL || comm->peer_counts == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    if ((st = shi_heap_init(comm)) != SHOAL_OK) {
        return st;
    }
    // Single copy needs a transport that copies peers' memory without
    // their help, and a kernel that lets every pair of ranks do it.
    comm->cma_ok = comm->tp->mem_read != NULL;
    if (comm->size > 1 && comm->cma_ok
        && (st = agree_on_host(comm, deadline)) != SHOAL_OK) {
        return shi_error_wrap(
            st, "checking single-copy support and the host's cores");
    }
    if ((st = shi_coll_agree_table(comm, deadline)) != SHOAL_OK) {
        return st;
    }
    if (comm->tp->klass == SHI_TP_MAPPED
        && (st = shi_mapped_state_new(comm)) != SHOAL_OK) {
        return st;
    }
    use_driver(comm);
    if (shi_log_enabled(SHI_LOG_INFO) && comm->rank == 0) {
        char table[2048];
        shi_select_format(comm->select, table, sizeof(table));
        SHI_INFO("communicator '%s': transport %s, single copy %s; "
                 "algorithms %s",
            comm->name, comm->tp->name, comm->cma_ok ? "on" : "off", table);
    }
    return SHOAL_OK;
}

int
shi_coll_area_plan(shoal_comm *comm, struct shi_tp_area *area)
{
    return shi_area_plan(comm->size, area);
}

void
shi_coll_teardown(shoal_comm *comm)
{
    free(comm->inputs);
    free(comm->peer_counts);
    free(comm->scratch);
    free(comm->select);
    shi_net_exec_free(comm);
    if (comm->mapped_state != NULL) {
        shi_lateness_summary(comm);
    }
    shi_mapped_state_free(comm);
    comm->select      = NULL;
    comm->inputs      = NULL;
    comm->peer_counts = NULL;
    comm->scratch     = NULL;
    shi_heap_destroy(comm);
}

int
shi_coll_start(shoal_comm *comm)
{
    if (!comm->hier_wanted) {
        return SHOAL_OK;
    }
    return shi_hier_setup(comm, comm->host_index, comm->local_rank);
}
