// The UCX transport's setup: a UCP context (tagged messages, wake-up
// events) and a worker; every rank publishes a fresh nonce and its
// worker's address in the store (which the job secret guards), reads its
// peers', opens an endpoint to each with peer error handling, and sends
// each a hello whose token proves the job secret (platform/auth.h). The
// communicator exists once every peer's hello passed: no data is taken
// from a peer before that.
//
// A rank whose UCX cannot start publishes why instead of an address; then
// every rank returns SHOAL_ENOTSUP, all alike, and the bootstrap falls
// back to TCP where UCX was only preferred.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/env.h"
#include "base/log.h"
#include "platform/private_heap.h"
#include "store/store.h"
#include "transport/ucx/ucx.h"
#include "transport/upcalls.h"

#define ENTRY_OK      'U' // with peer error handling
#define ENTRY_OK_FAST 'F' // without (SHOAL_UCX_PEER_ERRORS=0)
#define ENTRY_FAIL    'X'

int
shi_ucx_has_rdma(void)
{
    DIR           *d = opendir("/sys/class/infiniband");
    struct dirent *e;
    int            found = 0;

    while (d != NULL && !found && (e = readdir(d)) != NULL) {
        found = e->d_name[0] != '.';
    }
    if (d != NULL) {
        closedir(d);
    }
    return found;
}

static void
to_hex(const void *src, size_t n, char *out)
{
    static const char    digits[] = "0123456789abcdef";
    const unsigned char *p        = src;

    for (size_t i = 0; i < n; i++) {
        out[2 * i]     = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
}

// Decodes n bytes of hex; 0 where a digit is not one.
static int
from_hex(const char *in, size_t n, unsigned char *out)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char c = in[2 * i + k];
            int  d = c >= '0' && c <= '9' ? c - '0'
                 : c >= 'a' && c <= 'f'   ? c - 'a' + 10
                                          : -1;
            if (d < 0) {
                return 0;
            }
            v = v << 4 | (unsigned) d;
        }
        out[i] = (unsigned char) v;
    }
    return 1;
}

static int
ucx_fail(const char *what, ucs_status_t status)
{
    return shi_error(
        SHOAL_ENOTSUP, "UCX: %s failed: %s", what, ucs_status_string(status));
}

static int
start_worker(struct shi_ucx *ucx)
{
    ucp_config_t *config;
    ucs_status_t  s;
    ucp_params_t  params = {
         .field_mask = UCP_PARAM_FIELD_FEATURES,
         .features   = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP,
    };
    ucp_worker_params_t wp = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SERIALIZED, // under the engine's lock
    };

    int st = shi_ucx_lib_load();
    if (st != SHOAL_OK) {
        return st;
    }
    if ((s = ucp_config_read(NULL, NULL, &config)) != UCS_OK) {
        return ucx_fail("reading its configuration (UCX_* variables)", s);
    }
    s = ucp_init_version(
        UCP_API_MAJOR, UCP_API_MINOR, &params, config, &ucx->context);
    ucp_config_release(config);
    if (s != UCS_OK) {
        ucx->context = NULL;
        return ucx_fail("ucp_init", s);
    }
    if ((s = ucp_worker_create(ucx->context, &wp, &ucx->worker)) != UCS_OK) {
        ucx->worker = NULL;
        return ucx_fail("creating a worker", s);
    }
    if ((s = ucp_worker_get_efd(ucx->worker, &ucx->efd)) != UCS_OK) {
        return ucx_fail("getting the worker's event fd", s);
    }
    return SHOAL_OK;
}

