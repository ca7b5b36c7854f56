/*
 * forward — the floor of any proxy-style tunnel, for Sluice's end-to-end benchmark (bench.py).
 *
 * Shadowsocks, tun2socks + a SOCKS relay, and Sluice share one shape: the application's bytes cross
 * user space twice, at a client and at a relay, over three TCP connections (app → client, client →
 * relay, relay → server). Two of these processes in a chain are that shape with nothing else: no
 * TCP/IP stack in user space, no multiplexing, no allocation per packet. Whatever this chain does on a
 * machine is the most any such tunnel can do there; bench.py's "floor" and "floor-aead" modes run it.
 *
 *   forward [--cipher none|chacha20-poly1305] [--role client|relay] [--nodelay on|off] [--ready FILE]
 *           [--udp-timeout SECONDS] [--max-udp N] [--spin-us N] [--unit BYTES]
 *           LISTEN TARGET [LISTEN TARGET …]
 *
 * LISTEN and TARGET are IPv4 ADDR:PORT. For every connection accepted on a LISTEN address it connects
 * to that pair's TARGET and copies both ways until both sides have closed, passing half-closes on.
 * One thread, edge-triggered epoll, non-blocking sockets, reads of 256 KiB, read()/write() — never
 * splice(): an encrypting tunnel must have the bytes in user space, so this one does too. TCP_NODELAY
 * on every socket, as Sluice sets it on its carrier and destination sockets (`--nodelay off` leaves
 * Nagle on: with 256 KiB writes it made no difference in bulk transfer); socket buffers are the
 * kernel's autotuned defaults, as Sluice leaves them.
 *
 * With --cipher chacha20-poly1305 the connection between the two forwarders carries records shaped like
 * Sluice's (docs/protocol.md §2): a 2-byte big-endian plaintext length, the ciphertext, a 16-byte tag;
 * at most 65,519 bytes of plaintext, so a record is at most 65,537 bytes; the nonce is 4 zero bytes
 * and a per-direction counter as a little-endian u64; the length is the additional data. Sluice also
 * masks the length with one more ChaCha20 block per record and rekeys every 2^20 records; both are
 * left out (a few hundred bytes of keystream per 64 KiB), so this stays a floor. The AEAD is
 * libgcrypt's ChaCha20 in Poly1305 mode, one handle per direction with setiv, authenticate,
 * encrypt/decrypt and gettag/checktag per record: the calls Sluice's records make.
 *   --role client  the accepted side is the application: seal what it sends, open what TARGET sends.
 *   --role relay   the accepted side is the client forwarder: open what it sends, seal what TARGET sends.
 * THE KEY IS A FIXED CONSTANT: this measures what the cipher costs, it protects nothing.
 *
 * UDP: a LISTEN written udp:ADDR:PORT forwards datagrams instead. For each source address seen on it
 * the forwarder keeps an association: a UDP socket of its own, connected to TARGET, made on the first
 * datagram (the per-new-socket cost any proxy pays, as Sluice's relay does for a UDP mapping). What
 * arrives on LISTEN from that source goes out of the association's socket; what the association's
 * socket receives goes back from LISTEN to that source. So forwarder A (client namespace, udp:127.0.0.1:
 * PORT → B) keeps one association per application socket, and B (relay namespace → the server) one per
 * association of A. An association idle for --udp-timeout seconds (default 60) is closed, and at
 * --max-udp associations (default 1024) a new one first closes the one idle longest: Sluice's
 * defaults for its UDP mappings (docs/configuration.md), so a test that opens sockets faster than they
 * expire pays for a close as Sluice does. With --cipher chacha20-poly1305 each datagram between A and B
 * is sealed on its own: an 8-byte little-endian counter (per association and direction, sent in the
 * clear and used as the additional data), the ciphertext, a 16-byte tag; the nonce is the counter after
 * a byte naming the direction. Left out: a replay window (a datagram is opened whatever its counter),
 * any handshake or per-association key, fragmentation (a datagram that with 24 bytes more does not fit
 * in 65,507 is dropped), and a queue for a send that would block (the datagram is dropped, as a full
 * socket buffer drops it): a floor, not a tunnel.
 *
 * --spin-us N (default 0: off) makes the loop poll instead of sleep: after a wake-up that brought events,
 * it calls epoll_wait with a timeout of 0 until N microseconds have passed since the last event, and only
 * then sleeps in epoll_wait again. A packet that arrives meanwhile is picked up without a wake-up of the
 * process, so the difference it makes (bench.py --floor-arg=--spin-us --floor-arg=N) is what busy
 * polling takes off a round trip on this machine, at the price of a CPU held busy for N µs after every
 * burst of traffic. Neither Sluice nor the floor modes poll unless told to (Sluice: --busy-poll). Only
 * events start a spin: the UDP sweep's wake-up brings none and does not, so an idle forwarder stays
 * asleep.
 *
 * --unit BYTES (default and most 262144) caps each read() and write() of plain bytes: the application's
 * socket at A, the server's at B (with --cipher none, every socket's). A TUN device hands a tunnel at
 * most 64 KiB a read and takes at most 64 KiB a write (its tso_max_size, which `ip link` cannot raise),
 * so a tunnel that terminates TCP behind one moves data in units of 64 KiB at the most; bench.py's
 * "floor-aead-64k" runs this chain with --unit 65536 to show what that unit alone costs
 * (Benchmarks/README.md, "The 64 KiB floor").
 *
 * --ready FILE is written once every LISTEN socket listens. A record or datagram that fails
 * authentication, or any unexpected error, ends the process with a message: a broken forwarder must
 * not yield a figure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <gcrypt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FW_READ_SIZE (256 * 1024)
#define FW_MAX_PLAINTEXT 65519 /* Sluice's RecordFormat.maxPlaintextLength */
#define FW_LEN_SIZE 2
#define FW_TAG_SIZE 16
#define FW_OVERHEAD (FW_LEN_SIZE + FW_TAG_SIZE)
#define FW_MAX_RECORD (FW_MAX_PLAINTEXT + FW_OVERHEAD)
/* Sealing 256 KiB makes at most 5 records: the output needs room for their overhead. */
#define FW_SEAL_OUT (FW_READ_SIZE + (FW_READ_SIZE / FW_MAX_PLAINTEXT + 1) * FW_OVERHEAD)
/* Opening reads up to 256 KiB after a partial record of less than one record; the plaintext is smaller. */
#define FW_OPEN_IN (FW_READ_SIZE + FW_MAX_RECORD)
#define FW_MAX_LISTEN 16

