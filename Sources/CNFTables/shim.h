// libnftables (Debian libnftables-dev, pkg-config libnftables): nft's own engine as a library, so
// Sluice installs its firewall rules in nft's language without spawning the nft program.
// libnftables.h defines _GNU_SOURCE before it includes <stdio.h>; the system headers come first
// here so that define changes nothing they declare (other modules see the same Glibc types).
#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
#include <nftables/libnftables.h>
