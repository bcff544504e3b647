// tcp_bench: raw TCP throughput and round trip between two hosts, the
// yardstick for shoal's TCP transport (targets: all_reduce busbw >= 0.9x
// the raw N-stream throughput; 8-byte all_reduce <= 2x one raw round trip).
//
//   tcp_bench server [-p PORT] [-B ADDR]
//   tcp_bench client HOST [-p PORT] [-s SIZE] [-n ITERS] [-P 1,2,4]
//                    [-r ROUNDTRIPS] [-b BUF] [-d 0|1]
//
// With -d 1, each stream count is measured again with both directions
// loaded at once ("each way": SIZE from client to server while SIZE comes
// back; GB/s per direction), the traffic of a ring all-reduce, which on a
// host whose network stack is CPU-bound (veth) shares the cores between
// the two directions.
//
// Client to server, one direction: per iteration SIZE bytes split evenly
// over P connections, each sent by its own thread; an iteration ends when
// every connection's 1-byte acknowledgement is back (the server sends it
// once its share has arrived), so the time covers delivery, not just
// queueing into socket buffers. One warm-up iteration, then the median of
// ITERS. Round trip: one connection, 8 bytes each way, ROUNDTRIPS times
// after 100 warm-up ones, median. Every socket has TCP_NODELAY and, unless
// -b 0, SO_SNDBUF and SO_RCVBUF of BUF bytes (default 4 MiB; the kernel
// caps it at net.core.[rw]mem_max and reports doubled values).
//
// The server serves any number of clients, one thread per connection,
// until killed. Sizes take K, M, G (powers of 2).
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TB_MAGIC       0x73686f61u // "shoa"
#define TB_STREAM      1u
#define TB_PING        2u
#define TB_DUPLEX      3u
#define TB_MAX_STREAMS 64
#define TB_PING_BYTES  8
#define TB_PING_WARMUP 100

// What a client asks of each connection. On the wire: 4 x 32 bits in
// network byte order (magic, kind, iters, bytes); bytes is at most 1 GiB.
struct tb_hello {
    uint32_t kind;
    uint32_t iters; // rounds, warm-up included
    uint64_t bytes; // per round, this connection's share
};

static const char *tb_port    = "7447";
static int         tb_duplex  = 0; // -d: also both directions at once
static int         tb_sockbuf = 4 << 20;

static void
tb_die(const char *what)
{
    fprintf(stderr, "tcp_bench: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double
tb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

// Full transfers: 0 on success, -1 on error or early end of stream.
static int
tb_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n, len -= (size_t) n;
    }
    return 0;
}

static int
tb_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n, len -= (size_t) n;
    }
    return 0;
}

static void
tb_tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (tb_sockbuf > 0) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &tb_sockbuf, sizeof tb_sockbuf);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &tb_sockbuf, sizeof tb_sockbuf);
    }
}

static int
tb_sockopt(int fd, int opt)
{
    int       v   = 0;
    socklen_t len = sizeof v;
    getsockopt(fd, SOL_SOCKET, opt, &v, &len);
    return v;
}

static int
tb_parse_size(const char *s, uint64_t *out)
{
    char              *end;
    unsigned long long v = strtoull(s, &end, 10);
    switch (*end) {
        case 'G':
            v <<= 10; // fall through
        case 'M':
            v <<= 10; // fall through
        case 'K':
            v <<= 10, end++;
            break;
        default:
            break;
    }
    *out = v;
    return end != s && *end == '\0' ? 0 : -1;
}

// Writes `bytes` of buf on fd in its own thread (duplex streams).
struct tb_writer {
    int         fd;
    const char *buf;
    uint64_t    bytes;
    int         failed;
};

static void *
tb_writer_main(void *arg)
{
    struct tb_writer *w = arg;
    w->failed           = tb_write_all(w->fd, w->buf, w->bytes) != 0;
    return NULL;
}

// One duplex round on fd: send `bytes` from out while reading `bytes`
// (plus `extra`) into in. Returns 0 when both completed.
static int
tb_duplex_round(int fd, const char *out, char *in, uint64_t bytes, int extra)
{
    struct tb_writer w = { fd, out, bytes, 0 };
    pthread_t        t;

    if (pthread_create(&t, NULL, tb_writer_main, &w) != 0) {
        return -1;
    }
    int rc = tb_read_all(fd, in, bytes + (uint64_t) extra);
    pthread_join(t, NULL);
    return rc != 0 || w.failed ? -1 : 0;
}