_Static_assert(FW_MAX_RECORD <= 65537, "a record must fit Sluice's 65,537-byte limit");

enum fw_xform { FW_COPY, FW_SEAL, FW_OPEN };

/* One direction of one connection: bytes read from `src`, transformed, written to `dst`. */
struct fw_dir {
    int src, dst;
    enum fw_xform xform;
    uint64_t counter;         /* the next record's nonce */
    gcry_cipher_hd_t aead;    /* FW_SEAL, FW_OPEN: ChaCha20-Poly1305 under fw_key */
    unsigned char *in;        /* FW_OPEN: records read, not yet opened (in[0..in_len)) */
    size_t in_len;
    unsigned char *out;       /* bytes to write: out[out_off..out_len) */
    size_t out_off, out_len;
    int readable, writable;   /* edge-triggered: set by an event, cleared by EAGAIN or a short read */
    int eof;                  /* src said FIN: shut dst's write side once out is drained */
    int done;                 /* FIN passed on */
};

struct fw_conn {
    int a, b;                 /* a: accepted; b: connected to the target */
    int connecting;           /* b's connect not yet finished */
    int closed;               /* sockets closed; freed after the current batch of events */
    struct fw_conn *next_closed;
    struct fw_dir up, down;   /* up: a → b; down: b → a */
};

/* What an epoll event points at: a listener, one socket of a connection, or an association's socket. */
enum { FW_REF_LISTEN, FW_REF_A, FW_REF_B, FW_REF_UDP_LISTEN, FW_REF_UDP_ASSOC };
struct fw_assoc;
struct fw_ref {
    int kind;                 /* FW_REF_* */
    int fd, index;            /* a listener's socket and pair index */
    struct fw_conn *conn;
    struct fw_assoc *assoc;
};

static enum { FW_NONE, FW_CHACHA } fw_cipher = FW_NONE;
static enum { FW_ROLE_NONE, FW_ROLE_CLIENT, FW_ROLE_RELAY } fw_role = FW_ROLE_NONE;
static struct sockaddr_in fw_targets[FW_MAX_LISTEN];
static struct fw_ref fw_listen_refs[FW_MAX_LISTEN];
static int fw_ep;
static int fw_udp_pairs;  /* how many LISTEN addresses are UDP: the idle sweep runs only then */
static int fw_nodelay_on = 1;
static double fw_spin = 0;  /* --spin-us, in seconds; 0: sleep in epoll_wait as soon as nothing is ready */
static size_t fw_unit = FW_READ_SIZE;  /* --unit: the most one read() or write() of plain bytes moves */

