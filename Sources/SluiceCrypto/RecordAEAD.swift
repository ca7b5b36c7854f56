import CSodium

/// The AEAD of carrier records (docs/protocol.md §2): ChaCha20-Poly1305 as RFC 8439 §2.8 defines it
/// (96-bit nonce, tag over the additional data and the ciphertext), through libsodium's public,
/// documented `crypto_aead_chacha20poly1305_ietf_encrypt_detached` / `_decrypt_detached`, from the
/// shared libsodium Debian maintains, so that its security updates reach Sluice.
///
/// Why libsodium and not a faster library: Benchmarks/MicroBench (suite "records") and
/// Benchmarks/e2e/ab.py compared the candidates on this VM (figures in README.md, "Security"):
/// libgcrypt's stitched ChaCha20-Poly1305 seals at about twice libsodium's speed but adds ~0.8 MiB
/// of resident memory to every process (its initialisation touches code all over the library),
/// which puts the client over its 10 MiB budget; OpenSSL's EVP adds 3.3 MiB; nettle is slower than
/// libsodium. libsodium is linked already, for the handshake, and costs nothing more.
///
/// Both calls work in place (`out` may equal `plaintext` / `ciphertext`). `open` checks the tag
/// before it decrypts anything, and on failure leaves `out` zeroed rather than holding bytes that
/// did not authenticate.
enum RecordAEAD {
    /// Seals `length` bytes from `plaintext` into `out` and writes the 16-byte tag to `tag`,
    /// authenticating the `aadLength` bytes at `aad` as well.
    @inline(__always)
    static func seal(_ out: UnsafeMutablePointer<UInt8>, tag: UnsafeMutablePointer<UInt8>, plaintext: UnsafePointer<UInt8>,
                     length: Int, aad: UnsafePointer<UInt8>, aadLength: Int,
                     nonce: UnsafePointer<UInt8>, key: UnsafePointer<UInt8>) {
        // Cannot fail: libsodium refuses only messages longer than 2^38 bytes, and records are 64 KiB.
        _ = crypto_aead_chacha20poly1305_ietf_encrypt_detached(
            out, tag, nil, plaintext, UInt64(length), aad, UInt64(aadLength), nil, nonce, key)
    }

    /// Checks `tag` over `aad` and `length` bytes of `ciphertext`, and only then decrypts them into
    /// `out`. Returns false when the tag does not verify.
    @inline(__always)
    static func open(_ out: UnsafeMutablePointer<UInt8>, ciphertext: UnsafePointer<UInt8>, length: Int,
                     tag: UnsafePointer<UInt8>, aad: UnsafePointer<UInt8>, aadLength: Int,
                     nonce: UnsafePointer<UInt8>, key: UnsafePointer<UInt8>) -> Bool {
        crypto_aead_chacha20poly1305_ietf_decrypt_detached(
            out, nil, ciphertext, UInt64(length), tag, aad, UInt64(aadLength), nonce, key) == 0
    }
}
