/*
 * loadgen — the C-speed servers and clients of Sluice's end-to-end benchmark (bench.py).
 *
 * A client written in Python would measure Python: one connect+close costs it about as much CPU as
 * the kernel's whole forwarding path. So the rate tests use this program, compiled by bench.py with
 * gcc at run time (no build system, no dependency beyond libc). Each client prints one JSON object.
 *
 *   loadgen server  --tcp-close PORT --tcp-hold PORT --udp-echo PORT [--tcp-echo PORT] --ready FILE
 *       [::] dual-stack. tcp-close: accept and close at once (the server closes first, so TIME_WAIT
 *       stays on the server). tcp-hold: accept and keep open until the peer closes. udp-echo: send
 *       every datagram back to where it came from. tcp-echo: accept, write back what is read, close
 *       when the peer closes (hops.py's connect-and-request test).
 *   loadgen tcp-cc   HOST PORT SECONDS CONCURRENCY
 *       new TCP connections: keep CONCURRENCY non-blocking connects in flight; each one counts when
 *       connect succeeded and the server's FIN arrived (read() == 0) — a whole open/close cycle.
 *   loadgen udp-rr   HOST PORT SECONDS WINDOW SIZE
 *       request/response on ONE connected UDP socket, WINDOW requests of SIZE bytes in flight.
 *   loadgen udp-new  HOST PORT SECONDS CONCURRENCY SIZE
 *       request/response with a NEW socket per request: socket, connect, send, receive, close;
 *       CONCURRENCY sockets in flight.
 *   loadgen tcp-hold HOST PORT COUNT CONCURRENCY MAX_SECONDS
 *       opens COUNT TCP connections (CONCURRENCY connects in flight), prints a JSON line when done,
 *       keeps them open and idle until stdin reaches EOF (or MAX_SECONDS pass), then prints a second
 *       JSON line (how many the far end closed meanwhile) and closes them.
 *
 * Every wait is bounded: a connect or request that gets no answer is abandoned and counted.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LG_TCP_TIMEOUT 5.0  /* seconds a connect (and its close) may take before it counts as failed */
#define LG_UDP_TIMEOUT 0.2  /* seconds without any answer after which outstanding requests are lost */
#define LG_MAX_SLOTS 4096

static double lg_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void lg_die(const char *what) {
    fprintf(stderr, "loadgen: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* As many descriptors as the hard limit allows: tcp-hold and the hold server keep thousands open. */
static void lg_raise_nofile(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* The first errors seen, by errno, for the report ("ECONNREFUSED": 3). */
#define LG_MAX_ERRNOS 8
static struct { int err; long count; } lg_errors[LG_MAX_ERRNOS];

static void lg_note_error(int err) {
    for (int i = 0; i < LG_MAX_ERRNOS; i++) {
        if (lg_errors[i].count && lg_errors[i].err == err) { lg_errors[i].count++; return; }
        if (!lg_errors[i].count) { lg_errors[i].err = err; lg_errors[i].count = 1; return; }
    }
}

static void lg_print_errors(void) {
    printf("\"errors\": {");
    for (int i = 0; i < LG_MAX_ERRNOS && lg_errors[i].count; i++) {
        const char *name = strerrorname_np(lg_errors[i].err);
        printf("%s\"%s\": %ld", i ? ", " : "", name ? name : "?", lg_errors[i].count);
    }
    printf("}");
}

/* Completions per second of the run, to see stalls that an average hides. */
#define LG_MAX_SECONDS 3600
static long lg_timeline[LG_MAX_SECONDS];
static double lg_t0;

static void lg_count(double now) {
    long i = (long)(now - lg_t0);
    if (i >= 0 && i < LG_MAX_SECONDS) lg_timeline[i]++;
}

static void lg_print_timeline(double seconds) {
    long n = (long)seconds + 1;
    if (n > LG_MAX_SECONDS) n = LG_MAX_SECONDS;
    while (n > 1 && (double)(n - 1) >= seconds) n--;  /* no bucket for the last partial instant */
    printf("\"per_second\": [");
    for (long i = 0; i < n; i++) printf("%s%ld", i ? ", " : "", lg_timeline[i]);
    printf("], ");
}

static socklen_t lg_parse_addr(const char *host, const char *port, struct sockaddr_storage *ss) {
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)atoi(port));
        return sizeof *v4;
    }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)atoi(port));
        return sizeof *v6;
    }
    fprintf(stderr, "loadgen: not an IP address: %s\n", host);
    exit(2);
}