/* A fixed key: see the comment at the top. */
static const unsigned char fw_key[32] = "sluice-floor-benchmark-fixedkey";

static void fw_die(const char *what) {
    fprintf(stderr, "forward: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void fw_fail(const char *what) {
    fprintf(stderr, "forward: %s\n", what);
    exit(1);
}

static int fw_parse(const char *text, struct sockaddr_in *sa) {
    char host[64];
    const char *colon = strrchr(text, ':');
    if (!colon || (size_t)(colon - text) >= sizeof host) return -1;
    memcpy(host, text, colon - text);
    host[colon - text] = 0;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)atoi(colon + 1));
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static void fw_nodelay(int fd) {
    if (fw_nodelay_on) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &fw_nodelay_on, sizeof fw_nodelay_on);
}

static void fw_nonce(unsigned char nonce[12], uint64_t counter) {
    memset(nonce, 0, 4);
    for (int i = 0; i < 8; i++) nonce[4 + i] = (unsigned char)(counter >> (8 * i));
}

static void fw_dir_init(struct fw_dir *d, int src, int dst, enum fw_xform x) {
    memset(d, 0, sizeof *d);
    d->src = src;
    d->dst = dst;
    d->xform = x;
    d->out = malloc(x == FW_SEAL ? FW_SEAL_OUT : x == FW_OPEN ? FW_OPEN_IN : FW_READ_SIZE);
    if (x == FW_OPEN) d->in = malloc(FW_OPEN_IN);
    if (!d->out || (x == FW_OPEN && !d->in)) fw_fail("out of memory");
    if (x != FW_SEAL && x != FW_OPEN) return;
    if (gcry_cipher_open(&d->aead, GCRY_CIPHER_CHACHA20, GCRY_CIPHER_MODE_POLY1305, 0) != 0 ||
        gcry_cipher_setkey(d->aead, fw_key, sizeof fw_key) != 0)
        fw_fail("libgcrypt has no ChaCha20-Poly1305");
}

static void fw_dir_free(struct fw_dir *d) {
    free(d->out);
    free(d->in);
    gcry_cipher_close(d->aead);
}

/* Seals `n` plaintext bytes (read into a scratch area) as records into d->out. */
static void fw_seal(struct fw_dir *d, const unsigned char *plain, size_t n) {
    unsigned char *o = d->out;
    while (n > 0) {
        size_t len = n < FW_MAX_PLAINTEXT ? n : FW_MAX_PLAINTEXT;
        unsigned char nonce[12];
        fw_nonce(nonce, d->counter++);
        o[0] = (unsigned char)(len >> 8);
        o[1] = (unsigned char)len;
        if (gcry_cipher_setiv(d->aead, nonce, sizeof nonce) != 0 || gcry_cipher_authenticate(d->aead, o, FW_LEN_SIZE) != 0 ||
            gcry_cipher_encrypt(d->aead, o + FW_LEN_SIZE, len, plain, len) != 0 ||
            gcry_cipher_gettag(d->aead, o + FW_LEN_SIZE + len, FW_TAG_SIZE) != 0)
            fw_fail("libgcrypt failed to seal a record");
        o += len + FW_OVERHEAD;
        plain += len;
        n -= len;
    }
    d->out_off = 0;
    d->out_len = (size_t)(o - d->out);
}

/* Opens every whole record in d->in into d->out; keeps a partial one at the front of d->in. */
static void fw_open(struct fw_dir *d) {
    size_t pos = 0, olen = 0;
    while (d->in_len - pos >= FW_LEN_SIZE) {
        unsigned char *r = d->in + pos;
        size_t len = ((size_t)r[0] << 8) | r[1];
        if (len == 0 || len > FW_MAX_PLAINTEXT) fw_fail("a record with an impossible length: the stream is corrupt");
        if (d->in_len - pos < len + FW_OVERHEAD) break;
        unsigned char nonce[12];
        fw_nonce(nonce, d->counter++);
        if (gcry_cipher_setiv(d->aead, nonce, sizeof nonce) != 0 || gcry_cipher_authenticate(d->aead, r, FW_LEN_SIZE) != 0 ||
            gcry_cipher_decrypt(d->aead, d->out + olen, len, r + FW_LEN_SIZE, len) != 0)
            fw_fail("libgcrypt failed to open a record");
        if (gcry_cipher_checktag(d->aead, r + FW_LEN_SIZE + len, FW_TAG_SIZE) != 0)
            fw_fail("a record failed authentication: the stream is corrupt");
        olen += len;
        pos += len + FW_OVERHEAD;
    }
    if (pos > 0) {
        memmove(d->in, d->in + pos, d->in_len - pos);
        d->in_len -= pos;
    }
    d->out_off = 0;
    d->out_len = olen;
}

