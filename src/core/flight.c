// The flight recorder (see flight.h): a ring of fixed slots per
// communicator, written under the communicator's lock at submission and
// completion, and its dump in torch's flight-recorder format (version
// 2.10: a pickled dict of "version", "pg_config", "pg_status" and
// "entries", one file per rank).
//
// torch's analyser knows only its own backends' names, so an entry's
// profiling_name says "gloo:all_reduce": gloo is the CPU backend whose
// semantics shoal's collectives share; "algorithm" says what shoal ran.
// A rank's file names its rank in this communicator; pg_config lists the
// communicator's ranks the same way, so the analyser reads one
// communicator's dump per directory (or per --prefix).
#include "core/flight.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/env.h"
#include "base/pickle.h"
#include "core/op_props.h"

enum fr_state { FR_STARTED = 1, FR_COMPLETED, FR_FAILED };

// One operation. Its buffer sizes are worked out at the dump from kind and
// count, except a v-form's (its counts may be gone by then).
struct fr_entry {
    uint64_t record_id;
    uint64_t seq; // collective or point-to-point number
    int64_t  start_ns; // shi_now_ns (monotonic)
    int64_t  timeout_ms;
    size_t   count;
    size_t   v_in, v_out; // a v-form's elements, else 0
    int      kind, dtype, peer;
    int      state, status;
};

struct shi_fr {
    struct fr_entry *ring;
    size_t           cap, next; // next: the slot the next record takes
    uint64_t         records; // ever recorded (the next record_id)
};

int
shi_fr_init(shoal_comm *comm)
{
    long long entries;
    int st = shi_env_int("SHOAL_FR_ENTRIES", SHI_FR_DEFAULT_ENTRIES, &entries);

    if (st != SHOAL_OK || entries <= 0) {
        return st; // off: nothing recorded, nothing spent
    }
    if (entries > 1000000) {
        return shi_error(SHOAL_EINVAL,
            "SHOAL_FR_ENTRIES=%lld: at most 1000000 entries per "
            "communicator",
            entries);
    }
    struct shi_fr *fr = calloc(1, sizeof(*fr));
    if (fr == NULL
        || (fr->ring = calloc((size_t) entries, sizeof(*fr->ring))) == NULL) {
        free(fr);
        return shi_error(SHOAL_ENOMEM, "out of memory for the flight record");
    }
    fr->cap  = (size_t) entries;
    comm->fr = fr;
    return SHOAL_OK;
}

void
shi_fr_free(shoal_comm *comm)
{
    if (comm->fr != NULL) {
        free(comm->fr->ring);
        free(comm->fr);
        comm->fr = NULL;
    }
}

// Elements of a rank's send and receive buffers for entry e (its counts
// passed for a v-form at the record, NULL at the dump).
static void
buffer_elems(const shoal_comm *comm, const struct fr_entry *e,
    const size_t *counts, const size_t *rcounts, size_t *in, size_t *out)
{
    const shi_op_props *p = shi_op_props_of(e->kind);
    shi_op_shape        s = { .kind = e->kind,
               .rank                = comm->rank,
               .nranks              = comm->size,
               .root                = p->rooted ? e->peer : -1,
               .count               = e->count,
               .counts              = counts,
               .rcounts             = rcounts };

    if (!p->collective) {
        *in = *out = e->count;
        return;
    }
    shi_op_buffer_elems(&s, in, out);
}

void
shi_fr_record(shoal_comm *comm, shoal_request *req)
{
    struct shi_fr   *fr = comm->fr;
    struct fr_entry *e  = &fr->ring[fr->next];

    e->record_id  = fr->records++;
    e->seq        = req->seq;
    e->start_ns   = req->start_ns;
    e->timeout_ms = req->timeout_ms;
    e->count      = req->count;
    e->kind       = req->kind;
    e->dtype      = req->dtype;
    e->peer       = req->peer;
    e->state      = FR_STARTED;
    e->status     = 0;
    e->v_in = e->v_out = 0;
    if (req->counts != NULL) {
        buffer_elems(comm, e, req->counts, req->rcounts, &e->v_in, &e->v_out);
    }
    req->fr_id   = e->record_id + 1;
    req->fr_slot = (uint32_t) fr->next;
    fr->next     = fr->next + 1 == fr->cap ? 0 : fr->next + 1;
    // A request may end as it starts (a send that fit into its peer's
    // channel, a receive of a message set aside): record the end too.
    int st = atomic_load_explicit(&req->status, memory_order_acquire);
    if (st != SHOAL_INPROGRESS) {
        shi_fr_complete(comm, req, st);
    }
}

void
shi_fr_complete(shoal_comm *comm, shoal_request *req, int status)
{
    struct fr_entry *e = &comm->fr->ring[req->fr_slot];

    if (e->record_id == req->fr_id - 1) { // else overwritten since
        e->state  = status == SHOAL_OK ? FR_COMPLETED : FR_FAILED;
        e->status = status;
    }
}

