/// A 32-byte symmetric key: a Noise cipher key, or one direction's record key after the handshake.
///
/// Held in a `SecretBytes` buffer (wiped when the last copy goes); comparison is constant-time and
/// the description redacted, like `PrivateKey`.
public struct SymmetricKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// ChaCha20-Poly1305 and AES-256-GCM both take 32-byte keys.
    public static let byteCount = 32

    let secret: SecretBytes

    /// Wraps (copies) 32 bytes.
    public init(bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == Self.byteCount else {
            throw .invalidKeyLength(expected: Self.byteCount, actual: bytes.count)
        }
        secret = SecretBytes(copying: bytes)
    }

    /// For a buffer whose length this module already guarantees (HKDF outputs, rekey results).
    init(secret: SecretBytes) {
        assert(secret.count == Self.byteCount)
        self.secret = secret
    }

    /// Lets `body` read the 32 key bytes; the pointer is valid only inside `body`.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try secret.withUnsafeBytes(body)
    }

    public static func == (a: SymmetricKey, b: SymmetricKey) -> Bool {
        a.secret.isEqual(to: b.secret)
    }

    public var description: String { "SymmetricKey(redacted)" }
    public var debugDescription: String { description }
}
