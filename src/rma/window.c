// Windows: creation, collective registration and deregistration, release
// (see window.h).
//
// Registration trades one descriptor per rank with an all_gather. A rank
// whose own arguments are bad still takes part, with its error in its
// descriptor, so that every rank fails with the same message instead of
// waiting for it; sizes that differ between ranks fail alike. Each rank
// links its window (with its number) before the exchange, so a peer that
// finishes first and puts at once finds it.
//
// Deregistration fences: every rank raises its fence counter at every
// peer, behind all its puts and signals to that peer, and waits for every
// peer's fence; then nothing more can land in its buffer or counters.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "core/ops.h"
#include "rma/window.h"

static int
closed_error(const char *op)
{
    return shi_error(SHOAL_EINVAL,
        "%s: the window's communicator was destroyed (or finalized)", op);
}

static void
link_window(shoal_comm *comm, shoal_window *win)
{
    pthread_mutex_lock(&comm->lock);
    win->next     = comm->windows;
    comm->windows = win;
    pthread_mutex_unlock(&comm->lock);
}

static void
unlink_window(shoal_comm *comm, shoal_window *win)
{
    pthread_mutex_lock(&comm->lock);
    for (shoal_window **pp = &comm->windows; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == win) {
            *pp = win->next;
            break;
        }
    }
    pthread_mutex_unlock(&comm->lock);
}

shoal_window *
shi_window_find(shoal_comm *comm, uint32_t id)
{
    for (shoal_window *w = comm->windows; id != 0 && w != NULL; w = w->next) {
        if (w->id == id) {
            return w;
        }
    }
    return NULL;
}

// Forgets this rank's registration. `keep_lines`: peers may still write
// the counters (a window freed without deregistering): they stay in the
// heap until the communicator goes.
static void
release(shoal_window *win, int keep_lines)
{
    shoal_comm *comm = win->comm;

    if (win->id != 0) {
        pthread_mutex_lock(&comm->lock);
        win->id = 0;
        pthread_mutex_unlock(&comm->lock);
        if (win->messages) {
            shi_engine_listen(comm, 0);
        }
    }
    if (!keep_lines) {
        shoal_free(comm, win->lines);
    }
    shi_win_inbox_close(win, keep_lines);
    shoal_window_free(win->inner); // its communicator deregisters alike
    win->inner = NULL;
    free(win->peers);
    free(win->waited);
    free(win->views);
    free(win->remote_lines);
    free(win->inbox_heads);
    free(win->inbox_slots);
    free(win->outbox);
    win->inbox_heads  = NULL;
    win->inbox_slots  = NULL;
    win->outbox       = NULL;
    win->lines        = NULL;
    win->peers        = NULL;
    win->waited       = NULL;
    win->views        = NULL;
    win->remote_lines = NULL;
    win->base         = NULL;
    win->bytes        = 0;
}

// The communicator is being destroyed: every window lets go of it.
static void
detach_all(shoal_comm *comm)
{
    shoal_window *win;

    while ((win = comm->windows) != NULL) {
        comm->windows = win->next;
        release(win, 0);
        win->comm = NULL;
    }
}

int
shoal_window_create(shoal_comm *comm, shoal_window **out)
{
    shoal_window *win;

    if (out == NULL) {
        return shi_error(SHOAL_EINVAL, "window_create: out is NULL");
    }
    *out = NULL;
    if (comm == NULL) {
        return shi_error(
            SHOAL_EINVAL, "window_create: the communicator is NULL");
    }
    if ((win = calloc(1, sizeof(*win))) == NULL) {
        return shi_comm_error(comm, shi_error(SHOAL_ENOMEM, "out of memory"));
    }
    win->comm            = comm;
    win->messages        = comm->tp->rma_send != NULL;
    comm->windows_detach = detach_all;
    link_window(comm, win);
    *out = win;
    return SHOAL_OK;
}