static int lg_epoll_ctl(int ep, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev = {.events = events, .data.u64 = data};
    return epoll_ctl(ep, op, fd, &ev);
}

/* ---- server ---------------------------------------------------------------------------------- */

enum { LG_TAG_CLOSE = 1, LG_TAG_HOLD = 2, LG_TAG_UDP = 3, LG_TAG_HELD = 4, LG_TAG_ECHO = 5, LG_TAG_ECHOED = 6 };

static int lg_listen(int type, int port) {
    int fd = socket(AF_INET6, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) lg_die("socket");
    int zero = 0, one = 1;
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (type == SOCK_DGRAM) {
        int buf = 4 << 20;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    }
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port), .sin6_addr = in6addr_any};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) lg_die("bind");
    if (type == SOCK_STREAM && listen(fd, 4096) < 0) lg_die("listen");
    return fd;
}

static void lg_udp_echo(int fd) {
    enum { BATCH = 64, SIZE = 2048 };
    static char bufs[BATCH][SIZE];
    static struct iovec iov[BATCH];
    static struct sockaddr_in6 peers[BATCH];
    static struct mmsghdr msgs[BATCH];
    for (;;) {
        for (int i = 0; i < BATCH; i++) {
            iov[i] = (struct iovec){.iov_base = bufs[i], .iov_len = SIZE};
            msgs[i].msg_hdr = (struct msghdr){.msg_name = &peers[i], .msg_namelen = sizeof peers[i],
                                              .msg_iov = &iov[i], .msg_iovlen = 1};
        }
        int n = recvmmsg(fd, msgs, BATCH, MSG_DONTWAIT, NULL);
        if (n <= 0) return;
        for (int i = 0; i < n; i++) iov[i].iov_len = msgs[i].msg_len;
        sendmmsg(fd, msgs, (unsigned)n, MSG_DONTWAIT);  /* a full send buffer drops: UDP may */
    }
}

