// Which UCX transports an endpoint uses ("lanes"), for SHOAL_DEBUG=INFO,
// and UCX's known trap: an endpoint asked for peer error handling may leave
// out UCX's shared-memory transports (UCX 1.13 does: a peer on this host is
// then reached over tcp/lo, or not at all under UCX_TLS=sm,self). For a
// peer on this host whose endpoint has no shared-memory lane, the
// endpoint is opened again without peer error handling, with one warning
// saying so: that peer's death is then found by deadlines only. Every
// rank applies the same rule to the same configuration, so both ends of a
// pair choose alike.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "transport/ucx/ucx.h"

static const char *const SHM_LANES[]
    = { "sysv/", "posix/", "xpmem/", "cma/", "knem/" };

// The endpoint's description as UCX prints it (malloc'd), or NULL.
static char *
ep_info(ucp_ep_h ep)
{
    char  *text = NULL;
    size_t len  = 0;
    FILE  *f    = open_memstream(&text, &len);

    if (f == NULL) {
        return NULL;
    }
    ucp_ep_print_info(ep, f);
    fclose(f);
    return text;
}

static int
has_shm_lane(const char *info)
{
    for (size_t i = 0; i < sizeof(SHM_LANES) / sizeof(SHM_LANES[0]); i++) {
        if (strstr(info, SHM_LANES[i]) != NULL) {
            return 1;
        }
    }
    return 0;
}

// "tcp/lo.0 sysv/memory.0": the transports of the lane lines.
static void
lane_names(const char *info, char *out, size_t n)
{
    size_t used = 0;

    out[0] = '\0';
    for (const char *l = strstr(info, "lane["); l != NULL && used + 1 < n;
         l             = strstr(l + 1, "lane[")) {
        const char *colon = strchr(l, ':');
        const char *name  = colon != NULL ? strchr(colon + 1, ':') : NULL;
        if (name == NULL) {
            break;
        }
        name++;
        size_t k = strcspn(name, " \n");
        used += (size_t) snprintf(out + used, n - used, "%s%.*s",
            used > 0 ? " " : "", (int) k, name);
    }
}

// Whether UCX_TLS lets UCX use shared memory at all (unset: it does).
static int
shm_allowed(void)
{
    static const char *const names[]
        = { "sm", "shm", "posix", "sysv", "cma", "xpmem", "knem", "all" };
    const char *tls = getenv("UCX_TLS");

    if (tls == NULL || tls[0] == '\0') {
        return 1;
    }
    if (tls[0] == '^') { // a list of what to leave out
        return strstr(tls, "sm") == NULL;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strstr(tls, names[i]) != NULL) {
            return 1;
        }
    }
    return 0;
}

int
shi_ucx_same_host(const struct shi_ucx *ucx, int p)
{
    const struct shi_tp_comm *tc = shi_tp_comm(ucx->comm);

    return strcmp(tc->peers[p].host, tc->peers[tc->rank].host) == 0;
}

// Whether peer p's endpoint should be opened again without peer error
// handling (see the top of the file).
int
shi_ucx_lanes_trapped(struct shi_ucx *ucx, int p)
{
    static int warned;
    char      *info;
    int        trapped;

    if (!shi_ucx_same_host(ucx, p) || ucx->peers[p].ep == NULL
        || !shm_allowed()) {
        return 0;
    }
    if ((info = ep_info(ucx->peers[p].ep)) == NULL) {
        return 0;
    }
    trapped = !has_shm_lane(info);
    if (trapped) {
        char lanes[256];
        lane_names(info, lanes, sizeof(lanes));
        shi_log_warn_once(&warned,
            "UCX reaches %s, on this host, over %s: with peer error handling "
            "this UCX leaves out its shared-memory transports. shoal opens "
            "same-host endpoints without it, so a dead peer on this host is "
            "found when an operation's deadline passes. For ranks on one "
            "host shoal's own shared memory is faster (SHOAL_TRANSPORT=shm "
            "or auto)",
            ucx->peers[p].addr, lanes[0] ? lanes : "no transport");
    }
    free(info);
    return trapped;
}

void
shi_ucx_report_lanes(struct shi_ucx *ucx)
{
    const struct shi_tp_comm *tc = shi_tp_comm(ucx->comm);

    if (!shi_log_enabled(SHI_LOG_INFO)) {
        return;
    }
    for (int p = 0; p < tc->size; p++) {
        char *info
            = ucx->peers[p].ep != NULL ? ep_info(ucx->peers[p].ep) : NULL;
        char lanes[256];
        if (info == NULL) {
            continue;
        }
        lane_names(info, lanes, sizeof(lanes));
        SHI_INFO("communicator '%s': UCX reaches %s over %s%s", tc->name,
            ucx->peers[p].addr, lanes,
            ucx->peers[p].no_err_mode || !ucx->peer_errors
                ? " (no peer error handling)"
                : "");
        free(info);
    }
}
