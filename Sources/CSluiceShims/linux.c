// See include/sluice_linux.h: the Linux calls that need _GNU_SOURCE live here, not in the header.
#define _GNU_SOURCE
#include <sys/socket.h>
#include "sluice_linux.h"

int sluice_accept_nonblocking(int fd, struct sockaddr *addr, socklen_t *len) {
    return accept4(fd, addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}