static int lg_server(int argc, char **argv) {
    int close_port = 0, hold_port = 0, udp_port = 0, echo_port = 0;
    const char *ready = NULL;
    for (int i = 0; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--tcp-close")) close_port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--tcp-hold")) hold_port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--udp-echo")) udp_port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--tcp-echo")) echo_port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--ready")) ready = argv[i + 1];
    }
    if (!close_port || !hold_port || !udp_port || !ready) {
        fprintf(stderr, "usage: loadgen server --tcp-close PORT --tcp-hold PORT --udp-echo PORT [--tcp-echo PORT] "
                        "--ready FILE\n");
        return 2;
    }
    lg_raise_nofile();
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int cfd = lg_listen(SOCK_STREAM, close_port), hfd = lg_listen(SOCK_STREAM, hold_port);
    int ufd = lg_listen(SOCK_DGRAM, udp_port);
    lg_epoll_ctl(ep, EPOLL_CTL_ADD, cfd, EPOLLIN, LG_TAG_CLOSE);
    lg_epoll_ctl(ep, EPOLL_CTL_ADD, hfd, EPOLLIN, LG_TAG_HOLD);
    lg_epoll_ctl(ep, EPOLL_CTL_ADD, ufd, EPOLLIN, LG_TAG_UDP);
    int efd = echo_port ? lg_listen(SOCK_STREAM, echo_port) : -1;
    if (efd >= 0) lg_epoll_ctl(ep, EPOLL_CTL_ADD, efd, EPOLLIN, LG_TAG_ECHO);
    FILE *f = fopen(ready, "w");
    if (!f) lg_die("ready file");
    fprintf(f, "{\"pid\": %d}\n", getpid());
    fclose(f);

    struct epoll_event evs[256];
    for (;;) {
        int n = epoll_wait(ep, evs, 256, -1);
        if (n < 0 && errno != EINTR) lg_die("epoll_wait");
        for (int i = 0; i < n; i++) {
            uint64_t tag = evs[i].data.u64 & 0xff;
            if (tag == LG_TAG_CLOSE) {
                int c;
                while ((c = accept4(cfd, NULL, NULL, SOCK_CLOEXEC)) >= 0) close(c);
            } else if (tag == LG_TAG_HOLD) {
                int c;
                while ((c = accept4(hfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0)
                    lg_epoll_ctl(ep, EPOLL_CTL_ADD, c, EPOLLIN | EPOLLRDHUP, ((uint64_t)c << 8) | LG_TAG_HELD);
            } else if (tag == LG_TAG_ECHO) {
                int c;
                while ((c = accept4(efd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    int one = 1;
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    lg_epoll_ctl(ep, EPOLL_CTL_ADD, c, EPOLLIN | EPOLLRDHUP, ((uint64_t)c << 8) | LG_TAG_ECHOED);
                }
            } else if (tag == LG_TAG_ECHOED) {
                int c = (int)(evs[i].data.u64 >> 8);
                char buf[4096];
                ssize_t r = read(c, buf, sizeof buf);
                if (r > 0 && write(c, buf, (size_t)r) == r) continue;  /* small requests: one write */
                if (r == 0 || (r < 0 && errno != EAGAIN)) close(c);
            } else if (tag == LG_TAG_UDP) {
                lg_udp_echo(ufd);
            } else if (tag == LG_TAG_HELD) {
                int c = (int)(evs[i].data.u64 >> 8);
                char buf[4096];
                ssize_t r = read(c, buf, sizeof buf);
                if (r == 0 || (r < 0 && errno != EAGAIN)) close(c);  /* peer gone: drop it */
            }
        }
    }
}

/* ---- TCP clients ----------------------------------------------------------------------------- */

struct lg_slot { int fd; int state; double since; };  /* state: 0 free, 1 connecting, 2 awaiting FIN / held */

static int lg_start_connect(int ep, struct lg_slot *s, int idx, const struct sockaddr_storage *ss, socklen_t len) {
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) { lg_note_error(errno); return -1; }
    if (connect(fd, (const struct sockaddr *)ss, len) < 0 && errno != EINPROGRESS) {
        lg_note_error(errno);
        close(fd);
        return -1;
    }
    s->fd = fd;
    s->state = 1;
    s->since = lg_now();
    lg_epoll_ctl(ep, EPOLL_CTL_ADD, fd, EPOLLOUT | EPOLLIN | EPOLLRDHUP, (uint64_t)idx);
    return 0;
}

static void lg_free_slot(struct lg_slot *s) {
    close(s->fd);
    s->fd = -1;
    s->state = 0;
}

static int lg_tcp_cc(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: loadgen tcp-cc HOST PORT SECONDS CONCURRENCY\n"); return 2; }
    struct sockaddr_storage ss;
    socklen_t len = lg_parse_addr(argv[0], argv[1], &ss);
    double seconds = atof(argv[2]);
    int conc = atoi(argv[3]);
    if (conc < 1 || conc > LG_MAX_SLOTS) conc = 1;
    static struct lg_slot slots[LG_MAX_SLOTS];
    int ep = epoll_create1(EPOLL_CLOEXEC);
    long connected = 0, completed = 0, failed = 0, timeouts = 0;
    double start = lg_now(), end = start + seconds;
    lg_t0 = start;
    for (int i = 0; i < conc; i++) {
        slots[i].state = 0;
        if (lg_start_connect(ep, &slots[i], i, &ss, len) < 0) failed++;
    }
    struct epoll_event evs[LG_MAX_SLOTS];
    double now = start, last_scan = start;
    while ((now = lg_now()) < end) {
        int n = epoll_wait(ep, evs, conc, 50);
        now = lg_now();
        for (int k = 0; k < n; k++) {
            int i = (int)evs[k].data.u64;
            struct lg_slot *s = &slots[i];
            if (s->state == 1) {
                int err = 0;
                socklen_t el = sizeof err;
                getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &el);
                if (err) { lg_note_error(err); failed++; lg_free_slot(s); }
                else {
                    connected++;
                    s->state = 2;
                    lg_epoll_ctl(ep, EPOLL_CTL_MOD, s->fd, EPOLLIN | EPOLLRDHUP, (uint64_t)i);
                }
            }
            if (s->state == 2) {
                char buf[256];
                ssize_t r = read(s->fd, buf, sizeof buf);
                if (r == 0) { completed++; lg_count(now); lg_free_slot(s); }
                else if (r < 0 && errno != EAGAIN) { lg_note_error(errno); failed++; lg_free_slot(s); }
            }
        }
        if (now - last_scan > 0.1) {  /* abandon the stuck ones */
            last_scan = now;
            for (int i = 0; i < conc; i++)
                if (slots[i].state && now - slots[i].since > LG_TCP_TIMEOUT) { timeouts++; lg_free_slot(&slots[i]); }
        }
        for (int i = 0; i < conc && now < end; i++) {
            if (slots[i].state == 0 && lg_start_connect(ep, &slots[i], i, &ss, len) < 0) {
                failed++;
                usleep(1000);  /* e.g. no free port: do not spin */
            }
        }
    }
    double elapsed = lg_now() - start;
    for (int i = 0; i < conc; i++) if (slots[i].state) lg_free_slot(&slots[i]);
    printf("{\"test\": \"tcp-cc\", \"seconds\": %.3f, \"concurrency\": %d, \"connected\": %ld, \"completed\": %ld, "
           "\"failed\": %ld, \"timeouts\": %ld, \"rate\": %.1f, ", elapsed, conc, connected, completed, failed,
           timeouts, completed / elapsed);
    lg_print_timeline(elapsed);
    lg_print_errors();
    printf("}\n");
    return 0;
}

static volatile sig_atomic_t lg_stop;
static void lg_on_term(int sig) { (void)sig; lg_stop = 1; }

static int lg_tcp_hold(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: loadgen tcp-hold HOST PORT COUNT CONCURRENCY MAX_SECONDS\n"); return 2; }
    struct sockaddr_storage ss;
    socklen_t len = lg_parse_addr(argv[0], argv[1], &ss);
    long count = atol(argv[2]);
    int conc = atoi(argv[3]);
    double max_seconds = atof(argv[4]);
    if (conc < 1 || conc > LG_MAX_SLOTS) conc = 1;
    lg_raise_nofile();
    signal(SIGTERM, lg_on_term);
    struct lg_slot *slots = calloc((size_t)count, sizeof *slots);
    if (!slots) lg_die("calloc");
    int ep = epoll_create1(EPOLL_CLOEXEC);
    double start = lg_now(), deadline = start + max_seconds, last_scan = start;
    long next = 0, opened = 0, failed = 0, inflight = 0, dropped = 0;
    struct epoll_event evs[512];
    /* Phase 1: open them all. */
    while ((opened + failed < count) && lg_now() < deadline && !lg_stop) {
        while (inflight < conc && next < count) {
            if (lg_start_connect(ep, &slots[next], (int)next, &ss, len) < 0) { failed++; usleep(1000); }
            else inflight++;
            next++;
        }
        int n = epoll_wait(ep, evs, 512, 50);
        double now = lg_now();
        for (int k = 0; k < n; k++) {
            struct lg_slot *s = &slots[evs[k].data.u64];
            if (s->state == 2) {  /* an open one closed by the far end already */
                dropped++;
                lg_free_slot(s);
                continue;
            }
            if (s->state != 1) continue;
            int err = 0;
            socklen_t el = sizeof err;
            getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &el);
            inflight--;
            if (err || (evs[k].events & (EPOLLRDHUP | EPOLLHUP))) {
                lg_note_error(err ? err : ECONNRESET);
                failed++;
                epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
                lg_free_slot(s);
            } else {
                opened++;
                s->state = 2;
                lg_epoll_ctl(ep, EPOLL_CTL_MOD, s->fd, EPOLLRDHUP, evs[k].data.u64);  /* only a close wakes us */
            }
        }
        if (now - last_scan < 0.1) continue;
        last_scan = now;
        for (long i = 0; i < next; i++) {
            if (slots[i].state == 1 && now - slots[i].since > LG_TCP_TIMEOUT) {
                lg_note_error(ETIMEDOUT);
                failed++;
                inflight--;
                lg_free_slot(&slots[i]);
            }
        }
    }
    double open_seconds = lg_now() - start;
    printf("{\"test\": \"tcp-hold\", \"phase\": \"open\", \"requested\": %ld, \"opened\": %ld, \"failed\": %ld, "
           "\"dropped\": %ld, \"seconds\": %.3f, \"rate\": %.1f, ", count, opened, failed, dropped, open_seconds,
           opened / open_seconds);
    lg_print_errors();
    printf("}\n");
    fflush(stdout);
    /* Phase 2: hold, idle, until stdin closes; count flows the far end closes meanwhile. */
    struct pollfd pfd[2] = {{.fd = 0, .events = POLLIN}, {.fd = ep, .events = POLLIN}};
    while (!lg_stop && lg_now() < deadline) {
        if (poll(pfd, 2, 100) < 0 && errno != EINTR) break;
        if (pfd[0].revents) {
            char b[64];
            if (read(0, b, sizeof b) <= 0) break;
        }
        if (pfd[1].revents & POLLIN) {
            int n = epoll_wait(ep, evs, 512, 0);
            for (int k = 0; k < n; k++) {
                struct lg_slot *s = &slots[evs[k].data.u64];
                if (s->state == 2) { dropped++; epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL); lg_free_slot(s); }
            }
        }
    }
    long still = 0;
    for (long i = 0; i < count; i++) if (slots[i].state) { still += slots[i].state == 2; lg_free_slot(&slots[i]); }
    printf("{\"test\": \"tcp-hold\", \"phase\": \"close\", \"dropped\": %ld, \"still_open\": %ld, \"held_seconds\": %.3f}\n",
           dropped, still, lg_now() - start - open_seconds);
    return 0;
}

