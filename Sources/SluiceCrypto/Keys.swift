import SluiceBase64
import CSodium

/// A Curve25519 private key (32 bytes), as WireGuard and Noise's `DH_25519` use it.
///
/// The public key is computed once at construction. The scalar lives in a `SecretBytes` buffer,
/// wiped when the last copy of the key goes; reach it with `withUnsafeBytes`. Comparison is
/// constant-time and the description is redacted, so a key that reaches a log line or a test
/// failure does not leak. Reading key files, with their precise messages, lives with the
/// configuration code; `init(base64:)` serves an embedder that holds the text already.
public struct PrivateKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Curve25519 scalars are 32 bytes (`crypto_scalarmult_SCALARBYTES`).
    public static let byteCount = 32

    /// The raw scalar, exactly as given or generated (X25519 clamps it again at every use).
    let secret: SecretBytes
    /// The matching public key, `crypto_scalarmult_base(scalar)`.
    public let publicKey: PublicKey

    /// Wraps an existing 32-byte key, for example one read from a configuration file. The key is
    /// copied; the caller still owns (and may wipe) `bytes`.
    public init(bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == Self.byteCount else {
            throw .invalidKeyLength(expected: Self.byteCount, actual: bytes.count)
        }
        self.init(secret: SecretBytes(copying: bytes))
    }

    private init(secret: SecretBytes) {
        Sodium.ensureInitialized()
        var pub = [UInt8](repeating: 0, count: PublicKey.byteCount)
        // Cannot fail: the base-point multiplication has no low-order input to reject.
        _ = secret.withUnsafeBytes { crypto_scalarmult_base(&pub, $0.baseAddress!) }
        self.secret = secret
        self.publicKey = PublicKey(trusted: pub)
    }

    /// A fresh random key from the kernel's CSPRNG (`randombytes_buf`), clamped like WireGuard's
    /// `wg genkey` so that the stored bytes are already a canonical X25519 scalar.
    public static func generate() -> PrivateKey {
        Sodium.ensureInitialized()
        return PrivateKey(secret: SecretBytes(count: byteCount) { raw in
            randombytes_buf(raw.baseAddress!, byteCount)
            raw[0] &= 248
            raw[31] = (raw[31] & 127) | 64
        })
    }

    /// Lets `body` read the 32 bytes of the scalar (to encode it for `sluice keygen`); the
    /// pointer is valid only inside `body`.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try secret.withUnsafeBytes(body)
    }

    /// X25519(self, peer): the shared secret Noise calls `DH(self, peer)`.
    /// Throws `weakPublicKey` when the result is all zeros (a low-order peer point).
    func sharedSecret(with peer: PublicKey) throws(CryptoError) -> SecretBytes {
        Sodium.ensureInitialized()
        var status: Int32 = 0
        let out = SecretBytes(count: 32) { out in
            status = secret.withUnsafeBytes { crypto_scalarmult(out.baseAddress!, $0.baseAddress!, peer.bytes) }
        }
        guard status == 0 else { throw .weakPublicKey }
        return out
    }

    /// Constant-time, because comparing secrets with `==` on arrays leaks where they differ.
    public static func == (a: PrivateKey, b: PrivateKey) -> Bool {
        a.secret.isEqual(to: b.secret)
    }

    public var description: String { "PrivateKey(redacted)" }
    public var debugDescription: String { description }
}

/// A Curve25519 public key (32 bytes). Public keys are not secret: plain `Hashable` is fine, and it
/// lets the relay keep tables keyed by client key.
public struct PublicKey: Sendable, Hashable {
    /// Curve25519 points are 32 bytes (`crypto_scalarmult_BYTES`).
    public static let byteCount = 32

    /// The raw little-endian u-coordinate.
    public let bytes: [UInt8]

    /// Wraps 32 bytes. Low-order points are accepted here and rejected by the handshake, where a
    /// Diffie-Hellman result of zero reveals them.
    public init(bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == Self.byteCount else {
            throw .invalidKeyLength(expected: Self.byteCount, actual: bytes.count)
        }
        self.bytes = bytes
    }

    /// For bytes whose length this module already guarantees.
    init(trusted bytes: [UInt8]) {
        assert(bytes.count == Self.byteCount)
        self.bytes = bytes
    }

    /// The 32 bytes in one call: the derived hash fed them one `UInt8` at a time, and the relay
    /// looks clients up by key per datagram.
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// The key as an operator writes it (`sluice pubkey` prints it so): base64 of the 32 bytes.
    public var base64: String { Base64.encode(bytes) }

    /// The first 8 characters of `base64` and an ellipsis: how logs and `sluice status` name a key,
    /// so it matches the start of what the operator wrote in an allow list.
    public var shortBase64: String { String(base64.prefix(8)) + "…" }
}

/// A Noise pre-shared key (32 bytes), mixed in by the `psk` token of IKpsk2.
///
/// Sluice without a configured PSK uses `PresharedKey.zero` (32 zero bytes), as docs/protocol.md §1
/// says. Held, compared and described as `PrivateKey` is.
public struct PresharedKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Noise requires PSKs of exactly 32 bytes.
    public static let byteCount = 32
    /// The PSK of a deployment that did not configure one.
    public static let zero = PresharedKey(secret: SecretBytes(count: byteCount) { _ in })

    let secret: SecretBytes

    /// Wraps (copies) 32 bytes.
    public init(bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == Self.byteCount else {
            throw .invalidKeyLength(expected: Self.byteCount, actual: bytes.count)
        }
        secret = SecretBytes(copying: bytes)
    }

    private init(secret: SecretBytes) { self.secret = secret }

    /// Constant-time: see `PrivateKey.==`.
    public static func == (a: PresharedKey, b: PresharedKey) -> Bool {
        a.secret.isEqual(to: b.secret)
    }

    public var description: String { "PresharedKey(redacted)" }
    public var debugDescription: String { description }
}

extension PrivateKey {
    /// A key from its base64 text, as `sluice keygen` prints it. The decoded bytes are wiped once
    /// copied into the key.
    public init(base64 text: String) throws {
        var bytes = try Base64.decode(text)
        defer { Secrets.wipe(&bytes) }
        try self.init(bytes: bytes)
    }
}

extension PublicKey {
    /// A key from its base64 text, as `sluice pubkey` prints it.
    public init(base64 text: String) throws {
        try self.init(bytes: try Base64.decode(text))
    }
}
