// The checksum lwIP uses for every packet; see checksum.c for why Sluice provides its own.
#pragma once
#include <stdint.h>

/// lwIP's checksum entry point, replaced in the sluice executable (exported from it).
uint16_t lwip_standard_chksum(const void *data, int len);
/// The same sum for Sluice's own use (completing partial checksums of TUN super-packets): the
/// folded ones'-complement sum in native byte order (byte-swap it for the network-order value).
uint16_t sluice_checksum_native(const void *data, int len);
/// lwIP's own algorithm, as the reference.
uint16_t sluice_reference_chksum(const void *data, int len);
/// 1 when the fast routine agrees with the reference on a sweep of lengths and alignments; otherwise
/// the reference is used from then on and 0 is returned.
int sluice_checksum_self_test(void);
