import CSodium

/// A 32-byte symmetric key: a Noise cipher key, or one direction's record key after the handshake.
///
/// Comparison is constant-time and the description redacted, like `PrivateKey`.
public struct SymmetricKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// ChaCha20-Poly1305 and AES-256-GCM both take 32-byte keys.
    public static let byteCount = 32

    /// The raw key.
    public let bytes: [UInt8]

    /// Wraps 32 bytes.
    public init(bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == Self.byteCount else {
            throw .invalidKeyLength(expected: Self.byteCount, actual: bytes.count)
        }
        self.bytes = bytes
    }

    /// For bytes whose length this module already guarantees (HKDF outputs, rekey results).
    init(trusted bytes: [UInt8]) {
        assert(bytes.count == Self.byteCount)
        self.bytes = bytes
    }

    public static func == (a: SymmetricKey, b: SymmetricKey) -> Bool {
        Sodium.ensureInitialized()
        return sodium_memcmp(a.bytes, b.bytes, byteCount) == 0
    }

    public var description: String { "SymmetricKey(redacted)" }
    public var debugDescription: String { description }
}