/*
 * Moves what it can in one direction: write out what is pending; when nothing is, read and transform.
 * Stops when the socket it needs says EAGAIN (the next edge wakes it). Returns -1 when the
 * connection must close (an error).
 */
static int fw_pump(struct fw_dir *d) {
    static unsigned char scratch[FW_READ_SIZE];
    for (;;) {
        if (d->out_off < d->out_len) {
            if (!d->writable) return 0;
            size_t len = d->out_len - d->out_off;
            if (d->xform != FW_SEAL && len > fw_unit) len = fw_unit;  /* plain bytes: --unit */
            ssize_t n = write(d->dst, d->out + d->out_off, len);
            if (n < 0) {
                if (errno == EAGAIN) { d->writable = 0; return 0; }
                if (errno == EINTR) continue;
                return -1;
            }
            d->out_off += (size_t)n;
            continue;
        }
        if (d->eof) {
            if (!d->done) {
                if (d->xform == FW_OPEN && d->in_len) fw_fail("the stream ended inside a record");
                shutdown(d->dst, SHUT_WR);
                d->done = 1;
            }
            return 0;
        }
        if (!d->readable) return 0;
        unsigned char *buf;
        size_t room;
        switch (d->xform) {
        case FW_COPY: buf = d->out; room = fw_unit; break;
        case FW_SEAL: buf = scratch; room = fw_unit; break;
        default: buf = d->in + d->in_len; room = FW_OPEN_IN - d->in_len; break;
        }
        ssize_t n = read(d->src, buf, room);
        if (n < 0) {
            if (errno == EAGAIN) { d->readable = 0; return 0; }
            if (errno == EINTR) continue;
            return -1;
        }
        if (n == 0) { d->eof = 1; continue; }
        /* A short read does not prove the queue empty: read() returns early while segments wait in
         * the socket's backlog, and their wake-up can be lost to us. So only EAGAIN clears `readable`. */
        switch (d->xform) {
        case FW_COPY: d->out_off = 0; d->out_len = (size_t)n; break;
        case FW_SEAL: fw_seal(d, scratch, (size_t)n); break;
        default: d->in_len += (size_t)n; fw_open(d); break;
        }
    }
}

/* Connections closed during the current batch of events: a later event of the batch may name them. */
static struct fw_conn *fw_closed;

static void fw_close(struct fw_conn *c) {
    close(c->a);  /* closing removes them from the epoll set */
    close(c->b);
    c->closed = 1;
    c->next_closed = fw_closed;
    fw_closed = c;
}

static void fw_free_closed(void) {
    while (fw_closed) {
        struct fw_conn *c = fw_closed;
        fw_closed = c->next_closed;
        fw_dir_free(&c->up);
        fw_dir_free(&c->down);
        free(c);  /* the two fw_refs live right after it: see fw_accept */
    }
}

static void fw_add(int fd, struct fw_ref *ref) {
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = ref};
    if (epoll_ctl(fw_ep, EPOLL_CTL_ADD, fd, &ev) != 0) fw_die("epoll_ctl");
}

static void fw_accept(int lfd, int index) {
    for (;;) {
        int a = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (a < 0) {
            if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) return;
            fw_die("accept4");
        }
        int b = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (b < 0) fw_die("socket");
        fw_nodelay(a);
        fw_nodelay(b);
        if (connect(b, (struct sockaddr *)&fw_targets[index], sizeof fw_targets[index]) != 0 && errno != EINPROGRESS) {
            close(a);
            close(b);
            continue;
        }
        /* The connection and its two epoll references in one allocation. */
        struct fw_conn *c = calloc(1, sizeof *c + 2 * sizeof(struct fw_ref));
        if (!c) fw_fail("out of memory");
        struct fw_ref *refs = (struct fw_ref *)(c + 1);
        c->a = a;
        c->b = b;
        c->connecting = 1;
        enum fw_xform up = FW_COPY, down = FW_COPY;
        if (fw_cipher == FW_CHACHA) {
            up = fw_role == FW_ROLE_CLIENT ? FW_SEAL : FW_OPEN;
            down = fw_role == FW_ROLE_CLIENT ? FW_OPEN : FW_SEAL;
        }
        fw_dir_init(&c->up, a, b, up);
        fw_dir_init(&c->down, b, a, down);
        refs[0] = (struct fw_ref){.kind = FW_REF_A, .conn = c};
        refs[1] = (struct fw_ref){.kind = FW_REF_B, .conn = c};
        fw_add(a, &refs[0]);
        fw_add(b, &refs[1]);
    }
}