/* ---- UDP clients ----------------------------------------------------------------------------- */

static void lg_fill(char *buf, int size, uint64_t seq) {
    memset(buf, 'u', (size_t)size);
    if (size >= 8) memcpy(buf, &seq, 8);
}

static int lg_udp_rr(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: loadgen udp-rr HOST PORT SECONDS WINDOW SIZE\n"); return 2; }
    struct sockaddr_storage ss;
    socklen_t len = lg_parse_addr(argv[0], argv[1], &ss);
    double seconds = atof(argv[2]);
    int window = atoi(argv[3]), size = atoi(argv[4]);
    if (window < 1) window = 1;
    if (size < 8 || size > 1400) size = 64;
    int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) lg_die("socket");
    if (connect(fd, (struct sockaddr *)&ss, len) < 0) lg_die("connect");
    char buf[2048];
    long sent = 0, received = 0, lost = 0, inflight = 0, send_errors = 0;
    double start = lg_now(), end = start + seconds, last_rx = start;
    lg_t0 = start;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    double now;
    while ((now = lg_now()) < end) {
        while (inflight < window) {
            lg_fill(buf, size, (uint64_t)sent);
            if (send(fd, buf, (size_t)size, 0) < 0) {
                lg_note_error(errno);
                send_errors++;
                break;
            }
            sent++;
            inflight++;
        }
        int pr = poll(&pfd, 1, 10);
        now = lg_now();
        if (pr > 0) {
            ssize_t r;
            while ((r = recv(fd, buf, sizeof buf, 0)) >= 0 || errno == ECONNREFUSED) {
                if (r < 0) { lg_note_error(errno); continue; }
                received++;
                lg_count(now);
                if (inflight > 0) inflight--;
                last_rx = now;
            }
        }
        if (inflight > 0 && now - last_rx > LG_UDP_TIMEOUT) {  /* nothing for a while: call them lost */
            lost += inflight;
            inflight = 0;
            last_rx = now;
        }
    }
    double elapsed = lg_now() - start;
    printf("{\"test\": \"udp-rr\", \"seconds\": %.3f, \"window\": %d, \"size\": %d, \"sent\": %ld, "
           "\"received\": %ld, \"lost\": %ld, \"send_errors\": %ld, \"rate\": %.1f, ", elapsed, window, size, sent,
           received, lost, send_errors, received / elapsed);
    lg_print_timeline(elapsed);
    lg_print_errors();
    printf("}\n");
    return 0;
}