void
shoal_window_free(shoal_window *win)
{
    if (win == NULL) {
        return;
    }
    if (win->comm != NULL) {
        release(win, win->id != 0);
        unlink_window(win->comm, win);
    }
    free(win);
}

size_t
shoal_window_bytes(const shoal_window *win)
{
    return win != NULL && win->id != 0 ? win->bytes : 0;
}

// ------------------------------------------------------------ registration

static void
refuse(struct shi_win_desc *d, int status, const char *why)
{
    d->status = status;
    snprintf(d->text, sizeof(d->text), "%s", why);
}

// This rank's own arguments, into its descriptor.
static void
check_args(const shoal_window *win, const void *buf, size_t count,
    shoal_dtype dtype, struct shi_win_desc *d)
{
    size_t es = shoal_dtype_size(dtype);

    if (win->id != 0) {
        refuse(d, SHOAL_EINVAL,
            "the window is registered already (deregister it first)");
    } else if (es == 0) {
        refuse(d, SHOAL_EINVAL, "unknown dtype");
    } else if (buf == NULL && count > 0) {
        refuse(d, SHOAL_EINVAL, "buf is NULL with count > 0");
    } else if (count > SIZE_MAX / es) {
        refuse(d, SHOAL_EINVAL, "count x element size overflows");
    }
}

// Allocates this rank's side and fills its descriptor; links the window.
static int
prepare(shoal_window *win, void *buf, size_t count, shoal_dtype dtype,
    struct shi_win_desc *d)
{
    shoal_comm *comm  = win->comm;
    size_t      n     = (size_t) comm->size;
    size_t      lines = n * sizeof(struct shi_win_line);
    int         st;