static void fw_event(struct fw_ref *ref, uint32_t events) {
    struct fw_conn *c = ref->conn;
    if (c->closed) return;
    if (ref->kind == FW_REF_B && c->connecting && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->b, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) { fw_close(c); return; }  /* the target refused: the app sees its connection close */
        c->connecting = 0;
    }
    uint32_t in = EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR, out = EPOLLOUT | EPOLLHUP | EPOLLERR;
    if (ref->kind == FW_REF_A) {
        if (events & in) c->up.readable = 1;
        if (events & out) c->down.writable = 1;
    } else {
        if (events & in) c->down.readable = 1;
        if (events & out) c->up.writable = 1;
    }
    if (c->connecting) return;  /* nothing moves before the target answered */
    if (fw_pump(&c->up) < 0 || fw_pump(&c->down) < 0 || (c->up.done && c->down.done)) fw_close(c);
}

/* -- UDP: associations ------------------------------------------------------------------------ */

#define FW_UDP_MAX_PAYLOAD 65507 /* the most an IPv4 UDP datagram carries */
#define FW_UDP_COUNTER_SIZE 8
#define FW_UDP_OVERHEAD (FW_UDP_COUNTER_SIZE + FW_TAG_SIZE)
#define FW_UDP_BUCKETS 4096      /* a power of two, a few times the default --max-udp */

/* One source address seen on a UDP LISTEN, and the socket of its own that talks to the pair's TARGET. */
struct fw_assoc {
    struct sockaddr_in peer;          /* where answers go back to, from the LISTEN socket */
    int index;                        /* the pair */
    int fd;                           /* connected to fw_targets[index]; -1 once closed */
    uint64_t sealed;                  /* the next counter this side seals with */
    double last;                      /* when a datagram last passed, either way */
    struct fw_assoc *hnext;           /* the hash bucket's chain */
    struct fw_assoc *older, *newer;   /* the idle order: fw_udp_oldest … fw_udp_newest */
    struct fw_assoc *next_closed;
    struct fw_ref ref;
};

static double fw_udp_timeout = 60;    /* Sluice's --udp-timeout default */
static int fw_udp_max = 1024;         /* Sluice's --max-udp-mappings default */
static int fw_udp_count;
static struct fw_assoc *fw_udp_table[FW_UDP_BUCKETS];
static struct fw_assoc *fw_udp_oldest, *fw_udp_newest;
static struct fw_assoc *fw_udp_closed;  /* closed during the current batch of events */
static gcry_cipher_hd_t fw_udp_aead;    /* one handle: the nonce is set per datagram */
static unsigned char fw_udp_in[FW_UDP_MAX_PAYLOAD + 1], fw_udp_out[FW_UDP_MAX_PAYLOAD + 1];

static double fw_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fw_udp_cipher_init(void) {
    if (gcry_cipher_open(&fw_udp_aead, GCRY_CIPHER_CHACHA20, GCRY_CIPHER_MODE_POLY1305, 0) != 0 ||
        gcry_cipher_setkey(fw_udp_aead, fw_key, sizeof fw_key) != 0)
        fw_fail("libgcrypt has no ChaCha20-Poly1305");
}

static unsigned fw_udp_hash(const struct sockaddr_in *sa, int index) {
    uint32_t h = sa->sin_addr.s_addr ^ ((uint32_t)sa->sin_port << 16) ^ (uint32_t)index;
    return (h * 2654435761u) >> 20 & (FW_UDP_BUCKETS - 1);
}

/* The idle order: unlink from it, or (re)place as the newest. */
static void fw_udp_unlink(struct fw_assoc *a) {
    if (a->older) a->older->newer = a->newer; else fw_udp_oldest = a->newer;
    if (a->newer) a->newer->older = a->older; else fw_udp_newest = a->older;
    a->older = a->newer = NULL;
}

static void fw_udp_touch(struct fw_assoc *a, double now) {
    a->last = now;
    if (fw_udp_newest == a) return;
    fw_udp_unlink(a);
    a->older = fw_udp_newest;
    if (fw_udp_newest) fw_udp_newest->newer = a; else fw_udp_oldest = a;
    fw_udp_newest = a;
}

/* Closes an association's socket and forgets it; freed after the current batch (a later event may
 * name it). */
static void fw_udp_close(struct fw_assoc *a) {
    struct fw_assoc **p = &fw_udp_table[fw_udp_hash(&a->peer, a->index)];
    while (*p != a) p = &(*p)->hnext;
    *p = a->hnext;
    fw_udp_unlink(a);
    close(a->fd);
    a->fd = -1;
    a->next_closed = fw_udp_closed;
    fw_udp_closed = a;
    fw_udp_count--;
}

