// See include/sluice_linux.h: the Linux calls that need _GNU_SOURCE live here, not in the header.
#define _GNU_SOURCE
#include <sys/socket.h>
#include "sluice_linux.h"

int sluice_accept_nonblocking(int fd, struct sockaddr *addr, socklen_t *len) {
    return accept4(fd, addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <linux/errqueue.h>
#include <netinet/udp.h>
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

int sluice_udp_enable_errors(int fd, int family) {
    int on = 1;
    if (family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_RECVERR, &on, sizeof on) != 0) return -1;
    if (setsockopt(fd, IPPROTO_IP, IP_RECVERR, &on, sizeof on) != 0 && family == AF_INET) return -1;
    return 0;
}

int sluice_udp_read_error(int fd, sluice_udp_error *out) {
    char data[64];
    char control[512];
    struct iovec iov = { .iov_base = data, .iov_len = sizeof data };
    struct msghdr msg = {0};
    memset(out, 0, sizeof *out);
    msg.msg_name = &out->offender_destination;
    msg.msg_namelen = sizeof out->offender_destination;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n;
    do {
        n = recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR) ||
            (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR)) {
            const struct sock_extended_err *ee = (const struct sock_extended_err *)CMSG_DATA(c);
            out->error = (int)ee->ee_errno;
            out->info = ee->ee_info;
        }
    }
    return 1;
}

_Static_assert(SLUICE_BATCH_MAX <= 1024, "UIO_MAXIOV bounds sendmmsg and recvmmsg");

/// Room for one datagram's control message: UDP_SEGMENT (a uint16_t) sending, UDP_GRO (an int) receiving.
typedef union {
    char bytes[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
} sluice_segment_control;

/// Points `messages` at the datagrams' bytes and addresses (`receiving`: every address field takes
/// the source and every message room for a UDP_GRO segment size; sending: only those with a
/// destination, the rest go to the connected peer, and those with a `segment` a UDP_SEGMENT message).
static void sluice_fill_messages(struct mmsghdr *messages, struct iovec *iov, sluice_segment_control *control,
                                 sluice_datagram *datagrams, unsigned count, int receiving) {
    memset(messages, 0, count * sizeof messages[0]);
    for (unsigned i = 0; i < count; i++) {
        struct msghdr *m = &messages[i].msg_hdr;
        iov[i].iov_base = datagrams[i].base;
        iov[i].iov_len = datagrams[i].length;
        m->msg_iov = &iov[i];
        m->msg_iovlen = 1;
        if (receiving || datagrams[i].address_length) {
            m->msg_name = &datagrams[i].address;
            m->msg_namelen = receiving ? sizeof datagrams[i].address : datagrams[i].address_length;
        }
        if (receiving) {
            m->msg_control = control[i].bytes;
            m->msg_controllen = sizeof control[i].bytes;
        } else if (datagrams[i].segment) {
            memset(&control[i], 0, sizeof control[i]);
            m->msg_control = control[i].bytes;
            m->msg_controllen = CMSG_SPACE(sizeof(uint16_t));
            struct cmsghdr *c = CMSG_FIRSTHDR(m);
            c->cmsg_level = SOL_UDP;
            c->cmsg_type = UDP_SEGMENT;
            c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            memcpy(CMSG_DATA(c), &datagrams[i].segment, sizeof(uint16_t));
        }
    }
}

/// The UDP_GRO segment size a received message carries, 0 when it has none (a single datagram).
static uint16_t sluice_received_segment(struct msghdr *m) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
            int size;
            memcpy(&size, CMSG_DATA(c), sizeof size);
            return (uint16_t)size;
        }
    }
    return 0;
}

int sluice_send_batch(int fd, sluice_datagram *datagrams, unsigned count) {
    struct mmsghdr messages[SLUICE_BATCH_MAX];
    struct iovec iov[SLUICE_BATCH_MAX];
    sluice_segment_control control[SLUICE_BATCH_MAX];
    if (count > SLUICE_BATCH_MAX) count = SLUICE_BATCH_MAX;
    sluice_fill_messages(messages, iov, control, datagrams, count, 0);
    int n;
    do {
        n = sendmmsg(fd, messages, count, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    return n;
}

struct sluice_receive_headers {
    sluice_datagram *datagrams;
    unsigned count;
    /// Headers the kernel may have written in the last call: those of the datagrams it filled and
    /// the one after (the message it stopped at), set up again before the next.
    unsigned used;
    struct mmsghdr messages[SLUICE_BATCH_MAX];
    struct iovec iov[SLUICE_BATCH_MAX];
    sluice_segment_control control[SLUICE_BATCH_MAX];
};

sluice_receive_headers *sluice_receive_headers_create(sluice_datagram *datagrams, unsigned count) {
    sluice_receive_headers *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->datagrams = datagrams;
    h->count = count > SLUICE_BATCH_MAX ? SLUICE_BATCH_MAX : count;
    sluice_fill_messages(h->messages, h->iov, h->control, datagrams, h->count, 1);
    return h;
}

void sluice_receive_headers_free(sluice_receive_headers *headers) { free(headers); }

int sluice_receive_prepared(int fd, sluice_receive_headers *h) {
    for (unsigned i = 0; i < h->used; i++) {
        struct msghdr *m = &h->messages[i].msg_hdr;
        m->msg_namelen = sizeof h->datagrams[i].address;
        m->msg_controllen = sizeof h->control[i].bytes;
        m->msg_flags = 0;
    }
    int n;
    do {
        n = recvmmsg(fd, h->messages, h->count, MSG_DONTWAIT, NULL);
    } while (n < 0 && errno == EINTR);
    unsigned filled = n > 0 ? (unsigned)n : 0;
    h->used = filled < h->count ? filled + 1 : filled;
    for (unsigned i = 0; i < filled; i++) {
        h->datagrams[i].length = h->messages[i].msg_len;
        h->datagrams[i].address_length = h->messages[i].msg_hdr.msg_namelen;
        h->datagrams[i].flags = h->messages[i].msg_hdr.msg_flags;
        h->datagrams[i].segment = sluice_received_segment(&h->messages[i].msg_hdr);
    }
    return n;
}

int sluice_udp_enable_gro(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof on);
}

#include <pthread.h>

int sluice_set_thread_name(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}

#include <linux/filter.h>

int sluice_reuseport_steer_by_u32(int fd, unsigned offset, unsigned groups) {
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset),  // A = the u32 at offset (big-endian); past the end: return 0
        BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, groups), // A %= groups
        BPF_STMT(BPF_RET | BPF_A, 0),                // the socket at that place in the group
    };
    struct sock_fprog program = { .len = sizeof code / sizeof code[0], .filter = code };
    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &program, sizeof program);
}
