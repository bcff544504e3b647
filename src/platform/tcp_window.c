// Reads tcpi_snd_wnd, which glibc's struct tcp_info lacks: this file
// alone uses the kernel's own definition of the struct.
#include "platform/tcp_window.h"

#include <linux/tcp.h>
#include <stddef.h>
#include <sys/socket.h>

#ifndef SOL_TCP
#define SOL_TCP 6
#endif

int
shi_tcp_peer_window(int fd, uint32_t *wnd)
{
    struct tcp_info ti;
    socklen_t       len = sizeof(ti);

    if (getsockopt(fd, SOL_TCP, TCP_INFO, &ti, &len) != 0
        || len < offsetof(struct tcp_info, tcpi_snd_wnd)
                + sizeof(ti.tcpi_snd_wnd)) {
        return -1;
    }
    *wnd = ti.tcpi_snd_wnd;
    return 0;
}