/* Closes what was idle too long, and frees what was closed. */
static void fw_udp_sweep(void) {
    double now = fw_now();
    while (fw_udp_oldest && now - fw_udp_oldest->last > fw_udp_timeout) fw_udp_close(fw_udp_oldest);
    while (fw_udp_closed) {
        struct fw_assoc *a = fw_udp_closed;
        fw_udp_closed = a->next_closed;
        free(a);
    }
}

static struct fw_assoc *fw_udp_find(const struct sockaddr_in *peer, int index) {
    for (struct fw_assoc *a = fw_udp_table[fw_udp_hash(peer, index)]; a; a = a->hnext)
        if (a->index == index && a->peer.sin_addr.s_addr == peer->sin_addr.s_addr && a->peer.sin_port == peer->sin_port)
            return a;
    return NULL;
}

/* A new association for `peer`: its own socket, connected to the pair's TARGET. NULL when the
 * socket cannot be made (out of descriptors or ports): the datagram is dropped. */
static struct fw_assoc *fw_udp_open(const struct sockaddr_in *peer, int index) {
    if (fw_udp_count >= fw_udp_max) fw_udp_close(fw_udp_oldest);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return NULL;
    if (connect(fd, (struct sockaddr *)&fw_targets[index], sizeof fw_targets[index]) != 0) {
        close(fd);
        return NULL;
    }
    struct fw_assoc *a = calloc(1, sizeof *a);
    if (!a) fw_fail("out of memory");
    a->peer = *peer;
    a->index = index;
    a->fd = fd;
    a->ref = (struct fw_ref){.kind = FW_REF_UDP_ASSOC, .fd = fd, .index = index, .assoc = a};
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.ptr = &a->ref};
    if (epoll_ctl(fw_ep, EPOLL_CTL_ADD, fd, &ev) != 0) fw_die("epoll_ctl");
    unsigned h = fw_udp_hash(peer, index);
    a->hnext = fw_udp_table[h];
    fw_udp_table[h] = a;
    fw_udp_count++;
    a->older = fw_udp_newest;  /* the newest in the idle order */
    if (fw_udp_newest) fw_udp_newest->newer = a; else fw_udp_oldest = a;
    fw_udp_newest = a;
    return a;
}

/* Seals n bytes of fw_udp_in into fw_udp_out; returns the sealed length. */
static size_t fw_udp_seal(struct fw_assoc *a, int direction, size_t n) {
    uint64_t counter = a->sealed++;
    unsigned char nonce[12];
    fw_nonce(nonce, counter);
    nonce[0] = (unsigned char)direction;
    memcpy(fw_udp_out, nonce + 4, FW_UDP_COUNTER_SIZE);
    if (gcry_cipher_setiv(fw_udp_aead, nonce, sizeof nonce) != 0 ||
        gcry_cipher_authenticate(fw_udp_aead, fw_udp_out, FW_UDP_COUNTER_SIZE) != 0 ||
        gcry_cipher_encrypt(fw_udp_aead, fw_udp_out + FW_UDP_COUNTER_SIZE, n, fw_udp_in, n) != 0 ||
        gcry_cipher_gettag(fw_udp_aead, fw_udp_out + FW_UDP_COUNTER_SIZE + n, FW_TAG_SIZE) != 0)
        fw_fail("libgcrypt failed to seal a datagram");
    return n + FW_UDP_OVERHEAD;
}

/* Opens a sealed datagram of n bytes in fw_udp_in into fw_udp_out; returns the plaintext length. */
static size_t fw_udp_open_sealed(int direction, size_t n) {
    if (n < FW_UDP_OVERHEAD) fw_fail("a sealed datagram shorter than its counter and tag: the peer is not a sealing forwarder");
    size_t len = n - FW_UDP_OVERHEAD;
    unsigned char nonce[12] = {(unsigned char)direction};
    memcpy(nonce + 4, fw_udp_in, FW_UDP_COUNTER_SIZE);
    if (gcry_cipher_setiv(fw_udp_aead, nonce, sizeof nonce) != 0 ||
        gcry_cipher_authenticate(fw_udp_aead, fw_udp_in, FW_UDP_COUNTER_SIZE) != 0 ||
        gcry_cipher_decrypt(fw_udp_aead, fw_udp_out, len, fw_udp_in + FW_UDP_COUNTER_SIZE, len) != 0)
        fw_fail("libgcrypt failed to open a datagram");
    if (gcry_cipher_checktag(fw_udp_aead, fw_udp_in + FW_UDP_COUNTER_SIZE + len, FW_TAG_SIZE) != 0)
        fw_fail("a datagram failed authentication: the peer seals differently or not at all");
    return len;
}

