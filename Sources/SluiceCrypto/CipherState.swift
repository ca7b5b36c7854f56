import CSodium

/// Noise's CipherState (revision 34, §5.1): a key `k` (possibly empty) and a counter nonce `n`.
///
/// A value type: copying it copies the key and the nonce, so two copies that both encrypt reuse
/// nonces — keep exactly one live copy per direction. Sluice's record layer does not use this type on
/// its hot path (see `RecordSealer`); it serves the handshake, `split()` and the test vectors.
public struct CipherState: Sendable {
    /// The highest nonce, reserved for `rekey()` and never used for a message.
    static let maxNonce = UInt64.max

    /// The AEAD behind `ENCRYPT` and `DECRYPT`.
    public let cipher: NoiseCipher
    /// `k`, or nil while the handshake has not produced a key yet.
    private(set) var key: SymmetricKey?
    /// `n`: the nonce the next message will use.
    public private(set) var nonce: UInt64 = 0

    /// `InitializeKey(key)`: sets `k` and resets `n` to zero.
    public init(cipher: NoiseCipher, key: SymmetricKey? = nil) {
        self.cipher = cipher
        self.key = key
    }

    /// `HasKey()`.
    public var hasKey: Bool { key != nil }

    /// `SetNonce(n)`, for protocols that carry their own nonces; never use it to go backwards.
    public mutating func setNonce(_ n: UInt64) { nonce = n }

    /// `EncryptWithAd(ad, plaintext)`: encrypts and advances the nonce; without a key, returns the
    /// plaintext unchanged, as Noise prescribes for the first handshake tokens.
    public mutating func encrypt(ad: [UInt8], plaintext: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let key else { return plaintext }
        guard nonce != Self.maxNonce else { throw .nonceExhausted }
        let out = cipher.encrypt(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
        nonce += 1
        return out
    }

    /// `DecryptWithAd(ad, ciphertext)`: decrypts and advances the nonce; on failure the nonce stays,
    /// so a forged message cannot desynchronise the two ends.
    public mutating func decrypt(ad: [UInt8], ciphertext: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let key else { return ciphertext }
        guard nonce != Self.maxNonce else { throw .nonceExhausted }
        let out = try cipher.decrypt(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext)
        nonce += 1
        return out
    }

    /// `Rekey()`: k = the first 32 bytes of ENCRYPT(k, 2^64-1, zero-length ad, 32 zero bytes).
    /// The nonce is left alone, as the specification says. Without a key it does nothing.
    public mutating func rekey() {
        guard let key else { return }
        self.key = Self.rekeyed(key, cipher: cipher)
    }

    /// REKEY(k) as a function, shared with the record layer's key schedule.
    static func rekeyed(_ key: SymmetricKey, cipher: NoiseCipher) -> SymmetricKey {
        let zeros = [UInt8](repeating: 0, count: SymmetricKey.byteCount)
        var out = cipher.encrypt(key: key, nonce: maxNonce, ad: [], plaintext: zeros)
        defer { out.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) } }
        return SymmetricKey(secret: out.withUnsafeBytes { SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[..<SymmetricKey.byteCount])) })
    }
}
