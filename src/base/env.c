// Launch-environment detection (see env.h).
#include "env.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

#define ENV_LOOKED_FOR                                                        \
    "SHOAL_RANK/SHOAL_SIZE/SHOAL_STORE (shoalrun), RANK/WORLD_SIZE/"          \
    "MASTER_ADDR/MASTER_PORT (torchrun), OMPI_COMM_WORLD_RANK/"               \
    "OMPI_COMM_WORLD_SIZE (Open MPI), PMI_RANK/PMI_SIZE (MPICH), "            \
    "SLURM_PROCID/SLURM_NTASKS (Slurm)"

// Launchers, in the order they are tried.
static const struct {
    const char *name;
    const char *rank_var;
    const char *size_var;
} env_sources[] = {
    { "SHOAL_RANK/SHOAL_SIZE", "SHOAL_RANK", "SHOAL_SIZE" },
    { "torchrun", "RANK", "WORLD_SIZE" },
    { "Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE" },
    { "MPICH/PMI", "PMI_RANK", "PMI_SIZE" },
    { "Slurm", "SLURM_PROCID", "SLURM_NTASKS" },
};

int
shi_env_int(const char *name, long long fallback, long long *out)
{
    const char *text = getenv(name);
    char       *end;

    *out = fallback;
    if (text == NULL || *text == '\0') {
        return SHOAL_OK;
    }
    errno       = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0') {
        return shi_error(
            SHOAL_EENV, "%s=\"%s\" is not an integer", name, text);
    }
    *out = v;
    return SHOAL_OK;
}

int
shi_env_seconds(const char *name, int64_t fallback_ms, int64_t *out_ms)
{
    const char *text = getenv(name);
    char       *end;

    *out_ms = fallback_ms;
    if (text == NULL || *text == '\0') {
        return SHOAL_OK;
    }
    errno    = 0;
    double s = strtod(text, &end);
    // strtod also takes hex, inf and nan: only plain decimals are seconds.
    if (errno != 0 || *end != '\0' || !(s > 0) || s > 1e9
        || strspn(text, "0123456789.") != strlen(text)) {
        return shi_error(SHOAL_EENV,
            "%s=\"%s\" is not a number of seconds: give a positive "
            "decimal number, e.g. 30 or 2.5",
            name, text);
    }
    int64_t ms = (int64_t) (s * 1000.0 + 0.5);
    *out_ms    = ms > 0 ? ms : 1;
    return SHOAL_OK;
}

int
shi_parse_bytes(const char *text, size_t n, unsigned long long *out)
{
    unsigned long long v     = 0;
    size_t             i     = 0;
    unsigned           shift = 0;

    for (; i < n && text[i] >= '0' && text[i] <= '9'; i++) {
        unsigned d = (unsigned) (text[i] - '0');
        if (v > (ULLONG_MAX - d) / 10) {
            return -2;
        }
        v = v * 10 + d;
    }
    if (i == 0) {
        return -1;
    }
    if (i < n) {
        const char *units = "kmg";
        const char *u     = strchr(units, text[i] | 0x20);
        if (u == NULL || text[i] == '\0') {
            return -1;
        }
        shift = 10 * (unsigned) (u - units + 1);
        i++;
        // "K" and "KiB" alike.
        if (i + 2 == n && text[i] == 'i' && (text[i + 1] | 0x20) == 'b') {
            i += 2;
        }
    }
    if (i != n) {
        return -1;
    }
    if (shift > 0 && v > (ULLONG_MAX >> shift)) {
        return -2;
    }
    *out = v << shift;
    return 0;
}

int
shi_env_bytes(const char *name, long long fallback, long long *out)
{
    const char        *text = getenv(name);
    unsigned long long v;

    *out = fallback;
    if (text == NULL || *text == '\0') {
        return SHOAL_OK;
    }
    if (shi_parse_bytes(text, strlen(text), &v) != 0 || v > LLONG_MAX) {
        return shi_error(SHOAL_EENV,
            "%s=\"%s\" is not a byte count: give digits with an optional K, "
            "M or G (KiB, MiB, GiB), e.g. 4M",
            name, text);
    }
    *out = (long long) v;
    return SHOAL_OK;
}

int
shi_env_size(const char *name, long long fallback, long long lo, long long hi,
    long long *out)
{
    int st = strstr(name, "_BYTES") != NULL
        ? shi_env_bytes(name, fallback, out)
        : shi_env_int(name, fallback, out);

    if (st != SHOAL_OK) {
        return st;
    }
    if (*out < lo || *out > hi) {
        return shi_error(
            SHOAL_EINVAL, "%s=%lld is outside %lld..%lld", name, *out, lo, hi);
    }
    return SHOAL_OK;
}