/* The datagram in fw_udp_in, n bytes, as it must leave this forwarder: sealed toward the other
 * forwarder, opened from it, or as it came; NULL when it is too large to seal (dropped). `up`: it
 * travels from the application toward the server. */
static const unsigned char *fw_udp_transform(struct fw_assoc *a, int up, size_t n, size_t *out_len) {
    if (fw_cipher != FW_CHACHA) {
        *out_len = n;
        return fw_udp_in;
    }
    int direction = up ? 0 : 1;
    if ((fw_role == FW_ROLE_CLIENT) == up) {  /* A seals what goes up, B what comes down */
        if (n + FW_UDP_OVERHEAD > FW_UDP_MAX_PAYLOAD) return NULL;
        *out_len = fw_udp_seal(a, direction, n);
    } else {
        *out_len = fw_udp_open_sealed(direction, n);
    }
    return fw_udp_out;
}

/* Errors a UDP receive or send may meet without anything being wrong here: no room now (the datagram
 * is dropped, as a full socket buffer drops it), or an ICMP error from an earlier datagram. */
static int fw_udp_transient(int err) {
    return err == EAGAIN || err == ENOBUFS || err == ECONNREFUSED || err == EHOSTUNREACH ||
           err == ENETUNREACH || err == EINTR;
}

/* Datagrams from applications (A) or from forwarder A (B) on a UDP LISTEN socket: each goes out of
 * its source's association, made on its first datagram. */
static void fw_udp_from_listen(int lfd, int index) {
    for (;;) {
        struct sockaddr_in peer;
        socklen_t plen = sizeof peer;
        ssize_t n = recvfrom(lfd, fw_udp_in, sizeof fw_udp_in, 0, (struct sockaddr *)&peer, &plen);
        if (n < 0) {
            if (errno == EAGAIN) return;
            if (fw_udp_transient(errno)) continue;
            fw_die("recvfrom");
        }
        struct fw_assoc *a = fw_udp_find(&peer, index);
        if (!a && !(a = fw_udp_open(&peer, index))) continue;
        fw_udp_touch(a, fw_now());
        size_t len;
        const unsigned char *out = fw_udp_transform(a, 1, (size_t)n, &len);
        if (!out) continue;
        if (send(a->fd, out, len, 0) < 0 && !fw_udp_transient(errno)) fw_die("send");
    }
}

/* Answers on an association's socket: back from the LISTEN socket to the association's source. */
static void fw_udp_from_target(struct fw_assoc *a) {
    while (a->fd >= 0) {
        ssize_t n = recv(a->fd, fw_udp_in, sizeof fw_udp_in, 0);
        if (n < 0) {
            if (errno == EAGAIN) return;
            if (fw_udp_transient(errno)) continue;
            fw_die("recv");
        }
        fw_udp_touch(a, fw_now());
        size_t len;
        const unsigned char *out = fw_udp_transform(a, 0, (size_t)n, &len);
        if (!out) continue;
        if (sendto(fw_listen_refs[a->index].fd, out, len, 0, (struct sockaddr *)&a->peer, sizeof a->peer) < 0 &&
            !fw_udp_transient(errno))
            fw_die("sendto");
    }
}

/* SIGTERM is how bench.py stops a forwarder: a normal end, exit 0. */
static void fw_on_term(int sig) {
    (void)sig;
    _exit(0);
}