// Publishes ENTRY_OK then the nonce and the worker's address in hex (the
// store keeps text), or ENTRY_FAIL and why.
static int
publish(shoal_comm *comm, struct shi_ucx *ucx, int started, int64_t deadline)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    char                key[512], *value;
    ucp_address_t      *addr = NULL;
    size_t              len  = 0, n;
    int                 st;

    if (started == SHOAL_OK
        && ucp_worker_get_address(ucx->worker, &addr, &len) != UCS_OK) {
        started = shi_error(SHOAL_ENOTSUP, "UCX: no worker address");
    }
    n = started == SHOAL_OK ? 1 + 2 * (sizeof(ucx->nonce) + len)
                            : 1 + strlen(shi_error_text());
    if ((value = malloc(n + 1)) == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    if (started == SHOAL_OK) {
        value[0] = ucx->peer_errors ? ENTRY_OK : ENTRY_OK_FAST;
        to_hex(ucx->nonce, sizeof(ucx->nonce), value + 1);
        to_hex(addr, len, value + 1 + 2 * sizeof(ucx->nonce));
        ucp_worker_release_address(ucx->worker, addr);
    } else {
        value[0] = ENTRY_FAIL;
        memcpy(value + 1, shi_error_text(), n - 1);
    }
    value[n] = '\0';
    snprintf(key, sizeof(key), "%sboot/ucx/%d", tc->prefix, tc->rank);
    st = shi_store_set(shi_comm_store(comm), key, value, n, deadline);
    free(value);
    return st;
}

static void
on_peer_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    struct shi_ucx_peer *peer = arg;

    (void) ep;
    shi_ucx_peer_failed(peer->ucx, peer->rank, status);
}

static ucs_status_t
open_ep(struct shi_ucx_peer *peer, const ucp_address_t *address, int checked)
{
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS
            | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .address  = address,
        .err_mode = UCP_ERR_HANDLING_MODE_NONE,
    };

    if (checked) {
        ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
        ep.err_handler.cb  = on_peer_error;
        ep.err_handler.arg = peer;
    }
    return ucp_ep_create(peer->ucx->worker, &ep, &peer->ep);
}

static void
drop_ep(struct shi_ucx *ucx, struct shi_ucx_peer *peer)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
        .flags        = UCP_EP_CLOSE_FLAG_FORCE,
    };
    ucs_status_ptr_t req = ucp_ep_close_nbx(peer->ep, &param);

    if (UCS_PTR_IS_PTR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(ucx->worker);
        }
        ucp_request_free(req);
    }
    peer->ep = NULL;
}

// An endpoint with peer error handling, unless that leaves a peer on this
// host without UCX's shared memory (ucx_lanes.c).
static int
connect_peer(struct shi_ucx *ucx, int r, const char *value, size_t n)
{
    struct shi_ucx_peer *peer    = &ucx->peers[r];
    size_t               head    = 1 + 2 * sizeof(peer->nonce);
    size_t               len     = n > head ? (n - head) / 2 : 0;
    unsigned char       *address = len > 0 ? malloc(len) : NULL;
    ucs_status_t         s;

    if (len == 0 || (n - head) % 2 != 0 || address == NULL
        || !from_hex(value + 1, sizeof(peer->nonce), peer->nonce)
        || !from_hex(value + head, len, address)) {
        free(address);
        return shi_error(
            SHOAL_EPROTO, "%s published a malformed UCX entry", peer->addr);
    }
    s = open_ep(peer, (const ucp_address_t *) address, ucx->peer_errors);
    if (s != UCS_OK) {
        peer->ep = NULL;
    }
    if (ucx->peer_errors
        && ((s != UCS_OK && shi_ucx_same_host(ucx, r))
            || (s == UCS_OK && shi_ucx_lanes_trapped(ucx, r)))) {
        if (peer->ep != NULL) {
            drop_ep(ucx, peer);
        }
        peer->no_err_mode = 1;
        s                 = open_ep(peer, (const ucp_address_t *) address, 0);
    }
    free(address);
    if (s != UCS_OK) {
        peer->ep = NULL;
        return shi_error(SHOAL_EPEER, "UCX: connecting to %s failed: %s",
            peer->addr, ucs_status_string(s));
    }
    return SHOAL_OK;
}