// ---- server ----

static void *
tb_serve_conn(void *arg)
{
    int             fd = (int) (intptr_t) arg;
    unsigned char   raw[16];
    struct tb_hello h;
    if (tb_read_all(fd, raw, sizeof raw) == 0) {
        uint32_t w[4];
        memcpy(w, raw, sizeof w);
        h.kind  = ntohl(w[1]);
        h.iters = ntohl(w[2]);
        h.bytes = ntohl(w[3]);
        if (ntohl(w[0]) != TB_MAGIC || h.bytes > (1u << 30)) {
            fprintf(stderr, "tcp_bench: a connection with a bad hello\n");
            close(fd);
            return NULL;
        }
        char *buf = malloc(h.bytes ? h.bytes : 1);
        char  ack = 1;
        // Duplex: both directions at once; the ack follows our data once
        // the client's has all arrived.
        char *out
            = h.kind == TB_DUPLEX ? calloc(1, h.bytes ? h.bytes : 1) : NULL;
        for (uint32_t i = 0; out && buf && i < h.iters; i++) {
            if (tb_duplex_round(fd, out, buf, h.bytes, 0) != 0
                || tb_write_all(fd, &ack, 1) != 0) {
                break;
            }
        }
        for (uint32_t i = 0; !out && buf && i < h.iters; i++) {
            if (tb_read_all(fd, buf, h.bytes) != 0) {
                break;
            }
            // Stream: a 1-byte ack once the share is in. Ping: the echo.
            if (h.kind == TB_PING ? tb_write_all(fd, buf, h.bytes)
                                  : tb_write_all(fd, &ack, 1)) {
                break;
            }
        }
        free(buf);
        free(out);
    }
    close(fd);
    return NULL;
}

static int
tb_server(const char *bind_addr)
{
    struct addrinfo hints = { .ai_family = AF_INET,
        .ai_socktype                     = SOCK_STREAM,
        .ai_flags                        = AI_PASSIVE },
                    *ai;
    int rc = getaddrinfo(bind_addr, tb_port, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "tcp_bench: %s: %s\n", bind_addr ? bind_addr : "*",
            gai_strerror(rc));
        return 1;
    }
    int lfd = socket(ai->ai_family, ai->ai_socktype, 0), one = 1;
    if (lfd < 0) {
        tb_die("socket");
    }
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // Buffer sizes set before listen() are inherited by accepted sockets
    // and, for SO_RCVBUF, decide the window scale offered in the SYN-ACK.
    tb_tune(lfd);
    if (bind(lfd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(lfd, 64) != 0) {
        tb_die("bind/listen");
    }
    freeaddrinfo(ai);
    printf("tcp_bench: serving on port %s\n", tb_port);
    fflush(stdout);
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            tb_die("accept");
        }
        tb_tune(fd);
        pthread_t t;
        if (pthread_create(&t, NULL, tb_serve_conn, (void *) (intptr_t) fd)
            != 0) {
            close(fd);
            continue;
        }
        pthread_detach(t);
    }
}

// ---- client ----

static const char *tb_host;

// Connects and says hello. The server may still be starting: retry for
// up to 10 s.
static int
tb_connect(uint32_t kind, uint32_t iters, uint64_t bytes)
{
    struct addrinfo hints
        = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM },
        *ai;
    int rc = getaddrinfo(tb_host, tb_port, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "tcp_bench: %s: %s\n", tb_host, gai_strerror(rc));
        exit(1);
    }
    int    fd       = -1;
    double deadline = tb_now() + 10;
    while (fd < 0) {
        fd = socket(ai->ai_family, ai->ai_socktype, 0);
        if (fd < 0) {
            tb_die("socket");
        }
        tb_tune(fd); // before connect(): the window scale is set in the SYN
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            close(fd), fd = -1;
            if (tb_now() > deadline) {
                tb_die("connect");
            }
            usleep(100000);
        }
    }
    freeaddrinfo(ai);
    uint32_t w[4] = { htonl(TB_MAGIC), htonl(kind), htonl(iters),
        htonl((uint32_t) bytes) };
    if (tb_write_all(fd, w, sizeof w) != 0) {
        tb_die("hello");
    }
    return fd;
}

