import CSodium

/// A Noise cipher function (revision 34, §12.3 and §12.4): the AEAD behind `ENCRYPT(k, n, ad, p)`.
public enum NoiseCipher: Sendable, Hashable, CaseIterable {
    /// ChaCha20-Poly1305 (RFC 8439) via `crypto_aead_chacha20poly1305_ietf_*`;
    /// nonce = 4 zero bytes followed by the little-endian counter.
    case chaChaPoly
    /// AES-256-GCM via `crypto_aead_aes256gcm_*`, only where `isAvailable`;
    /// nonce = 4 zero bytes followed by the big-endian counter.
    case aesGCM

    /// The name in a Noise protocol name.
    public var name: String {
        switch self {
        case .chaChaPoly: return "ChaChaPoly"
        case .aesGCM: return "AESGCM"
        }
    }

    /// libsodium implements AES-256-GCM only with AES-NI and PCLMUL; ChaChaPoly runs everywhere.
    public var isAvailable: Bool {
        switch self {
        case .chaChaPoly: return true
        case .aesGCM:
            Sodium.ensureInitialized()
            return crypto_aead_aes256gcm_is_available() == 1
        }
    }

    /// Both ciphers append a 16-byte tag.
    static let tagLength = 16
    /// Both ciphers take a 12-byte nonce.
    static let nonceLength = 12

    /// The 12-byte nonce for counter `n`, laid out as this cipher's Noise section prescribes.
    func nonce(_ n: UInt64) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.nonceLength)
        for i in 0..<8 {
            let byte = UInt8(truncatingIfNeeded: n >> (8 * UInt64(i)))
            switch self {
            case .chaChaPoly: out[4 + i] = byte
            case .aesGCM: out[11 - i] = byte
            }
        }
        return out
    }

    /// ENCRYPT(k, n, ad, plaintext): ciphertext followed by the tag.
    func encrypt(key: SymmetricKey, nonce n: UInt64, ad: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialized()
        let npub = nonce(n)
        var out = [UInt8](repeating: 0, count: plaintext.count + Self.tagLength)
        let rc: Int32
        switch self {
        case .chaChaPoly:
            rc = key.withUnsafeBytes { k in
                crypto_aead_chacha20poly1305_ietf_encrypt(
                    &out, nil, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, npub, k.baseAddress!)
            }
        case .aesGCM:
            // Calling the AES-NI code on a CPU without it would crash, so this is a hard check.
            precondition(isAvailable, "AES-256-GCM used on a CPU without AES-NI/PCLMUL")
            rc = key.withUnsafeBytes { k in
                crypto_aead_aes256gcm_encrypt(
                    &out, nil, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, npub, k.baseAddress!)
            }
        }
        precondition(rc == 0, "libsodium AEAD encryption failed")
        return out
    }

    /// DECRYPT(k, n, ad, ciphertext): the plaintext, or `decryptionFailed` if the tag does not verify.
    func decrypt(key: SymmetricKey, nonce n: UInt64, ad: [UInt8], ciphertext: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard ciphertext.count >= Self.tagLength else { throw .decryptionFailed }
        Sodium.ensureInitialized()
        let npub = nonce(n)
        var out = [UInt8](repeating: 0, count: ciphertext.count - Self.tagLength)
        let rc: Int32
        switch self {
        case .chaChaPoly:
            rc = key.withUnsafeBytes { k in
                crypto_aead_chacha20poly1305_ietf_decrypt(
                    &out, nil, nil, ciphertext, UInt64(ciphertext.count), ad, UInt64(ad.count), npub, k.baseAddress!)
            }
        case .aesGCM:
            precondition(isAvailable, "AES-256-GCM used on a CPU without AES-NI/PCLMUL")
            rc = key.withUnsafeBytes { k in
                crypto_aead_aes256gcm_decrypt(
                    &out, nil, nil, ciphertext, UInt64(ciphertext.count), ad, UInt64(ad.count), npub, k.baseAddress!)
            }
        }
        guard rc == 0 else { throw .decryptionFailed }
        return out
    }
}
