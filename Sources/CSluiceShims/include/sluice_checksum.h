// The checksum lwIP uses for every packet; see checksum.c for why Sluice provides its own.
#pragma once
#include <stdint.h>

/// lwIP's checksum entry point, replaced in the sluice executable (exported from it).
uint16_t lwip_standard_chksum(const void *data, int len);
/// The same sum for Sluice's own use (completing partial checksums of TUN super-packets): the
/// folded ones'-complement sum in native byte order (byte-swap it for the network-order value).
uint16_t sluice_checksum_native(const void *data, int len);
/// Makes the next lwip_standard_chksum call over exactly the `len` bytes at `data` return `sum`
/// without reading them; any other call, or a later one, sums as usual. Per thread (lwIP's).
void sluice_checksum_expect(const void *data, int len, uint16_t sum);
/// Forgets an expectation the call it was set for did not use.
void sluice_checksum_expect_none(void);
/// While on (non-zero), every lwip_standard_chksum call returns 0 without reading: for the sums lwIP
/// takes of the bytes tcp_write copies, where the output path overwrites every data segment's
/// checksum anyway. Per thread (lwIP's); turn it off again before anything else sums.
void sluice_checksum_skip(int on);
/// lwIP's own algorithm, as the reference.
uint16_t sluice_reference_chksum(const void *data, int len);
/// 1 when the fast routine agrees with the reference on a sweep of lengths and alignments; otherwise
/// the reference is used from then on and 0 is returned.
int sluice_checksum_self_test(void);
