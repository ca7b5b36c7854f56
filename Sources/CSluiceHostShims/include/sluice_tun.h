// TUN device ioctls: struct ifreq and the TUNSET* request numbers are macros Swift cannot import.
// The IFF_* and TUN_F_* flags are plain integer macros and come through <linux/if_tun.h>.
#pragma once
#include <linux/if_tun.h>

/// TUNSETIFF: attaches `fd` (an open /dev/net/tun) to the interface `name` (may be empty or hold
/// a `%d` pattern), creating it if needed. `flags` are IFF_* bits. On success the kernel's actual
/// name is copied into `actual_name` (at least IFNAMSIZ bytes). Returns 0, or -1 with errno set.
int sluice_tun_attach(int fd, const char *name, int flags, char *actual_name);

/// TUNSETOFFLOAD: sets the offload flags (TUN_F_* bits) the device may hand us. Returns 0, or -1
/// with errno set.
int sluice_tun_set_offload(int fd, unsigned int flags);

/// TUNSETPERSIST: keeps the interface after the last fd closes (1) or not (0). Returns 0, or -1
/// with errno set.
int sluice_tun_set_persist(int fd, int persist);
