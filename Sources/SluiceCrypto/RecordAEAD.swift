import CLibCrypto

/// The ChaCha20-Poly1305 (IETF, RFC 8439) of one record direction, through OpenSSL's libcrypto.
///
/// Records are the per-packet path, and libcrypto's ChaCha20-Poly1305 runs about 2.5 times as fast
/// as libsodium 1.0.18's on this machine class (AVX-512: 3.2 vs 1.3 GB/s; MicroBench suite
/// "records" prints both). It is the same function, so the wire format does not change: the record
/// tests check known answers from an independent implementation and open large records with
/// libsodium. Everything else — handshake, hashing, the length mask, rekeying — stays on libsodium.
///
/// One context per direction, keyed once and again at each rekey; each record sets only its nonce.
/// Confined to the thread that owns the sealer or opener. Noncopyable: the context is owned.
struct RecordAEAD: ~Copyable {
    private let context: OpaquePointer

    /// A context for sealing (`encrypting`) or opening, keyed with the 32 bytes at `key`.
    init(key: UnsafePointer<UInt8>, encrypting: Bool) {
        guard let context = EVP_CIPHER_CTX_new(),
              EVP_CipherInit_ex(context, EVP_chacha20_poly1305(), nil, key, nil, encrypting ? 1 : 0) == 1
        else { fatalError("libcrypto could not set up ChaCha20-Poly1305 (out of memory?)") }
        self.context = context
    }

    deinit {
        EVP_CIPHER_CTX_free(context)  // also wipes the key
    }

    /// Replaces the key (after a rekey).
    func rekey(_ key: UnsafePointer<UInt8>) {
        guard EVP_CipherInit_ex(context, nil, nil, key, nil, -1) == 1 else {
            fatalError("libcrypto refused a 32-byte ChaCha20-Poly1305 key")
        }
    }

    /// Encrypts `length` bytes from `plaintext` to `ciphertext` (which may be the same address) and
    /// writes the 16-byte tag to `tag`, authenticating `aadLength` bytes at `aad` as well.
    @inline(__always)
    func seal(nonce: UnsafePointer<UInt8>, aad: UnsafePointer<UInt8>, aadLength: Int,
              plaintext: UnsafePointer<UInt8>, length: Int,
              ciphertext: UnsafeMutablePointer<UInt8>, tag: UnsafeMutablePointer<UInt8>) {
        var written: Int32 = 0
        let ok = EVP_CipherInit_ex(context, nil, nil, nil, nonce, -1) == 1
            && EVP_CipherUpdate(context, nil, &written, aad, Int32(aadLength)) == 1
            && EVP_CipherUpdate(context, ciphertext, &written, plaintext, Int32(length)) == 1
            && EVP_CipherFinal_ex(context, ciphertext + Int(written), &written) == 1
            && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, 16, tag) == 1
        if !ok { fatalError("libcrypto failed to seal a record") }
    }

    /// Decrypts `length` bytes in place at `text` and checks `tag` over them and the `aad`.
    /// Returns false when authentication fails; the bytes at `text` are then garbage.
    @inline(__always)
    func open(nonce: UnsafePointer<UInt8>, aad: UnsafePointer<UInt8>, aadLength: Int,
              text: UnsafeMutablePointer<UInt8>, length: Int, tag: UnsafePointer<UInt8>) -> Bool {
        var written: Int32 = 0
        guard EVP_CipherInit_ex(context, nil, nil, nil, nonce, -1) == 1,
              EVP_CipherUpdate(context, nil, &written, aad, Int32(aadLength)) == 1,
              EVP_CipherUpdate(context, text, &written, text, Int32(length)) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, 16, UnsafeMutableRawPointer(mutating: tag)) == 1
        else { return false }
        return EVP_CipherFinal_ex(context, text + Int(written), &written) == 1
    }
}