static int lg_udp_new(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: loadgen udp-new HOST PORT SECONDS CONCURRENCY SIZE\n"); return 2; }
    struct sockaddr_storage ss;
    socklen_t len = lg_parse_addr(argv[0], argv[1], &ss);
    double seconds = atof(argv[2]);
    int conc = atoi(argv[3]), size = atoi(argv[4]);
    if (conc < 1 || conc > LG_MAX_SLOTS) conc = 1;
    if (size < 8 || size > 1400) size = 64;
    static struct lg_slot slots[LG_MAX_SLOTS];
    int ep = epoll_create1(EPOLL_CLOEXEC);
    char buf[2048];
    long sent = 0, received = 0, lost = 0, failed = 0;
    double start = lg_now(), end = start + seconds, now, last_scan = start;
    lg_t0 = start;
    struct epoll_event evs[LG_MAX_SLOTS];
    while ((now = lg_now()) < end) {
        for (int i = 0; i < conc; i++) {
            struct lg_slot *s = &slots[i];
            if (s->state) continue;
            int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0) { lg_note_error(errno); failed++; usleep(1000); continue; }
            lg_fill(buf, size, (uint64_t)sent);
            if (connect(fd, (struct sockaddr *)&ss, len) < 0 || send(fd, buf, (size_t)size, 0) < 0) {
                lg_note_error(errno);
                failed++;
                close(fd);
                usleep(1000);
                continue;
            }
            sent++;
            *s = (struct lg_slot){.fd = fd, .state = 1, .since = now};
            lg_epoll_ctl(ep, EPOLL_CTL_ADD, fd, EPOLLIN, (uint64_t)i);
        }
        int n = epoll_wait(ep, evs, conc, 10);
        now = lg_now();
        for (int k = 0; k < n; k++) {
            struct lg_slot *s = &slots[evs[k].data.u64];
            if (!s->state) continue;
            ssize_t r = recv(s->fd, buf, sizeof buf, 0);
            if (r >= 0) { received++; lg_count(now); }
            else if (errno == EAGAIN) continue;
            else { lg_note_error(errno); failed++; }
            lg_free_slot(s);  /* close() also removes it from the epoll set */
        }
        if (now - last_scan > 0.05) {
            last_scan = now;
            for (int i = 0; i < conc; i++)
                if (slots[i].state && now - slots[i].since > LG_UDP_TIMEOUT) { lost++; lg_free_slot(&slots[i]); }
        }
    }
    double elapsed = lg_now() - start;
    for (int i = 0; i < conc; i++) if (slots[i].state) lg_free_slot(&slots[i]);
    printf("{\"test\": \"udp-new\", \"seconds\": %.3f, \"concurrency\": %d, \"size\": %d, \"sent\": %ld, "
           "\"received\": %ld, \"lost\": %ld, \"failed\": %ld, \"rate\": %.1f, ", elapsed, conc, size, sent, received,
           lost, failed, received / elapsed);
    lg_print_timeline(elapsed);
    lg_print_errors();
    printf("}\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: loadgen server|tcp-cc|tcp-hold|udp-rr|udp-new ARGS (see the comment at the top)\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    const char *cmd = argv[1];
    if (!strcmp(cmd, "server")) return lg_server(argc - 2, argv + 2);
    if (!strcmp(cmd, "tcp-cc")) return lg_tcp_cc(argc - 2, argv + 2);
    if (!strcmp(cmd, "tcp-hold")) return lg_tcp_hold(argc - 2, argv + 2);
    if (!strcmp(cmd, "udp-rr")) return lg_udp_rr(argc - 2, argv + 2);
    if (!strcmp(cmd, "udp-new")) return lg_udp_new(argc - 2, argv + 2);
    fprintf(stderr, "loadgen: unknown command %s\n", cmd);
    return 2;
}