    win->waited       = calloc(n, sizeof(*win->waited));
    win->views        = calloc(n, sizeof(*win->views));
    win->remote_lines = calloc(n, sizeof(*win->remote_lines));
    win->inbox_heads  = calloc(n, sizeof(*win->inbox_heads));
    win->inbox_slots  = calloc(n, sizeof(*win->inbox_slots));
    win->outbox       = calloc(n, sizeof(*win->outbox));
    if (win->waited == NULL || win->views == NULL || win->remote_lines == NULL
        || win->inbox_heads == NULL || win->inbox_slots == NULL
        || win->outbox == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    if ((st = shoal_alloc(comm, lines, (void **) &win->lines)) != SHOAL_OK) {
        return shi_error_wrap(st, "the window's signal counters");
    }
    memset(win->lines, 0, lines);
    win->base  = buf;
    win->dtype = dtype;
    win->elem  = shoal_dtype_size(dtype);
    win->bytes = count * win->elem;
    d->bytes   = win->bytes;
    d->elem    = win->elem;
    comm->tp->mem_expose(comm, buf, win->bytes, &d->buf);
    comm->tp->mem_expose(comm, win->lines, lines, &d->counters);
    shi_win_inbox_open(win, d);
    pthread_mutex_lock(&comm->lock);
    win->id = (uint32_t) d->id;
    pthread_mutex_unlock(&comm->lock);
    if (win->messages) {
        shi_engine_listen(comm, 1);
    }
    return SHOAL_OK;
}

// The first rank whose descriptor says it failed, or -1.
static int
first_refusal(const struct shi_win_desc *all, int n)
{
    for (int r = 0; r < n; r++) {
        if (all[r].status != 0) {
            return r;
        }
    }
    return -1;
}

// Whether every rank registered what rank 0 did (the same on every rank,
// as every rank reads the same descriptors).
static int
agree(const shoal_window *win, const struct shi_win_desc *all)
{
    int n = win->comm->size, bad = first_refusal(all, n);

    if (bad >= 0) {
        return shi_error(all[bad].status < 0 ? all[bad].status : SHOAL_EINVAL,
            "window_register: rank %d: %.*s", bad, (int) sizeof(all->text),
            all[bad].text);
    }
    for (int r = 1; r < n; r++) {
        if (all[r].bytes != all[0].bytes || all[r].elem != all[0].elem) {
            return shi_error(SHOAL_EINVAL,
                "window_register: rank %d registered %llu bytes of %llu-byte "
                "elements, rank 0 %llu bytes of %llu-byte elements: every "
                "rank must register the same size and element size",
                r, (unsigned long long) all[r].bytes,
                (unsigned long long) all[r].elem,
                (unsigned long long) all[0].bytes,
                (unsigned long long) all[0].elem);
        }
        if (all[r].id != all[0].id) {
            return shi_error(SHOAL_EINVAL,
                "window_register: rank %d is at its registration %llu, rank "
                "0 at %llu: ranks registered windows in different orders",
                r, (unsigned long long) all[r].id,
                (unsigned long long) all[0].id);
        }
    }
    return SHOAL_OK;
}

// How this rank reaches peer r: a view of its buffer and of its counter
// line for us where the transport maps them.
static int
reach_peer(shoal_window *win, int r)
{
    shoal_comm                *comm = win->comm;
    const struct shi_win_desc *d    = &win->peers[r];
    size_t                     line = sizeof(struct shi_win_line);
    int                        st;

    if (d->buf.owner != r || d->counters.owner != r
        || d->buf.bytes != win->bytes
        || d->counters.bytes != (uint64_t) comm->size * line) {
        return shi_error(SHOAL_EPROTO,
            "window_register: rank %d described its window inconsistently", r);
    }
    if (r == comm->rank) {
        win->views[r]        = win->base;
        win->remote_lines[r] = &win->lines[r];
        return SHOAL_OK;
    }
    win->views[r] = comm->tp->mem_view(comm, &d->buf, 0, win->bytes);
    if (win->bytes == 0) {
        win->views[r] = NULL;
    }
    if (win->messages) {
        return SHOAL_OK;
    }
    win->remote_lines[r] = comm->tp->mem_view(
        comm, &d->counters, (size_t) comm->rank * line, line);
    if (win->remote_lines[r] == NULL) {
        return shi_error(SHOAL_EPROTO,
            "window_register: rank %d's signal counters are not mapped here",
            r);
    }
    if ((st = shi_win_inbox_reach(win, r)) != SHOAL_OK) {
        return st;
    }
    if (win->views[r] == NULL && win->bytes > 0 && !comm->cma_ok) {
        return shi_error(SHOAL_ENOTSUP,
            "window_register: rank %d registered memory that is not from "
            "shoal_alloc, and this system does not let ranks copy each "
            "other's memory (process_vm_writev is refused); register memory "
            "from shoal_alloc (Python: shoal.empty)",
            r);
    }
    return SHOAL_OK;
}

static int
trade(shoal_window *win, struct shi_win_desc *mine)
{
    shoal_comm *comm = win->comm;
    int         st;

    st = shoal_all_gather(comm, mine, win->peers, sizeof(*mine), SHOAL_UINT8);
    if (st == SHOAL_OK) {
        st = agree(win, win->peers);
    }
    for (int r = 0; st == SHOAL_OK && r < comm->size; r++) {
        st = reach_peer(win, r);
    }
    return st;
}

shoal_window *
shi_window_route(shoal_window *win, int *peer)
{
    shoal_comm *comm = win->comm;

    if (win->inner == NULL
        || comm->host_first[*peer] != comm->host_first[comm->rank]) {
        return win;
    }
    *peer = comm->local_rank_of[*peer];
    return win->inner;
}

// Registers the buffer on the host's communicator too (see window.h),
// then makes sure every rank of the communicator got this far: a failure
// on one host must not leave the others registered.
static int
register_inner(shoal_window *win, void *buf, size_t count, shoal_dtype dtype)
{
    shoal_comm *comm = win->comm;
    int32_t     ok = 1, all_ok = 0;
    int         st = SHOAL_OK;

    if (comm->local != NULL) {
        st = shoal_window_create(comm->local, &win->inner);
        if (st == SHOAL_OK) {
            st = shoal_window_register(win->inner, buf, count, dtype);
        }
        ok = st == SHOAL_OK;
    }
    char why[SHI_ERROR_TEXT_MAX];
    snprintf(why, sizeof(why), "%s", ok ? "" : shi_error_text());
    int agreed = shoal_all_reduce(
        comm, &ok, &all_ok, 1, SHOAL_INT32, SHOAL_REDUCE_OP(SHOAL_MIN));
    if (agreed != SHOAL_OK) {
        return agreed;
    }
    if (!all_ok) {
        return shi_error(ok ? SHOAL_EINVAL : st, "window_register: %s",
            ok ? "a rank on another host could not register its window on "
                 "its host's shared memory"
               : why);
    }
    return SHOAL_OK;
}

int
shoal_window_register(
    shoal_window *win, void *buf, size_t count, shoal_dtype dtype)
{
    struct shi_win_desc  mine;
    struct shi_win_desc *peers;
    shoal_comm          *comm;
    int                  st, was_registered;

    if (win == NULL) {
        return shi_error(SHOAL_EINVAL, "window_register: the window is NULL");
    }
    if ((comm = win->comm) == NULL) {
        return closed_error("window_register");
    }
    peers = calloc((size_t) comm->size, sizeof(*peers));
    if (peers == NULL) {
        return shi_comm_error(comm, shi_error(SHOAL_ENOMEM, "out of memory"));
    }
    memset(&mine, 0, sizeof(mine));
    mine.id        = ++comm->window_seq;
    was_registered = win->id != 0;
    check_args(win, buf, count, dtype, &mine);
    if (mine.status == 0
        && (st = prepare(win, buf, count, dtype, &mine)) < 0) {
        refuse(&mine, st, shi_error_text());
    }
    if (was_registered) {
        // Take part for the others' sake, keeping the registration.
        struct shi_win_desc *kept = win->peers;
        win->peers                = peers;
        st                        = trade(win, &mine);
        win->peers                = kept;
        free(peers);
        return shi_comm_error(comm, st < 0 ? st : SHOAL_EINVAL);
    }
    win->peers = peers;
    if ((st = trade(win, &mine)) != SHOAL_OK
        || (win->messages && comm->local != NULL
            && (st = register_inner(win, buf, count, dtype)) != SHOAL_OK)) {
        release(win, 0);
        return shi_comm_error(comm, st);
    }
    return SHOAL_OK;
}

// ---------------------------------------------------------- deregistration

static int
fence(shoal_window *win, int64_t timeout_ms)
{
    shoal_comm *comm = win->comm;
    int         st   = SHOAL_OK;

    for (int p = 0; st == SHOAL_OK && p < comm->size; p++) {
        if (p != comm->rank) {
            st = shi_window_raise(win, p, SHI_WIN_FENCE, timeout_ms, NULL);
        }
    }
    for (int p = 0; st == SHOAL_OK && p < comm->size; p++) {
        if (p != comm->rank) {
            st = shi_window_wait_counter(
                win, p, SHI_WIN_FENCE, 1, timeout_ms, NULL);
        }
    }
    return st;
}

int
shoal_window_deregister(shoal_window *win)
{
    shoal_call_opts opts = shi_call_opts_take();
    int             st;

    if (win == NULL) {
        return shi_error(
            SHOAL_EINVAL, "window_deregister: the window is NULL");
    }
    if (win->comm == NULL) {
        return closed_error("window_deregister");
    }
    if ((st = shi_window_usable(win, "window_deregister")) != SHOAL_OK) {
        return st;
    }
    st = fence(win, opts.timeout_ms);
    if (st == SHOAL_OK && win->inner != NULL) {
        st = shoal_window_deregister(win->inner);
    }
    release(win, 0);
    return st;
}