// ---- the dump
// ---------------------------------------------------------------

static const char *
torch_dtype_name(int dtype)
{
    static const char *const names[SHOAL_DTYPE_COUNT]
        = { "Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16",
              "Float", "Double" };

    return dtype >= 0 && dtype < SHOAL_DTYPE_COUNT ? names[dtype]
                                                   : "Undefined";
}

// torch's name of the operation ("all_reduce", "send 0->1").
static void
profiling_name(const struct fr_entry *e, int rank, char *buf, size_t len)
{
    const char *name = shi_op_kind_name(e->kind);

    if (e->kind == SHI_OP_SEND) {
        snprintf(buf, len, "gloo:send %d->%d", rank, e->peer);
    } else if (e->kind == SHI_OP_RECV) {
        snprintf(buf, len, "gloo:recv %d<-%d", rank, e->peer);
    } else if (e->kind == SHI_OP_ALLTOALLV) {
        snprintf(buf, len, "gloo:all_to_all_v_single");
    } else {
        snprintf(buf, len, "gloo:%s", name);
    }
}

static void
key_int(shi_pickle *p, const char *key, int64_t v)
{
    shi_pickle_str(p, key);
    shi_pickle_int(p, v);
}

static void
key_str(shi_pickle *p, const char *key, const char *v)
{
    shi_pickle_str(p, key);
    shi_pickle_str(p, v);
}

// [[n]]: one tensor of n elements.
static void
key_sizes(shi_pickle *p, const char *key, size_t n)
{
    shi_pickle_str(p, key);
    shi_pickle_list_open(p);
    shi_pickle_list_open(p);
    shi_pickle_int(p, (int64_t) n);
    shi_pickle_list_close(p);
    shi_pickle_list_close(p);
}

static void
key_dtypes(shi_pickle *p, const char *key, int dtype)
{
    shi_pickle_str(p, key);
    shi_pickle_list_open(p);
    shi_pickle_str(p, torch_dtype_name(dtype));
    shi_pickle_list_close(p);
}

static void
write_entry(shi_pickle *p, const shoal_comm *comm, const struct fr_entry *e,
    int64_t wall_minus_mono)
{
    char   name[64];
    int    p2p = !shi_op_props_of(e->kind)->collective;
    size_t in = e->v_in, out = e->v_out;

    if (in == 0 && out == 0) {
        buffer_elems(comm, e, NULL, NULL, &in, &out);
    }
    profiling_name(e, comm->rank, name, sizeof(name));
    shi_pickle_dict_open(p);
    key_int(p, "record_id", (int64_t) e->record_id);
    key_int(p, "pg_id", 0);
    shi_pickle_str(p, "process_group");
    shi_pickle_str(p, comm->name);
    shi_pickle_str(p, "undefined");
    shi_pickle_tuple2(p);
    key_int(p, "collective_seq_id", p2p ? 0 : (int64_t) e->seq);
    key_int(p, "p2p_seq_id", p2p ? (int64_t) e->seq : 0);
    key_int(p, "op_id", (int64_t) e->record_id + 1);
    key_str(p, "profiling_name", name);
    key_int(p, "time_created_ns", e->start_ns + wall_minus_mono);
    key_sizes(p, "input_sizes", in);
    key_dtypes(p, "input_dtypes", e->dtype);
    key_sizes(p, "output_sizes", out);
    key_dtypes(p, "output_dtypes", e->dtype);
    key_str(p, "state", e->state == FR_COMPLETED ? "completed" : "started");
    shi_pickle_str(p, "time_discovered_started_ns");
    shi_pickle_int(p, e->start_ns + wall_minus_mono);
    shi_pickle_str(p, "time_discovered_completed_ns");
    shi_pickle_none(p);
    shi_pickle_str(p, "retired");
    shi_pickle_bool(p, e->state != FR_STARTED);
    key_int(p, "timeout_ms", e->timeout_ms);
    shi_pickle_str(p, "is_p2p");
    shi_pickle_bool(p, p2p);
    shi_pickle_str(p, "frames");
    shi_pickle_list_open(p);
    shi_pickle_list_close(p);
    key_str(p, "shoal_status",
        e->state == FR_FAILED ? shoal_status_name(e->status) : "");
    shi_pickle_dict_close(p);
}

static void
write_pg(shi_pickle *p, const shoal_comm *comm, uint64_t last_started,
    uint64_t last_completed)
{
    char   ranks[4096] = "[";
    size_t used        = 1;

    for (int r = 0; r < comm->size && used + 16 < sizeof(ranks); r++) {
        used += (size_t) snprintf(
            ranks + used, sizeof(ranks) - used, "%s%d", r ? ", " : "", r);
    }
    snprintf(ranks + used, sizeof(ranks) - used, "]");
    shi_pickle_str(p, "pg_config");
    shi_pickle_dict_open(p);
    shi_pickle_str(p, comm->name);
    shi_pickle_dict_open(p);
    key_str(p, "name", comm->name);
    key_str(p, "desc", "undefined");
    key_str(p, "ranks", ranks);
    shi_pickle_dict_close(p);
    shi_pickle_dict_close(p);
    shi_pickle_str(p, "pg_status");
    shi_pickle_dict_open(p);
    shi_pickle_str(p, comm->name);
    shi_pickle_dict_open(p);
    key_int(p, "last_enqueued_collective", (int64_t) last_started);
    key_int(p, "last_started_collective", (int64_t) last_started);
    key_int(p, "last_completed_collective", (int64_t) last_completed);
    shi_pickle_dict_close(p);
    shi_pickle_dict_close(p);
}