static void fw_usage(void) {
    fprintf(stderr, "usage: forward [--cipher none|chacha20-poly1305] [--role client|relay] [--nodelay on|off] [--ready FILE] "
                    "[--udp-timeout SECONDS] [--max-udp N] [--spin-us N] [--unit BYTES] LISTEN TARGET [LISTEN TARGET ...]   "
                    "(ADDR:PORT, IPv4; a LISTEN written udp:ADDR:PORT forwards UDP)\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *ready = NULL;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (i + 1 >= argc) fw_usage();
        if (strcmp(argv[i], "--cipher") == 0) {
            const char *v = argv[++i];
            if (strcmp(v, "none") == 0) fw_cipher = FW_NONE;
            else if (strcmp(v, "chacha20-poly1305") == 0) fw_cipher = FW_CHACHA;
            else fw_usage();
        } else if (strcmp(argv[i], "--role") == 0) {
            const char *v = argv[++i];
            if (strcmp(v, "client") == 0) fw_role = FW_ROLE_CLIENT;
            else if (strcmp(v, "relay") == 0) fw_role = FW_ROLE_RELAY;
            else fw_usage();
        } else if (strcmp(argv[i], "--nodelay") == 0) {
            fw_nodelay_on = strcmp(argv[++i], "off") != 0;
        } else if (strcmp(argv[i], "--ready") == 0) {
            ready = argv[++i];
        } else if (strcmp(argv[i], "--udp-timeout") == 0) {
            fw_udp_timeout = atof(argv[++i]);
            if (fw_udp_timeout <= 0) fw_usage();
        } else if (strcmp(argv[i], "--max-udp") == 0) {
            fw_udp_max = atoi(argv[++i]);
            if (fw_udp_max < 1) fw_usage();
        } else if (strcmp(argv[i], "--spin-us") == 0) {
            char *end;
            long us = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end || us < 0) fw_usage();
            fw_spin = us / 1e6;
        } else if (strcmp(argv[i], "--unit") == 0) {
            char *end;
            long bytes = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end || bytes < 1 || bytes > FW_READ_SIZE) fw_usage();
            fw_unit = (size_t)bytes;
        } else {
            fw_usage();
        }
    }
    int pairs = (argc - i) / 2;
    if (pairs < 1 || pairs > FW_MAX_LISTEN || (argc - i) % 2) fw_usage();
    if (fw_cipher == FW_CHACHA && fw_role == FW_ROLE_NONE) {
        fprintf(stderr, "forward: --cipher chacha20-poly1305 needs --role client or --role relay\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    /* libgcrypt's manual, "Initializing the library": version check, no secure memory, done. */
    if (!gcry_check_version(GCRYPT_VERSION)) fw_fail("libgcrypt is older than its header");
    gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
    gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
    signal(SIGTERM, fw_on_term);
    fw_ep = epoll_create1(EPOLL_CLOEXEC);
    if (fw_ep < 0) fw_die("epoll_create1");
    for (int p = 0; p < pairs; p++) {
        struct sockaddr_in listen_at;
        const char *at = argv[i + 2 * p];
        int udp = strncmp(at, "udp:", 4) == 0;
        if (fw_parse(at + (udp ? 4 : 0), &listen_at) || fw_parse(argv[i + 2 * p + 1], &fw_targets[p])) fw_usage();
        int lfd = socket(AF_INET, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int one = 1;
        if (lfd < 0) fw_die("socket");
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(lfd, (struct sockaddr *)&listen_at, sizeof listen_at) != 0) fw_die(at);
        if (!udp && listen(lfd, 1024) != 0) fw_die("listen");
        fw_listen_refs[p] = (struct fw_ref){.kind = udp ? FW_REF_UDP_LISTEN : FW_REF_LISTEN, .fd = lfd, .index = p};
        struct epoll_event ev = {.events = EPOLLIN | (udp ? EPOLLET : 0), .data.ptr = &fw_listen_refs[p]};
        if (epoll_ctl(fw_ep, EPOLL_CTL_ADD, lfd, &ev) != 0) fw_die("epoll_ctl");
        fw_udp_pairs += udp;
    }
    if (fw_udp_pairs && fw_cipher == FW_CHACHA) fw_udp_cipher_init();
    if (ready) {
        FILE *f = fopen(ready, "w");
        if (!f) fw_die(ready);
        fprintf(f, "{\"pid\": %d}\n", (int)getpid());
        fclose(f);
    }
    struct epoll_event events[64];
    double spin_until = 0;  /* --spin-us: poll without sleeping until then; 0 when not spinning */
    for (;;) {
        /* With UDP pairs, wake at least once a second to close idle associations. */
        int timeout = fw_udp_pairs ? 1000 : -1;
        if (spin_until > 0) {
            if (fw_now() < spin_until) timeout = 0;
            else spin_until = 0;
        }
        int n = epoll_wait(fw_ep, events, 64, timeout);
        if (n < 0) {
            if (errno == EINTR) continue;
            fw_die("epoll_wait");
        }
        if (n > 0 && fw_spin > 0) spin_until = fw_now() + fw_spin;
        for (int k = 0; k < n; k++) {
            struct fw_ref *ref = events[k].data.ptr;
            switch (ref->kind) {
            case FW_REF_LISTEN: fw_accept(ref->fd, ref->index); break;
            case FW_REF_UDP_LISTEN: fw_udp_from_listen(ref->fd, ref->index); break;
            case FW_REF_UDP_ASSOC: fw_udp_from_target(ref->assoc); break;
            default: fw_event(ref, events[k].events); break;
            }
        }
        fw_free_closed();
        if (fw_udp_pairs) fw_udp_sweep();
    }
}
