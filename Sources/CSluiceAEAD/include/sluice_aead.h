// ChaCha20-Poly1305 (RFC 8439) for carrier records, over OpenSSL's assembly primitives.
#pragma once
#include <stddef.h>
#include <stdint.h>

/// Seals `len` bytes from `in` to `out` (which may equal `in`) and writes the 16-byte tag,
/// authenticating `aad_len` bytes at `aad` as well.
void sluice_aead_seal(uint8_t *out, uint8_t tag[16], const uint8_t *in, size_t len,
                      const uint8_t *aad, size_t aad_len, const uint8_t nonce[12], const uint8_t key[32]);

/// Checks `tag` over `in` and the `aad`, and only then decrypts `len` bytes to `out` (which may
/// equal `in`). Returns 0, or -1 when authentication fails (then `out` is untouched).
int sluice_aead_open(uint8_t *out, const uint8_t *in, size_t len, const uint8_t tag[16],
                     const uint8_t *aad, size_t aad_len, const uint8_t nonce[12], const uint8_t key[32]);

/// 1 when OpenSSL's Poly1305 state fits the space this file reserves for it (checked at start-up
/// and by the tests; the functions above abort otherwise).
int sluice_aead_self_check(void);
