// See include/sluice_linux.h: the Linux calls that need _GNU_SOURCE live here, not in the header.
#define _GNU_SOURCE
#include <sys/socket.h>
#include "sluice_linux.h"

int sluice_accept_nonblocking(int fd, struct sockaddr *addr, socklen_t *len) {
    return accept4(fd, addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <linux/errqueue.h>

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
