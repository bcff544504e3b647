// The TCP transport's setup: every rank listens on TCP (on the address
// tcp_addr.c picks), publishes "host:port" in the store, reads every
// peer's, then joins the mesh (tcp_mesh.c). shoal_alloc's heap is private
// memory here: no peer maps it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform/net.h"
#include "platform/private_heap.h"
#include "store/store.h"
#include "transport/tcp/tcp_addr.h"
#include "transport/tcp/tcp_net.h"
#include "transport/upcalls.h"

int
shi_tcp_setup(
    shoal_comm *comm, const struct shi_tp_boot *boot, int64_t deadline)
{
    struct shi_tp_comm *tc = shi_tp_comm(comm);

    char   ip[64], key[512], (*addrs)[64];
    int    lfd = -1, port, st;
    char  *value;
    size_t len;

    if ((st = shi_tcp_pick_ip(comm, boot->one_host, ip, sizeof(ip)))
        != SHOAL_OK) {
        return st;
    }
    if ((addrs = calloc((size_t) tc->size, sizeof(*addrs))) == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    st = shi_tcp_listen(ip, 0, tc->size * 16, &lfd, &port);
    if (st == SHOAL_OK) {
        shi_tcp_format_addr(ip, port, addrs[tc->rank], sizeof(*addrs));
        snprintf(key, sizeof(key), "%sboot/tcp/%d", tc->prefix, tc->rank);
        st = shi_store_set(shi_comm_store(comm), key, addrs[tc->rank],
            strlen(addrs[tc->rank]), deadline);
    }
    for (int r = 0; st == SHOAL_OK && r < tc->size; r++) {
        snprintf(key, sizeof(key), "%sboot/tcp/%d", tc->prefix, r);
        st = shi_rdv_get(comm, key, &value, &len, deadline);
        if (st == SHOAL_OK) {
            snprintf(addrs[r], sizeof(*addrs), "%s", value);
            free(value);
        }
    }
    if (st == SHOAL_OK) {
        st = shi_tcp_mesh(comm, lfd, addrs, deadline);
    }
    if (st == SHOAL_OK) {
        struct shi_net *net = tc->tp_state;
        st = shi_private_heap_map(&net->heap, &net->heap_bytes);
    }
    if (lfd >= 0) {
        close(lfd); // strangers knocking later find nothing listening
    }
    free(addrs);
    return st;
}