// Reads every rank's entry; a rank whose UCX did not start makes every
// rank answer SHOAL_ENOTSUP (naming the first such rank and its reason).
static int
read_entries(shoal_comm *comm, struct shi_ucx *ucx, char **values,
    size_t *lens, int64_t deadline)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    char                key[512];
    int                 st;

    for (int r = 0; r < tc->size; r++) {
        snprintf(key, sizeof(key), "%sboot/ucx/%d", tc->prefix, r);
        st = shi_rdv_get(comm, key, &values[r], &lens[r], deadline);
        if (st != SHOAL_OK) {
            return st;
        }
    }
    for (int r = 0; r < tc->size; r++) {
        if (lens[r] == 0
            || (values[r][0] != ENTRY_OK && values[r][0] != ENTRY_OK_FAST)) {
            return shi_error(SHOAL_ENOTSUP,
                "UCX did not start on rank %d: %.*s", r,
                lens[r] > 0 ? (int) lens[r] - 1 : 0,
                lens[r] > 0 ? values[r] + 1 : "");
        }
    }
    for (int r = 0; r < tc->size; r++) {
        if ((values[r][0] == ENTRY_OK) != ucx->peer_errors) {
            return shi_error(SHOAL_EENV,
                "rank %d runs UCX %s peer error handling and rank %d %s: set "
                "SHOAL_UCX_PEER_ERRORS alike on every rank",
                r, values[r][0] == ENTRY_OK ? "with" : "without", tc->rank,
                ucx->peer_errors ? "with" : "without");
        }
    }
    return SHOAL_OK;
}

static int
connect_all(shoal_comm *comm, struct shi_ucx *ucx, int64_t deadline)
{
    struct shi_tp_comm *tc     = shi_tp_comm(comm);
    char              **values = calloc((size_t) tc->size, sizeof(*values));
    size_t             *lens   = calloc((size_t) tc->size, sizeof(*lens));
    int                 st     = SHOAL_ENOMEM;

    if (values != NULL && lens != NULL) {
        st = read_entries(comm, ucx, values, lens, deadline);
    }
    for (int r = 0; st == SHOAL_OK && r < tc->size; r++) {
        st = r == tc->rank ? SHOAL_OK
                           : connect_peer(ucx, r, values[r], lens[r]);
    }
    for (int r = 0; values != NULL && r < tc->size; r++) {
        free(values[r]);
    }
    free(values);
    free(lens);
    return st;
}

// Whether the communicator failed here rather than by a peer's report.
// A peer sends its abort only once its own creation finished: then ours
// finishes too, and the first operation reports the abort, so that every
// rank holds the communicator (a shrink's parent). A peer that died before
// its hello came ends the wait through shi_rdv_sliced.
static int
failed_here(const struct shi_tp_comm *tc, const struct shi_ucx *ucx)
{
    return atomic_load(&tc->failed) && !ucx->abort_heard;
}

// Sends every peer our hello and waits for theirs.
static int
exchange_hellos(shoal_comm *comm, struct shi_ucx *ucx, int64_t deadline)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);
    int                 st = shi_ucx_ctl_post_all(ucx);

    for (int p = 0; st == SHOAL_OK && p < tc->size; p++) {
        struct shi_ucx_ctl *c = calloc(1, sizeof(*c));
        if (p == tc->rank) {
            free(c);
            continue;
        }
        if (c == NULL) {
            return shi_error(SHOAL_ENOMEM, "out of memory");
        }
        c->type = SHI_UCX_HELLO;
        st      = shi_auth_peer_token(
                 &tc->secret, ucx->peers[p].nonce, ucx->nonce, c->token);
        shi_ucx_ctl_send(ucx, p, c, NULL);
    }
    while (st == SHOAL_OK && ucx->hellos < tc->size - 1) {
        int64_t until = shi_rdv_until(deadline);
        while (ucx->hellos < tc->size - 1 && !failed_here(tc, ucx)
            && shi_now_ns() < until) {
            ucp_worker_progress(ucx->worker);
        }
        if (failed_here(tc, ucx)) {
            return shi_error(atomic_load(&tc->failed), "%s", tc->fail_text);
        }
        if (ucx->hellos < tc->size - 1
            && (st = shi_rdv_sliced(comm, SHOAL_ETIMEDOUT, until, deadline))
                == SHOAL_INPROGRESS) {
            st = SHOAL_OK;
        }
    }
    return st == SHOAL_OK
        ? st
        : shi_error_wrap(st, "waiting for the peers' UCX hello");
}

