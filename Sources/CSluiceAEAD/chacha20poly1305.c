// The AEAD construction of RFC 8439 §2.8 over OpenSSL's ChaCha20 and Poly1305 primitives.
//
// Why not libsodium or OpenSSL's EVP interface: records are the per-byte path of the tunnel.
// libsodium 1.0.18 seals at ~1.2 GB/s here; OpenSSL's AVX-512 assembly at ~3 GB/s
// (Benchmarks/MicroBench, suite "records"). EVP would bring that speed too, but linking
// libcrypto.so and initialising its providers costs every Sluice process ~3.3 MiB of resident
// memory, a third of the client's budget. These two primitives, linked statically from
// libcrypto.a, cost ~50 KB. They are OpenSSL's internal interface (crypto/chacha.h,
// crypto/poly1305.h in its source), so the prototypes are declared here and the result is held to
// libsodium's at every record size and to RFC 8439's vector by the tests.
#include <stdlib.h>
#include <string.h>
#include "sluice_aead.h"

void ChaCha20_ctr32(unsigned char *out, const unsigned char *in, size_t len,
                    const unsigned int key[8], const unsigned int counter[4]);
size_t Poly1305_ctx_size(void);
void Poly1305_Init(void *ctx, const unsigned char key[32]);
void Poly1305_Update(void *ctx, const unsigned char *in, size_t len);
void Poly1305_Final(void *ctx, unsigned char mac[16]);

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "key and counter words are loaded as little-endian");

/// Space for OpenSSL's POLY1305 state (248 bytes in 3.0).
typedef struct { _Alignas(64) unsigned char bytes[512]; } poly_state;

int sluice_aead_self_check(void) { return Poly1305_ctx_size() <= sizeof(poly_state); }

static void load_words(unsigned int *words, const uint8_t *bytes, size_t count) {
    memcpy(words, bytes, count * 4);
}

/// Poly1305 over aad || pad16 || text || pad16 || le64(aad_len) || le64(text_len), keyed with the
/// first 32 bytes of ChaCha20 block 0.
static void compute_tag(uint8_t tag[16], const uint8_t *text, size_t len, const uint8_t *aad, size_t aad_len,
                        const unsigned int key[8], unsigned int counter[4]) {
    static const uint8_t zeros[16];
    uint8_t block[64] = {0};
    counter[0] = 0;
    ChaCha20_ctr32(block, block, sizeof block, key, counter);
    poly_state state;
    if (!sluice_aead_self_check()) abort();
    Poly1305_Init(state.bytes, block);
    explicit_bzero(block, sizeof block);
    Poly1305_Update(state.bytes, aad, aad_len);
    Poly1305_Update(state.bytes, zeros, (16 - aad_len % 16) % 16);
    Poly1305_Update(state.bytes, text, len);
    Poly1305_Update(state.bytes, zeros, (16 - len % 16) % 16);
    uint64_t lengths[2] = {aad_len, len};
    Poly1305_Update(state.bytes, (const uint8_t *)lengths, sizeof lengths);
    Poly1305_Final(state.bytes, tag);
    explicit_bzero(&state, sizeof state);
}

static void setup(unsigned int key_words[8], unsigned int counter[4], const uint8_t key[32], const uint8_t nonce[12]) {
    load_words(key_words, key, 8);
    load_words(counter + 1, nonce, 3);
}

void sluice_aead_seal(uint8_t *out, uint8_t tag[16], const uint8_t *in, size_t len,
                      const uint8_t *aad, size_t aad_len, const uint8_t nonce[12], const uint8_t key[32]) {
    unsigned int key_words[8], counter[4];
    setup(key_words, counter, key, nonce);
    counter[0] = 1;
    if (len > 0) ChaCha20_ctr32(out, in, len, key_words, counter);
    compute_tag(tag, out, len, aad, aad_len, key_words, counter);
    explicit_bzero(key_words, sizeof key_words);
}

int sluice_aead_open(uint8_t *out, const uint8_t *in, size_t len, const uint8_t tag[16],
                     const uint8_t *aad, size_t aad_len, const uint8_t nonce[12], const uint8_t key[32]) {
    unsigned int key_words[8], counter[4];
    uint8_t expected[16];
    setup(key_words, counter, key, nonce);
    compute_tag(expected, in, len, aad, aad_len, key_words, counter);
    uint8_t difference = 0;  // constant time: every byte is compared
    for (int i = 0; i < 16; i++) difference |= (uint8_t)(expected[i] ^ tag[i]);
    if (difference != 0) {
        explicit_bzero(key_words, sizeof key_words);
        return -1;
    }
    counter[0] = 1;
    if (len > 0) ChaCha20_ctr32(out, in, len, key_words, counter);
    explicit_bzero(key_words, sizeof key_words);
    return 0;
}