struct tb_stream {
    int                duplex; // both ways at once
    char              *in;
    int                fd;
    uint64_t           bytes;
    uint32_t           rounds;
    char              *buf;
    pthread_barrier_t *start, *end;
    int                failed;
};

static void *
tb_stream_main(void *arg)
{
    struct tb_stream *s = arg;
    for (uint32_t i = 0; i < s->rounds; i++) {
        char ack;
        pthread_barrier_wait(s->start);
        if (s->duplex && !s->failed) {
            // The server's data, then its ack once ours arrived.
            s->failed = tb_duplex_round(s->fd, s->buf, s->in, s->bytes, 1);
        } else if (!s->failed
            && (tb_write_all(s->fd, s->buf, s->bytes) != 0
                || tb_read_all(s->fd, &ack, 1) != 0)) {
            s->failed = 1;
        }
        pthread_barrier_wait(s->end);
    }
    return NULL;
}

static int
tb_cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static double
tb_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, tb_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Median seconds for `total` bytes over `nstreams` connections (duplex:
// `total` each way at once).
static double
tb_run_streams(
    int nstreams, uint64_t total, uint32_t iters, int *bufs, int duplex)
{
    struct tb_stream  s[TB_MAX_STREAMS];
    pthread_t         t[TB_MAX_STREAMS];
    pthread_barrier_t start, end;
    double           *times  = calloc(iters, sizeof *times), t0;
    uint32_t          rounds = iters + 1; // one warm-up
    pthread_barrier_init(&start, NULL, (unsigned) nstreams + 1);
    pthread_barrier_init(&end, NULL, (unsigned) nstreams + 1);
    for (int i = 0; i < nstreams; i++) {
        uint64_t share = total / (uint64_t) nstreams;
        s[i]           = (struct tb_stream) {
                      .bytes  = i == nstreams - 1 ? total - share * (uint64_t) i : share,
                      .rounds = rounds,
                      .start  = &start,
                      .end    = &end,
        };
        s[i].buf    = malloc(s[i].bytes ? s[i].bytes : 1);
        s[i].in     = duplex ? malloc(s[i].bytes + 1) : NULL;
        s[i].duplex = duplex;
        if (!s[i].buf || !times || (duplex && !s[i].in)) {
            tb_die("malloc");
        }
        memset(s[i].buf, 0x5a, s[i].bytes); // fault the pages in now
        if (duplex) {
            memset(s[i].in, 0, s[i].bytes + 1);
        }
        s[i].fd
            = tb_connect(duplex ? TB_DUPLEX : TB_STREAM, rounds, s[i].bytes);
        pthread_create(&t[i], NULL, tb_stream_main, &s[i]);
    }
    bufs[0] = tb_sockopt(s[0].fd, SO_SNDBUF);
    bufs[1] = tb_sockopt(s[0].fd, SO_RCVBUF);
    for (uint32_t r = 0; r < rounds; r++) {
        pthread_barrier_wait(&start);
        t0 = tb_now();
        pthread_barrier_wait(&end);
        if (r > 0) {
            times[r - 1] = tb_now() - t0;
        }
    }
    int failed = 0;
    for (int i = 0; i < nstreams; i++) {
        pthread_join(t[i], NULL);
        failed |= s[i].failed;
        close(s[i].fd);
        free(s[i].buf);
        free(s[i].in);
    }
    if (failed) {
        fprintf(stderr, "tcp_bench: a stream failed: %s\n", strerror(errno));
        exit(1);
    }
    double med = tb_median(times, iters);
    free(times);
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&end);
    return med;
}

// Median seconds of one 8-byte round trip.
static double
tb_run_ping(uint32_t iters)
{
    uint32_t rounds             = iters + TB_PING_WARMUP;
    double  *times              = calloc(iters, sizeof *times);
    char     msg[TB_PING_BYTES] = "pingpong";
    int      fd                 = tb_connect(TB_PING, rounds, TB_PING_BYTES);
    if (!times) {
        tb_die("malloc");
    }
    for (uint32_t r = 0; r < rounds; r++) {
        double t0 = tb_now();
        if (tb_write_all(fd, msg, sizeof msg) != 0
            || tb_read_all(fd, msg, sizeof msg) != 0) {
            tb_die("round trip");
        }
        if (r >= TB_PING_WARMUP) {
            times[r - TB_PING_WARMUP] = tb_now() - t0;
        }
    }
    close(fd);
    double med = tb_median(times, iters);
    free(times);
    return med;
}

