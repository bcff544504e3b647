// The job secret and each rank's environment.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "base/error.h"
#include "platform/auth.h"
#include "shoalrun.h"

extern char **environ;

// Variables of other launchers that rank detection could mistake for ours,
// and ours, which are set afresh. A name ending in '*' is a prefix.
static const char *const rankenv_drop[] = {
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "OMPI_COMM_WORLD_*",
    "PMI_RANK",
    "PMI_SIZE",
    "PMIX_RANK",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_LOCALID",
    "SHOAL_RANK",
    "SHOAL_SIZE",
    "SHOAL_LOCAL_RANK",
    "SHOAL_LOCAL_SIZE",
    "SHOAL_STORE",
    "SHOAL_SECRET",
    "SHOAL_LAUNCHER",
};

#define RANKENV_SECRET_BYTES 32

int
sr_job_secret(char *out, size_t len)
{
    const char   *env = getenv("SHOAL_SECRET");
    unsigned char raw[RANKENV_SECRET_BYTES];

    if (env != NULL && *env != '\0') {
        if (strlen(env) >= len) {
            fprintf(stderr,
                "shoalrun: SHOAL_SECRET is too long (at most "
                "%zu characters)\n",
                len - 1);
            return -1;
        }
        strcpy(out, env);
        return 0;
    }
    if (len < 2 * sizeof(raw) + 1) {
        return -1;
    }
    if (shi_random_bytes(raw, (int) sizeof(raw)) != 0) {
        fprintf(stderr, "shoalrun: cannot make a job secret: %s\n",
            shi_error_text());
        return -1;
    }
    for (size_t i = 0; i < sizeof(raw); i++) {
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    }
    return 0;
}

// True if the NAME=value entry `entry` is one to drop.
static int
rankenv_dropped(const char *entry)
{
    size_t name_len = strcspn(entry, "=");

    for (size_t i = 0; i < sizeof(rankenv_drop) / sizeof(*rankenv_drop); i++) {
        const char *d   = rankenv_drop[i];
        size_t      len = strlen(d);
        if (d[len - 1] == '*') {
            if (name_len >= len - 1 && strncmp(entry, d, len - 1) == 0) {
                return 1;
            }
        } else if (name_len == len && strncmp(entry, d, len) == 0) {
            return 1;
        }
    }
    return 0;
}

static char *
rankenv_format(const char *name, const char *value)
{
    size_t len = strlen(name) + strlen(value) + 2;
    char  *s   = malloc(len);

    if (s != NULL) {
        snprintf(s, len, "%s=%s", name, value);
    }
    return s;
}

void
sr_free_env(char **env)
{
    if (env == NULL) {
        return;
    }
    for (size_t i = 0; env[i] != NULL; i++) {
        free(env[i]);
    }
    free(env);
}

// Appends MASTER_ADDR and MASTER_PORT unless the launcher's environment
// sets them (a user's choice wins). Returns the new count, or 0 when out
// of memory.
static size_t
rankenv_torch_master(char **env, size_t n, int torch_port)
{
    char port_s[16];

    if (getenv("MASTER_ADDR") == NULL
        && (env[n++] = rankenv_format("MASTER_ADDR", "127.0.0.1")) == NULL) {
        return 0;
    }
    snprintf(port_s, sizeof(port_s), "%d", torch_port);
    if (getenv("MASTER_PORT") == NULL && torch_port > 0
        && (env[n++] = rankenv_format("MASTER_PORT", port_s)) == NULL) {
        return 0;
    }
    return n;
}

char **
sr_rank_env(int rank, int size, const char *store_addr, const char *secret,
    int torch_port)
{
    char   rank_s[16], size_s[16];
    size_t n = 0, count = 0;
    char **env;

    while (environ != NULL && environ[count] != NULL) {
        count++;
    }
    env = calloc(count + 14, sizeof(*env));
    if (env == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        if (!rankenv_dropped(environ[i])
            && (env[n++] = strdup(environ[i])) == NULL) {
            goto fail;
        }
    }
    snprintf(rank_s, sizeof(rank_s), "%d", rank);
    snprintf(size_s, sizeof(size_s), "%d", size);
    // One host: local rank and size are the global ones.
    if ((env[n++] = rankenv_format("SHOAL_RANK", rank_s)) == NULL
        || (env[n++] = rankenv_format("SHOAL_SIZE", size_s)) == NULL
        || (env[n++] = rankenv_format("SHOAL_LOCAL_RANK", rank_s)) == NULL
        || (env[n++] = rankenv_format("SHOAL_LOCAL_SIZE", size_s)) == NULL
        || (env[n++] = rankenv_format("SHOAL_STORE", store_addr)) == NULL
        || (env[n++] = rankenv_format("SHOAL_SECRET", secret)) == NULL
        || (env[n++] = rankenv_format("SHOAL_LAUNCHER", "shoalrun")) == NULL
        // torch's env:// (shoal's own detection reads SHOAL_* first).
        || (env[n++] = rankenv_format("RANK", rank_s)) == NULL
        || (env[n++] = rankenv_format("WORLD_SIZE", size_s)) == NULL
        || (env[n++] = rankenv_format("LOCAL_RANK", rank_s)) == NULL
        || (env[n++] = rankenv_format("LOCAL_WORLD_SIZE", size_s)) == NULL
        || (n = rankenv_torch_master(env, n, torch_port)) == 0) {
        goto fail;
    }
    return env;
fail:
    sr_free_env(env);
    return NULL;
}

int
sr_free_port(void)
{
    struct sockaddr_in addr
        = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len  = sizeof(addr);
    int       port = 0;
    int       fd   = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        return 0;
    }
    if (bind(fd, (struct sockaddr *) &addr, sizeof(addr)) == 0
        && getsockname(fd, (struct sockaddr *) &addr, &len) == 0) {
        port = ntohs(addr.sin_port);
    }
    close(fd);
    return port;
}