static int
check_rank_size(shi_launch *out, long long rank, long long size,
    const char *rank_name, const char *size_name)
{
    if (size < 1 || size > 1 << 20) {
        return shi_error(SHOAL_EENV,
            "%s=%lld: the number of ranks must be "
            "between 1 and 1048576",
            size_name, size);
    }
    if (rank < 0 || rank >= size) {
        return shi_error(SHOAL_EENV, "%s=%lld is outside 0..%lld (%s=%lld)",
            rank_name, rank, size - 1, size_name, size);
    }
    out->rank = (int) rank;
    out->size = (int) size;
    return SHOAL_OK;
}

// Rank and size from the first launcher whose variables are present.
static int
detect_rank_size(shi_launch *out)
{
    for (size_t i = 0; i < sizeof(env_sources) / sizeof(env_sources[0]); i++) {
        const char *rank_text = getenv(env_sources[i].rank_var);
        const char *size_text = getenv(env_sources[i].size_var);
        long long   rank, size;
        int         st;

        if (rank_text == NULL && size_text == NULL) {
            continue;
        }
        if (rank_text == NULL || size_text == NULL) {
            return shi_error(SHOAL_EENV, "%s is set but %s is not (%s)",
                rank_text ? env_sources[i].rank_var : env_sources[i].size_var,
                rank_text ? env_sources[i].size_var : env_sources[i].rank_var,
                env_sources[i].name);
        }
        if ((st = shi_env_int(env_sources[i].rank_var, -1, &rank)) < 0
            || (st = shi_env_int(env_sources[i].size_var, -1, &size)) < 0) {
            return st;
        }
        out->source = env_sources[i].name;
        return check_rank_size(
            out, rank, size, env_sources[i].rank_var, env_sources[i].size_var);
    }
    return shi_error(SHOAL_EENV,
        "no launch environment found: looked for " ENV_LOOKED_FOR
        "; start the program with shoalrun, torchrun, mpirun "
        "or srun, or pass rank and size in shoal_config");
}

// Store address: SHOAL_STORE, else MASTER_ADDR:MASTER_PORT (torchrun's own
// store already uses MASTER_PORT, so under torchrun shoal's store listens on
// MASTER_PORT + 1).
static int
detect_store(shi_launch *out)
{
    const char *store = getenv("SHOAL_STORE");
    const char *addr  = getenv("MASTER_ADDR");
    long long   port;
    int         st;

    if (store != NULL && *store != '\0') {
        snprintf(out->store, sizeof(out->store), "%s", store);
        out->launcher_serves = getenv("SHOAL_LAUNCHER") != NULL;
        out->store_from_env  = 1;
        return SHOAL_OK;
    }
    if ((st = shi_env_int("MASTER_PORT", -1, &port)) < 0) {
        return st;
    }
    if (addr != NULL && *addr != '\0' && port > 0) {
        int torchrun = strcmp(out->source, "torchrun") == 0;
        if (port + torchrun > 65535) {
            return shi_error(
                SHOAL_EENV, "MASTER_PORT=%lld is out of range", port);
        }
        snprintf(
            out->store, sizeof(out->store), "%s:%lld", addr, port + torchrun);
        out->store_from_env = 1;
        return SHOAL_OK;
    }
    if (out->size == 1) {
        out->store[0] = '\0';
        return SHOAL_OK;
    }
    return shi_error(SHOAL_EENV,
        "rank %d of %d (from %s) has no rendezvous store: set "
        "SHOAL_STORE=host:port (rank 0 serves it) or a shared "
        "file path, or MASTER_ADDR and MASTER_PORT",
        out->rank, out->size, out->source);
}

int
shi_launch_detect(shi_launch *out, const shoal_config *cfg)
{
    int st;

    memset(out, 0, sizeof(*out));
    if (cfg != NULL
        && (cfg->rank != SHOAL_UNDEF || cfg->nranks != SHOAL_UNDEF)) {
        out->source = "shoal_config";
        st          = check_rank_size(
                     out, cfg->rank, cfg->nranks, "config.rank", "config.nranks");
        if (st != SHOAL_OK) {
            return shi_error(SHOAL_EINVAL, "%s", shi_error_text());
        }
    } else if ((st = detect_rank_size(out)) != SHOAL_OK) {
        return st;
    }
    if (cfg != NULL && cfg->store != NULL) {
        snprintf(out->store, sizeof(out->store), "%s", cfg->store);
        return SHOAL_OK;
    }
    return detect_store(out);
}
