/// Noise's SymmetricState (revision 34, §5.2): the chaining key `ck`, the handshake hash `h`, and
/// the CipherState that encrypts handshake payloads once a DH result has been mixed in.
///
/// Hash function: SHA256 only (`NoiseHash`). Used by `HandshakeState`; public so that other
/// Noise patterns can be assembled by hand, but most callers never touch it.
public struct SymmetricState: Sendable {
    /// The cipher state keyed from `ck` by `mixKey`.
    public private(set) var cipherState: CipherState
    /// `ck`.
    private var chainingKey: [UInt8]
    /// `h`: binds everything sent and received so far; after the handshake, a channel-binding value.
    public private(set) var handshakeHash: [UInt8]

    /// `InitializeSymmetric(protocol_name)`: `h` is the name zero-padded to HASHLEN if it fits,
    /// else HASH(name); `ck = h`; the cipher state starts without a key.
    public init(protocolName: String, cipher: NoiseCipher) {
        let name = Array(protocolName.utf8)
        if name.count <= NoiseHash.length {
            handshakeHash = name + [UInt8](repeating: 0, count: NoiseHash.length - name.count)
        } else {
            handshakeHash = NoiseHash.hash(name)
        }
        chainingKey = handshakeHash
        cipherState = CipherState(cipher: cipher)
    }

    /// `MixKey(input_key_material)`: ck, temp_k = HKDF(ck, ikm, 2); InitializeKey(temp_k).
    public mutating func mixKey(_ inputKeyMaterial: [UInt8]) {
        let out = NoiseHash.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 2)
        chainingKey = out[0]
        cipherState = CipherState(cipher: cipherState.cipher, key: SymmetricKey(trusted: out[1]))
    }

    /// `MixHash(data)`: h = HASH(h || data).
    public mutating func mixHash(_ data: [UInt8]) {
        handshakeHash = NoiseHash.hash(handshakeHash, data)
    }

    /// `MixKeyAndHash(input_key_material)`, used by the `psk` token:
    /// ck, temp_h, temp_k = HKDF(ck, ikm, 3); MixHash(temp_h); InitializeKey(temp_k).
    public mutating func mixKeyAndHash(_ inputKeyMaterial: [UInt8]) {
        let out = NoiseHash.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 3)
        chainingKey = out[0]
        mixHash(out[1])
        cipherState = CipherState(cipher: cipherState.cipher, key: SymmetricKey(trusted: out[2]))
    }

    /// `EncryptAndHash(plaintext)`: encrypts with `h` as associated data, then mixes the ciphertext.
    public mutating func encryptAndHash(_ plaintext: [UInt8]) throws(CryptoError) -> [UInt8] {
        let ciphertext = try cipherState.encrypt(ad: handshakeHash, plaintext: plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    /// `DecryptAndHash(ciphertext)`: decrypts with `h` as associated data, then mixes the ciphertext.
    public mutating func decryptAndHash(_ ciphertext: [UInt8]) throws(CryptoError) -> [UInt8] {
        let plaintext = try cipherState.decrypt(ad: handshakeHash, ciphertext: ciphertext)
        mixHash(ciphertext)
        return plaintext
    }

    /// `Split()`: temp_k1, temp_k2 = HKDF(ck, zero-length, 2); the first keys initiator → responder,
    /// the second responder → initiator.
    public func split() -> (CipherState, CipherState) {
        let out = NoiseHash.hkdf(chainingKey: chainingKey, inputKeyMaterial: [], outputs: 2)
        let cipher = cipherState.cipher
        return (CipherState(cipher: cipher, key: SymmetricKey(trusted: out[0])),
                CipherState(cipher: cipher, key: SymmetricKey(trusted: out[1])))
    }
}
