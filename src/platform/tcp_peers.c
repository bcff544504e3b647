// Counting the other processes connected to a server of this process.
//
// Every TCP socket of the process is looked at once: an accepted
// connection's local port is the server's, and its peer is a client; the
// client is this process's own when one of our sockets has that peer's
// address as its local one.
#include <dirent.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "platform/tcp_peers.h"

struct endpoint {
    struct sockaddr_storage addr;
    socklen_t               len;
};

struct connection {
    struct endpoint local, peer;
};

static int
endpoint_port(const struct endpoint *e)
{
    if (e->addr.ss_family == AF_INET) {
        return ntohs(((const struct sockaddr_in *) &e->addr)->sin_port);
    }
    if (e->addr.ss_family == AF_INET6) {
        return ntohs(((const struct sockaddr_in6 *) &e->addr)->sin6_port);
    }
    return -1;
}

static int
endpoint_same(const struct endpoint *a, const struct endpoint *b)
{
    return a->len == b->len && memcmp(&a->addr, &b->addr, a->len) == 0;
}

// Reads both ends of socket fd; 0 when it is a connected IP socket.
static int
connection_of(int fd, struct connection *c)
{
    c->local.len = c->peer.len = sizeof(c->local.addr);
    return getsockname(fd, (struct sockaddr *) &c->local.addr, &c->local.len)
                == 0
            && getpeername(fd, (struct sockaddr *) &c->peer.addr, &c->peer.len)
                == 0
            && endpoint_port(&c->local) >= 0
        ? 0
        : -1;
}

// Every connected IP socket of this process; NULL when it cannot tell.
static struct connection *
list_connections(size_t *count)
{
    DIR               *dir = opendir("/proc/self/fd");
    struct dirent     *d;
    struct connection *all = NULL, c;
    size_t             cap = 0;

    *count = 0;
    if (dir == NULL) {
        return NULL;
    }
    while ((d = readdir(dir)) != NULL) {
        int fd = atoi(d->d_name);
        if (d->d_name[0] < '0' || d->d_name[0] > '9' || fd == dirfd(dir)
            || connection_of(fd, &c) != 0) {
            continue;
        }
        if (*count == cap) {
            cap                     = cap ? 2 * cap : 32;
            struct connection *more = realloc(all, cap * sizeof(*all));
            if (more == NULL) {
                free(all);
                closedir(dir);
                return NULL;
            }
            all = more;
        }
        all[(*count)++] = c;
    }
    closedir(dir);
    return all != NULL ? all : calloc(1, sizeof(*all));
}

int
shi_tcp_foreign_peers(int port)
{
    size_t             n;
    struct connection *all     = list_connections(&n);
    int                foreign = 0;

    if (all == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        int ours = 0;
        if (endpoint_port(&all[i].local) != port) {
            continue; // not a connection to our server
        }
        for (size_t j = 0; j < n && !ours; j++) {
            ours = endpoint_same(&all[j].local, &all[i].peer);
        }
        foreign += !ours;
    }
    free(all);
    return foreign;
}