static void
write_record(shi_pickle *p, const shoal_comm *comm)
{
    const struct shi_fr *fr = comm->fr;
    struct timespec      wall;
    size_t               n     = fr->records < fr->cap ? fr->records : fr->cap;
    size_t               first = fr->records < fr->cap ? 0 : fr->next;

    uint64_t started = 0, completed = 0;
    for (size_t i = 0; i < n; i++) {
        const struct fr_entry *e = &fr->ring[(first + i) % fr->cap];
        if (shi_op_props_of(e->kind)->collective) {
            started   = e->seq > started ? e->seq : started;
            completed = e->state == FR_COMPLETED && e->seq > completed
                ? e->seq
                : completed;
        }
    }
    clock_gettime(CLOCK_REALTIME, &wall);
    int64_t offset
        = (int64_t) wall.tv_sec * 1000000000LL + wall.tv_nsec - shi_now_ns();
    shi_pickle_begin(p);
    shi_pickle_dict_open(p);
    key_str(p, "version", "2.10");
    key_str(p, "comm_lib_version", "shoal");
    write_pg(p, comm, started, completed);
    shi_pickle_str(p, "entries");
    shi_pickle_list_open(p);
    for (size_t i = 0; i < n; i++) {
        write_entry(p, comm, &fr->ring[(first + i) % fr->cap], offset);
    }
    shi_pickle_list_close(p);
    shi_pickle_dict_close(p);
    shi_pickle_end(p);
}

// The file name: shoal_trace_<comm name, word characters only>_rank_<r>.
static void
dump_path(const shoal_comm *comm, const char *dir, char *buf, size_t len)
{
    char name[64];
    int  i = 0;

    for (; comm->name[i] != '\0' && i < (int) sizeof(name) - 1; i++) {
        char c  = comm->name[i];
        name[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
                || (c >= '0' && c <= '9')
            ? c
            : '-';
    }
    name[i] = '\0';
    snprintf(buf, len, "%s/shoal_trace_%s_rank_%d", dir, name, comm->rank);
}

int
shi_fr_dump(shoal_comm *comm, const char *dir)
{
    char       path[4096], tmp[4200];
    shi_pickle p;

    if (dir == NULL || dir[0] == '\0') {
        dir = getenv("SHOAL_FR_DUMP_DIR");
    }
    if (comm->fr == NULL) {
        return shi_error(SHOAL_ENOTSUP,
            "communicator '%s' keeps no flight record (SHOAL_FR_ENTRIES=0)",
            comm->name);
    }
    if (dir == NULL || dir[0] == '\0') {
        return shi_error(SHOAL_ENOTSUP,
            "no directory for the flight record: pass one or set "
            "SHOAL_FR_DUMP_DIR");
    }
    dump_path(comm, dir, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int) getpid());
    write_record(&p, comm);
    int   st = p.failed ? shi_error(SHOAL_ENOMEM, "out of memory") : SHOAL_OK;
    FILE *f  = st == SHOAL_OK ? fopen(tmp, "wb") : NULL;
    if (st == SHOAL_OK && f == NULL) {
        st = shi_error(SHOAL_ESYS, "cannot write the flight record %s: %s",
            tmp, strerror(errno));
    }
    if (f != NULL) {
        int bad = fwrite(p.data, 1, p.len, f) != p.len;
        bad |= fclose(f) != 0;
        if (bad || rename(tmp, path) != 0) {
            st = shi_error(SHOAL_ESYS, "cannot write the flight record %s: %s",
                path, strerror(errno));
            unlink(tmp);
        }
    }
    shi_pickle_free(&p);
    return st;
}

int
shoal_comm_dump_flight_record(shoal_comm *comm, const char *dir)
{
    if (comm == NULL) {
        return shi_error(
            SHOAL_EINVAL, "comm_dump_flight_record: comm is NULL");
    }
    pthread_mutex_lock(&comm->lock);
    int st = shi_fr_dump(comm, dir);
    pthread_mutex_unlock(&comm->lock);
    return st;
}

static int
dump_one(shoal_comm *comm, void *dir)
{
    return comm->fr == NULL ? SHOAL_OK
                            : shoal_comm_dump_flight_record(comm, dir);
}

int
shoal_dump_flight_records(const char *dir)
{
    return shi_comms_each(dump_one, (void *) dir);
}
