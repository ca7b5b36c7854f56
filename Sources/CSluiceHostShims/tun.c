// TUN ioctls (see sluice_tun.h): struct ifreq and the _IOW request numbers stay on the C side.
#include "sluice_tun.h"
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>

_Static_assert(IFNAMSIZ == 16, "interface names are 15 bytes plus NUL");

int sluice_tun_attach(int fd, const char *name, int flags, char *actual_name) {
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    if (name != NULL) {
        strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
    }
    ifr.ifr_flags = (short)flags;
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        return -1;
    }
    memcpy(actual_name, ifr.ifr_name, IFNAMSIZ);
    actual_name[IFNAMSIZ - 1] = '\0';
    return 0;
}

int sluice_tun_set_offload(int fd, unsigned int flags) {
    return ioctl(fd, TUNSETOFFLOAD, (unsigned long)flags);
}

int sluice_tun_set_persist(int fd, int persist) {
    return ioctl(fd, TUNSETPERSIST, (unsigned long)persist);
}
