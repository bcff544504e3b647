// shoal_knock: a stranger at a rank's listening port, for tests/net.
//
//   shoal_knock HOST:PORT garbage        connect, send 4 KiB of junk
//   shoal_knock HOST:PORT secret WRONG   run the handshake with a wrong secret
//   shoal_knock HOST:PORT silent         connect and say nothing for 1 s
//
// Exits 0 when the rank dealt with us as it should: closed the connection
// (garbage, silent) or refused the proof (secret); 1 otherwise.
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "platform/auth.h"
#include "platform/net.h"
#include "shoal.h"

static int
wait_closed(int fd)
{
    char buf[256];

    // The rank must hang up; reading gets EOF (0) or a reset (<0).
    int st = shi_read_all(fd, buf, sizeof(buf), shi_deadline_in_ms(10000));
    return st == SHOAL_EPEER ? 0 : 1;
}

int
main(int argc, char **argv)
{
    char       host[256];
    int        port, fd, rc = 1;
    shi_secret wrong;

    if (argc < 3
        || shi_parse_host_port(argv[1], host, sizeof(host), &port) != 0) {
        fprintf(stderr,
            "usage: shoal_knock HOST:PORT garbage|silent|secret "
            "WRONG\n");
        return 2;
    }
    if (shi_tcp_connect(host, port, shi_deadline_in_ms(5000), &fd) != 0) {
        fprintf(stderr, "shoal_knock: %s\n", shi_error_text());
        return 1;
    }
    if (strcmp(argv[2], "garbage") == 0) {
        char junk[4096];
        for (size_t i = 0; i < sizeof(junk); i++) {
            junk[i] = (char) (i * 7 + 3);
        }
        shi_write_all(fd, junk, sizeof(junk), shi_deadline_in_ms(2000));
        rc = wait_closed(fd);
    } else if (strcmp(argv[2], "silent") == 0) {
        sleep(1);
        rc = 0;
    } else if (strcmp(argv[2], "secret") == 0 && argc > 3) {
        shi_secret_from_string(&wrong, argv[3]);
        int st
            = shi_auth_client(fd, &wrong, argv[1], shi_deadline_in_ms(5000));
        printf("shoal_knock: handshake with a wrong secret: %s: %s\n",
            shoal_status_name(st), shi_error_text());
        rc = st == SHOAL_EAUTH ? 0 : 1;
    }
    close(fd);
    return rc;
}