static void
tb_size_str(char *out, size_t len, uint64_t b)
{
    if (b >= (1u << 20) && b % (1u << 20) == 0) {
        snprintf(out, len, "%llu MiB", (unsigned long long) (b >> 20));
    } else if (b >= 1024 && b % 1024 == 0) {
        snprintf(out, len, "%llu KiB", (unsigned long long) (b >> 10));
    } else {
        snprintf(out, len, "%llu B", (unsigned long long) b);
    }
}

static int
tb_client(uint64_t total, uint32_t iters, const char *streams, uint32_t pings)
{
    char size[32];
    tb_size_str(size, sizeof size, total);
    printf("# tcp_bench to %s:%s: %s per iteration, median of %u "
           "(1 warm-up), TCP_NODELAY, SO_SNDBUF/SO_RCVBUF %d requested\n",
        tb_host, tb_port, size, iters, tb_sockbuf);
    printf("%-34s %12s %10s\n", "what", "time", "GB/s");
    int bufs[2] = { 0, 0 };
    for (const char *p = streams; *p;) {
        char *end;
        long  n = strtol(p, &end, 10);
        if (end == p || n < 1 || n > TB_MAX_STREAMS) {
            fprintf(stderr, "tcp_bench: bad stream count in '%s'\n", streams);
            return 2;
        }
        for (int duplex = 0; duplex <= tb_duplex; duplex++) {
            double sec = tb_run_streams((int) n, total, iters, bufs, duplex);
            char   what[64];
            snprintf(what, sizeof what, "tcp %ld stream%s %s%s", n,
                n == 1 ? "" : "s", duplex ? "each way " : "", size);
            printf("%-34s %9.3f ms %10.3f\n", what, sec * 1e3,
                (double) total / sec / 1e9);
            fflush(stdout);
        }
        p = *end == ',' ? end + 1 : end;
    }
    if (pings > 0) {
        double sec = tb_run_ping(pings);
        printf("%-34s %9.1f us %10s\n", "tcp round trip 8 B", sec * 1e6, "-");
    }
    printf("# socket buffers granted: SO_SNDBUF %d, SO_RCVBUF %d\n", bufs[0],
        bufs[1]);
    return 0;
}

static int
tb_usage(void)
{
    fprintf(stderr,
        "usage: tcp_bench server [-p PORT] [-B ADDR]\n"
        "       tcp_bench client HOST [-p PORT] [-s SIZE] [-n ITERS] "
        "[-P 1,2,4] [-r ROUNDTRIPS] [-b BUF] [-d 0|1]\n");
    return 2;
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        return tb_usage();
    }
    int         server = strcmp(argv[1], "server") == 0, first = 2;
    const char *bind_addr = NULL, *streams = "1,2,4";
    uint64_t    total = 64u << 20, v;
    uint32_t    iters = 5, pings = 1000;
    if (!server) {
        if (strcmp(argv[1], "client") != 0 || argc < 3) {
            return tb_usage();
        }
        tb_host = argv[2], first = 3;
    }
    for (int i = first; i < argc; i++) {
        const char *o = argv[i], *a = i + 1 < argc ? argv[i + 1] : NULL;
        if (!a || o[0] != '-' || o[1] == '\0' || o[2] != '\0') {
            return tb_usage();
        }
        i++;
        switch (o[1]) {
            case 'p':
                tb_port = a;
                break;
            case 'B':
                bind_addr = a;
                break;
            case 'P':
                streams = a;
                break;
            case 's':
                if (tb_parse_size(a, &total) != 0 || total == 0
                    || total > (1u << 30)) {
                    return tb_usage();
                }
                break;
            case 'b':
                if (tb_parse_size(a, &v) != 0 || v > (1u << 30)) {
                    return tb_usage();
                }
                tb_sockbuf = (int) v;
                break;
            case 'd':
                tb_duplex = atoi(a) != 0;
                break;
            case 'n':
                iters = (uint32_t) strtoul(a, NULL, 10);
                break;
            case 'r':
                pings = (uint32_t) strtoul(a, NULL, 10);
                break;
            default:
                return tb_usage();
        }
    }
    if (iters == 0) {
        return tb_usage();
    }
    return server ? tb_server(bind_addr)
                  : tb_client(total, iters, streams, pings);
}
