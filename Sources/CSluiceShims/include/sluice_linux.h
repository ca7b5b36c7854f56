// Linux headers that Swift's Glibc module does not export (sys/epoll.h, eventfd, timerfd),
// re-exported here so the event loop can use them.
#pragma once
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <unistd.h>
#include <pthread.h>


/// EPOLL* constants are enum members or macros with casts Swift imports inconsistently; these are plain.
static inline uint32_t sluice_epollin(void) { return EPOLLIN; }
static inline uint32_t sluice_epollout(void) { return EPOLLOUT; }
static inline uint32_t sluice_epollerr(void) { return EPOLLERR; }
static inline uint32_t sluice_epollhup(void) { return EPOLLHUP; }
static inline uint32_t sluice_epollrdhup(void) { return EPOLLRDHUP; }
static inline uint32_t sluice_epollet(void) { return EPOLLET; }

/// epoll_event is packed on x86_64; Swift cannot always lay it out, so the loop goes through these.
static inline int sluice_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev = { .events = events, .data = { .u64 = data } };
    return epoll_ctl(epfd, op, fd, &ev);
}
typedef struct { uint32_t events; uint64_t data; } sluice_epoll_result;
/// Waits like epoll_wait and unpacks the results into an array Swift can read.
static inline int sluice_epoll_wait(int epfd, sluice_epoll_result *out, int max, int timeout_ms) {
    struct epoll_event evs[256];
    if (max > 256) max = 256;
    int n = epoll_wait(epfd, evs, max, timeout_ms);
    for (int i = 0; i < n; i++) { out[i].events = evs[i].events; out[i].data = evs[i].data.u64; }
    return n;
}

/// accept4 is a GNU extension that Swift's Glibc module does not export. Defined in linux.c, which
/// alone sets _GNU_SOURCE: defining it in a header would change system types (fd_set) seen by other
/// modules and break the module cache.
int sluice_accept_nonblocking(int fd, struct sockaddr *addr, socklen_t *len);

/// One entry of a UDP socket's error queue (IP_RECVERR / IPV6_RECVERR): the errno the ICMP error
/// maps to, ee_info (the path MTU for EMSGSIZE), and the destination of the datagram that failed.
/// The cmsg macros that walk the queue's control data are not importable into Swift.
typedef struct {
    int error;
    uint32_t info;
    struct sockaddr_storage offender_destination;
} sluice_udp_error;

/// Enables the error queue on a UDP socket of `family` (AF_INET or AF_INET6; dual-stack sockets
/// need both). Returns 0 or -1.
int sluice_udp_enable_errors(int fd, int family);
/// Reads one error-queue entry without blocking: 1 when one was read, 0 when the queue is empty,
/// -1 on another failure.
int sluice_udp_read_error(int fd, sluice_udp_error *out);

/// One datagram of a batch for `sluice_send_batch` / `sluice_receive_prepared` (sendmmsg/recvmmsg, GNU
/// extensions Swift's Glibc module does not export, with `struct mmsghdr`). Sending: `base` and
/// `length` are the bytes, `address` the destination (`address_length` 0: the connected peer).
/// Receiving: `base` and `length` are the slot; the call sets `length` to the bytes received,
/// `address` to the source and `flags` to the message's flags (MSG_TRUNC: the slot was too small).
/// `segment` (UDP GSO/GRO, udp(7)): sending, nonzero makes the bytes several datagrams of `segment`
/// bytes each, the last one possibly shorter (a `UDP_SEGMENT` control message); receiving, the call
/// sets it to the size of the datagrams a `UDP_GRO` socket got coalesced into the slot (0: one).
typedef struct {
    void *base;
    size_t length;
    struct sockaddr_storage address;
    socklen_t address_length;
    int flags;
    uint16_t segment;
} sluice_datagram;

/// The most datagrams one call takes; larger counts are cut to it (the callers loop).
#define SLUICE_BATCH_MAX 64
static inline int sluice_batch_max(void) { return SLUICE_BATCH_MAX; }
static inline int sluice_msg_trunc(void) { return MSG_TRUNC; }

/// sendmmsg(2) of `count` datagrams, non-blocking, without SIGPIPE: how many went (the first
/// `n`; the kernel stops at the first that fails and reports its error on the next call), or -1
/// with errno when the first failed.
int sluice_send_batch(int fd, sluice_datagram *datagrams, unsigned count);

/// The message headers of `sluice_receive_prepared` (recvmmsg(2)), made once for a receiver's slots:
/// a call sets up again only what the kernel wrote in the last one (a source's length, a control
/// message's, the flags). Setting up all 32 headers before every call took about 900 instructions,
/// most of the call's own (callgrind on the relay, `Benchmarks/e2e/reqcpu.py --test udp-new
/// --in-flight 1`, where nearly every call brings one datagram). Opaque; one receiver's.
typedef struct sluice_receive_headers sluice_receive_headers;
/// Headers for `count` slots (at most SLUICE_BATCH_MAX) of `datagrams`, whose `base` and `length`
/// name each slot and stay its own; NULL when out of memory.
sluice_receive_headers *sluice_receive_headers_create(sluice_datagram *datagrams, unsigned count);
void sluice_receive_headers_free(sluice_receive_headers *headers);
/// recvmmsg(2) into the slots `headers` were made for, non-blocking: how many arrived (fewer: the
/// queue is empty now), their `length`, `address`, `address_length`, `flags` and `segment` set (their
/// `base` untouched), or -1 with errno (EAGAIN: none).
int sluice_receive_prepared(int fd, sluice_receive_headers *headers);

/// Turns on UDP GRO (`UDP_GRO`, Linux 5.0+) for a UDP socket: 0, or -1 with errno when the
/// kernel does not have it.
int sluice_udp_enable_gro(int fd);
/// Datagrams one `UDP_SEGMENT` send may hold (the kernel's UDP_MAX_SEGMENTS before 6.9; later ones take 128).
static inline int sluice_udp_max_segments(void) { return 64; }

/// Names the calling thread (at most 15 bytes; longer names fail with ERANGE): pthread_setname_np,
/// a GNU extension, so it needs _GNU_SOURCE, which only linux.c defines. Returns 0 or an errno.
int sluice_set_thread_name(const char *name);

/// Steers the datagrams of fd's SO_REUSEPORT group (UDP): each goes to the socket whose place in the
/// group (the order they were bound) is the big-endian u32 at `offset` of its payload modulo
/// `groups`; a datagram too short to hold it goes to the first. A classic BPF program attached with
/// SO_ATTACH_REUSEPORT_CBPF (Linux 4.5; socket(7)). Returns 0, or -1 with errno set.
int sluice_reuseport_steer_by_u32(int fd, unsigned offset, unsigned groups);
