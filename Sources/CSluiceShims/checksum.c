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

/// The same sum over native (little-endian) 64-bit words with end-around carry: the ones'-complement
/// sum is byte-order independent, so summing little-endian words gives the byte-swapped result lwIP
/// returns, directly.
static uint16_t fast_chksum(const void *data, int len) {
    const uint8_t *p = data;
    uint64_t acc = 0, v;
    while (len >= 32) {
        uint64_t a, b, c, d;
        memcpy(&a, p, 8); memcpy(&b, p + 8, 8); memcpy(&c, p + 16, 8); memcpy(&d, p + 24, 8);
        acc += a; acc += (acc < a);
        acc += b; acc += (acc < b);
        acc += c; acc += (acc < c);
        acc += d; acc += (acc < d);
        p += 32; len -= 32;
    }
    while (len >= 8) { memcpy(&v, p, 8); acc += v; acc += (acc < v); p += 8; len -= 8; }
    v = 0;
    memcpy(&v, p, (size_t)len);  // the tail, zero-padded: an odd last byte lands as a low byte
    acc += v; acc += (acc < v);
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

uint16_t lwip_standard_chksum(const void *data, int len) {
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