static int
new_state(shoal_comm *comm, struct shi_ucx **out)
{
    struct shi_tp_comm *tc  = shi_tp_comm(comm);
    struct shi_ucx     *ucx = calloc(1, sizeof(*ucx));

    if (ucx == NULL
        || (ucx->peers = calloc((size_t) tc->size, sizeof(*ucx->peers)))
            == NULL) {
        free(ucx);
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    if (tc->size > SHI_UCX_RANK_MAX) {
        free(ucx->peers);
        free(ucx);
        return shi_error(SHOAL_ENOTSUP,
            "the UCX transport takes at most %d ranks", SHI_UCX_RANK_MAX);
    }
    ucx->comm = comm;
    ucx->efd  = -1;
    pthread_mutex_init(&ucx->reg_lock, NULL);
    for (int r = 0; r < tc->size; r++) {
        ucx->peers[r].ucx  = ucx;
        ucx->peers[r].rank = r;
        snprintf(ucx->peers[r].addr, sizeof(ucx->peers[r].addr),
            "rank %d (host %s)", r, tc->peers[r].host);
    }
    tc->tp_state = ucx;
    *out         = ucx;
    return shi_random_bytes(ucx->nonce, sizeof(ucx->nonce));
}

// SHOAL_UCX_PEER_ERRORS (default 1): endpoints with UCX's peer error
// handling, which reports a dead peer at once. UCX 1.13 then sends large
// messages over TCP in 8 KiB copies instead of zero copy (half the
// bandwidth here); 0 gives the zero copy back, and a dead peer is then
// found when an operation's deadline passes.
static int
read_peer_errors(struct shi_ucx *ucx)
{
    long long on;
    int       st = shi_env_int("SHOAL_UCX_PEER_ERRORS", 1, &on);

    if (st == SHOAL_OK && on != 0 && on != 1) {
        st = shi_error(
            SHOAL_EENV, "SHOAL_UCX_PEER_ERRORS=%lld: use 1 or 0", on);
    }
    ucx->peer_errors = on != 0;
    return st;
}

int
shi_ucx_setup(
    shoal_comm *comm, const struct shi_tp_boot *boot, int64_t deadline)
{
    struct shi_ucx *ucx = NULL;
    int             st  = new_state(comm, &ucx);

    (void) boot;
    if (st == SHOAL_OK) {
        st = read_peer_errors(ucx);
    }
    if (st != SHOAL_OK) {
        return st;
    }
    int started = start_worker(ucx);
    if ((st = publish(comm, ucx, started, deadline)) != SHOAL_OK) {
        return st;
    }
    if ((st = connect_all(comm, ucx, deadline)) != SHOAL_OK) {
        return st;
    }
    shi_ucx_report_lanes(ucx);
    if ((st = exchange_hellos(comm, ucx, deadline)) != SHOAL_OK) {
        return st;
    }
    return shi_private_heap_map(&ucx->heap, &ucx->heap_bytes);
}

// Closes an endpoint, flushing what is still on its way, for at most
// until `deadline`. After a failure the close is forced: nothing left
// matters, and UCX 1.13's TCP transport can trip its own assertions
// flushing towards a peer that is closing or dead.
static void
close_ep(struct shi_ucx *ucx, struct shi_ucx_peer *peer, int64_t deadline)
{
    const struct shi_tp_comm *tc    = shi_tp_comm(ucx->comm);
    ucp_request_param_t       param = {
              .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
              .flags        = peer->failed || atomic_load(&tc->failed)
                         ? UCP_EP_CLOSE_FLAG_FORCE
                         : 0,
    };
    ucs_status_ptr_t req = ucp_ep_close_nbx(peer->ep, &param);

    if (UCS_PTR_IS_PTR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS
            && shi_now_ns() < deadline) {
            ucp_worker_progress(ucx->worker);
        }
        if (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_request_cancel(ucx->worker, req);
        }
        ucp_request_free(req);
    }
    peer->ep = NULL;
}

