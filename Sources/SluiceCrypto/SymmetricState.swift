/// Noise's SymmetricState (revision 34, §5.2): the chaining key `ck`, the handshake hash `h`, and
/// the CipherState that encrypts handshake payloads once a DH result has been mixed in.
///
/// Hash function: SHA256 only (`NoiseHash`). Used by `HandshakeState`; public so that other
/// Noise patterns can be assembled by hand, but most callers never touch it.
public struct SymmetricState: Sendable {
    /// The cipher state keyed from `ck` by `mixKey`.
    public private(set) var cipherState: CipherState
    /// `ck`, secret until the handshake ends: in a wiped buffer, replaced (never changed in place)
    /// so that a copy of the state taken by `HandshakeState` keeps its own.
    private var chainingKey: SecretBytes
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
        chainingKey = SecretBytes(copying: handshakeHash)
        cipherState = CipherState(cipher: cipher)
    }

    /// `MixKey(input_key_material)`: ck, temp_k = HKDF(ck, ikm, 2); InitializeKey(temp_k).
    public mutating func mixKey(_ inputKeyMaterial: [UInt8]) {
        inputKeyMaterial.withUnsafeBytes { mixKey($0) }
    }

    /// `MixKey` of secret input key material (a DH result).
    mutating func mixKey(_ inputKeyMaterial: UnsafeRawBufferPointer) {
        let out = NoiseHash.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 2)
        chainingKey = out[0]
        cipherState = CipherState(cipher: cipherState.cipher, key: SymmetricKey(secret: out[1]))
    }

    /// `MixHash(data)`: h = HASH(h || data).
    public mutating func mixHash(_ data: [UInt8]) {
        handshakeHash = NoiseHash.hash(handshakeHash, data)
    }

    /// `MixKeyAndHash(input_key_material)`, used by the `psk` token:
    /// ck, temp_h, temp_k = HKDF(ck, ikm, 3); MixHash(temp_h); InitializeKey(temp_k).
    public mutating func mixKeyAndHash(_ inputKeyMaterial: [UInt8]) {
        inputKeyMaterial.withUnsafeBytes { mixKeyAndHash($0) }
    }

    /// `MixKeyAndHash` of secret input key material (the PSK).
    mutating func mixKeyAndHash(_ inputKeyMaterial: UnsafeRawBufferPointer) {
        let out = NoiseHash.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 3)
        chainingKey = out[0]
        // temp_h goes into h, which is no secret: it is mixed by value.
        mixHash(out[1].withUnsafeBytes { Array($0) })
        cipherState = CipherState(cipher: cipherState.cipher, key: SymmetricKey(secret: out[2]))
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
        let out = NoiseHash.hkdf(chainingKey: chainingKey, inputKeyMaterial: UnsafeRawBufferPointer(start: nil, count: 0), outputs: 2)
        let cipher = cipherState.cipher
        return (CipherState(cipher: cipher, key: SymmetricKey(secret: out[0])),
                CipherState(cipher: cipher, key: SymmetricKey(secret: out[1])))
    }
}
