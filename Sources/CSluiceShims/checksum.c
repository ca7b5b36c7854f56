// A faster lwip_standard_chksum. Debian's liblwip.so computes every TCP checksum (64 KiB super-segments
// included) with a 16-bit-at-a-time loop and calls lwip_standard_chksum through its dynamic symbol
// table, so the sluice executable, which exports this definition (see Package.swift), replaces it.
// sluice_checksum_self_test() compares it with a reference at start-up; if they ever differed, the
// reference is used instead.
#include <stdint.h>
#include <string.h>
#include "sluice_checksum.h"

static int use_reference = 0;

/// lwIP's semantics (inet_chksum.c, algorithm 1): the ones'-complement sum of the big-endian 16-bit
/// words (an odd last byte is the high byte of a zero-padded word), folded, returned byte-swapped
/// (lwip_htons), uncomplemented.
uint16_t sluice_reference_chksum(const void *data, int len) {
    const uint8_t *p = data;
    uint32_t acc = 0;
    for (; len > 1; len -= 2, p += 2) acc += (uint32_t)p[0] << 8 | p[1];
    if (len == 1) acc += (uint32_t)p[0] << 8;
    while (acc >> 16) acc = (acc & 0xFFFF) + (acc >> 16);
    return (uint16_t)((acc >> 8) | ((acc & 0xFF) << 8));
}

/// The same sum over native (little-endian) 32-bit words: the ones'-complement sum is byte-order
/// independent, so summing little-endian words gives the byte-swapped result lwIP returns, directly.
/// Four 64-bit accumulators take 32-bit words without any carry handling (they would overflow only
/// after 2^32 words each), so the additions are independent and the compiler vectorises the loop;
/// the earlier version with one accumulator and an end-around carry per 64-bit word ran at about
/// 60 % of this speed (MicroBench suite "wire").
static uint16_t fast_chksum(const void *data, int len) {
    const uint8_t *p = data;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    while (len >= 32) {
        uint32_t w[8];
        memcpy(w, p, 32);
        s0 += w[0]; s1 += w[1]; s2 += w[2]; s3 += w[3];
        s0 += w[4]; s1 += w[5]; s2 += w[6]; s3 += w[7];
        p += 32; len -= 32;
    }
    uint32_t w;
    while (len >= 4) { memcpy(&w, p, 4); s0 += w; p += 4; len -= 4; }
    w = 0;
    memcpy(&w, p, (size_t)len);  // the tail, zero-padded: an odd last byte lands as a low byte
    s1 += w;
    uint64_t acc = s0 + s1 + s2 + s3;  // each below 2^62 for any int length: no overflow
    acc = (acc & 0xFFFFFFFF) + (acc >> 32);
    acc = (acc & 0xFFFFFFFF) + (acc >> 32);
    acc = (acc & 0xFFFF) + (acc >> 16);
    acc = (acc & 0xFFFF) + (acc >> 16);
    acc = (acc & 0xFFFF) + (acc >> 16);
    return (uint16_t)acc;
}

uint16_t sluice_checksum_native(const void *data, int len) {
    return use_reference ? sluice_reference_chksum(data, len) : fast_chksum(data, len);
}

// One answer known in advance (sluice_checksum_expect): lwIP verifies every TCP segment it is given,
// and a segment the local kernel made and handed over with a partial checksum (CHECKSUM_PARTIAL:
// the checksum is the device's to compute, the bytes never crossed a wire) needs no verifying, as
// the kernel's own receive path does not verify such packets either. Debian's lwIP has no switch for
// that (LWIP_CHECKSUM_CTRL_PER_NETIF is 0), so Sluice tells this routine the one sum that makes the
// check pass, for the one range lwIP is about to sum; it saves a pass over every uploaded byte. The
// range is compared by address and length, and the expectation is cleared after that one input.
static _Thread_local const void *expected_data;
static _Thread_local int expected_len;
static _Thread_local uint16_t expected_sum;

void sluice_checksum_expect(const void *data, int len, uint16_t sum) {
    expected_data = data;
    expected_len = len;
    expected_sum = sum;
}

void sluice_checksum_expect_none(void) { expected_data = NULL; }

// Skipping (sluice_checksum_skip): lwIP sums every byte it copies in tcp_write (checksum-on-copy,
// compiled into Debian's build), for a checksum the output path overwrites: where the packet flow
// takes partial checksums, every data segment leaves with its checksum to the device (the TUN:
// NEEDS_CSUM, as the kernel's own TCP leaves it to the NIC), so the sum is never used.
static _Thread_local int skipping;

void sluice_checksum_skip(int on) { skipping = on; }

uint16_t lwip_standard_chksum(const void *data, int len) {
    if (data == expected_data && len == expected_len && data != NULL) {
        expected_data = NULL;
        return expected_sum;
    }
    if (skipping) return 0;
    return use_reference ? sluice_reference_chksum(data, len) : fast_chksum(data, len);
}

int sluice_checksum_self_test(void) {
    uint8_t buf[1600];
    uint32_t x = 0x9E3779B9u;
    for (int i = 0; i < (int)sizeof buf; i++) { x ^= x << 13; x ^= x >> 17; x ^= x << 5; buf[i] = (uint8_t)x; }
    memset(buf + 700, 0xFF, 300);  // runs of 0xFFFF exercise the carries
    for (int start = 0; start < 8; start++) {
        for (int len = 0; len <= 1500; len += (len < 80 ? 1 : 37)) {
            if (fast_chksum(buf + start, len) != sluice_reference_chksum(buf + start, len)) {
                use_reference = 1;
                return 0;
            }
        }
    }
    return 1;
}