// Takes in the messages nobody received (an aborted communicator leaves
// some), at most until `deadline`, so that UCX does not complain of them
// when the worker goes. A receive still running at the deadline keeps its
// buffer (UCX may still write there).
static void
drain_unexpected(struct shi_ucx *ucx, int64_t deadline)
{
    ucp_tag_recv_info_t info;
    ucp_tag_message_h   msg;

    while (shi_now_ns() < deadline
        && (msg = ucp_tag_probe_nb(ucx->worker, 0, 0, 1, &info)) != NULL) {
        ucp_request_param_t param = { 0 };
        void               *buf   = malloc(info.length > 0 ? info.length : 1);
        ucs_status_ptr_t    req;

        if (buf == NULL) {
            return;
        }
        req = ucp_tag_msg_recv_nbx(ucx->worker, buf, info.length, msg, &param);
        if (UCS_PTR_IS_PTR(req)) {
            while (ucp_request_check_status(req) == UCS_INPROGRESS
                && shi_now_ns() < deadline) {
                ucp_worker_progress(ucx->worker);
            }
            if (ucp_request_check_status(req) == UCS_INPROGRESS) {
                ucp_request_free(req);
                return; // buf stays UCX's
            }
            ucp_request_free(req);
        }
        free(buf);
    }
}

void
shi_ucx_free(struct shi_ucx *ucx)
{
    int64_t deadline = shi_now_ns() + 2000000000;

    if (ucx == NULL) {
        return;
    }
    shi_ucx_op_forget_all(ucx, deadline);
    if (ucx->worker != NULL) {
        drain_unexpected(ucx, deadline);
    }
    for (int r = 0; ucx->peers != NULL && r < shi_tp_comm(ucx->comm)->size;
         r++) {
        // A failed endpoint is left to the worker's destruction: closing
        // it while UCX 1.13 still purges its operations completes them
        // twice (an assertion in UCX).
        if (ucx->peers[r].ep != NULL && !ucx->peers[r].failed) {
            close_ep(ucx, &ucx->peers[r], deadline);
        }
        while (ucx->peers[r].held != NULL) {
            struct shi_ucx_held_signal *h = ucx->peers[r].held;
            ucx->peers[r].held            = h->next;
            free(h);
        }
    }
    ucx->closing = 1; // what UCX still completes is only freed
    if (ucx->worker != NULL) {
        struct shi_ucx_op *next;
        for (struct shi_ucx_op *op = ucx->ops; op != NULL; op = next) {
            next = op->next; // a cancel may complete (and free) op at once
            if (op->handle != NULL) {
                ucp_request_cancel(ucx->worker, op->handle);
            }
        }
        while (ucx->ops != NULL && shi_now_ns() < deadline) {
            ucp_worker_progress(ucx->worker);
        }
        ucp_worker_destroy(ucx->worker);
    }
    while (ucx->ops != NULL) { // UCX let go of them with the worker
        shi_ucx_op_drop(ucx->ops);
    }
    if (ucx->context != NULL) {
        shi_ucx_mem_release_all(ucx);
        ucp_cleanup(ucx->context);
    }
    pthread_mutex_destroy(&ucx->reg_lock);
    shi_private_heap_unmap(ucx->heap, ucx->heap_bytes);
    free(ucx->peers);
    free(ucx);
}
